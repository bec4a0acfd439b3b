//! The gossip transport on turmoil's simulated UDP.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

pub struct SimSocket(pub turmoil::net::UdpSocket);

impl gossip::transport::Transport for SimSocket {
    fn send_to(
        &self,
        buf: &[u8],
        to: SocketAddr,
    ) -> impl Future<Output = io::Result<usize>> + Send {
        self.0.send_to(buf, to)
    }

    fn recv_from(
        &self,
        buf: &mut [u8],
    ) -> impl Future<Output = io::Result<(usize, SocketAddr)>> + Send {
        self.0.recv_from(buf)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

//! The datagram transport, minimal so a simulated network can stand in.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

pub trait Transport: Send + Sync + 'static {
    fn send_to(&self, buf: &[u8], to: SocketAddr)
    -> impl Future<Output = io::Result<usize>> + Send;
    fn recv_from(
        &self,
        buf: &mut [u8],
    ) -> impl Future<Output = io::Result<(usize, SocketAddr)>> + Send;
    fn local_addr(&self) -> io::Result<SocketAddr>;
}

impl Transport for tokio::net::UdpSocket {
    fn send_to(
        &self,
        buf: &[u8],
        to: SocketAddr,
    ) -> impl Future<Output = io::Result<usize>> + Send {
        tokio::net::UdpSocket::send_to(self, buf, to)
    }

    fn recv_from(
        &self,
        buf: &mut [u8],
    ) -> impl Future<Output = io::Result<(usize, SocketAddr)>> + Send {
        tokio::net::UdpSocket::recv_from(self, buf)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        tokio::net::UdpSocket::local_addr(self)
    }
}

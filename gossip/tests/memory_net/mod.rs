//! An in-process datagram network for the gossip node's tests: each socket
//! is an inbox keyed by its address; a datagram is delivered at once and in
//! order, or dropped when no socket has its address (as UDP would). Under
//! tokio's paused clock a run is deterministic and takes no real time.

use gossip::transport::Transport;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

type Datagram = (Vec<u8>, SocketAddr);

/// Every bound socket's inbox, by address.
#[derive(Default)]
pub struct MemoryNet {
    inboxes: Mutex<HashMap<SocketAddr, mpsc::UnboundedSender<Datagram>>>,
}

impl MemoryNet {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A socket on `addr` (replacing any socket bound there before).
    pub fn bind(self: &Arc<Self>, addr: SocketAddr) -> MemorySocket {
        let (inbox_tx, inbox) = mpsc::unbounded_channel();
        self.inboxes.lock().unwrap().insert(addr, inbox_tx.clone());
        MemorySocket {
            net: self.clone(),
            addr,
            inbox_tx,
            inbox: tokio::sync::Mutex::new(inbox),
        }
    }
}

pub struct MemorySocket {
    net: Arc<MemoryNet>,
    addr: SocketAddr,
    /// This socket's own entry in the net (to unbind only itself).
    inbox_tx: mpsc::UnboundedSender<Datagram>,
    inbox: tokio::sync::Mutex<mpsc::UnboundedReceiver<Datagram>>,
}

impl Drop for MemorySocket {
    fn drop(&mut self) {
        let mut inboxes = self.net.inboxes.lock().unwrap();
        if inboxes
            .get(&self.addr)
            .is_some_and(|tx| tx.same_channel(&self.inbox_tx))
        {
            inboxes.remove(&self.addr);
        }
    }
}

impl Transport for MemorySocket {
    fn send_to(
        &self,
        buf: &[u8],
        to: SocketAddr,
    ) -> impl Future<Output = io::Result<usize>> + Send {
        let inbox = self.net.inboxes.lock().unwrap().get(&to).cloned();
        if let Some(inbox) = inbox {
            let _ = inbox.send((buf.to_vec(), self.addr));
        }
        std::future::ready(Ok(buf.len()))
    }

    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let mut inbox = self.inbox.lock().await;
        let (datagram, from) = inbox
            .recv()
            .await
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        let n = datagram.len().min(buf.len());
        buf[..n].copy_from_slice(&datagram[..n]);
        Ok((n, from))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

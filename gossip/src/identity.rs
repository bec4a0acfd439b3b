//! The foca identity: the instance id and address plus a bump that changes
//! when the identity is renewed (after being declared down, or a restart).

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeId {
    pub instance: String,
    pub addr: SocketAddr,
    pub bump: u16,
}

impl foca::Identity for NodeId {
    type Addr = SocketAddr;

    fn renew(&self) -> Option<Self> {
        Some(Self {
            bump: self.bump.wrapping_add(1),
            ..self.clone()
        })
    }

    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn win_addr_conflict(&self, adversary: &Self) -> bool {
        // The later identity (higher bump, wrapping) wins.
        self.bump.wrapping_sub(adversary.bump) < u16::MAX / 2
    }
}

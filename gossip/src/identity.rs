//! The foca identity: the instance id and address, the boot of the process
//! (wall-clock ms at its start) and a bump that changes when the identity
//! is renewed within one life (after being declared down).
//!
//! Two identities with one address: the later one wins — a later boot, or
//! within one boot a later bump. The boot must order lives: a restarted
//! instance's identity must beat its previous life's, which its peers may
//! still hold as down. (A bump derived from the boot, compared in a
//! wrapping window, lost to its previous life one restart in two, and the
//! peers then ignored the restarted instance until they forgot its old
//! identity — `remove_down_after`, a minute.)

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeId {
    pub instance: String,
    pub addr: SocketAddr,
    /// Wall-clock ms at the process's start: later lives win.
    pub boot: u64,
    /// Renewals within this life: later renewals win.
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
        (self.boot, self.bump) > (adversary.boot, adversary.bump)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foca::Identity;

    fn id(boot: u64, bump: u16) -> NodeId {
        NodeId {
            instance: "a".into(),
            addr: "127.0.0.1:7946".parse().unwrap(),
            boot,
            bump,
        }
    }

    #[test]
    fn a_later_life_wins_whatever_the_bumps() {
        // Boots a whole u16 window apart, and the earlier life renewed
        // many times: the later boot still wins.
        let old = id(1_795_000_000_000, 40_000);
        let new = id(1_795_000_042_981, 0);
        assert!(new.win_addr_conflict(&old));
        assert!(!old.win_addr_conflict(&new));
        // Within one life, a renewal wins.
        let renewed = old.renew().expect("renewable");
        assert!(renewed.win_addr_conflict(&old));
        assert!(!old.win_addr_conflict(&old), "no identity beats itself");
    }
}

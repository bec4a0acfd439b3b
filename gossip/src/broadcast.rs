//! PeerState dissemination as foca custom broadcasts. The handler keeps the
//! newest state per instance id; an item is new information (and is passed
//! on) only if its version is newer than what is held.
//!
//! A holder of the gossip key could otherwise pin another instance's state
//! for good by sending it with an enormous version. So: a version whose
//! `boot` (a process start time, Unix ms) is more than
//! [`MAX_BOOT_AHEAD_MS`] ahead of this machine's clock, or whose sequence
//! is beyond [`MAX_SEQUENCE`], is refused; and a state about this instance
//! itself is never held or passed on — one newer than its own is a forgery,
//! which the node refutes by publishing its own state above it (as SWIM
//! refutes a suspicion).

use crate::identity::NodeId;
use crate::metrics::GossipMetrics;
use crate::peer_state::{PeerState, Version};
use foca::{BroadcastHandler, Invalidates};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateItem {
    pub version: Version,
    pub state: PeerState,
}

impl StateItem {
    pub fn encode(&self) -> Result<Vec<u8>, postcard::Error> {
        postcard::to_allocvec(self)
    }
}

/// Identifies a broadcast: newer versions of one instance replace older.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateKey {
    pub instance: String,
    pub version: Version,
}

impl Invalidates for StateKey {
    fn invalidates(&self, other: &Self) -> bool {
        self.instance == other.instance && self.version >= other.version
    }
}

/// How far ahead of this machine's clock a version's `boot` may be: clock
/// skew between instances, with a wide margin.
pub const MAX_BOOT_AHEAD_MS: u64 = 10 * 60 * 1000;
/// The largest sequence accepted: far more publications than any process
/// makes (one every few seconds), far from overflowing.
pub const MAX_SEQUENCE: u64 = 1 << 48;

/// States held, and the instances whose state changed since last drained.
#[derive(Debug, Default)]
pub struct Held {
    pub states: HashMap<String, (Version, PeerState)>,
    pub changed: Vec<String>,
    /// The newest version another claimed for this instance's own state.
    pub own_claimed: Option<Version>,
}

#[derive(Clone, Default)]
pub struct StateBroadcasts {
    pub held: Arc<Mutex<Held>>,
    /// This instance's id.
    pub me: String,
    /// Where refused items are counted (`states_refused`).
    pub metrics: Arc<GossipMetrics>,
}

fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Whether an honest instance could have published `v` by now.
pub fn plausible(v: Version, now_unix_ms: u64) -> bool {
    v.boot <= now_unix_ms.saturating_add(MAX_BOOT_AHEAD_MS) && v.sequence <= MAX_SEQUENCE
}

#[derive(Debug, thiserror::Error)]
#[error("undecodable PeerState broadcast")]
pub struct UndecodableItem;

impl BroadcastHandler<NodeId> for StateBroadcasts {
    type Key = StateKey;
    type Error = UndecodableItem;

    fn receive_item(
        &mut self,
        data: &[u8],
        sender: Option<&NodeId>,
    ) -> Result<Option<StateKey>, UndecodableItem> {
        let item: StateItem = postcard::from_bytes(data).map_err(|_| UndecodableItem)?;
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let id = item.state.instance_id.clone();
        if !plausible(item.version, now_unix_ms()) {
            GossipMetrics::add(&self.metrics.states_refused, 1);
            return Ok(None);
        }
        if id == self.me && sender.is_some() {
            // Our own state relayed back is old news; a newer one is a
            // claim to refute. Never held, never passed on. (`sender` is
            // `None` for this node's own `add_broadcast`.)
            if held.own_claimed.is_none_or(|v| item.version > v) {
                held.own_claimed = Some(item.version);
            }
            return Ok(None);
        }
        if held
            .states
            .get(&id)
            .is_some_and(|(v, _)| *v >= item.version)
        {
            return Ok(None);
        }
        held.states.insert(id.clone(), (item.version, item.state));
        held.changed.push(id.clone());
        Ok(Some(StateKey {
            instance: id,
            version: item.version,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, boot: u64, sequence: u64, phase: &str) -> Vec<u8> {
        StateItem {
            version: Version { boot, sequence },
            state: PeerState {
                instance_id: id.into(),
                phase: phase.into(),
                ..Default::default()
            },
        }
        .encode()
        .unwrap()
    }

    #[test]
    fn newer_wins_and_a_restart_beats_a_higher_sequence() {
        let mut h = StateBroadcasts::default();
        assert!(
            h.receive_item(&item("a", 1, 5, "x"), None)
                .unwrap()
                .is_some()
        );
        assert!(
            h.receive_item(&item("a", 1, 4, "old"), None)
                .unwrap()
                .is_none()
        );
        assert!(
            h.receive_item(&item("a", 1, 5, "dup"), None)
                .unwrap()
                .is_none()
        );
        assert!(
            h.receive_item(&item("a", 2, 0, "restarted"), None)
                .unwrap()
                .is_some()
        );
        assert_eq!(h.held.lock().unwrap().states["a"].1.phase, "restarted");
        assert!(h.receive_item(b"\xff\xff", None).is_err());
        let k1 = StateKey {
            instance: "a".into(),
            version: Version {
                boot: 2,
                sequence: 0,
            },
        };
        let k0 = StateKey {
            instance: "a".into(),
            version: Version {
                boot: 1,
                sequence: 9,
            },
        };
        assert!(k1.invalidates(&k0) && !k0.invalidates(&k1));
    }

    #[test]
    fn a_version_from_the_far_future_is_refused_and_cannot_pin_a_state() {
        let mut h = StateBroadcasts::default();
        let now = now_unix_ms();
        assert!(
            h.receive_item(&item("a", now, 1, "real"), None)
                .unwrap()
                .is_some()
        );
        for (boot, sequence) in [
            (u64::MAX, 0),
            (now + MAX_BOOT_AHEAD_MS + 60_000, 1),
            (now, u64::MAX),
        ] {
            assert!(
                h.receive_item(&item("a", boot, sequence, "forged"), None)
                    .unwrap()
                    .is_none()
            );
        }
        assert_eq!(GossipMetrics::get(&h.metrics.states_refused), 3);
        assert!(
            h.receive_item(&item("a", now, 2, "next"), None)
                .unwrap()
                .is_some()
        );
        assert_eq!(h.held.lock().unwrap().states["a"].1.phase, "next");
    }

    #[test]
    fn a_claim_about_this_instance_is_never_held_or_passed_on_but_noted() {
        let mut h = StateBroadcasts {
            me: "me".into(),
            ..Default::default()
        };
        let now = now_unix_ms();
        let relay = NodeId {
            instance: "other".into(),
            addr: "127.0.0.1:1".parse().unwrap(),
            boot: 0,
            bump: 0,
        };
        let from = Some(&relay);
        assert!(
            h.receive_item(&item("me", now, 7, "forged"), from)
                .unwrap()
                .is_none()
        );
        assert!(
            h.receive_item(&item("me", now, 3, "older"), from)
                .unwrap()
                .is_none()
        );
        let held = h.held.lock().unwrap();
        assert!(!held.states.contains_key("me"));
        assert_eq!(
            held.own_claimed,
            Some(Version {
                boot: now,
                sequence: 7
            })
        );
    }
}

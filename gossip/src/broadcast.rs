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
//!
//! On the wire an item is the postcard encoding of [`StateItem`] followed
//! by the state's [`Formats`] (the tail). eco 0.1.0 sent no tail and, as
//! postcard ignores bytes after a value, reads a tailed item as its own; a
//! release after this one appends after the tail the same way. An item
//! written in a format this instance does not read (above
//! [`StateBroadcasts::reads_up_to`]) is dropped and counted
//! (`states_future`), never misread; an item that does not decode is
//! dropped and counted (`states_undecodable`) without failing the packet,
//! so the broadcasts after it in the packet are still read.

use crate::identity::NodeId;
use crate::metrics::GossipMetrics;
use crate::peer_state::{Formats, PeerState, Version};
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
    /// The item and its state's formats after it (the tail).
    pub fn encode(&self) -> Result<Vec<u8>, postcard::Error> {
        let mut bytes = postcard::to_allocvec(self)?;
        bytes.extend_from_slice(&postcard::to_allocvec(&self.state.formats)?);
        Ok(bytes)
    }

    /// An item of either layout: with the tail, or without (eco 0.1.0's,
    /// [`Formats::UNTAGGED`]). Bytes after the tail are a later release's
    /// and ignored.
    pub fn decode(data: &[u8]) -> Result<StateItem, postcard::Error> {
        let (mut item, rest) = postcard::take_from_bytes::<StateItem>(data)?;
        item.state.formats = if rest.is_empty() {
            Formats::UNTAGGED
        } else {
            postcard::take_from_bytes::<Formats>(rest)?.0
        };
        Ok(item)
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

#[derive(Clone)]
pub struct StateBroadcasts {
    pub held: Arc<Mutex<Held>>,
    /// This instance's id.
    pub me: String,
    /// Where refused items are counted (`states_refused`).
    pub metrics: Arc<GossipMetrics>,
    /// The newest format this instance reads: items written in a later one
    /// are dropped (`states_future`).
    pub reads_up_to: u16,
}

impl Default for StateBroadcasts {
    fn default() -> Self {
        Self {
            held: Arc::default(),
            me: String::new(),
            metrics: Arc::default(),
            reads_up_to: Formats::UNTAGGED.reads,
        }
    }
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

/// The handler's error type: never returned (an undecodable item is
/// counted and dropped, so foca goes on with the packet's other items).
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
        // Never an error: foca would skip the packet's remaining items.
        let Ok(item) = StateItem::decode(data) else {
            GossipMetrics::add(&self.metrics.states_undecodable, 1);
            return Ok(None);
        };
        if item.state.formats.written > self.reads_up_to {
            GossipMetrics::add(&self.metrics.states_future, 1);
            return Ok(None);
        }
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
    use proptest::prelude::*;

    fn any_state() -> impl Strategy<Value = (Version, PeerState)> {
        (
            any::<u64>(),
            any::<u64>(),
            "[a-z0-9-]{0,12}",
            proptest::option::of(any::<u64>()),
            any::<i64>(),
            proptest::collection::vec("[a-z0-9-]{1,8}", 0..5),
            any::<bool>(),
            "[0-9.]{0,8}",
        )
            .prop_map(|(boot, sequence, id, member, rev, voters, frozen, v)| {
                (
                    Version { boot, sequence },
                    PeerState {
                        instance_id: id,
                        etcd: crate::peer_state::EtcdFacts {
                            member_id: member,
                            revision: rev,
                            ..Default::default()
                        },
                        data: crate::peer_state::DataFacts {
                            voters,
                            ..Default::default()
                        },
                        frozen,
                        software_version: v,
                        ..Default::default()
                    },
                )
            })
    }

    proptest! {
        /// What eco 0.1.0 publishes (the item alone) reads as format 1.
        #[test]
        fn the_previous_release_s_states_read_as_untagged((version, state) in any_state()) {
            let item = StateItem { version, state };
            let old = postcard::to_allocvec(&item).unwrap();
            prop_assert_eq!(StateItem::decode(&old).unwrap(), item);
        }

        /// This release's items read back whole with their formats, and as
        /// the plain item to a reader of the previous layout; a later
        /// release's additions after the tail are ignored.
        #[test]
        fn this_release_s_states_read_back_by_both(
            (version, mut state) in any_state(),
            written in 1u16..4,
            reads in 1u16..4,
            extra in proptest::collection::vec(any::<u8>(), 0..16),
        ) {
            state.formats = Formats { written, reads };
            let item = StateItem { version, state };
            let mut bytes = item.encode().unwrap();
            let old_reader = postcard::from_bytes::<StateItem>(&bytes).unwrap();
            prop_assert_eq!(&old_reader.state.formats, &Formats::UNTAGGED);
            prop_assert_eq!(&old_reader.state.instance_id, &item.state.instance_id);
            bytes.extend_from_slice(&extra);
            prop_assert_eq!(StateItem::decode(&bytes).unwrap(), item);
        }

        /// Arbitrary bytes never panic, never fail the packet.
        #[test]
        fn arbitrary_bytes_are_dropped_and_counted(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let mut h = StateBroadcasts::default();
            prop_assert!(h.receive_item(&bytes, None).is_ok());
        }
    }

    #[test]
    fn an_item_of_a_format_this_instance_does_not_read_is_dropped_and_counted() {
        let mut h = StateBroadcasts {
            reads_up_to: 2,
            ..Default::default()
        };
        let now = now_unix_ms();
        for (written, held) in [(3, false), (2, true)] {
            let item = StateItem {
                version: Version {
                    boot: now,
                    sequence: u64::from(written),
                },
                state: PeerState {
                    instance_id: format!("w{written}"),
                    formats: Formats { written, reads: 3 },
                    ..Default::default()
                },
            };
            let got = h.receive_item(&item.encode().unwrap(), None).unwrap();
            assert_eq!(got.is_some(), held, "written in format {written}");
        }
        assert_eq!(GossipMetrics::get(&h.metrics.states_future), 1);
        assert_eq!(
            h.held.lock().unwrap().states["w2"].1.formats,
            Formats {
                written: 2,
                reads: 3
            }
        );
    }

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
        assert!(h.receive_item(b"\xff\xff", None).unwrap().is_none());
        assert_eq!(GossipMetrics::get(&h.metrics.states_undecodable), 1);
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

//! PeerState dissemination as foca custom broadcasts. The handler keeps the
//! newest state per instance id; an item is new information (and is passed
//! on) only if its version is newer than what is held.

use crate::identity::NodeId;
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

/// States held, and the instances whose state changed since last drained.
#[derive(Debug, Default)]
pub struct Held {
    pub states: HashMap<String, (Version, PeerState)>,
    pub changed: Vec<String>,
}

#[derive(Clone, Default)]
pub struct StateBroadcasts {
    pub held: Arc<Mutex<Held>>,
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
        _sender: Option<&NodeId>,
    ) -> Result<Option<StateKey>, UndecodableItem> {
        let item: StateItem = postcard::from_bytes(data).map_err(|_| UndecodableItem)?;
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let id = item.state.instance_id.clone();
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
}

//! The protocol's part of the local state file: versioned, encoded with
//! postcard. A promise is persisted before it is sent
//! ([`super::EffectKind::Persist`] precedes the send in the effect list, and
//! the driver executes effects in order).

use super::ballot::Ballot;
use super::ids::{Incarnation, InstanceId};
use super::messages::AcceptedValue;
use super::value::SeedRecord;
use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistedState {
    /// `n`: the newest incarnation this instance belongs to (0: none).
    pub incarnation: Incarnation,
    /// `V_n` as last seen.
    pub voters: Vec<InstanceId>,
    /// Highest ballot promised for incarnation `n+1`.
    pub promised: Option<Ballot>,
    /// Value accepted for incarnation `n+1`.
    pub accepted: Option<AcceptedValue>,
    /// etcd stopped, no snapshots, no steady-state actions; incarnation `n`
    /// is never started again by this instance while set.
    pub frozen: bool,
    /// The record of incarnation `n`, when this instance learned it from
    /// the protocol or the store.
    pub decided: Option<SeedRecord>,
    /// This instance is the seeder of `decided` and has not confirmed it
    /// finished ([`super::Input::SeedCompleted`]).
    pub seed_pending: bool,
}

impl PersistedState {
    /// A state file of a seeded cluster exists.
    pub fn has_state(&self) -> bool {
        self.incarnation >= 1
    }
}

/// The on-disk envelope: the variant index is the format version.
#[derive(Serialize, Deserialize)]
enum Versioned {
    V1(PersistedState),
}

#[derive(Debug, Error)]
pub enum PersistError {
    #[error("cannot encode the protocol state: {0}")]
    Encode(postcard::Error),
    #[error("cannot decode the protocol state (corrupt): {0}")]
    Decode(postcard::Error),
    #[error(
        "the protocol state is in format V{found}, written by a newer eco; this eco reads V1: run that release again (its promises must not be forgotten)"
    )]
    TooNew { found: u64 },
}

pub fn encode(state: &PersistedState) -> Result<Vec<u8>, PersistError> {
    postcard::to_stdvec(&Versioned::V1(state.clone())).map_err(PersistError::Encode)
}

pub fn decode(bytes: &[u8]) -> Result<PersistedState, PersistError> {
    // The variant index leads the bytes (a varint): a later variant is a
    // later format, refused by name rather than as corruption.
    if let Ok((index, _)) = postcard::take_from_bytes::<u32>(bytes)
        && index >= 1
    {
        return Err(PersistError::TooNew {
            found: u64::from(index) + 1,
        });
    }
    match postcard::from_bytes::<Versioned>(bytes).map_err(PersistError::Decode)? {
        Versioned::V1(s) => Ok(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let s = PersistedState {
            incarnation: 3,
            voters: vec!["i-00".into(), "i-01".into()],
            promised: Some(Ballot::new(4, "i-01")),
            accepted: None,
            frozen: true,
            decided: None,
            seed_pending: false,
        };
        let bytes = encode(&s).expect("encode");
        assert_eq!(decode(&bytes).expect("decode"), s);
        assert!(decode(&[]).is_err());
        let newer = decode(&[7, 1, 2, 3]).unwrap_err();
        assert!(
            matches!(newer, PersistError::TooNew { found: 8 }),
            "{newer}"
        );
        assert!(
            newer.to_string().contains("written by a newer eco"),
            "{newer}"
        );
        assert!(decode(&bytes[..bytes.len() - 1]).is_err(), "truncated");
    }
}

//! The replay marker, `seed-<k>.source` beside the data directory: what a
//! WAL replay for incarnation `k` produced, so a seeder that crashes after
//! moving its WAL aside restores the replay instead of replaying a WAL it
//! no longer has. Written atomically once the replay's snapshot is whole
//! and synced; removed with it once the state file names `k`.
//!
//! Two forms: this release's, a JSON object naming the snapshot file kept
//! beside the data directory with the point it holds (the old
//! incarnation, its revision, when it was taken: what the change archive
//! carries it from); and a bare object name — what releases up to 0.2
//! wrote, the replay's snapshot in the store — still read, so a seeding
//! interrupted across an upgrade resumes.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayMarker {
    /// The replay's snapshot, a file beside the data directory.
    Local(LocalReplay),
    /// The replay's snapshot in the store, by object name (0.2 and before).
    Stored(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalReplay {
    /// The file's name, beside the data directory.
    pub file: String,
    /// The incarnation whose WAL was replayed.
    pub incarnation: u64,
    /// The revision the replayed member served.
    pub revision: i64,
    pub taken_unix_ms: u64,
}

impl ReplayMarker {
    /// What the marker's text says; `None` for an empty one.
    pub fn parse(text: &str) -> Result<Option<Self>, serde_json::Error> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        if text.starts_with('{') {
            return serde_json::from_str(text).map(|l| Some(Self::Local(l)));
        }
        Ok(Some(Self::Stored(text.to_string())))
    }

    pub fn render(&self) -> Result<String, serde_json::Error> {
        match self {
            Self::Local(l) => serde_json::to_string(l),
            Self::Stored(name) => Ok(name.clone()),
        }
    }

    /// How events and errors name the replay's snapshot.
    pub fn name(&self) -> &str {
        match self {
            Self::Local(l) => &l.file,
            Self::Stored(name) => name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_read_back_and_an_old_releases_marker_is_a_store_name() {
        let local = ReplayMarker::Local(LocalReplay {
            file: "seed-3.replayed.db".into(),
            incarnation: 2,
            revision: 1234,
            taken_unix_ms: 99,
        });
        assert_eq!(
            ReplayMarker::parse(&local.render().unwrap()).unwrap(),
            Some(local)
        );
        let old = "it/snapshots/0000000002-0000000000001234-tok.db\n";
        assert_eq!(
            ReplayMarker::parse(old).unwrap(),
            Some(ReplayMarker::Stored(old.trim().into()))
        );
        assert_eq!(ReplayMarker::parse(" \n").unwrap(), None);
        assert!(ReplayMarker::parse("{not json").is_err(), "never guessed");
    }
}

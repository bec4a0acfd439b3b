//! The cluster-wide maintenance switch. `eco pause` writes one object to
//! the snapshot store, `<cluster>/maintenance/pause.json`: who paused, when
//! and why. `eco resume` deletes it. Every instance reads it (at most
//! every [`PAUSE_FRESH`], the last answer kept while the store does not
//! answer) and, while it is there, takes no membership, formation or
//! quorum-loss action (`recovery::pass`). etcd stays supervised (a crash is
//! restarted), snapshots are still taken, and readiness does not change.
//! It is for humans doing surgery on the cluster (`etcdctl member ...`,
//! a hand restore) who need eco's hands off meanwhile.
//!
//! Why the store: it is the cluster's shared, durable place, and it
//! outlives any instance; a pause survives eco's restarts. Without a store
//! there is no pause (`eco pause` says so).
//!
//! A pause object that cannot be read (it does not parse, or it is larger
//! than the store's bound for small objects, `json_object::MAX_SIZE`) is
//! read the safe way: the daemon treats the cluster as paused
//! and says why in `/status`; `eco resume` removes it and `eco pause`
//! replaces it. A store that does not answer keeps the last answer (a
//! pause is not lifted by an outage). Something named `pause.json` that the
//! store did not commit (the directory store: a file without its
//! `.pause.json.meta.json`, as a crash between its two renames or a copy
//! by hand leaves it) is no pause, as it is no object for any reader of
//! the store; the daemon says so, once in its log and in `/status`, and
//! `eco resume` removes it.
//!
//! `--by` and `--reason` are bounded ([`MAX_BY`], [`MAX_REASON`]) and hold
//! no control characters; what the store holds is shown with control
//! characters escaped (`crate::base::printable`), since something else may have
//! written it.
//!
//! What it does not do: stop etcd, or hold a termination's lifecycle hook
//! (a notice that comes while paused waits for the resume; the hook's own
//! timeout still applies).

use crate::base::events::Event;
use crate::base::printable::printable;
use crate::store::json_object::{self, JsonObjectError};
use crate::store::{ObjectStore, StoreError};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// How long an answer of the store is used before it is read again.
pub const PAUSE_FRESH: Duration = Duration::from_secs(5);

/// The longest `--by` (bytes).
pub const MAX_BY: usize = 200;
/// The longest `--reason` (bytes).
pub const MAX_REASON: usize = 2000;

/// A pause as `eco pause` recorded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// Who paused (`--by`, default `$USER@host`).
    pub by: String,
    pub at_unix_ms: u64,
    pub reason: String,
    /// The format it is written in (the cluster's; absent: 1).
    #[serde(default = "recovery::cluster_version::untagged")]
    pub format: recovery::cluster_version::Format,
}

impl Pause {
    /// One line for `/status`, the logs and the next action's reason
    /// (control characters escaped).
    pub fn describe(&self) -> String {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(self.at_unix_ms);
        format!(
            "paused by {} at {}: {}; eco takes no membership or recovery action until `eco resume`",
            printable(&self.by),
            humantime::format_rfc3339_seconds(at),
            printable(&self.reason)
        )
    }
}

/// Checks what `eco pause` is given: `--by` and `--reason` not empty
/// (`--reason`), within [`MAX_BY`] and [`MAX_REASON`], and without control
/// characters (they would be printed to other operators' terminals).
pub fn check_input(by: &str, reason: &str) -> Result<(), String> {
    if reason.trim().is_empty() {
        return Err("say why (--reason): the other operators read it in eco status".into());
    }
    for (flag, value, max) in [("--by", by, MAX_BY), ("--reason", reason, MAX_REASON)] {
        if value.len() > max {
            return Err(format!(
                "{flag} is {} bytes; at most {max} (it is shown on every instance's status)",
                value.len()
            ));
        }
        if let Some(c) = value.chars().find(|c| c.is_control()) {
            return Err(format!(
                "{flag} holds the control character {:?}: write it on one line, without terminal escapes",
                c
            ));
        }
    }
    Ok(())
}

/// Reading or writing the pause object.
pub type PauseError = JsonObjectError;

/// How the pause object is named in errors.
const WHAT: &str = "the pause object";

/// The object a cluster's pause is kept in.
pub fn object_name(cluster: &str) -> String {
    format!("{cluster}/maintenance/pause.json")
}

/// The cluster's pause, `None` when it is not paused.
pub async fn read(store: &dyn ObjectStore, cluster: &str) -> Result<Option<Pause>, PauseError> {
    json_object::read(store, &object_name(cluster), WHAT).await
}

/// Pauses the cluster (replacing a pause already there).
pub async fn write(
    store: &dyn ObjectStore,
    cluster: &str,
    pause: &Pause,
) -> Result<(), PauseError> {
    json_object::write(store, &object_name(cluster), WHAT, pause).await
}

/// What `eco resume` found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cleared {
    /// Nothing was there.
    NotPaused,
    /// The pause, lifted.
    Lifted(Pause),
    /// Something that could not be read as a pause (unreadable, too large,
    /// or not committed), removed; why it could not be read.
    Removed(String),
}

/// Resumes the cluster: removes the pause object, whatever it holds.
pub async fn clear(store: &dyn ObjectStore, cluster: &str) -> Result<Cleared, PauseError> {
    let cleared = match read(store, cluster).await {
        Ok(None) => return Ok(Cleared::NotPaused),
        Ok(Some(p)) => Cleared::Lifted(p),
        Err(e @ (JsonObjectError::Unreadable { .. } | JsonObjectError::Uncommitted { .. })) => {
            Cleared::Removed(e.to_string())
        }
        Err(e @ JsonObjectError::Store(_)) => return Err(e),
    };
    match store.delete(&object_name(cluster)).await {
        Ok(()) | Err(StoreError::NotFound(_)) => Ok(cleared),
        Err(e) => Err(e.into()),
    }
}

/// The pause as the daemon reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PauseSeen {
    Paused(Pause),
    /// The pause object is there but cannot be read: treated as paused
    /// (someone meant to pause) until `eco resume` removes it or `eco
    /// pause` replaces it; why it cannot be read.
    Unreadable(String),
}

impl PauseSeen {
    /// One line for `/status`, the logs and the next action's reason.
    pub fn describe(&self) -> String {
        match self {
            Self::Paused(p) => p.describe(),
            Self::Unreadable(why) => format!(
                "treated as paused: {}; eco takes no membership or recovery action until `eco resume` removes it (or `eco pause` replaces it)",
                printable(why)
            ),
        }
    }

    /// The pause, when it could be read.
    pub fn pause(&self) -> Option<&Pause> {
        match self {
            Self::Paused(p) => Some(p),
            Self::Unreadable(_) => None,
        }
    }
}

/// The daemon's view of the pause: read at most every [`PAUSE_FRESH`];
/// the last answer while the store does not answer (a pause is not lifted
/// by an outage); an unreadable pause object is a pause; a change is
/// logged as an event once, and a problem reading it once.
#[derive(Default)]
pub struct PauseView {
    read: Option<(Option<PauseSeen>, Instant)>,
    problem: Option<String>,
}

impl PauseView {
    pub async fn get(
        &mut self,
        store: Option<&dyn ObjectStore>,
        cluster: &str,
    ) -> Option<PauseSeen> {
        let fresh = self
            .read
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() < PAUSE_FRESH);
        if let (false, Some(store)) = (fresh, store) {
            let (now, problem) = match read(store, cluster).await {
                Ok(p) => (Some(p.map(PauseSeen::Paused)), None),
                Err(e @ JsonObjectError::Unreadable { .. }) => {
                    let why = e.to_string();
                    (Some(Some(PauseSeen::Unreadable(why.clone()))), Some(why))
                }
                Err(e @ JsonObjectError::Uncommitted { .. }) => (
                    Some(None),
                    Some(format!("{e}; so the cluster is not paused")),
                ),
                Err(e @ JsonObjectError::Store(_)) => (
                    None,
                    Some(format!(
                        "cannot read the pause switch ({e}); keeping the last answer"
                    )),
                ),
            };
            if let Some(now) = now {
                let before = self.read.as_ref().and_then(|(p, _)| p.clone());
                match (&before, &now) {
                    (None, Some(p)) => crate::event!(
                        warn,
                        Event::MaintenancePaused,
                        by = %p.pause().map_or("?".into(), |p| printable(&p.by).into_owned()),
                        reason = %p.pause().map_or_else(|| p.describe(), |p| printable(&p.reason).into_owned()),
                        "{}",
                        p.describe()
                    ),
                    (Some(p), None) => crate::event!(
                        warn,
                        Event::MaintenanceResumed,
                        by = %p.pause().map_or("?".into(), |p| printable(&p.by).into_owned()),
                        "resumed: the pause is lifted; eco acts again"
                    ),
                    _ => {}
                }
                self.read = Some((now, Instant::now()));
            }
            if problem.is_some() && self.problem != problem {
                tracing::warn!(error = %problem.as_deref().map(printable).unwrap_or_default(), "a problem with the pause switch (eco pause / eco resume)");
            }
            self.problem = problem;
        }
        self.read.as_ref().and_then(|(p, _)| p.clone())
    }

    /// What is wrong with the pause object, as last read (for `/status`).
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;
    use std::collections::BTreeMap;

    #[tokio::test]
    async fn pause_read_and_resume_through_a_store() {
        let store = MemoryStore::default();
        assert_eq!(read(&store, "c").await.unwrap(), None);
        let p = Pause {
            by: "ann@desk".into(),
            at_unix_ms: 1_795_000_000_000,
            reason: "replacing a disk".into(),
            format: 1,
        };
        write(&store, "c", &p).await.unwrap();
        assert_eq!(read(&store, "c").await.unwrap(), Some(p.clone()));
        assert_eq!(read(&store, "other").await.unwrap(), None);
        assert!(p.describe().contains("paused by ann@desk at 2026-"));
        assert_eq!(clear(&store, "c").await.unwrap(), Cleared::Lifted(p));
        assert_eq!(read(&store, "c").await.unwrap(), None);
        assert_eq!(clear(&store, "c").await.unwrap(), Cleared::NotPaused);
    }

    #[tokio::test]
    async fn an_unreadable_pause_is_an_error_naming_the_object() {
        let store = MemoryStore::default();
        store
            .put(&object_name("c"), &mut &b"not json"[..], BTreeMap::new())
            .await
            .unwrap();
        let e = read(&store, "c").await.unwrap_err().to_string();
        assert!(e.contains("c/maintenance/pause.json"), "{e}");
    }

    #[tokio::test]
    async fn the_view_keeps_the_last_answer_while_the_store_fails() {
        let store = MemoryStore::default();
        let mut view = PauseView::default();
        assert_eq!(view.get(Some(&store), "c").await, None);
        let p = Pause {
            by: "ann".into(),
            at_unix_ms: 1,
            reason: "surgery".into(),
            format: 1,
        };
        write(&store, "c", &p).await.unwrap();
        view.read = None;
        let seen = Some(PauseSeen::Paused(p));
        assert_eq!(view.get(Some(&store), "c").await, seen);
        // Stale, and the store fails: the pause stays.
        view.read = view
            .read
            .take()
            .map(|(p, _)| (p, Instant::now() - PAUSE_FRESH));
        store.set_failing(true);
        assert_eq!(view.get(Some(&store), "c").await, seen);
        assert!(
            view.problem()
                .is_some_and(|p| p.contains("keeping the last answer"))
        );
    }

    fn stale(view: &mut PauseView) {
        view.read = view
            .read
            .take()
            .map(|(p, _)| (p, Instant::now() - PAUSE_FRESH));
    }

    #[tokio::test]
    async fn an_unreadable_pause_is_a_pause_and_resume_removes_it() {
        let store = MemoryStore::default();
        let mut view = PauseView::default();
        assert_eq!(view.get(Some(&store), "c").await, None);
        for junk in [
            b"not json".to_vec(),
            vec![b' '; json_object::MAX_SIZE as usize + 1],
        ] {
            store
                .put(&object_name("c"), &mut &junk[..], BTreeMap::new())
                .await
                .unwrap();
            stale(&mut view);
            let seen = view.get(Some(&store), "c").await;
            let Some(PauseSeen::Unreadable(why)) = &seen else {
                panic!("{seen:?}");
            };
            assert!(why.contains("c/maintenance/pause.json"), "{why}");
            assert!(
                seen.as_ref()
                    .unwrap()
                    .describe()
                    .contains("treated as paused")
            );
            assert!(view.problem().is_some());
            match clear(&store, "c").await.unwrap() {
                Cleared::Removed(why) => assert!(why.contains("unreadable"), "{why}"),
                c => panic!("{c:?}"),
            }
            assert_eq!(read(&store, "c").await.unwrap(), None);
            stale(&mut view);
            assert_eq!(view.get(Some(&store), "c").await, None);
            assert_eq!(view.problem(), None);
        }
    }

    #[tokio::test]
    async fn an_uncommitted_pause_file_is_no_pause_but_is_said_and_resume_removes_it() {
        let d = tempfile::tempdir().unwrap();
        let store = crate::store::dir::DirStore::new(d.path().into());
        let file = d.path().join(object_name("c"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            br#"{"by":"ann","at_unix_ms":1,"reason":"copied by hand"}"#,
        )
        .unwrap();
        let mut view = PauseView::default();
        assert_eq!(view.get(Some(&store), "c").await, None);
        let problem = view.problem().expect("said").to_string();
        assert!(
            problem.contains("no info file") && problem.contains("not paused"),
            "{problem}"
        );
        match clear(&store, "c").await.unwrap() {
            Cleared::Removed(why) => assert!(why.contains("no info file"), "{why}"),
            c => panic!("{c:?}"),
        }
        assert!(!file.exists());
    }

    #[test]
    fn what_eco_pause_accepts() {
        assert!(check_input("ann@desk", "replacing a disk").is_ok());
        assert!(check_input("ann", "répare le disque — 2 h").is_ok());
        let table: &[(&str, &str, &str)] = &[
            ("ann", "  ", "--reason"),
            ("ann", "disk\nmaintenance.resumed by=eve", "--reason"),
            ("ann\u{1b}[2J", "disk", "--by"),
            ("ann", "disk\u{9b}31m", "--reason"),
            ("ann", "tab\there", "--reason"),
        ];
        for (by, reason, named) in table {
            let e = check_input(by, reason).unwrap_err();
            assert!(e.contains(named), "{by:?} {reason:?}: {e}");
        }
        let long = "x".repeat(MAX_REASON + 1);
        assert!(check_input("ann", &long).unwrap_err().contains("at most"));
        assert!(
            check_input(&"y".repeat(MAX_BY + 1), "disk")
                .unwrap_err()
                .contains("--by")
        );
        assert!(check_input(&"y".repeat(MAX_BY), &"x".repeat(MAX_REASON)).is_ok());
    }

    #[test]
    fn what_the_store_holds_is_shown_escaped() {
        let p = Pause {
            by: "eve\u{1b}[2J".into(),
            at_unix_ms: 1,
            reason: "x\nmaintenance.resumed".into(),
            format: 1,
        };
        let said = p.describe();
        assert!(!said.chars().any(char::is_control), "{said:?}");
        assert!(
            said.contains("eve\\u{1b}[2J") && said.contains("x\\nmaintenance"),
            "{said}"
        );
    }
}

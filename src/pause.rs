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
//! What it does not do: stop etcd, or hold a termination's lifecycle hook
//! (a notice that comes while paused waits for the resume; the hook's own
//! timeout still applies).

use crate::events::Event;
use crate::store::json_object::{self, JsonObjectError};
use crate::store::{ObjectStore, StoreError};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// How long an answer of the store is used before it is read again.
pub const PAUSE_FRESH: Duration = Duration::from_secs(5);

/// A pause as `eco pause` recorded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// Who paused (`--by`, default `$USER@host`).
    pub by: String,
    pub at_unix_ms: u64,
    pub reason: String,
}

impl Pause {
    /// One line for `/status`, the logs and the next action's reason.
    pub fn describe(&self) -> String {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(self.at_unix_ms);
        format!(
            "paused by {} at {}: {}; eco takes no membership or recovery action until `eco resume`",
            self.by,
            humantime::format_rfc3339_seconds(at),
            self.reason
        )
    }
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

/// Resumes the cluster; the pause lifted, if there was one.
pub async fn clear(store: &dyn ObjectStore, cluster: &str) -> Result<Option<Pause>, PauseError> {
    let was = read(store, cluster).await?;
    if was.is_some() {
        match store.delete(&object_name(cluster)).await {
            Ok(()) | Err(StoreError::NotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(was)
}

/// The daemon's view of the pause: read at most every [`PAUSE_FRESH`];
/// the last answer while the store does not answer (a pause is not lifted
/// by an outage); a change is logged as an event once.
#[derive(Default)]
pub struct PauseView {
    read: Option<(Option<Pause>, Instant)>,
    problem: Option<String>,
}

impl PauseView {
    pub async fn get(&mut self, store: Option<&dyn ObjectStore>, cluster: &str) -> Option<Pause> {
        let fresh = self
            .read
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() < PAUSE_FRESH);
        if let (false, Some(store)) = (fresh, store) {
            match read(store, cluster).await {
                Ok(now) => {
                    let before = self.read.as_ref().and_then(|(p, _)| p.clone());
                    match (&before, &now) {
                        (None, Some(p)) => crate::event!(
                            warn,
                            Event::MaintenancePaused,
                            by = %p.by,
                            reason = %p.reason,
                            "{}",
                            p.describe()
                        ),
                        (Some(p), None) => crate::event!(
                            warn,
                            Event::MaintenanceResumed,
                            by = %p.by,
                            "resumed: the pause is lifted; eco acts again"
                        ),
                        _ => {}
                    }
                    self.read = Some((now, Instant::now()));
                    self.problem = None;
                }
                Err(e) => {
                    let text = e.to_string();
                    if self.problem.as_deref() != Some(&text) {
                        tracing::warn!(error = %text, "cannot read the pause switch; keeping the last answer");
                        self.problem = Some(text);
                    }
                }
            }
        }
        self.read.as_ref().and_then(|(p, _)| p.clone())
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
        };
        write(&store, "c", &p).await.unwrap();
        assert_eq!(read(&store, "c").await.unwrap(), Some(p.clone()));
        assert_eq!(read(&store, "other").await.unwrap(), None);
        assert!(p.describe().contains("paused by ann@desk at 2026-"));
        assert_eq!(clear(&store, "c").await.unwrap(), Some(p));
        assert_eq!(read(&store, "c").await.unwrap(), None);
        assert_eq!(clear(&store, "c").await.unwrap(), None);
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
        };
        write(&store, "c", &p).await.unwrap();
        view.read = None;
        assert_eq!(view.get(Some(&store), "c").await, Some(p.clone()));
        // Stale, and the store fails: the pause stays.
        view.read = view
            .read
            .take()
            .map(|(p, _)| (p, Instant::now() - PAUSE_FRESH));
        store.set_failing(true);
        assert_eq!(view.get(Some(&store), "c").await, Some(p));
    }
}

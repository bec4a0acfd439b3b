//! The cluster version in the store ([`recovery::cluster_version`]): which
//! format the cluster was finalized at, and an operator's request to
//! finalize.
//!
//! A finalization is a record, `<cluster>/incarnations/cluster-version-<format>`,
//! made only by a conditional create (several instances may finalize at
//! once; one record results) and never removed, like the incarnation
//! records beside it. It lives under `incarnations/` so every store reads
//! it as a record (no metadata needed, never swept), and eco 0.1.0's
//! listing of incarnation records skips it (its name is not a number). No
//! record: format 1. The newest record wins.
//!
//! The request is `<cluster>/maintenance/finalize.json`, written whole by
//! `eco upgrade finalize` and read by every instance with the pause; the
//! instances finalize once every instance of the group reads the format
//! (the request alone never finalizes). It stays as a trace; a later
//! request replaces it.

use super::json_object::{self, JsonObjectError};
use super::record::RecordError;
use super::{CreateOutcome, ObjectStore, StoreError, list_all};
use recovery::cluster_version::{self, Format};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;

/// One finalization.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finalized {
    pub cluster: String,
    /// The format finalized.
    pub format: Format,
    /// The instance that recorded it.
    pub by: String,
    /// Why (an operator's request, or `upgrade.finalize_after`).
    pub reason: String,
    pub at_unix_ms: u64,
}

/// An operator's request to finalize (a small JSON object: its own format
/// is the format it asks for's predecessor or later, never checked beyond
/// what `json_object` checks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The format asked for.
    pub to: Format,
    pub by: String,
    pub at_unix_ms: u64,
}

const RECORD_PREFIX: &str = "cluster-version-";

pub fn record_name(cluster: &str, format: Format) -> String {
    format!(
        "{}{RECORD_PREFIX}{format:010}",
        super::record::prefix(cluster)
    )
}

pub fn request_name(cluster: &str) -> String {
    format!("{cluster}/maintenance/finalize.json")
}

fn malformed(name: &str, message: String) -> RecordError {
    RecordError::Malformed {
        name: name.into(),
        message,
    }
}

/// The newest finalization recorded, `None` when there is none (the
/// cluster is at format 1). A store error is an error, never "none".
pub async fn finalized(
    store: &dyn ObjectStore,
    cluster: &str,
) -> Result<Option<Finalized>, RecordError> {
    let prefix = format!("{}{RECORD_PREFIX}", super::record::prefix(cluster));
    let mut newest: Option<Finalized> = None;
    for o in list_all(store, &prefix).await? {
        let Some(format) = o
            .name
            .strip_prefix(&prefix)
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        let (_, mut r) = match store.get(&o.name).await {
            Ok(found) => found,
            Err(StoreError::NotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let mut bytes = Vec::new();
        (&mut r)
            .take(json_object::MAX_SIZE)
            .read_to_end(&mut bytes)
            .await
            .map_err(|source| StoreError::Io {
                what: o.name.clone(),
                source,
            })?;
        let f: Finalized =
            serde_json::from_slice(&bytes).map_err(|e| malformed(&o.name, e.to_string()))?;
        if f.cluster != cluster || u64::from(f.format) != format {
            return Err(malformed(
                &o.name,
                format!(
                    "it finalizes format {} of cluster {:?}; remove it from the store",
                    f.format, f.cluster
                ),
            ));
        }
        if newest.as_ref().is_none_or(|n| n.format < f.format) {
            newest = Some(f);
        }
    }
    Ok(newest)
}

/// The newest format finalized ([`cluster_version::UNTAGGED`] without a
/// record).
pub fn format_of(finalized: Option<&Finalized>) -> Format {
    finalized.map_or(cluster_version::UNTAGGED, |f| f.format)
}

/// Records `f` unless its format is recorded; returns the record that
/// holds (ours or the first finalizer's).
pub async fn finalize(store: &dyn ObjectStore, f: &Finalized) -> Result<Finalized, RecordError> {
    let name = record_name(&f.cluster, f.format);
    let bytes = serde_json::to_vec_pretty(f).map_err(|e| malformed(&name, e.to_string()))?;
    match store.create_if_absent(&name, &bytes).await? {
        CreateOutcome::Created => Ok(f.clone()),
        CreateOutcome::AlreadyExists(existing) => {
            serde_json::from_slice(&existing).map_err(|e| malformed(&name, e.to_string()))
        }
    }
}

const REQUEST: &str = "the finalize request";

pub async fn request(
    store: &dyn ObjectStore,
    cluster: &str,
    r: &Request,
) -> Result<(), JsonObjectError> {
    json_object::write(store, &request_name(cluster), REQUEST, r).await
}

pub async fn read_request(
    store: &dyn ObjectStore,
    cluster: &str,
) -> Result<Option<Request>, JsonObjectError> {
    json_object::read(store, &request_name(cluster), REQUEST).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::store::record;

    fn fin(format: Format, by: &str) -> Finalized {
        Finalized {
            cluster: "c".into(),
            format,
            by: by.into(),
            reason: "asked".into(),
            at_unix_ms: 1,
        }
    }

    #[tokio::test]
    async fn the_first_finalizer_wins_the_newest_counts_and_incarnation_listings_skip_it() {
        let s = MemoryStore::with_page_size(1);
        assert_eq!(finalized(&s, "c").await.unwrap(), None);
        assert_eq!(format_of(None), 1);
        assert_eq!(finalize(&s, &fin(2, "a")).await.unwrap(), fin(2, "a"));
        assert_eq!(finalize(&s, &fin(2, "b")).await.unwrap(), fin(2, "a"));
        assert_eq!(finalized(&s, "c").await.unwrap(), Some(fin(2, "a")));
        assert!(record::all(&s, "c").await.unwrap().is_empty());
        assert!(crate::store::is_record_name(&record_name("c", 2)));
        s.set_failing(true);
        assert!(finalized(&s, "c").await.is_err(), "an error is not `none`");
    }

    #[tokio::test]
    async fn a_record_under_another_name_fails_naming_it() {
        let s = MemoryStore::new();
        s.create_if_absent(
            &record_name("c", 3),
            &serde_json::to_vec(&fin(2, "a")).unwrap(),
        )
        .await
        .unwrap();
        let err = finalized(&s, "c").await.unwrap_err().to_string();
        assert!(err.contains("cluster-version-0000000003"), "{err}");
    }

    #[tokio::test]
    async fn a_request_is_written_and_read_whole() {
        let s = MemoryStore::new();
        assert_eq!(read_request(&s, "c").await.unwrap(), None);
        let r = Request {
            to: 2,
            by: "ops".into(),
            at_unix_ms: 5,
        };
        request(&s, "c", &r).await.unwrap();
        assert_eq!(read_request(&s, "c").await.unwrap(), Some(r));
    }
}

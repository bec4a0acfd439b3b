//! The record of truth in the store (docs/concepts.md, "Record of truth"):
//! `<cluster>/incarnations/<n>` says how incarnation `n` was seeded;
//! `<cluster>/incarnations/<n>.voters` holds its current voting-member set
//! `V_n`, rewritten by the instance beside the etcd leader after
//! membership changes.
//!
//! The seeding record is created only by a conditional create: of several
//! creators exactly one wins, and the others read the winner's record. A
//! voters record is only ever replaced by one describing a later raft index.
//! Retention never touches `incarnations/`.
//!
//! Formats ([`recovery::cluster_version`]): a record carries its format in
//! a `"format"` key, absent in format 1 (eco 0.1.0's, whose strict reader
//! refuses the key — so records are written in format 1, without it, until
//! the cluster is finalized at 2). A reader takes the key off before the
//! strict parse and refuses a record of a format it does not read, naming
//! it ([`RecordError::TooNew`]): a record of truth is never skipped or
//! misread. Fields a format does not know are refused (the types are
//! strict): a record's meaning is never partly understood.

use crate::store::{CreateOutcome, ObjectStore, StoreError, list_all};
use recovery::cluster_version::{self, Format};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tokio::io::AsyncReadExt;

/// How an incarnation was seeded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncarnationRecord {
    pub cluster: String,
    pub incarnation: u64,
    /// The only instance that may start etcd for this incarnation.
    pub seeder: String,
    pub token: String,
    /// `empty`, `snapshot:<name>` or `data:<instance>`.
    pub source: String,
    pub created_unix_ms: u64,
    /// The fenced protocol's record, when the protocol created this one
    /// (quorum-loss recovery); `None` for records written by formation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<recovery::fenced::SeedRecord>,
}

/// The voting members of an incarnation at a raft index (what
/// `recovery::voters` decides to write).
pub use recovery::voters::VotersRecord;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("record {name} is unreadable: {message}")]
    Malformed { name: String, message: String },
    #[error(
        "record {name} is in format {format}, which this eco does not read (it reads {} to {}): a newer eco wrote it after the cluster was finalized; run that release",
        cluster_version::OLDEST,
        cluster_version::NEWEST
    )]
    TooNew { name: String, format: u64 },
}

/// The key a record's format is kept under (absent: format 1).
const FORMAT_KEY: &str = "format";

pub fn prefix(cluster: &str) -> String {
    format!("{cluster}/incarnations/")
}

pub fn record_name(cluster: &str, n: u64) -> String {
    format!("{}{n:010}", prefix(cluster))
}

pub fn voters_name(cluster: &str, n: u64) -> String {
    format!("{}{n:010}.voters", prefix(cluster))
}

fn parse<T: for<'de> Deserialize<'de>>(name: &str, bytes: &[u8]) -> Result<T, RecordError> {
    let malformed = |e: serde_json::Error| RecordError::Malformed {
        name: name.into(),
        message: e.to_string(),
    };
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(malformed)?;
    if let Some(object) = value.as_object_mut()
        && let Some(format) = object.remove(FORMAT_KEY)
    {
        let format = format.as_u64().ok_or_else(|| RecordError::Malformed {
            name: name.into(),
            message: format!("its format is {format}, not a number"),
        })?;
        if !cluster_version::reads_number(format) {
            return Err(RecordError::TooNew {
                name: name.into(),
                format,
            });
        }
    }
    serde_json::from_value(value).map_err(malformed)
}

/// `value` as a record of `format` (no key in format 1, which eco 0.1.0
/// reads only without it).
fn encode<T: Serialize>(name: &str, value: &T, format: Format) -> Result<Vec<u8>, RecordError> {
    let malformed = |e: serde_json::Error| RecordError::Malformed {
        name: name.into(),
        message: e.to_string(),
    };
    let mut json = serde_json::to_value(value).map_err(malformed)?;
    if format > cluster_version::UNTAGGED
        && let Some(object) = json.as_object_mut()
    {
        object.insert(FORMAT_KEY.into(), format.into());
    }
    serde_json::to_vec_pretty(&json).map_err(malformed)
}

async fn read(store: &dyn ObjectStore, name: &str) -> Result<Option<Vec<u8>>, RecordError> {
    match store.get(name).await {
        Ok((_, mut r)) => {
            let mut bytes = Vec::new();
            r.read_to_end(&mut bytes)
                .await
                .map_err(|source| StoreError::Io {
                    what: name.into(),
                    source,
                })?;
            Ok(Some(bytes))
        }
        Err(StoreError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Parses the record stored as `name`, which must describe incarnation
/// `n` of `cluster`: an object that says otherwise (a copy from another
/// cluster, a stray file) is malformed — never a record to act on, and
/// never silently skipped (the listing fails naming it, so nothing is
/// decided until a human removes it).
fn parse_record(
    name: &str,
    bytes: &[u8],
    cluster: &str,
    n: u64,
) -> Result<IncarnationRecord, RecordError> {
    let r: IncarnationRecord = parse(name, bytes)?;
    if r.cluster != cluster || r.incarnation != n {
        return Err(RecordError::Malformed {
            name: name.into(),
            message: format!(
                "it describes incarnation {} of cluster {:?}, not incarnation {n} of {cluster:?}; remove it from the store",
                r.incarnation, r.cluster
            ),
        });
    }
    Ok(r)
}

/// Creates the record of `record.incarnation` unless one exists; returns the
/// record that holds afterwards (ours, or the winner's).
/// The record is written in `format` (the cluster version's).
pub async fn create(
    store: &dyn ObjectStore,
    record: &IncarnationRecord,
    format: Format,
) -> Result<IncarnationRecord, RecordError> {
    let name = record_name(&record.cluster, record.incarnation);
    let bytes = encode(&name, record, format)?;
    match store.create_if_absent(&name, &bytes).await? {
        CreateOutcome::Created => Ok(record.clone()),
        CreateOutcome::AlreadyExists(existing) => {
            parse_record(&name, &existing, &record.cluster, record.incarnation)
        }
    }
}

/// The seeding record of incarnation `n`, if the store holds one (checked
/// against its name and cluster like every record).
pub async fn get(
    store: &dyn ObjectStore,
    cluster: &str,
    n: u64,
) -> Result<Option<IncarnationRecord>, RecordError> {
    let name = record_name(cluster, n);
    match read(store, &name).await? {
        Some(bytes) => Ok(Some(parse_record(&name, &bytes, cluster, n)?)),
        None => Ok(None),
    }
}

/// Every seeding record of the cluster, by incarnation (all pages listed; a
/// store error is an error, never "no records").
pub async fn all(
    store: &dyn ObjectStore,
    cluster: &str,
) -> Result<BTreeMap<u64, IncarnationRecord>, RecordError> {
    let mut out = BTreeMap::new();
    for o in list_all(store, &prefix(cluster)).await? {
        let Some(n) = o
            .name
            .strip_prefix(&prefix(cluster))
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        if let Some(bytes) = read(store, &o.name).await? {
            out.insert(n, parse_record(&o.name, &bytes, cluster, n)?);
        }
    }
    Ok(out)
}

/// The newest seeding record.
pub async fn newest(
    store: &dyn ObjectStore,
    cluster: &str,
) -> Result<Option<IncarnationRecord>, RecordError> {
    Ok(all(store, cluster)
        .await?
        .into_iter()
        .next_back()
        .map(|(_, r)| r))
}

pub async fn voters(
    store: &dyn ObjectStore,
    cluster: &str,
    n: u64,
) -> Result<Option<VotersRecord>, RecordError> {
    let name = voters_name(cluster, n);
    match read(store, &name).await? {
        Some(bytes) => {
            let v: VotersRecord = parse(&name, &bytes)?;
            if v.incarnation != n {
                return Err(RecordError::Malformed {
                    name,
                    message: format!(
                        "it describes the voters of incarnation {}, not {n}; remove it from the store",
                        v.incarnation
                    ),
                });
            }
            Ok(Some(v))
        }
        None => Ok(None),
    }
}

/// Writes `v` (in `format`, the cluster version's) unless the stored
/// voters record describes a later raft index. Returns whether it was
/// written.
pub async fn write_voters(
    store: &dyn ObjectStore,
    cluster: &str,
    v: &VotersRecord,
    format: Format,
) -> Result<bool, RecordError> {
    if let Some(existing) = voters(store, cluster, v.incarnation).await?
        && (existing.raft_index > v.raft_index || existing == *v)
    {
        return Ok(false);
    }
    let name = voters_name(cluster, v.incarnation);
    let bytes = encode(&name, v, format)?;
    store.put(&name, &mut &bytes[..], BTreeMap::new()).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;

    const F1: Format = cluster_version::UNTAGGED;

    fn rec(seeder: &str, n: u64) -> IncarnationRecord {
        IncarnationRecord {
            cluster: "c".into(),
            incarnation: n,
            seeder: seeder.into(),
            token: format!("c-{n}-{seeder}"),
            source: "empty".into(),
            created_unix_ms: 1,
            seed: None,
        }
    }

    #[tokio::test]
    async fn a_record_of_another_cluster_or_incarnation_fails_the_listing_naming_it() {
        let s = MemoryStore::with_page_size(1);
        create(&s, &rec("a", 1), F1).await.unwrap();
        let mut foreign = rec("x", 99);
        foreign.cluster = "other".into();
        let bytes = serde_json::to_vec(&foreign).unwrap();
        s.create_if_absent(&record_name("c", 99), &bytes)
            .await
            .unwrap();
        let err = newest(&s, "c").await.unwrap_err().to_string();
        assert!(
            err.contains("c/incarnations/0000000099") && err.contains("\"other\""),
            "{err}"
        );
        assert!(
            get(&s, "c", 99).await.is_err(),
            "one record, read alone, too"
        );
        assert_eq!(get(&s, "c", 1).await.unwrap(), Some(rec("a", 1)));
        assert_eq!(get(&s, "c", 2).await.unwrap(), None);
        // Under the right name but for another incarnation: the same.
        let s = MemoryStore::with_page_size(1);
        let bytes = serde_json::to_vec(&rec("x", 7)).unwrap();
        s.create_if_absent(&record_name("c", 8), &bytes)
            .await
            .unwrap();
        assert!(all(&s, "c").await.is_err());
    }

    #[tokio::test]
    async fn first_creator_wins_and_records_list_in_order() {
        let s = MemoryStore::with_page_size(1);
        assert_eq!(newest(&s, "c").await.unwrap(), None);
        assert_eq!(create(&s, &rec("a", 1), F1).await.unwrap(), rec("a", 1));
        assert_eq!(
            create(&s, &rec("b", 1), F1).await.unwrap(),
            rec("a", 1),
            "the existing record wins"
        );
        create(&s, &rec("b", 2), F1).await.unwrap();
        write_voters(
            &s,
            "c",
            &VotersRecord {
                incarnation: 2,
                raft_index: 5,
                voters: vec!["b".into()],
                learners: Vec::new(),
            },
            F1,
        )
        .await
        .unwrap();
        let all = all(&s, "c").await.unwrap();
        assert_eq!(
            all.keys().copied().collect::<Vec<_>>(),
            vec![1, 2],
            "voters objects are not seeding records"
        );
        assert_eq!(newest(&s, "c").await.unwrap().unwrap().seeder, "b");
    }

    #[tokio::test]
    async fn voters_never_go_back_in_raft_index() {
        let s = MemoryStore::new();
        let v = |i, who: &[&str]| VotersRecord {
            incarnation: 1,
            raft_index: i,
            voters: who.iter().map(|s| s.to_string()).collect(),
            learners: Vec::new(),
        };
        assert!(
            write_voters(&s, "c", &v(10, &["a", "b"]), F1)
                .await
                .unwrap()
        );
        assert!(!write_voters(&s, "c", &v(9, &["a"]), F1).await.unwrap());
        assert!(
            write_voters(&s, "c", &v(12, &["a", "b", "c"]), F1)
                .await
                .unwrap()
        );
        assert_eq!(voters(&s, "c", 1).await.unwrap().unwrap().voters.len(), 3);
    }

    #[tokio::test]
    async fn store_errors_are_not_empty() {
        let s = MemoryStore::new();
        create(&s, &rec("a", 1), F1).await.unwrap();
        s.set_failing(true);
        assert!(newest(&s, "c").await.is_err());
        assert!(all(&s, "c").await.is_err());
    }

    #[tokio::test]
    async fn records_carry_their_format_from_2_on_and_a_later_one_is_refused_by_name() {
        let s = MemoryStore::new();
        create(&s, &rec("a", 1), F1).await.unwrap();
        let (_, mut r) = s.get(&record_name("c", 1)).await.unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut r, &mut text)
            .await
            .unwrap();
        assert!(!text.contains("format"), "eco 0.1.0 reads it: {text}");
        create(&s, &rec("a", 2), cluster_version::NEWEST)
            .await
            .unwrap();
        let v = VotersRecord {
            incarnation: 2,
            raft_index: 5,
            voters: vec!["a".into()],
            learners: Vec::new(),
        };
        write_voters(&s, "c", &v, cluster_version::NEWEST)
            .await
            .unwrap();
        assert_eq!(get(&s, "c", 2).await.unwrap(), Some(rec("a", 2)));
        assert_eq!(voters(&s, "c", 2).await.unwrap(), Some(v));
        let (_, mut r) = s.get(&record_name("c", 2)).await.unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut r, &mut text)
            .await
            .unwrap();
        assert!(
            text.contains(&format!("\"format\": {}", cluster_version::NEWEST)),
            "{text}"
        );
        // A later format: refused by name, and the listing with it.
        let mut later = serde_json::to_value(rec("b", 3)).unwrap();
        later["format"] = (cluster_version::NEWEST + 1).into();
        later["meaning"] = "unknown".into();
        s.create_if_absent(&record_name("c", 3), &serde_json::to_vec(&later).unwrap())
            .await
            .unwrap();
        let err = all(&s, "c").await.unwrap_err();
        assert!(
            matches!(err, RecordError::TooNew { format, .. } if format == u64::from(cluster_version::NEWEST) + 1),
            "{err}"
        );
        assert!(
            err.to_string().contains("c/incarnations/0000000003"),
            "{err}"
        );
        // A field a known format does not have: refused, never half read.
        let mut odd = serde_json::to_value(rec("b", 4)).unwrap();
        odd["meaning"] = "unknown".into();
        s.create_if_absent(&record_name("c", 4), &serde_json::to_vec(&odd).unwrap())
            .await
            .unwrap();
        assert!(matches!(
            get(&s, "c", 4).await.unwrap_err(),
            RecordError::Malformed { .. }
        ));
    }
}

//! The cluster's snapshots in the store, as every reader lists them (the
//! snapshot writer, the first incarnation's seeding, the quorum-loss
//! protocol's store facts, `eco snapshot list`): the objects under
//! `<cluster>/snapshots/` whose names parse as snapshot names
//! ([`SnapshotName`]); no other object's info is read (on S3 each costs a
//! `HeadObject`, so junk beside the snapshots costs nothing).
//!
//! A snapshot whose recorded metadata contradicts its name — another
//! cluster, or an incarnation or token other than its name's (a snapshot
//! of another cluster renamed or copied in) — is not this cluster's: it is
//! neither listed nor used (never restored, never the newest), and never
//! deleted (it is not eco's to delete); it is reported in
//! [`Listing::foreign`], and logged once per process. Metadata a snapshot
//! does not carry is not held against it. A snapshot written in a format
//! this eco does not read (a later release's, after the cluster was
//! finalized: [`unreadable_format`]) is reported and left alone the same
//! way, never misread.

use super::name::SnapshotName;
use super::take::meta;
use crate::store::{ObjectInfo, ObjectStore, Skipped, StoreError, list_all_matching};
use recovery::newest_snapshot::{self, SnapshotRank};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// A listing of a cluster's snapshots.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// This cluster's snapshots, in name order (oldest first).
    pub snapshots: Vec<ObjectInfo>,
    /// Objects named as this cluster's snapshots that this eco does not
    /// use — another cluster's, or of a format it does not read — each
    /// with why.
    pub foreign: Vec<Foreign>,
}

/// A snapshot-named object that is not this cluster's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Foreign {
    pub name: String,
    pub why: String,
}

/// Foreign snapshots already logged by this process.
static REPORTED: LazyLock<Skipped> = LazyLock::new(Skipped::default);

/// Lists `cluster`'s snapshots (every page).
pub async fn list(store: &dyn ObjectStore, cluster: &str) -> Result<Listing, StoreError> {
    let all = list_all_matching(store, &SnapshotName::prefix(cluster), &|name: &str| {
        SnapshotName::parse(name).is_some()
    })
    .await?;
    let mut listing = Listing::default();
    for object in all {
        let why = SnapshotName::parse(&object.name)
            .and_then(|name| not_this_clusters(cluster, &name, &object.metadata))
            .or_else(|| unreadable_format(&object.metadata));
        match why {
            None => listing.snapshots.push(object),
            Some(why) => {
                if REPORTED.first_time(&object.name) {
                    tracing::warn!(snapshot = %object.name, %why, "a snapshot in this cluster's folder is not this cluster's: not listed or used (move it back where it came from, or remove it)");
                }
                listing.foreign.push(Foreign {
                    name: object.name,
                    why,
                });
            }
        }
    }
    Ok(listing)
}

/// A snapshot's recorded creation time (0 when it has none).
pub fn taken_ms(o: &ObjectInfo) -> u64 {
    o.metadata
        .get(meta::CREATED_UNIX_MS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The newest of `snapshots`, with its name, by the one rule every reader
/// follows (`recovery::newest_snapshot`); objects whose names are not
/// snapshot names are not candidates.
pub fn newest(snapshots: &[ObjectInfo]) -> Option<(SnapshotName, &ObjectInfo)> {
    let parsed: Vec<(SnapshotName, &ObjectInfo)> = snapshots
        .iter()
        .filter_map(|o| SnapshotName::parse(&o.name).map(|n| (n, o)))
        .collect();
    let ranks: Vec<SnapshotRank<'_>> = parsed
        .iter()
        .map(|(n, o)| SnapshotRank {
            incarnation: n.incarnation,
            revision: n.revision,
            taken_unix_ms: taken_ms(o),
            name: &o.name,
        })
        .collect();
    let i = newest_snapshot::newest(&ranks)?;
    parsed.into_iter().nth(i)
}

/// Why a snapshot's recorded format is not one this eco reads (absent:
/// format 1, eco 0.1.0's).
pub fn unreadable_format(metadata: &BTreeMap<String, String>) -> Option<String> {
    let recorded = metadata.get(meta::FORMAT)?;
    recovery::cluster_version::unreadable(recorded.parse().ok(), &format!("{recorded:?}"))
}

/// Why the snapshot `name` with `metadata` is not `cluster`'s, if it is
/// not: its name or its metadata names another cluster, or its metadata
/// names another incarnation or token than its name.
pub fn not_this_clusters(
    cluster: &str,
    name: &SnapshotName,
    metadata: &BTreeMap<String, String>,
) -> Option<String> {
    if name.cluster != cluster {
        return Some(format!("its name is of cluster {:?}", name.cluster));
    }
    let recorded = |key: &str| metadata.get(key).map(String::as_str);
    if let Some(other) = recorded(meta::CLUSTER).filter(|c| *c != cluster) {
        return Some(format!("its metadata names cluster {other:?}"));
    }
    if let Some(other) =
        recorded(meta::INCARNATION).filter(|i| i.parse::<u64>().ok() != Some(name.incarnation))
    {
        return Some(format!(
            "its metadata names incarnation {other:?}, its name {}",
            name.incarnation
        ));
    }
    if let Some(other) = recorded(meta::TOKEN).filter(|t| *t != name.token) {
        return Some(format!(
            "its metadata names cluster token {other:?}, its name {:?}",
            name.token
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;

    const NAME: &str = "main/snapshots/i0000000002-r00000000000000000042-main-2-0000abcd.db";

    fn metadata(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_snapshot_of_a_format_this_eco_does_not_read_is_reported_not_used() {
        assert_eq!(unreadable_format(&metadata(&[])), None, "format 1");
        assert_eq!(unreadable_format(&metadata(&[(meta::FORMAT, "1")])), None);
        assert_eq!(unreadable_format(&metadata(&[(meta::FORMAT, "2")])), None);
        assert_eq!(unreadable_format(&metadata(&[(meta::FORMAT, "3")])), None);
        for later in ["4", "x", "-1"] {
            let why = unreadable_format(&metadata(&[(meta::FORMAT, later)])).unwrap();
            assert!(why.contains("does not read"), "{why}");
        }
    }

    #[test]
    fn whose_snapshot_it_is() {
        let name = SnapshotName::parse(NAME).unwrap();
        let own = [
            (meta::CLUSTER, "main"),
            (meta::INCARNATION, "2"),
            (meta::TOKEN, "main-2-0000abcd"),
        ];
        // (cluster, metadata, why not this cluster's)
        type Row<'a> = (&'a str, Vec<(&'a str, &'a str)>, Option<&'a str>);
        let table: &[Row] = &[
            ("main", own.to_vec(), None),
            // Older or partial metadata is not held against it.
            ("main", vec![], None),
            ("main", vec![(meta::CLUSTER, "main")], None),
            ("other", own.to_vec(), Some("its name is of cluster")),
            (
                "main",
                vec![(meta::CLUSTER, "prod"), (meta::INCARNATION, "2")],
                Some("names cluster \"prod\""),
            ),
            (
                "main",
                vec![(meta::CLUSTER, "main"), (meta::INCARNATION, "7")],
                Some("incarnation \"7\""),
            ),
            (
                "main",
                vec![(meta::INCARNATION, "x")],
                Some("incarnation \"x\""),
            ),
            (
                "main",
                vec![(meta::CLUSTER, "main"), (meta::TOKEN, "main-2-ffff")],
                Some("token \"main-2-ffff\""),
            ),
        ];
        for (cluster, pairs, want) in table {
            let got = not_this_clusters(cluster, &name, &metadata(pairs));
            match (want, &got) {
                (None, None) => {}
                (Some(want), Some(got)) if got.contains(want) => {}
                _ => panic!("{cluster} {pairs:?}: {got:?}, want {want:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_foreign_snapshot_is_reported_not_listed_and_junk_is_skipped() {
        let store = MemoryStore::default();
        let own = metadata(&[
            (meta::CLUSTER, "main"),
            (meta::INCARNATION, "2"),
            (meta::TOKEN, "main-2-0000abcd"),
        ]);
        store.put(NAME, &mut &b"x"[..], own).await.unwrap();
        let foreign = "main/snapshots/i0000000009-r00000000000000000001-main-9-0000beef.db";
        let theirs = metadata(&[
            (meta::CLUSTER, "prod"),
            (meta::INCARNATION, "4"),
            (meta::TOKEN, "prod-4-1234"),
        ]);
        store.put(foreign, &mut &b"y"[..], theirs).await.unwrap();
        store
            .put("main/snapshots/notes.txt", &mut &b"z"[..], BTreeMap::new())
            .await
            .unwrap();
        let listing = list(&store, "main").await.unwrap();
        let names: Vec<&str> = listing.snapshots.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, [NAME]);
        assert_eq!(listing.foreign.len(), 1);
        assert_eq!(listing.foreign[0].name, foreign);
        assert!(
            listing.foreign[0].why.contains("prod"),
            "{:?}",
            listing.foreign
        );
        assert!(
            store.head(foreign).await.unwrap().is_some(),
            "never deleted"
        );
    }
}

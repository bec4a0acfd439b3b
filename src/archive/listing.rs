//! The archive as a restore or its writer sees it: the cluster's snapshots
//! (`crate::snapshot::listing`, foreign ones already left out) and its
//! segments (the objects under `<cluster>/archive/` whose names parse as
//! segment names and whose metadata, when they carry it, agrees with the
//! name), as the plain entries `recovery::archive` decides from.

use super::name::SegmentName;
use crate::snapshot::listing::taken_ms;
use crate::snapshot::name::SnapshotName;
use crate::store::{ObjectInfo, ObjectStore, StoreError, for_each_matching};
use recovery::archive::{SegmentEntry, SnapshotPoint};

/// Metadata keys of segment objects.
pub mod meta {
    pub const CLUSTER: &str = "cluster";
    pub const INCARNATION: &str = "incarnation";
    pub const TOKEN: &str = "token";
    pub const FIRST: &str = "first_revision";
    pub const LAST: &str = "last_revision";
    pub const FIRST_SEEN_UNIX_MS: &str = "first_seen_unix_ms";
    pub const LAST_SEEN_UNIX_MS: &str = "last_seen_unix_ms";
    pub const CHANGES: &str = "changes";
    pub const INSTANCE: &str = "instance";
    pub const FORMAT: &str = "format";
}

/// What the store holds of a cluster's archive.
#[derive(Clone, Debug, Default)]
pub struct ArchiveListing {
    pub snapshots: Vec<SnapshotPoint>,
    pub segments: Vec<SegmentEntry>,
    /// Segment-named objects not used, each with why.
    pub foreign: Vec<(String, String)>,
}

fn number<T: std::str::FromStr>(o: &ObjectInfo, key: &str) -> Option<T> {
    o.metadata.get(key).and_then(|v| v.parse().ok())
}

/// A snapshot object as a point the archive continues.
pub fn snapshot_point(o: &ObjectInfo) -> Option<SnapshotPoint> {
    let n = SnapshotName::parse(&o.name)?;
    Some(SnapshotPoint {
        name: o.name.clone(),
        incarnation: n.incarnation,
        revision: n.revision,
        taken_unix_ms: taken_ms(o),
    })
}

/// Why a segment object is not `cluster`'s (its metadata names another
/// cluster, incarnation, token or range than its name), `None` when it is.
fn not_this_clusters(cluster: &str, name: &SegmentName, o: &ObjectInfo) -> Option<String> {
    let differs = |key: &str, expected: String| {
        o.metadata
            .get(key)
            .filter(|v| **v != expected)
            .map(|v| format!("its metadata says {key} {v:?}, its name {expected:?}"))
    };
    if name.cluster != cluster {
        return Some(format!("it is named for cluster {:?}", name.cluster));
    }
    differs(meta::CLUSTER, cluster.to_string())
        .or_else(|| differs(meta::INCARNATION, name.incarnation.to_string()))
        .or_else(|| differs(meta::TOKEN, name.token.clone()))
        .or_else(|| differs(meta::FIRST, name.first.to_string()))
        .or_else(|| differs(meta::LAST, name.last.to_string()))
}

/// Lists `cluster`'s snapshots and segments (every page of each). Each
/// page's object infos become entries before the next page is asked for:
/// what stays is an entry a segment (its name and six numbers), not its
/// info (sha256, metadata).
pub async fn list(store: &dyn ObjectStore, cluster: &str) -> Result<ArchiveListing, StoreError> {
    let snapshots = crate::snapshot::listing::list(store, cluster).await?;
    let mut listing = ArchiveListing {
        snapshots: snapshots
            .snapshots
            .iter()
            .filter_map(snapshot_point)
            .collect(),
        ..Default::default()
    };
    for_each_matching(
        store,
        &SegmentName::prefix(cluster),
        &|name: &str| SegmentName::parse(name).is_some(),
        |o| add(&mut listing, cluster, o),
    )
    .await?;
    Ok(listing)
}

/// Adds one listed object to the listing: a segment entry, or a foreign
/// object with why.
fn add(listing: &mut ArchiveListing, cluster: &str, o: ObjectInfo) {
    let Some(name) = SegmentName::parse(&o.name) else {
        return;
    };
    if let Some(why) = not_this_clusters(cluster, &name, &o) {
        listing.foreign.push((o.name, why));
        return;
    }
    listing.segments.push(SegmentEntry {
        incarnation: name.incarnation,
        first: name.first,
        last: name.last,
        first_seen_unix_ms: number(&o, meta::FIRST_SEEN_UNIX_MS).unwrap_or(0),
        last_seen_unix_ms: number(&o, meta::LAST_SEEN_UNIX_MS).unwrap_or(0),
        size: o.size,
        name: o.name,
    });
}

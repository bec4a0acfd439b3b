//! Object stores: where snapshots and the record of truth
//! (`incarnations/<n>`) live. One dyn-safe trait ([`ObjectStore`], held as
//! `Arc<dyn ObjectStore>`), built by one factory ([`from_config`]); the
//! directory store ([`dir`]), the S3 store ([`s3`]), the Google Cloud
//! Storage and Azure Blob stores ([`cloud`]) and an in-memory store
//! for tests ([`memory`]) implement it, and one contract suite
//! ([`contract`]) runs over each. Nothing outside this module names a
//! concrete store.
//!
//! Guarantees every store gives:
//! - an object is visible only once it is complete (half-written objects are
//!   never listed or read);
//! - `put` streams: memory stays flat whatever the object's size, and the
//!   sha256 is computed on the way and returned;
//! - `list` is paginated and callers must follow every page
//!   ([`list_all`] does); any error is an error, never an empty listing;
//!   objects the store did not commit (foreign or half-written) are
//!   skipped, never deleted;
//! - `create_if_absent` is atomic: of several concurrent creators of one
//!   name, exactly one wins and the others read the winner's content —
//!   where the store can prove it ([`ObjectStore::check_at_start`]; an S3
//!   endpoint may ignore `If-None-Match`).

pub mod cloud;
#[doc(hidden)]
pub mod cluster_version;
pub mod contract;
pub mod dir;
pub mod json_object;
pub mod measured;
pub mod memory;
pub mod metrics;
pub mod pause;
pub mod record;
pub mod s3;
mod skipped;

pub(crate) use skipped::Skipped;

use crate::config::{Config, SnapshotStoreKind};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::io::AsyncRead;

/// Facts about one stored object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ObjectInfo {
    pub name: String,
    pub size: u64,
    /// Hex sha256 of the content.
    pub sha256: String,
    /// Free-form metadata given at `put`.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// One page of a listing.
#[derive(Clone, Debug, Default)]
pub struct ListPage {
    pub objects: Vec<ObjectInfo>,
    /// Pass to the next `list` call; `None` on the last page.
    pub next: Option<String>,
}

/// Outcome of a conditional create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    /// The name existed: its content, which wins.
    AlreadyExists(Vec<u8>),
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("object {0:?} does not exist")]
    NotFound(String),
    #[error("object name {0:?} is not allowed: {1}")]
    BadName(String, &'static str),
    #[error("store I/O on {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("store metadata of {name:?} is unreadable: {message}")]
    Metadata { name: String, message: String },
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
}

/// Whether a store's conditional create is atomic, as proven at start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionalCreate {
    /// A second create of an existing name is refused.
    Honoured,
    /// The store overwrote an existing object on a conditional create (an
    /// S3-compatible endpoint that ignores `If-None-Match: *`), or let
    /// several concurrent creators of one name win (one that checks the
    /// header and then writes): two instances could both "win" a record,
    /// so nothing that relies on the record of truth (quorum-loss
    /// recovery) may run on it.
    Ignored,
}

/// A reader over an object's content.
pub type ObjectReader = Box<dyn AsyncRead + Send + Unpin>;

/// An object store. Dyn-safe; every future is `Send`.
#[async_trait::async_trait]
pub trait ObjectStore: Send + Sync {
    /// Where the store is, for logs and errors (`dir:/var/lib/eco/store`).
    fn describe(&self) -> String;

    /// Stores `content` under `name`, replacing any object of that name once
    /// complete. Returns the stored object's info, sha256 included.
    async fn put(
        &self,
        name: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
        metadata: BTreeMap<String, String>,
    ) -> Result<ObjectInfo, StoreError>;

    /// Opens an object for reading.
    async fn get(&self, name: &str) -> Result<(ObjectInfo, ObjectReader), StoreError>;

    /// Info of one object, `None` when it does not exist.
    async fn head(&self, name: &str) -> Result<Option<ObjectInfo>, StoreError>;

    /// One page of the objects whose name starts with `prefix`, in name order.
    async fn list(&self, prefix: &str, after: Option<&str>) -> Result<ListPage, StoreError>;

    /// [`list`](Self::list), keeping only the objects whose names `wanted`
    /// accepts, and reading the info of no other: a store whose listing
    /// reads each object's info with a request of its own (S3: a
    /// `HeadObject`) makes none for names the caller would drop, so junk
    /// under a prefix costs nothing. A page may hold fewer objects than
    /// the page size (even none) while `next` says more follow.
    async fn list_matching(
        &self,
        prefix: &str,
        after: Option<&str>,
        wanted: &NameFilter,
    ) -> Result<ListPage, StoreError>;

    /// Deletes an object; deleting a missing object is not an error.
    async fn delete(&self, name: &str) -> Result<(), StoreError>;

    /// Creates `name` with `content` only if no object of that name exists.
    async fn create_if_absent(
        &self,
        name: &str,
        content: &[u8],
    ) -> Result<CreateOutcome, StoreError>;

    /// Why `name` is not an object although something of that name is in
    /// the store, uncommitted (the directory store: a file without its
    /// info file; S3: an object without eco's sha256 or its marker; GCS,
    /// Azure: a content without its info object);
    /// `None` when nothing is there or the object is committed. Such a
    /// thing is never read or listed (a crash leftover, or put there by
    /// something else); a caller that expects an object there asks, to
    /// say so instead of silently finding nothing. Stores that cannot hold
    /// one (memory) answer `None`.
    async fn uncommitted(&self, name: &str) -> Result<Option<String>, StoreError>;

    /// Checks, once at start, that the store is usable and whether its
    /// conditional create is honoured, and sweeps what interrupted writes
    /// left a day ago. Stores whose conditional create cannot be ignored
    /// (directory, memory) answer `Honoured` (the directory store after
    /// its sweep of `.tmp-*` files); the S3 store proves the bucket
    /// reachable and writable, writes a probe object twice, makes bursts
    /// of concurrent creates and sweeps (see [`s3`]; the cloud stores alike,
    /// [`cloud`]). An error means the store is unusable (missing bucket,
    /// access denied, unreachable endpoint), with the cause in its message.
    async fn check_at_start(&self) -> Result<ConditionalCreate, StoreError> {
        Ok(ConditionalCreate::Honoured)
    }
}

/// The store the config names: `None` when `snapshot.store = "none"`. A
/// store that is configured but cannot be built is an error, never "no
/// store" (that would silently turn quorum-loss recovery off). Building
/// contacts nothing; call [`ObjectStore::check_at_start`] before relying
/// on the store.
pub async fn from_config(config: &Config) -> Result<Option<Arc<dyn ObjectStore>>, StoreError> {
    match config.snapshot.store {
        SnapshotStoreKind::None => Ok(None),
        SnapshotStoreKind::Dir => match &config.snapshot.dir {
            Some(d) => Ok(Some(Arc::new(dir::DirStore::new(d.path.clone())))),
            None => Err(StoreError::Unavailable(
                "snapshot.store = \"dir\" needs [snapshot.dir] path".into(),
            )),
        },
        SnapshotStoreKind::S3 => match &config.snapshot.s3 {
            Some(s3) => Ok(Some(Arc::new(
                s3::S3Store::connect(s3, &config.cluster.name).await?,
            ))),
            None => Err(StoreError::Unavailable(
                "snapshot.store = \"s3\" needs [snapshot.s3] bucket".into(),
            )),
        },
        SnapshotStoreKind::Gcs => match &config.snapshot.gcs {
            Some(gcs) => Ok(Some(Arc::new(cloud::gcs::connect(
                gcs,
                &config.cluster.name,
            )?))),
            None => Err(StoreError::Unavailable(
                "snapshot.store = \"gcs\" needs [snapshot.gcs] bucket".into(),
            )),
        },
        SnapshotStoreKind::Azure => match &config.snapshot.azure {
            Some(azure) => Ok(Some(Arc::new(cloud::azure::connect(
                azure,
                &config.cluster.name,
            )?))),
            None => Err(StoreError::Unavailable(
                "snapshot.store = \"azure\" needs [snapshot.azure] account and container".into(),
            )),
        },
    }
}

/// Which names a listing keeps ([`ObjectStore::list_matching`]).
pub type NameFilter = dyn Fn(&str) -> bool + Send + Sync;

/// Every object under `prefix`, following all pages.
pub async fn list_all(
    store: &dyn ObjectStore,
    prefix: &str,
) -> Result<Vec<ObjectInfo>, StoreError> {
    list_all_matching(store, prefix, &|_| true).await
}

/// Every object under `prefix` whose name `wanted` accepts, following all
/// pages; no other object's info is read.
pub async fn list_all_matching(
    store: &dyn ObjectStore,
    prefix: &str,
    wanted: &NameFilter,
) -> Result<Vec<ObjectInfo>, StoreError> {
    let mut all = Vec::new();
    for_each_matching(store, prefix, wanted, |o| all.push(o)).await?;
    Ok(all)
}

/// Gives every object under `prefix` whose name `wanted` accepts to `each`,
/// a page at a time: one page's infos are held at once, whatever the store
/// holds.
pub async fn for_each_matching(
    store: &dyn ObjectStore,
    prefix: &str,
    wanted: &NameFilter,
    mut each: impl FnMut(ObjectInfo),
) -> Result<(), StoreError> {
    let mut after: Option<String> = None;
    loop {
        let page = store
            .list_matching(prefix, after.as_deref(), wanted)
            .await?;
        page.objects.into_iter().for_each(&mut each);
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(()),
        }
    }
}

/// Records — the objects `create_if_absent` makes: incarnation records and
/// their voters (`<cluster>/incarnations/…`), the generated CA
/// (`<cluster>/pki/…`) — are never skipped by a listing and are read even
/// without the metadata a `put` writes (their info is computed from their
/// small content).
pub fn is_record_name(name: &str) -> bool {
    matches!(
        name.split('/').rev().nth(1),
        Some("incarnations") | Some("pki")
    )
}

/// Checks an object name ([`crate::base::names::check_object_name`]).
pub fn check_name(name: &str) -> Result<(), StoreError> {
    crate::base::names::check_object_name(name)
        .map_err(|why| StoreError::BadName(name.to_string(), why))
}

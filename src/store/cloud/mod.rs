//! The cloud stores — Google Cloud Storage (`snapshot.store = "gcs"`) and
//! Azure Blob Storage (`snapshot.store = "azure"`) — as one adapter,
//! [`CloudStore`], of eco's [`ObjectStore`] over the `object_store`
//! crate's (`Arc<dyn object_store::ObjectStore>`), built by a small
//! builder per cloud ([`gcs`], [`azure`]). Built for one cluster like the
//! S3 store: the object `<cluster>/…` is the key `<prefix>/<cluster>/…`
//! and a name outside the cluster is refused ([`layout`]).
//!
//! How each guarantee of [`ObjectStore`] is kept:
//! - **complete or invisible — the info object is the commit point.**
//!   `object_store`'s listings and heads return no user metadata (only a
//!   `get_opts` per object would, the cost of an info object's read), and
//!   fake-gcs-server keeps no attributes on the XML API, so eco's [`ObjectInfo`]
//!   (sha256, metadata) is kept as the directory store keeps it: a small
//!   JSON info object (`<prefix>/<cluster>/.info/<rest of the name>`)
//!   written after the content, naming the content's size and ETag
//!   ([`info`]). Content first, info second; an object is listed, headed
//!   and read only while its info names its content; deletes remove the
//!   info first. A content without its info (an interrupted put, or
//!   written by something else) is skipped by listings and never deleted;
//!   [`ObjectStore::uncommitted`] says why it is not an object. A put
//!   that replaces an object leaves it invisible between its two writes
//!   (the new content no longer matches the old info): a reader racing
//!   the re-put of a small object (the pause, the verification record)
//!   finds it uncommitted for the time of one small request, where the S3
//!   store's one `PutObject` has no such window.
//! - **streaming, flat memory**: a content smaller than `part_size` is one
//!   request; a larger one a multipart upload (GCS's XML multipart upload,
//!   Azure's blocks and block list) fed `part_size` at a time through
//!   `object_store`'s `WriteMultipart`, at most `parts_in_flight` parts
//!   uploading, the sha256 computed on the way; it becomes visible only
//!   when complete, and a failed one is aborted ([`upload`]).
//! - **listings**: the store's listing (in key order, resumed after the
//!   cursor), then one read of the info object per kept name,
//!   [`Tuning::infos_in_flight`] at a time, none for the names
//!   `list_matching` drops ([`read`]).
//! - **conditional create** (records): `PutMode::Create` (GCS
//!   `x-goog-if-generation-match: 0`, Azure `If-None-Match: *`); when the
//!   name exists, the winner's content is read and returned
//!   ([`conditional`]). Records carry no info object; their info is
//!   computed from their small content, as the S3 store does.
//! - **start check** ([`start`]): a listing proves the bucket or container
//!   reachable; a probe key created twice (the second must be refused),
//!   and when asked, bursts of concurrent creates of one probe key (one
//!   must win), prove the conditional create; leftovers a day old are
//!   swept ([`sweep`]).
//!
//! Every call is bounded: each attempt by the client's timeout
//! ([`CALL_TIMEOUT`]; `transfer_timeout` for a part, a small object's
//! upload and a download's first byte; a download that stalls for
//! [`CALL_TIMEOUT`] fails), attempts by `max_attempts` with
//! `object_store`'s back-off, and the whole of each call by an outer
//! timeout.
//!
//! What it does not do: create buckets or containers, resume an
//! interrupted upload, or verify a download's sha256 (restore does).

pub mod azure;
mod conditional;
mod errors;
pub mod gcs;
mod info;
mod layout;
mod read;
mod start;
mod sweep;
mod upload;

use super::{
    ConditionalCreate, CreateOutcome, ListPage, NameFilter, ObjectInfo, ObjectReader, ObjectStore,
    StoreError,
};
use crate::config::CloudTransfers;
use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncRead;

/// The bound of each attempt of a call that is not a transfer (a listing
/// page, an info object, a record, a delete, the start or completion of a
/// multipart upload), and of a download's stall.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The smallest part size (S3's and GCS's minimum, kept for Azure too).
pub const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;

/// The `object_store` clients of one store, each bounded differently.
struct Clients {
    /// Calls: each attempt bounded by [`CALL_TIMEOUT`].
    calls: Arc<dyn object_store::ObjectStore>,
    /// Uploads of contents: each attempt by `transfer_timeout`.
    uploads: Arc<dyn object_store::ObjectStore>,
    /// Downloads: connecting by [`CALL_TIMEOUT`], a stall by
    /// [`CALL_TIMEOUT`], the whole not at all (a snapshot may be large).
    downloads: Arc<dyn object_store::ObjectStore>,
    /// `gs://bucket/<prefix>/<cluster>`, for messages.
    describe: String,
    /// The outer bound of a call.
    call_limit: Duration,
    /// The outer bound of a transfer's part or first byte.
    transfer_limit: Duration,
}

/// Sizes the store works with; the defaults come from the config.
/// Test-only knobs (smaller pages) are set through
/// [`CloudStore::with_tuning`].
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct Tuning {
    /// Bytes per uploaded part (and per buffer).
    pub part_size: usize,
    /// Parts uploading at once.
    pub parts_in_flight: usize,
    /// Keys per listing page.
    pub page_size: usize,
    /// Info objects read at once in a listing.
    pub infos_in_flight: usize,
    /// Bursts of concurrent conditional creates of one probe key in
    /// `check_at_start` (0: the sequential probe only).
    pub probe_bursts: usize,
}

/// A Google Cloud Storage bucket or an Azure Blob container, for one
/// cluster.
pub struct CloudStore {
    clients: Arc<Clients>,
    layout: layout::Layout,
    tuning: Tuning,
    /// Objects whose unreadable info was already reported.
    warned: crate::store::Skipped,
}

/// Builds one `object_store` client with these options.
type MakeClient<'a> = dyn Fn(ClientOptions, RetryConfig) -> Result<Arc<dyn object_store::ObjectStore>, StoreError>
    + 'a;

impl CloudStore {
    /// The store over the clients `make` builds (one per kind of call),
    /// with `scheme://container` naming it.
    fn connect(
        location: String,
        prefix: &str,
        cluster: &str,
        transfers: &CloudTransfers,
        allow_http: bool,
        make: &MakeClient<'_>,
    ) -> Result<Self, StoreError> {
        let attempts = transfers.max_attempts.max(1);
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: attempts as usize - 1,
            retry_timeout: Duration::from_secs(120),
        };
        let transfer_timeout = transfers.transfer_timeout.get();
        let base = ClientOptions::new()
            .with_allow_http(allow_http)
            .with_connect_timeout(CALL_TIMEOUT);
        let calls = make(base.clone().with_timeout(CALL_TIMEOUT), retry.clone())?;
        let uploads = make(base.clone().with_timeout(transfer_timeout), retry.clone())?;
        let downloads = make(
            base.with_timeout_disabled().with_read_timeout(CALL_TIMEOUT),
            retry,
        )?;
        let layout = layout::Layout::new(prefix, cluster);
        // Each attempt, its back-off (at most 15 s), and a margin.
        let whole = |each: Duration| (each + Duration::from_secs(15)) * attempts;
        let part_size = transfers
            .part_size
            .clamp(MIN_PART_SIZE, 5 * 1024 * 1024 * 1024);
        Ok(Self {
            clients: Arc::new(Clients {
                calls,
                uploads,
                downloads,
                describe: format!("{location}/{}", layout.cluster_root()),
                call_limit: whole(CALL_TIMEOUT),
                transfer_limit: whole(transfer_timeout),
            }),
            layout,
            tuning: Tuning {
                part_size: usize::try_from(part_size).unwrap_or(usize::MAX),
                parts_in_flight: transfers.parts_in_flight.max(1) as usize,
                page_size: 1000,
                infos_in_flight: 8,
                probe_bursts: 0,
            },
            warned: Default::default(),
        })
    }

    /// Adds `bursts` bursts of concurrent conditional creates to the start
    /// check (`eco config check --probe-store`).
    pub fn with_concurrent_probes(mut self, bursts: usize) -> Self {
        self.tuning.probe_bursts = bursts;
        self
    }

    /// Changes the sizes the store works with (tests).
    #[doc(hidden)]
    pub fn with_tuning(mut self, tune: impl FnOnce(&mut Tuning)) -> Self {
        tune(&mut self.tuning);
        self
    }

    /// Removes what interrupted puts and probes left behind, older than
    /// `older_than`: probe keys, and info objects whose content is gone.
    /// A content without its info is never removed (it may be the only
    /// copy of something, or another tool's). Returns how many were
    /// removed.
    pub async fn sweep_leftovers(&self, older_than: Duration) -> Result<usize, StoreError> {
        sweep::sweep(self, older_than).await
    }

    /// Logs, once per object, that a listing skips it for its info.
    fn warn_once(&self, name: &str, message: &str) {
        if self.warned.first_time(name) {
            tracing::warn!(object = %name, error = %message, "skipping a store object whose info is unreadable (it is not listed)");
        }
    }
}

#[async_trait::async_trait]
impl ObjectStore for CloudStore {
    fn describe(&self) -> String {
        self.clients.describe.clone()
    }

    async fn put(
        &self,
        name: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
        metadata: BTreeMap<String, String>,
    ) -> Result<ObjectInfo, StoreError> {
        upload::put(self, name, content, metadata).await
    }

    async fn get(&self, name: &str) -> Result<(ObjectInfo, ObjectReader), StoreError> {
        read::get(self, name).await
    }

    async fn head(&self, name: &str) -> Result<Option<ObjectInfo>, StoreError> {
        read::head(self, &self.layout.locate(name)?).await
    }

    async fn list(&self, prefix: &str, after: Option<&str>) -> Result<ListPage, StoreError> {
        read::list(self, prefix, after, &|_| true).await
    }

    async fn list_matching(
        &self,
        prefix: &str,
        after: Option<&str>,
        wanted: &NameFilter,
    ) -> Result<ListPage, StoreError> {
        read::list(self, prefix, after, wanted).await
    }

    async fn uncommitted(&self, name: &str) -> Result<Option<String>, StoreError> {
        read::uncommitted(self, &self.layout.locate(name)?).await
    }

    /// The info first: once it is gone the object is no longer one of the
    /// store, whatever happens to the delete of its content.
    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        let object = self.layout.locate(name)?;
        self.clients
            .delete(&object.info, "deleting the info object of")
            .await?;
        self.clients.delete(&object.key, "deleting").await
    }

    async fn create_if_absent(
        &self,
        name: &str,
        content: &[u8],
    ) -> Result<CreateOutcome, StoreError> {
        conditional::create_if_absent(self, name, content).await
    }

    /// Proves the bucket or container reachable and writable, and that a
    /// second create of one name is refused; sweeps leftovers a day old.
    async fn check_at_start(&self) -> Result<ConditionalCreate, StoreError> {
        start::check_at_start(self).await
    }
}

impl Clients {
    /// Deletes a key; a missing key is not an error.
    async fn delete(&self, key: &object_store::path::Path, op: &str) -> Result<(), StoreError> {
        let shown = key.as_ref();
        errors::bounded(self.call_limit, &self.describe, op, shown, async {
            errors::absent_or(
                object_store::ObjectStoreExt::delete(&*self.calls, key).await,
                &self.describe,
                op,
                shown,
            )
            .map(|_| ())
        })
        .await
    }

    /// The whole of a small object (`None` when it does not exist); one
    /// larger than `limit` is an error.
    async fn read_small(
        &self,
        key: &object_store::path::Path,
        limit: u64,
        op: &str,
    ) -> Result<Option<(object_store::ObjectMeta, bytes::Bytes)>, StoreError> {
        let shown = key.as_ref();
        errors::bounded(self.call_limit, &self.describe, op, shown, async {
            let Some(got) = errors::absent_or(
                object_store::ObjectStoreExt::get(&*self.calls, key).await,
                &self.describe,
                op,
                shown,
            )?
            else {
                return Ok(None);
            };
            if got.meta.size > limit {
                return Err(StoreError::Unavailable(format!(
                    "{}: {op} {shown}: {} bytes, more than the {limit} it can hold",
                    self.describe, got.meta.size
                )));
            }
            let meta = got.meta.clone();
            match got.bytes().await {
                Ok(bytes) => Ok(Some((meta, bytes))),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(errors::failed(&self.describe, op, shown, &e)),
            }
        })
        .await
    }

    /// The facts of a key (`None` when it does not exist).
    async fn head(
        &self,
        key: &object_store::path::Path,
        op: &str,
    ) -> Result<Option<object_store::ObjectMeta>, StoreError> {
        let shown = key.as_ref();
        errors::bounded(self.call_limit, &self.describe, op, shown, async {
            errors::absent_or(
                object_store::ObjectStoreExt::head(&*self.calls, key).await,
                &self.describe,
                op,
                shown,
            )
        })
        .await
    }
}

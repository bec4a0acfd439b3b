//! The S3 store (`snapshot.store = "s3"`): objects in a bucket of AWS S3 or
//! of an S3-compatible store, through `aws-sdk-s3`. Built for one cluster:
//! the object `<cluster>/…` is the key `<prefix>/<cluster>/…`, and a name
//! outside the cluster is refused, so eco never lists, writes or deletes
//! anything else in the bucket (clusters may share one).
//!
//! How each guarantee of [`ObjectStore`] is kept:
//! - **complete or invisible**: a small object (less than `part_size`) is
//!   one `PutObject` with its sha256 in its metadata, which S3 applies
//!   whole. A larger one streams as a multipart upload straight to its
//!   key, with the caller's metadata (all known before the first byte) and
//!   `sha256-in: marker`; once complete it is committed by its **marker**,
//!   a zero-byte `<prefix>/<cluster>/.sha256/<rest of the name>` holding
//!   the sha256 and the object's ETag, written last (`commit.rs`). A
//!   multipart object is an object of the store only while its marker
//!   names its ETag; deletes remove the marker first. A failed upload is
//!   aborted; an object whose marker could not be written is deleted; what
//!   a crash leaves (unfinished uploads, complete objects without a marker,
//!   which listings skip) [`S3Store::sweep_leftovers`] (run by
//!   `check_at_start`) removes once a day old. Nothing is copied: the
//!   server-side copy this replaced cost as much as the upload
//!   (docs/benchmarks.md, M7 on S3).
//! - **streaming, flat memory**: the content is read in `part_size`
//!   buffers, hashed on the way, with at most `parts_in_flight` parts
//!   uploading while the next one is read: `parts_in_flight + 1` buffers
//!   at most (counted by [`S3Store::part_buffers`]).
//! - **listings**: `ListObjectsV2` under the prefix, one page per call
//!   (`StartAfter` is the trait's cursor), then a `HeadObject` per object
//!   (the listing has no user metadata) and one more per multipart object
//!   (its marker), [`Tuning::heads_in_flight`] objects at a time; with
//!   `list_matching`, only for the names the caller keeps (a snapshot
//!   listing: snapshot names), so junk under a prefix costs no request. Objects
//!   eco did not commit — hidden keys, keys that are not object names,
//!   objects without eco's sha256 metadata or without their marker — are
//!   skipped (logged at debug) and never deleted; records are never
//!   skipped (one without metadata is read, one that cannot be read fails
//!   the listing). Any failed page or head fails the listing.
//! - **conditional create**: `PutObject` with `If-None-Match: *`; a 412
//!   means the name exists, and its content is read and returned; a 409
//!   (`ConditionalRequestConflict`, concurrent conditional writes) is
//!   retried. An endpoint that ignores the header silently overwrites, and
//!   one that checks it and then writes (not atomically) lets concurrent
//!   creators all win: `check_at_start` writes a probe key twice (the
//!   second must be refused), then, when `eco config check --probe-store`
//!   asks for it (none at `eco run`'s start), ten bursts of eight
//!   concurrent creates of one key (one must win). Either
//!   failing reports [`ConditionalCreate::Ignored`]. The bursts can only
//!   prove an endpoint wrong, never right: AWS S3 documents the guarantee;
//!   moto and s3s-fs, the emulators of the tests, both check then write
//!   (s3s-fs is caught in most bursts, moto only now and then, under
//!   load).
//!
//! Every call is bounded: each attempt by [`CALL_TIMEOUT`] (`transfer_timeout`
//! for uploads and their completion, downloads' first byte), attempts by
//! `max_attempts` with the SDK's standard back-off (throttling included),
//! and a download that stalls (no byte for [`CALL_TIMEOUT`]) fails through
//! the SDK's stalled-stream protection. Credentials come from the SDK's
//! default chain; the region from `region` or that chain. Server-side
//! encryption (`encryption`, `kms_key_id`) is requested on every write.
//! The SDK's request checksums are only sent where S3 requires them (the
//! SigV4 payload hash already covers each request's body), which
//! S3-compatible stores that predate the SDK's default CRC32 trailers
//! accept; the parts of a multipart upload carry their CRC32 as a header
//! eco computes (S3 checks it; an emulator that is not asked for a
//! checksum computed a default one, slowly, at completion).
//!
//! What it does not do: SSE-C (customer keys), bucket creation or
//! configuration (lifecycle rules, versioning, object lock are the
//! operator's), resuming an interrupted upload (a failed put starts over),
//! or verifying a download's sha256 (the reader gets the bytes; restore
//! checks the sha256).

mod commit;
mod conditional;
mod errors;
mod keys;
mod read;
mod start;
mod sweep;
mod upload;

use super::{
    ConditionalCreate, CreateOutcome, ListPage, ObjectInfo, ObjectReader, ObjectStore, StoreError,
};
use crate::config::{S3Encryption, S3StoreConfig};
use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::{
    Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
    StalledStreamProtectionConfig,
};
use aws_sdk_s3::operation::get_object::GetObjectOutput;
use aws_sdk_s3::operation::head_object::HeadObjectOutput;
use aws_sdk_s3::types::ServerSideEncryption;
use errors::Failure;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncRead;

pub use upload::PartBuffers;

/// The S3 store of one cluster.
pub struct S3Store {
    conn: Arc<Conn>,
    layout: keys::Layout,
    tuning: Tuning,
    buffers: Arc<upload::Gauge>,
    /// Objects whose unreadable metadata was already reported.
    warned: crate::store::Skipped,
}

/// What every request needs, shared with the tasks a put or a listing
/// spawns.
struct Conn {
    /// Calls bounded by [`CALL_TIMEOUT`].
    calls: Client,
    /// Transfers bounded by `transfer_timeout`.
    transfers: Client,
    bucket: String,
    sse: Option<ServerSideEncryption>,
    kms_key_id: Option<String>,
}

/// Sizes the store works with; the defaults come from the config.
/// Test-only knobs (smaller parts and pages) are set through
/// [`S3Store::with_tuning`].
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct Tuning {
    /// Bytes per uploaded part (and per buffer).
    pub part_size: usize,
    /// Parts uploading at once.
    pub parts_in_flight: usize,
    /// Keys per listing page (`MaxKeys`); `None`: the endpoint's (1000).
    pub page_size: Option<i32>,
    /// `HeadObject` calls at once in a listing.
    pub heads_in_flight: usize,
    /// Bursts of concurrent conditional creates of one probe key in
    /// `check_at_start` (0: the sequential probe only).
    pub probe_bursts: usize,
}

/// The bound of each attempt of an S3 call that is not a transfer (a
/// listing page, a head, a small object, a delete, the start of a
/// multipart upload), and of a transfer's stall; the parts of a transfer
/// are bounded by `snapshot.s3.transfer_timeout`, the attempts by
/// `snapshot.s3.max_attempts`.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// S3 refuses parts smaller than this (except the last).
pub const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;
/// S3's largest part.
pub const MAX_PART_SIZE: u64 = 5 * 1024 * 1024 * 1024;

impl S3Store {
    /// The store of `cluster` in the configured bucket, with the SDK's
    /// default credentials. Contacts nothing (credentials are resolved on
    /// the first call); [`ObjectStore::check_at_start`] proves the bucket
    /// usable.
    pub async fn connect(config: &S3StoreConfig, cluster: &str) -> Result<Self, StoreError> {
        Self::connect_with(config, cluster, None).await
    }

    /// [`connect`](Self::connect) with explicit credentials (tests: the
    /// process environment is shared by parallel tests).
    #[doc(hidden)]
    pub async fn connect_with(
        config: &S3StoreConfig,
        cluster: &str,
        credentials: Option<Credentials>,
    ) -> Result<Self, StoreError> {
        let attempts = |timeout: Duration| {
            TimeoutConfig::builder()
                .connect_timeout(timeout)
                .operation_attempt_timeout(timeout)
                .build()
        };
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .timeout_config(attempts(CALL_TIMEOUT))
            .retry_config(RetryConfig::standard().with_max_attempts(config.max_attempts.max(1)));
        if let Some(region) = &config.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(credentials) = credentials {
            loader = loader.credentials_provider(credentials);
        }
        let sdk = loader.load().await;
        if sdk.region().is_none() {
            return Err(StoreError::Unavailable(format!(
                "s3://{}: no region: set snapshot.s3.region (or AWS_REGION, or run where the instance metadata service answers)",
                config.bucket
            )));
        }
        let mut s3 = aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(config.force_path_style)
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .stalled_stream_protection(
                StalledStreamProtectionConfig::enabled()
                    .grace_period(CALL_TIMEOUT)
                    .build(),
            );
        if let Some(endpoint) = &config.endpoint {
            s3 = s3.endpoint_url(endpoint);
        }
        let calls = Client::from_conf(s3.clone().build());
        let transfers = Client::from_conf(
            s3.timeout_config(attempts(config.transfer_timeout.get()))
                .build(),
        );
        let (sse, kms_key_id) = match config.encryption {
            S3Encryption::None => (None, None),
            S3Encryption::Aes256 => (Some(ServerSideEncryption::Aes256), None),
            S3Encryption::AwsKms => (
                Some(ServerSideEncryption::AwsKms),
                config.kms_key_id.clone(),
            ),
        };
        let part_size = config.part_size.clamp(MIN_PART_SIZE, MAX_PART_SIZE);
        Ok(Self {
            conn: Arc::new(Conn {
                calls,
                transfers,
                bucket: config.bucket.clone(),
                sse,
                kms_key_id,
            }),
            layout: keys::Layout::new(&config.prefix, cluster),
            tuning: Tuning {
                part_size: usize::try_from(part_size).unwrap_or(usize::MAX),
                parts_in_flight: config.parts_in_flight.max(1) as usize,
                page_size: None,
                heads_in_flight: 8,
                probe_bursts: 0,
            },
            buffers: Arc::default(),
            warned: Default::default(),
        })
    }

    /// Adds `bursts` bursts of concurrent conditional creates to the start
    /// check (`eco config check --probe-store`): none by default, since
    /// AWS S3 documents its conditional writes as atomic.
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

    /// The part buffers a put holds now, and the most it ever held.
    pub fn part_buffers(&self) -> PartBuffers {
        self.buffers.now()
    }

    /// Removes what crashed puts and probes left behind, older than
    /// `older_than` (younger ones may be another instance's put in
    /// progress): probe keys, unfinished multipart uploads under the
    /// cluster's prefix, and multipart objects of eco (`sha256-in:
    /// marker`) without a marker that names them, with any such marker.
    /// Nothing else is touched. Returns how many were removed.
    pub async fn sweep_leftovers(&self, older_than: Duration) -> Result<usize, StoreError> {
        sweep::sweep(self, older_than).await
    }
}

impl S3Store {
    /// Logs, once per object, that a listing skips it for its metadata.
    fn warn_once(&self, name: &str, message: &str) {
        if self.warned.first_time(name) {
            tracing::warn!(object = %name, error = %message, "skipping a store object whose metadata is unreadable (it is not listed)");
        }
    }
}

#[async_trait::async_trait]
impl ObjectStore for S3Store {
    fn describe(&self) -> String {
        self.layout.describe(&self.conn.bucket)
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
        read::head(self.conn.clone(), self.layout.locate(name)?).await
    }

    async fn list(&self, prefix: &str, after: Option<&str>) -> Result<ListPage, StoreError> {
        read::list(self, prefix, after, &|_| true).await
    }

    async fn list_matching(
        &self,
        prefix: &str,
        after: Option<&str>,
        wanted: &crate::store::NameFilter,
    ) -> Result<ListPage, StoreError> {
        read::list(self, prefix, after, wanted).await
    }

    async fn uncommitted(&self, name: &str) -> Result<Option<String>, StoreError> {
        read::uncommitted(self.conn.clone(), self.layout.locate(name)?).await
    }

    /// The marker first: once it is gone, a multipart object is no longer
    /// an object of the store, whatever happens to the delete of its
    /// content (a leftover the sweep removes).
    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        let object = self.layout.locate(name)?;
        self.conn
            .delete(&object.marker, "deleting the commit marker of")
            .await?;
        self.conn.delete(&object.key, "deleting").await
    }

    async fn create_if_absent(
        &self,
        name: &str,
        content: &[u8],
    ) -> Result<CreateOutcome, StoreError> {
        conditional::create_if_absent(self, name, content).await
    }

    /// Proves the bucket reachable and writable, and that the endpoint
    /// honours `If-None-Match: *`; sweeps leftovers a day old.
    async fn check_at_start(&self) -> Result<ConditionalCreate, StoreError> {
        start::check_at_start(self).await
    }
}

impl Conn {
    /// `HeadObject` of a key: `None` when it does not exist.
    async fn head_object(
        &self,
        key: &str,
        op: &str,
    ) -> Result<Option<HeadObjectOutput>, StoreError> {
        match self
            .calls
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(out)),
            Err(e) => errors::absent_or(Failure::of(&e), op, &self.bucket, key),
        }
    }

    /// `GetObject` of a key (bounded by `transfer_timeout`): `None` when it
    /// does not exist.
    async fn get_object(&self, key: &str, op: &str) -> Result<Option<GetObjectOutput>, StoreError> {
        match self
            .transfers
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(out)),
            Err(e) => errors::absent_or(Failure::of(&e), op, &self.bucket, key),
        }
    }

    /// Deletes a key; a missing key is not an error.
    async fn delete(&self, key: &str, op: &str) -> Result<(), StoreError> {
        match self
            .calls
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                errors::absent_or(Failure::of(&e), op, &self.bucket, key).map(|_: Option<()>| ())
            }
        }
    }
}

//! eco's configuration: one TOML file, strict.
//!
//! Every table rejects unknown keys (`deny_unknown_fields`), so a typo is an
//! error that names the key and the file instead of a setting silently
//! ignored. Defaults live here, next to the types; [`validate`] checks what
//! serde cannot (ranges, cross-key rules, provider-specific requirements) and
//! reports every problem with the key, what is wrong, and what is allowed.
//!
//! Relative paths in the file are resolved against the directory holding the
//! file, so a config can be moved together with its group file.

pub(crate) mod api_tls;
mod auth;
mod cloud_stores;
mod duration;
mod load;
mod removed_keys;
mod tls;
mod validate;

pub use api_tls::{ApiTlsConfig, ApiTlsFiles, KeyedPath};
pub use auth::{
    AuthConfig, KeyFamily, PermissionAccess, PermissionConfig, RoleConfig, SignMethod, TokenConfig,
    TokenKind, UserConfig, auth_token_flag, certificate_identity_possible, permission_range,
};
pub use cloud_stores::{AzureStoreConfig, CloudTransfers, GcsStoreConfig};
pub use duration::ConfigDuration;
pub use load::{ConfigError, load_file, parse_str};
pub use removed_keys::{REMOVED_KEYS, RemovedKey};
pub use tls::{
    EcoClientTls, EtcdTlsConfig, GeneratedTls, SurfaceTls, apply_default, generated_dir,
    plaintext_warning,
};
pub use validate::{Problem, validate};

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The whole configuration file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub cluster: ClusterConfig,
    pub provider: ProviderConfig,
    #[serde(default)]
    pub etcd: EtcdConfig,
    #[serde(default)]
    pub gossip: GossipConfig,
    #[serde(default)]
    pub snapshot: SnapshotConfig,
    #[serde(default)]
    pub recovery: RecoveryConfig,
    #[serde(default)]
    pub api: ApiConfig,
    #[serde(default)]
    pub log: LogConfig,
    /// `[auth]`: authentication inside etcd (off by default).
    #[serde(default, skip_serializing_if = "is_default")]
    pub auth: AuthConfig,
    /// `[upgrade]`: upgrades of eco itself (the cluster version). Not
    /// written out at its defaults: eco 0.1.0 refuses the table.
    #[serde(default, skip_serializing_if = "is_default")]
    pub upgrade: UpgradeConfig,
    /// `[archive]`: the change archive beside the snapshots. Not written
    /// out at its defaults: earlier releases refuse the table.
    #[serde(default, skip_serializing_if = "is_default")]
    pub archive: ArchiveConfig,
}

/// `[archive]`: every change etcd makes, stored in segments beside the
/// snapshots by the instance that writes them (on whenever a store is).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveConfig {
    /// `false`: snapshots only (a total loss costs everything since the
    /// newest one).
    #[serde(default = "defaults::archive_enabled")]
    pub enabled: bool,
    /// A segment is stored once its oldest change waited this long: about
    /// what a total loss costs.
    #[serde(default = "defaults::archive_interval")]
    pub interval: ConfigDuration,
    /// …or as soon as it holds this many bytes of changes.
    #[serde(default = "defaults::archive_max_segment_bytes")]
    pub max_segment_bytes: u64,
    /// zstd's compression level of segments (1 to 19).
    #[serde(default = "defaults::archive_compression_level")]
    pub compression_level: i32,
    /// Points in time are kept this long: a segment goes once a kept
    /// snapshot taken longer ago supersedes it.
    #[serde(default = "defaults::archive_keep_for")]
    pub keep_for: ConfigDuration,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        Self {
            enabled: defaults::archive_enabled(),
            interval: defaults::archive_interval(),
            max_segment_bytes: defaults::archive_max_segment_bytes(),
            compression_level: defaults::archive_compression_level(),
            keep_for: defaults::archive_keep_for(),
        }
    }
}

/// `[upgrade]`: when a group that runs a new release of eco switches to
/// its formats for good (`recovery::cluster_version`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpgradeConfig {
    /// Finalize by itself once every instance of the group has run the
    /// new release this long; until then any instance may go back to the
    /// previous release.
    #[serde(default = "defaults::finalize_after")]
    pub finalize_after: ConfigDuration,
    /// `false`: only `eco upgrade finalize` finalizes.
    #[serde(default = "defaults::auto_finalize")]
    pub auto_finalize: bool,
}

impl Default for UpgradeConfig {
    fn default() -> Self {
        Self {
            finalize_after: defaults::finalize_after(),
            auto_finalize: defaults::auto_finalize(),
        }
    }
}

/// `[cluster]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Name of the cluster. Part of the etcd cluster token, of snapshot names
    /// and of the gossip seal: two clusters must never share it.
    pub name: String,
}

/// `[provider]`: where the group of instances comes from.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// `[provider.static]`, required when `kind = "static"`.
    #[serde(rename = "static", default, skip_serializing_if = "Option::is_none")]
    pub static_group: Option<StaticProviderConfig>,
    /// `[provider.aws]`, optional when `kind = "aws"` (every key has a
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws: Option<AwsProviderConfig>,
    /// `[provider.statefulset]`, required when `kind = "statefulset"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statefulset: Option<StatefulSetProviderConfig>,
    /// How often the group is read again (the group file, the desired
    /// size, the Auto Scaling and EC2 APIs); default:
    /// [`ProviderConfig::refresh_interval`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<ConfigDuration>,
}

impl ProviderConfig {
    /// How often the group is read again: `provider.refresh_interval`,
    /// else 10 s on AWS (its APIs' request rates) and 5 s otherwise.
    pub fn refresh_interval(&self) -> ConfigDuration {
        self.refresh_interval.unwrap_or(match self.kind {
            ProviderKind::Aws => defaults::aws_group_refresh(),
            ProviderKind::Static | ProviderKind::Statefulset => defaults::group_refresh(),
        })
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A list of instances in a TOML file that is re-read on every refresh.
    Static,
    /// The EC2 auto-scaling group this instance belongs to (IMDSv2 for the
    /// identity, the Auto Scaling and EC2 APIs for the group).
    Aws,
    /// A Kubernetes StatefulSet: the pod's name and namespace from its
    /// environment, peers by their stable DNS names, the desired size from
    /// the config or a file (no Kubernetes API).
    Statefulset,
}

/// `[provider.aws]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AwsProviderConfig {
    /// The auto-scaling group; by default the one `DescribeAutoScalingInstances`
    /// reports for this instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_name: Option<String>,
    /// The region; by default the one the instance metadata service reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// One endpoint for both the Auto Scaling and EC2 APIs instead of
    /// AWS's (an emulator, or a proxy that serves both); AWS's own
    /// endpoints (VPC endpoints through private DNS) need no setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Attempts per call, the first included (each bounded at 10 s,
    /// `provider::aws::CALL_TIMEOUT`): the SDK retries throttling and
    /// transient errors with back-off.
    #[serde(default = "defaults::aws_max_attempts")]
    pub max_attempts: u32,
    /// How long eco works on a graceful leave (the termination lifecycle
    /// hook) before it lets the group continue regardless — within the
    /// hook's own global timeout.
    #[serde(default = "defaults::aws_leave_timeout")]
    pub leave_timeout: ConfigDuration,
}

/// `[provider.statefulset]`: this pod is `<set>-<ordinal>`; its peers are
/// `<set>-<i>.<service>.<namespace>.svc.<cluster_domain>` for every
/// ordinal below the desired size.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StatefulSetProviderConfig {
    /// The headless service that gives the pods their DNS names.
    pub service: String,
    /// The desired size (the StatefulSet's `replicas`). Exactly one of
    /// `replicas` and `replicas_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// A file holding the desired size, re-read every `provider.refresh_interval`
    /// (a ConfigMap mounted as a directory: a scale changes it in every
    /// running pod without a restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas_file: Option<PathBuf>,
    /// The StatefulSet's name; default: the pod's name without its
    /// `-<ordinal>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
    /// The pods' namespace; default: `POD_NAMESPACE`, else the service
    /// account's namespace file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default = "defaults::cluster_domain")]
    pub cluster_domain: String,
}

/// `[provider.static]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StaticProviderConfig {
    /// The group file: `[[instance]]` tables with `id`, `address`, `zone`.
    pub group_file: PathBuf,
    /// This instance's id in the group file, when neither `--instance-id`
    /// nor `ECO_INSTANCE_ID` gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
}

/// URL scheme for etcd's client or peer traffic (`http`, `https`): the
/// same type the peer-scheme decision reads.
pub use recovery::peer_scheme::PeerScheme as Scheme;

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AutoCompactionMode {
    Periodic,
    Revision,
}

impl AutoCompactionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AutoCompactionMode::Periodic => "periodic",
            AutoCompactionMode::Revision => "revision",
        }
    }
}

/// `[etcd]`: the supervised etcd process.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdConfig {
    /// Path of the `etcd` binary; when absent, `etcd` is looked up on `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_bin: Option<PathBuf>,
    /// Path of `etcdctl`; when absent, looked up next to `etcd`, then on `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcdctl_bin: Option<PathBuf>,
    /// Path of `etcdutl` (etcd ≥ 3.5); when absent, looked up next to `etcd`,
    /// then on `PATH`. Optional: without it restores use `etcdctl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcdutl_bin: Option<PathBuf>,
    /// etcd's data directory. eco's state file lives in its parent directory.
    #[serde(default = "defaults::data_dir")]
    pub data_dir: PathBuf,
    /// `[etcd.tls]`: TLS on the client and peer surfaces.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tls: EtcdTlsConfig,
    #[serde(default = "defaults::client_port")]
    pub client_port: u32,
    #[serde(default = "defaults::peer_port")]
    pub peer_port: u32,
    /// Port of etcd's `/metrics` and `/health` listener (plain HTTP).
    #[serde(default = "defaults::metrics_port")]
    pub metrics_port: u32,
    /// Port of etcd's HTTP endpoints of the client surface (`/health`,
    /// `/version`, the JSON gateway `/v3/…`), apart from gRPC on
    /// `client_port`, with the client surface's scheme
    /// (`--listen-client-http-urls`, etcd 3.5.8 and later): gRPC is then
    /// served by gRPC's own server. On one TLS port etcd 3.5 serves gRPC
    /// through Go's HTTP/2 server instead, slower (etcd warns "Running
    /// http and grpc server on single port. This is not recommended for
    /// production"). Equal to `client_port`: both on that port, as etcd
    /// before 3.5.8 always does.
    #[serde(
        default = "defaults::client_http_port",
        skip_serializing_if = "is_default_client_http_port"
    )]
    pub client_http_port: u32,
    /// `--quota-backend-bytes`.
    #[serde(default = "defaults::quota_backend_bytes")]
    pub quota_backend_bytes: u64,
    /// `[etcd.defrag]`: when eco defragments members (one at a time, the
    /// leader last); `NOSPACE` is handled whatever this says.
    #[serde(default)]
    pub defrag: DefragConfig,
    #[serde(default = "defaults::auto_compaction_mode")]
    pub auto_compaction_mode: AutoCompactionMode,
    /// A duration (`1h`) for `periodic`, a revision count (`10000`) for `revision`.
    #[serde(default = "defaults::auto_compaction_retention")]
    pub auto_compaction_retention: String,
    #[serde(default = "defaults::heartbeat_interval")]
    pub heartbeat_interval: ConfigDuration,
    #[serde(default = "defaults::election_timeout")]
    pub election_timeout: ConfigDuration,
    /// What clients are told to connect to (`--advertise-client-urls`), when
    /// not this instance's own client URL: a load balancer or a DNS name in
    /// front of the cluster. eco itself still asks every member at its own
    /// address (its peer URL's host, with the client surface's scheme and
    /// `client_port`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advertise_client_urls: Vec<String>,
    /// Extra command-line flags passed to etcd verbatim (`--flag=value`).
    /// Flags eco sets itself are refused.
    #[serde(default)]
    pub extra_flags: Vec<String>,
    /// Write etcd's output to this file instead of eco's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
    /// How long etcd gets to exit after SIGTERM before it is killed.
    #[serde(default = "defaults::stop_timeout")]
    pub stop_timeout: ConfigDuration,
    /// First delay before restarting a crashed etcd; doubles per crash.
    #[serde(default = "defaults::restart_backoff_initial")]
    pub restart_backoff_initial: ConfigDuration,
    /// Longest delay between restarts of a crashing etcd.
    #[serde(default = "defaults::restart_backoff_max")]
    pub restart_backoff_max: ConfigDuration,
    /// Timeout of every call eco makes to etcd.
    #[serde(default = "defaults::call_timeout")]
    pub call_timeout: ConfigDuration,
    /// How often the local etcd's health is probed.
    #[serde(default = "defaults::probe_interval")]
    pub probe_interval: ConfigDuration,
    /// The newest moved-aside data directories always kept (the live data
    /// directory is never deleted; older copies go only by age, see
    /// `keep_moved_aside_for`).
    #[serde(default = "defaults::keep_moved_aside")]
    pub keep_moved_aside: u32,
    /// Moved-aside data directories younger than this are never deleted,
    /// whatever their number (a loop that moves data aside every second
    /// cannot exhaust them); older ones beyond the newest
    /// `keep_moved_aside` are deleted, except the newest that holds etcd
    /// data, and only while the live data directory holds data again.
    #[serde(default = "defaults::keep_moved_aside_for")]
    pub keep_moved_aside_for: ConfigDuration,
}

/// `[etcd.defrag]`: a member is defragmented once its reclaimable space
/// (database size minus size in use) is at least `min_ratio` of its size
/// and at least `min_bytes` (`recovery::space`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DefragConfig {
    #[serde(default = "defaults::defrag_enabled")]
    pub enabled: bool,
    #[serde(default = "defaults::defrag_min_ratio")]
    pub min_ratio: f64,
    #[serde(default = "defaults::defrag_min_bytes")]
    pub min_bytes: u64,
    /// Longest a defragmentation of one member may take.
    #[serde(default = "defaults::defrag_timeout")]
    pub timeout: ConfigDuration,
}

impl Default for DefragConfig {
    fn default() -> Self {
        Self {
            enabled: defaults::defrag_enabled(),
            min_ratio: defaults::defrag_min_ratio(),
            min_bytes: defaults::defrag_min_bytes(),
            timeout: defaults::defrag_timeout(),
        }
    }
}

/// Left out of a written config at its default (the key is newer than
/// eco 0.2.0): a config the test kit writes for both releases stays one
/// the previous release reads.
fn is_default_client_http_port(port: &u32) -> bool {
    *port == defaults::client_http_port()
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl EtcdConfig {
    /// The scheme of the client surface: `https` when it has TLS (files
    /// or generated), else `http`.
    pub fn effective_client_scheme(&self) -> Scheme {
        if self.tls_files().client.is_some() {
            Scheme::Https
        } else {
            Scheme::Http
        }
    }

    /// The scheme of the peer surface: `https` when it has TLS, else
    /// `http`.
    pub fn effective_peer_scheme(&self) -> Scheme {
        if self.tls_files().peer.is_some() {
            Scheme::Https
        } else {
            Scheme::Http
        }
    }
}

/// `[gossip]`: eco's own membership between instances.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GossipConfig {
    /// Address and port of the gossip UDP socket. Default: the instance's
    /// address, port 7946.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<SocketAddr>,
    /// The port peers are reached on when `bind` is not set.
    #[serde(default = "defaults::gossip_port")]
    pub port: u32,
    /// File holding the 256-bit keys that seal gossip datagrams, one per line
    /// (64 hex digits); the first seals, every listed key opens. When absent,
    /// the `ECO_GOSSIP_KEYS` environment variable is read instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
}

/// Where snapshots go.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotStoreKind {
    /// No store configured.
    None,
    /// A directory (shared by every instance for the record of truth).
    Dir,
    /// An S3 bucket (or an S3-compatible store that honours
    /// `If-None-Match: *`).
    S3,
    /// A Google Cloud Storage bucket.
    Gcs,
    /// An Azure Blob Storage container.
    Azure,
}

/// `[snapshot]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotConfig {
    #[serde(default = "defaults::snapshot_store")]
    pub store: SnapshotStoreKind,
    /// `[snapshot.dir]`, required when `store = "dir"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<DirStoreConfig>,
    /// `[snapshot.s3]`, required when `store = "s3"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3StoreConfig>,
    /// `[snapshot.gcs]`, required when `store = "gcs"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcs: Option<GcsStoreConfig>,
    /// `[snapshot.azure]`, required when `store = "azure"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzureStoreConfig>,
    /// Take a snapshot this often when the revision advanced.
    #[serde(default = "defaults::snapshot_interval")]
    pub interval: ConfigDuration,
    /// Take a snapshot at least this often, even when nothing changed.
    #[serde(default = "defaults::snapshot_max_age")]
    pub max_age: ConfigDuration,
    /// Restore the newest snapshot into a throwaway etcd this often and
    /// check it against its record; `0s` turns verification off.
    #[serde(default = "defaults::snapshot_verify_interval")]
    pub verify_interval: ConfigDuration,
    /// Always keep this many newest snapshots (at least 1).
    #[serde(default = "defaults::keep_last")]
    pub keep_last: u32,
    /// Beyond `keep_last`, keep one snapshot per hour for this many hours.
    #[serde(default = "defaults::keep_hourly")]
    pub keep_hourly: u32,
    /// Beyond that, keep one snapshot per day for this many days.
    #[serde(default = "defaults::keep_daily")]
    pub keep_daily: u32,
    /// How snapshots are compressed (once the cluster writes format 3; see
    /// `recovery::cluster_version`). Not written out at its default:
    /// earlier releases refuse the key.
    #[serde(
        default = "defaults::snapshot_compression",
        skip_serializing_if = "SnapshotCompression::is_default"
    )]
    pub compression: SnapshotCompression,
    /// zstd's level (1 to 19).
    #[serde(
        default = "defaults::snapshot_compression_level",
        skip_serializing_if = "defaults::is_snapshot_compression_level"
    )]
    pub compression_level: i32,
    /// `[snapshot.encryption]`: client-side encryption of snapshots and
    /// the change archive's segments (off when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<SnapshotEncryptionConfig>,
}

/// `snapshot.compression`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotCompression {
    Zstd,
    None,
}

impl SnapshotCompression {
    pub fn is_default(&self) -> bool {
        *self == defaults::snapshot_compression()
    }
}

/// `[snapshot.encryption]`: age (age-encryption.org/v1) to X25519
/// recipients.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotEncryptionConfig {
    /// The public keys (`age1…`) snapshots and segments are encrypted to;
    /// any one's identity opens them.
    pub recipients: Vec<String>,
    /// A file of identities (`AGE-SECRET-KEY-1…`, as `age-keygen` writes
    /// it): on the instances that verify snapshots, seed a cluster from
    /// the store and run `eco restore`. Without it an instance writes but
    /// cannot read what it wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_file: Option<PathBuf>,
}

/// `[snapshot.dir]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DirStoreConfig {
    pub path: PathBuf,
}

/// Server-side encryption of the objects eco writes to S3.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub enum S3Encryption {
    /// No `x-amz-server-side-encryption` header (the bucket's default
    /// applies).
    #[serde(rename = "none")]
    None,
    /// SSE-S3.
    #[serde(rename = "AES256")]
    Aes256,
    /// SSE-KMS, with `kms_key_id` or the account's default key.
    #[serde(rename = "aws:kms")]
    AwsKms,
}

/// `[snapshot.s3]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct S3StoreConfig {
    pub bucket: String,
    /// Every object eco lists, writes or deletes is under
    /// `<prefix>/<cluster name>/`; clusters may share a bucket.
    #[serde(default = "defaults::s3_prefix")]
    pub prefix: String,
    /// The bucket's region; by default the SDK's (environment, profile, or
    /// the instance metadata service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// An S3-compatible endpoint (`http://127.0.0.1:9000`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Path-style addressing (`endpoint/bucket/key`), which most
    /// S3-compatible stores need.
    #[serde(default)]
    pub force_path_style: bool,
    #[serde(default = "defaults::s3_encryption")]
    pub encryption: S3Encryption,
    /// The KMS key for `encryption = "aws:kms"` (id, ARN or alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms_key_id: Option<String>,
    /// Size of the parts of a multipart upload (5 MiB to 5 GiB); memory
    /// used by an upload is about `part_size` × (`parts_in_flight` + 1).
    #[serde(default = "defaults::s3_part_size")]
    pub part_size: u64,
    #[serde(default = "defaults::s3_parts_in_flight")]
    pub parts_in_flight: u32,
    /// The bound of each attempt of a part upload or of a download's
    /// first byte.
    #[serde(default = "defaults::s3_transfer_timeout")]
    pub transfer_timeout: ConfigDuration,
    /// Attempts per call, the first included: throttling and transient
    /// errors are retried with exponential back-off.
    #[serde(default = "defaults::aws_max_attempts")]
    pub max_attempts: u32,
}

/// `[recovery]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryConfig {
    /// How long quorum must be lost before a reseed is considered. Never
    /// below 20 election timeouts.
    #[serde(default = "defaults::quorum_loss_timeout")]
    pub quorum_loss_timeout: ConfigDuration,
    /// A member unhealthy for longer than this on a live instance is removed
    /// so that its instance rejoins clean.
    #[serde(default = "defaults::unhealthy_member_ttl")]
    pub unhealthy_member_ttl: ConfigDuration,
    /// A learner not promoted within this time is removed and retried.
    #[serde(default = "defaults::learner_timeout")]
    pub learner_timeout: ConfigDuration,
    /// Off by default. When set, a quorum-loss recovery that has fenced a
    /// majority but still waits for a live member after this long proceeds
    /// without it, accepting possible loss of acknowledged writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_loss_after: Option<ConfigDuration>,
    /// Name of a snapshot in the store to seed a brand-new cluster from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_from: Option<String>,
    /// Off by default. When set, an instance whose member has been
    /// unusable this long while every other voter is healthy asks its
    /// provider to replace it (`recovery::self_replacement`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_unusable_after: Option<ConfigDuration>,
}

/// `[api]`: eco's local HTTP endpoint (health, readiness, metrics, status).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// Address and port. Default: the instance's address, port 2390.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<SocketAddr>,
    #[serde(default = "defaults::api_port")]
    pub port: u32,
    /// A second listener (e.g. `127.0.0.1:2391`) that alone serves
    /// `/status`; the main listener then answers `/status` with 404 and
    /// where it is served. Same TLS and limits as the main listener. When
    /// unset, the main listener serves `/status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_bind: Option<SocketAddr>,
    /// `[api.tls]`: the API over TLS (off by default).
    #[serde(default, skip_serializing_if = "is_default")]
    pub tls: ApiTlsConfig,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// `[log]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// `error`, `warn`, `info`, `debug`, `trace`, or a tracing filter such as
    /// `info,eco::supervisor=debug`. `RUST_LOG` overrides it.
    #[serde(default = "defaults::log_level")]
    pub level: String,
    #[serde(default = "defaults::log_format")]
    pub format: LogFormat,
}

/// Default values, one function per key (serde needs functions).
pub mod defaults {
    use super::*;

    pub fn finalize_after() -> ConfigDuration {
        ConfigDuration::from_secs(24 * 3600)
    }
    pub fn auto_finalize() -> bool {
        true
    }
    pub fn cluster_domain() -> String {
        "cluster.local".into()
    }
    pub fn group_refresh() -> ConfigDuration {
        ConfigDuration::from_secs(5)
    }
    pub fn data_dir() -> PathBuf {
        PathBuf::from("/var/lib/eco/etcd")
    }
    pub fn client_port() -> u32 {
        2379
    }
    pub fn peer_port() -> u32 {
        2380
    }
    pub fn metrics_port() -> u32 {
        2381
    }
    pub fn client_http_port() -> u32 {
        2382
    }
    pub fn defrag_enabled() -> bool {
        true
    }
    pub fn defrag_min_ratio() -> f64 {
        0.5
    }
    pub fn defrag_min_bytes() -> u64 {
        64 << 20
    }
    pub fn defrag_timeout() -> ConfigDuration {
        ConfigDuration::from_secs(300)
    }
    pub fn quota_backend_bytes() -> u64 {
        2 * 1024 * 1024 * 1024
    }
    pub fn archive_enabled() -> bool {
        true
    }
    pub fn archive_interval() -> ConfigDuration {
        ConfigDuration::from_secs(1)
    }
    pub fn archive_max_segment_bytes() -> u64 {
        4 << 20
    }
    pub fn archive_compression_level() -> i32 {
        3
    }
    pub fn archive_keep_for() -> ConfigDuration {
        ConfigDuration::from_secs(24 * 3600)
    }
    pub fn auto_compaction_mode() -> AutoCompactionMode {
        AutoCompactionMode::Periodic
    }
    pub fn auto_compaction_retention() -> String {
        "1h".to_string()
    }
    pub fn heartbeat_interval() -> ConfigDuration {
        ConfigDuration::from_millis(100)
    }
    pub fn election_timeout() -> ConfigDuration {
        ConfigDuration::from_millis(1000)
    }
    pub fn stop_timeout() -> ConfigDuration {
        ConfigDuration::from_secs(10)
    }
    pub fn restart_backoff_initial() -> ConfigDuration {
        ConfigDuration::from_millis(100)
    }
    pub fn restart_backoff_max() -> ConfigDuration {
        ConfigDuration::from_secs(30)
    }
    pub fn call_timeout() -> ConfigDuration {
        ConfigDuration::from_secs(5)
    }
    pub fn probe_interval() -> ConfigDuration {
        ConfigDuration::from_secs(1)
    }
    pub fn keep_moved_aside() -> u32 {
        3
    }
    pub fn keep_moved_aside_for() -> ConfigDuration {
        ConfigDuration::from_secs(7 * 24 * 3600)
    }
    pub fn aws_group_refresh() -> ConfigDuration {
        ConfigDuration::from_secs(10)
    }
    pub fn aws_max_attempts() -> u32 {
        4
    }
    pub fn aws_leave_timeout() -> ConfigDuration {
        ConfigDuration::from_secs(10 * 60)
    }
    pub fn s3_prefix() -> String {
        "eco".to_string()
    }
    pub fn s3_encryption() -> S3Encryption {
        S3Encryption::Aes256
    }
    pub fn s3_part_size() -> u64 {
        // The AWS CLI's default; with 2 in flight eco's peak RSS on a
        // 1 GiB snapshot is 51 MiB (docs/benchmarks.md), and 10 000 parts
        // still hold 78 GiB.
        8 * 1024 * 1024
    }
    pub fn s3_parts_in_flight() -> u32 {
        2
    }
    pub fn s3_transfer_timeout() -> ConfigDuration {
        ConfigDuration::from_secs(120)
    }
    pub fn gossip_port() -> u32 {
        7946
    }
    pub fn snapshot_store() -> SnapshotStoreKind {
        SnapshotStoreKind::None
    }
    pub fn snapshot_interval() -> ConfigDuration {
        ConfigDuration::from_secs(30 * 60)
    }
    pub fn snapshot_max_age() -> ConfigDuration {
        ConfigDuration::from_secs(24 * 3600)
    }
    pub fn snapshot_verify_interval() -> ConfigDuration {
        ConfigDuration::from_secs(24 * 3600)
    }
    pub fn keep_last() -> u32 {
        5
    }
    pub fn keep_hourly() -> u32 {
        24
    }
    pub fn keep_daily() -> u32 {
        7
    }
    pub fn snapshot_compression() -> SnapshotCompression {
        SnapshotCompression::Zstd
    }
    /// zstd's fastest level: on 1 GiB of Kubernetes-like objects it took
    /// 4.5 s to level 3's 5.4 s, compressing as well (docs/benchmarks.md).
    pub fn snapshot_compression_level() -> i32 {
        1
    }
    pub fn is_snapshot_compression_level(level: &i32) -> bool {
        *level == snapshot_compression_level()
    }
    pub fn quorum_loss_timeout() -> ConfigDuration {
        ConfigDuration::from_millis(recovery::fenced::DEFAULT_QUORUM_LOSS_TIMEOUT)
    }
    pub fn unhealthy_member_ttl() -> ConfigDuration {
        ConfigDuration::from_secs(5 * 60)
    }
    pub fn learner_timeout() -> ConfigDuration {
        ConfigDuration::from_secs(10 * 60)
    }
    pub fn api_port() -> u32 {
        2390
    }
    pub fn log_level() -> String {
        "info".to_string()
    }
    pub fn log_format() -> LogFormat {
        LogFormat::Text
    }
}

macro_rules! default_from_empty_table {
    ($($ty:ty),*) => {$(
        impl Default for $ty {
            fn default() -> Self {
                // Every field of these tables has a serde default, so an
                // empty table is the default value.
                match toml::from_str::<$ty>("") {
                    Ok(v) => v,
                    Err(e) => unreachable!("{} has a field without a default: {e}", stringify!($ty)),
                }
            }
        }
    )*};
}
default_from_empty_table!(
    AwsProviderConfig,
    EtcdConfig,
    GossipConfig,
    SnapshotConfig,
    RecoveryConfig,
    ApiConfig,
    LogConfig
);

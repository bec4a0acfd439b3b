//! One builder of eco config files for tests and simulations.
//!
//! The builder holds an [`eco::config::Config`] value, set field by field
//! through eco's own types, and writes it with `toml::to_string`: every
//! file it writes is one `eco config check` accepts (unless a test set an
//! invalid value on purpose), and a renamed key is a compile error here,
//! not a silently ignored line.
//!
//! [`ConfigBuilder::new`] starts from the fast timings the tests use, with
//! etcd in plaintext (a test about TLS sets it);
//! [`ConfigBuilder::eco_defaults`] from eco's own defaults (what a file
//! with only `[cluster]` and `[provider]` gives).

use anyhow::Context;
use eco::config::{
    ApiConfig, AwsProviderConfig, ClusterConfig, Config, ConfigDuration, DirStoreConfig,
    EtcdConfig, GossipConfig, LogConfig, ProviderConfig, ProviderKind, RecoveryConfig,
    S3StoreConfig, SnapshotConfig, SnapshotStoreKind, StatefulSetProviderConfig,
    StaticProviderConfig, defaults,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A config under construction; see the module docs.
#[derive(Clone, Debug)]
pub struct ConfigBuilder {
    config: Config,
}

fn d(duration: Duration) -> ConfigDuration {
    ConfigDuration(duration)
}

impl ConfigBuilder {
    /// Cluster `name`, static provider with `group_file`, and eco's
    /// defaults for everything else.
    pub fn eco_defaults(name: &str, group_file: impl Into<PathBuf>) -> Self {
        Self {
            config: Config {
                cluster: ClusterConfig { name: name.into() },
                provider: ProviderConfig {
                    kind: ProviderKind::Static,
                    static_group: Some(StaticProviderConfig {
                        group_file: group_file.into(),
                        instance_id: None,
                    }),
                    aws: None,
                    statefulset: None,
                    refresh_interval: None,
                },
                etcd: EtcdConfig::default(),
                gossip: GossipConfig::default(),
                snapshot: SnapshotConfig::default(),
                recovery: RecoveryConfig::default(),
                api: ApiConfig::default(),
                log: LogConfig::default(),
                auth: Default::default(),
                upgrade: Default::default(),
                archive: Default::default(),
            },
        }
    }

    /// The test defaults: cluster `name`, static provider with
    /// `group_file` re-read every 500 ms, etcd's data in `data/etcd`,
    /// heartbeat 50 ms, election 250 ms, probe every 200 ms, calls time
    /// out after 1 s, etcd gets 5 s to stop, quorum loss and unhealthy
    /// members are acted on after 5 s. The etcd binary is not set (see
    /// [`Self::etcd_bin_dir`]).
    pub fn new(name: &str, group_file: impl Into<PathBuf>) -> Self {
        Self::eco_defaults(name, group_file)
            // The tests that are about TLS say so; the others run plaintext.
            .plaintext()
            .refresh_interval(Duration::from_millis(500))
            .data_dir("data/etcd")
            .heartbeat_interval(Duration::from_millis(50))
            .election_timeout(Duration::from_millis(250))
            .probe_interval(Duration::from_millis(200))
            .call_timeout(Duration::from_secs(1))
            .stop_timeout(Duration::from_secs(5))
            .quorum_loss_timeout(Duration::from_secs(5))
            .unhealthy_member_ttl(Duration::from_secs(5))
    }

    /// `[auth]`: authentication inside etcd.
    pub fn auth(mut self, auth: eco::config::AuthConfig) -> Self {
        self.config.auth = auth;
        self
    }

    /// The config as it stands.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Any other change, on eco's types.
    pub fn edit(mut self, f: impl FnOnce(&mut Config)) -> Self {
        f(&mut self.config);
        self
    }

    fn static_group(&mut self) -> &mut StaticProviderConfig {
        self.config
            .provider
            .static_group
            .get_or_insert_with(|| StaticProviderConfig {
                group_file: PathBuf::new(),
                instance_id: None,
            })
    }

    pub fn group_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.static_group().group_file = path.into();
        self
    }

    /// How often the group is read again (`provider.refresh_interval`).
    pub fn refresh_interval(mut self, every: Duration) -> Self {
        self.config.provider.refresh_interval = Some(d(every));
        self
    }

    /// `etcd` in `dir` (the other tools are found next to it).
    pub fn etcd_bin_dir(self, dir: &Path) -> Self {
        self.etcd_bin(dir.join("etcd"))
    }

    pub fn etcd_bin(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.etcd.etcd_bin = Some(path.into());
        self
    }

    pub fn data_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.etcd.data_dir = path.into();
        self
    }

    pub fn heartbeat_interval(mut self, every: Duration) -> Self {
        self.config.etcd.heartbeat_interval = d(every);
        self
    }

    pub fn election_timeout(mut self, after: Duration) -> Self {
        self.config.etcd.election_timeout = d(after);
        self
    }

    pub fn probe_interval(mut self, every: Duration) -> Self {
        self.config.etcd.probe_interval = d(every);
        self
    }

    pub fn call_timeout(mut self, after: Duration) -> Self {
        self.config.etcd.call_timeout = d(after);
        self
    }

    pub fn stop_timeout(mut self, after: Duration) -> Self {
        self.config.etcd.stop_timeout = d(after);
        self
    }

    /// `[etcd.tls]`.
    /// `[etcd.tls] plaintext = true`: etcd's traffic in the clear on
    /// purpose (eco's default with a store is generated TLS).
    pub fn plaintext(mut self) -> Self {
        self.config.etcd.tls = eco::config::EtcdTlsConfig {
            plaintext: true,
            ..Default::default()
        };
        self
    }

    pub fn etcd_tls(mut self, tls: eco::config::EtcdTlsConfig) -> Self {
        self.config.etcd.tls = tls;
        self
    }

    /// `[api.tls]`: eco's HTTP API over TLS.
    pub fn api_tls(mut self, tls: eco::config::ApiTlsConfig) -> Self {
        self.config.api.tls = tls;
        self
    }

    /// `api.status_bind`: `/status` served only on this second listener.
    pub fn api_status_bind(mut self, addr: std::net::SocketAddr) -> Self {
        self.config.api.status_bind = Some(addr);
        self
    }

    /// The file with the group's gossip keys.
    pub fn gossip_key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.gossip.key_file = Some(path.into());
        self
    }

    /// Snapshots go to a directory store at `path`.
    pub fn dir_store(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.snapshot.store = SnapshotStoreKind::Dir;
        self.config.snapshot.dir = Some(DirStoreConfig { path: path.into() });
        self.config.snapshot.s3 = None;
        self
    }

    /// The AWS provider (instead of the static one) against `endpoint`
    /// (the emulator), the group read every `refresh`.
    pub fn aws_provider(mut self, endpoint: &str, refresh: Duration) -> Self {
        let p = &mut self.config.provider;
        p.kind = ProviderKind::Aws;
        p.static_group = None;
        p.refresh_interval = Some(d(refresh));
        p.aws = Some(AwsProviderConfig {
            endpoint: Some(endpoint.to_string()),
            max_attempts: 2,
            ..AwsProviderConfig::default()
        });
        self
    }

    /// Snapshots and records go to the S3 bucket `bucket` at `endpoint`
    /// (path style, no encryption header).
    /// The StatefulSet provider: pods of `service`, the desired size read
    /// from `replicas_file` every `refresh`.
    pub fn statefulset_provider(
        mut self,
        service: &str,
        replicas_file: impl Into<PathBuf>,
        refresh: Duration,
    ) -> Self {
        self.config.provider = ProviderConfig {
            kind: ProviderKind::Statefulset,
            static_group: None,
            aws: None,
            statefulset: Some(StatefulSetProviderConfig {
                service: service.into(),
                replicas: None,
                replicas_file: Some(replicas_file.into()),
                set: None,
                namespace: None,
                cluster_domain: defaults::cluster_domain(),
            }),
            refresh_interval: Some(d(refresh)),
        };
        self
    }

    pub fn s3_store(mut self, endpoint: &str, bucket: &str) -> Self {
        let mut s3: S3StoreConfig =
            toml::from_str(&format!("bucket = {bucket:?}")).expect("an S3 table with a bucket");
        s3.endpoint = Some(endpoint.to_string());
        s3.force_path_style = true;
        s3.region = Some("us-east-1".into());
        s3.encryption = eco::config::S3Encryption::None;
        s3.max_attempts = 2;
        self.config.snapshot.store = SnapshotStoreKind::S3;
        self.config.snapshot.dir = None;
        self.config.snapshot.s3 = Some(s3);
        self
    }

    /// `[snapshot.encryption]`: age to `recipients`; `identity_file` where
    /// snapshots are read.
    pub fn snapshot_encryption(
        mut self,
        recipients: &[String],
        identity_file: Option<&std::path::Path>,
    ) -> Self {
        self.config.snapshot.encryption = Some(eco::config::SnapshotEncryptionConfig {
            recipients: recipients.to_vec(),
            identity_file: identity_file.map(std::path::Path::to_path_buf),
        });
        self
    }

    /// An Azure Blob store (`[snapshot.azure]`) on an emulator's
    /// account endpoint, with the access key in `key_file`.
    pub fn azure_store(mut self, endpoint: &str, container: &str, key_file: &Path) -> Self {
        let azure: eco::config::AzureStoreConfig = toml::from_str(&format!(
            "account = \"devstoreaccount1\"\ncontainer = {container:?}\nendpoint = {endpoint:?}\nmax_attempts = 2\n"
        ))
        .expect("an Azure table");
        self.config.snapshot.store = SnapshotStoreKind::Azure;
        self.config.snapshot.dir = None;
        self.config.snapshot.azure = Some(eco::config::AzureStoreConfig {
            access_key_file: Some(key_file.to_path_buf()),
            ..azure
        });
        self
    }

    /// The GCS store on an emulator's `endpoint` (no credentials): in
    /// tests, fake-gcs-server behind [`crate::gcs_upload_shim`].
    pub fn gcs_store(mut self, endpoint: &str, bucket: &str) -> Self {
        let gcs: eco::config::GcsStoreConfig = toml::from_str(&format!(
            "bucket = {bucket:?}\nendpoint = {endpoint:?}\nunsigned = true\nmax_attempts = 2\n"
        ))
        .expect("a GCS table");
        self.config.snapshot.store = SnapshotStoreKind::Gcs;
        self.config.snapshot.dir = None;
        self.config.snapshot.gcs = Some(gcs);
        self
    }

    /// The change archive on or off (`archive.enabled`).
    pub fn archive(mut self, enabled: bool) -> Self {
        self.config.archive.enabled = enabled;
        self
    }

    pub fn snapshot_interval(mut self, every: Duration) -> Self {
        self.config.snapshot.interval = d(every);
        self
    }

    pub fn snapshot_verify_interval(mut self, every: Duration) -> Self {
        self.config.snapshot.verify_interval = d(every);
        self
    }

    pub fn snapshot_max_age(mut self, age: Duration) -> Self {
        self.config.snapshot.max_age = d(age);
        self
    }

    /// Retention: the newest `keep_last`, then one an hour for
    /// `keep_hourly` hours, then one a day for `keep_daily` days.
    pub fn retention(mut self, keep_last: u32, keep_hourly: u32, keep_daily: u32) -> Self {
        let s = &mut self.config.snapshot;
        s.keep_last = keep_last;
        s.keep_hourly = keep_hourly;
        s.keep_daily = keep_daily;
        self
    }

    pub fn quorum_loss_timeout(mut self, after: Duration) -> Self {
        self.config.recovery.quorum_loss_timeout = d(after);
        self
    }

    pub fn replace_unusable_after(mut self, after: Duration) -> Self {
        self.config.recovery.replace_unusable_after = Some(d(after));
        self
    }

    pub fn unhealthy_member_ttl(mut self, after: Duration) -> Self {
        self.config.recovery.unhealthy_member_ttl = d(after);
        self
    }

    pub fn learner_timeout(mut self, after: Duration) -> Self {
        self.config.recovery.learner_timeout = d(after);
        self
    }

    /// Seed a brand-new cluster from this snapshot of the store.
    /// Another cluster name (`cluster.name`).
    pub fn cluster_name(mut self, name: &str) -> Self {
        self.config.cluster.name = name.into();
        self
    }

    pub fn bootstrap_from(mut self, snapshot: &str) -> Self {
        self.config.recovery.bootstrap_from = Some(snapshot.into());
        self
    }

    pub fn log_level(mut self, level: &str) -> Self {
        self.config.log.level = level.into();
        self
    }

    /// The finished value.
    pub fn build(self) -> Config {
        self.config
    }

    /// The file's text.
    pub fn to_toml(&self) -> anyhow::Result<String> {
        toml::to_string(&self.config).context("serializing the eco config")
    }

    /// The file as a TOML table, for a test that adds a key eco does not
    /// know on purpose.
    pub fn to_table(&self) -> anyhow::Result<toml::Table> {
        toml::Table::try_from(&self.config).context("serializing the eco config")
    }

    /// Writes the file at `path` (atomically: a reader never sees half of
    /// it).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = self.to_toml()?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(b: &ConfigBuilder) -> Config {
        let text = b.to_toml().expect("serializes");
        eco::config::parse_str(&text, Path::new("/t/eco.toml"), Path::new("/t"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn test_defaults_round_trip_through_eco_config() {
        let c = parsed(
            &ConfigBuilder::new("it", "group.toml")
                .etcd_bin_dir(Path::new("/opt/etcd/bin"))
                .dir_store("store")
                .gossip_key_file("gossip.keys")
                .snapshot_interval(Duration::from_secs(10))
                .retention(2, 0, 0)
                .bootstrap_from("it/snapshots/x.db"),
        );
        assert_eq!(c.cluster.name, "it");
        let group = c.provider.static_group.clone().expect("static");
        assert_eq!(group.group_file, PathBuf::from("/t/group.toml"));
        assert_eq!(c.provider.refresh_interval(), d(Duration::from_millis(500)));
        assert_eq!(c.etcd.etcd_bin, Some(PathBuf::from("/opt/etcd/bin/etcd")));
        assert_eq!(c.etcd.data_dir, PathBuf::from("/t/data/etcd"));
        assert_eq!(c.etcd.heartbeat_interval.get(), Duration::from_millis(50));
        assert_eq!(c.etcd.election_timeout.get(), Duration::from_millis(250));
        assert_eq!(c.etcd.probe_interval.get(), Duration::from_millis(200));
        assert_eq!(c.etcd.call_timeout.get(), Duration::from_secs(1));
        assert_eq!(c.etcd.stop_timeout.get(), Duration::from_secs(5));
        assert_eq!(c.gossip.key_file, Some(PathBuf::from("/t/gossip.keys")));
        assert_eq!(c.snapshot.store, SnapshotStoreKind::Dir);
        assert_eq!(
            c.snapshot.dir.map(|d| d.path),
            Some(PathBuf::from("/t/store"))
        );
        assert_eq!(c.snapshot.interval.get(), Duration::from_secs(10));
        assert_eq!(
            (
                c.snapshot.keep_last,
                c.snapshot.keep_hourly,
                c.snapshot.keep_daily
            ),
            (2, 0, 0)
        );
        assert_eq!(c.recovery.quorum_loss_timeout.get(), Duration::from_secs(5));
        assert_eq!(
            c.recovery.unhealthy_member_ttl.get(),
            Duration::from_secs(5)
        );
        assert_eq!(
            c.recovery.bootstrap_from.as_deref(),
            Some("it/snapshots/x.db")
        );
    }

    #[test]
    fn eco_defaults_equal_a_minimal_file() {
        let minimal = "[cluster]\nname = \"c\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"g\"\n";
        let base = Path::new("/t");
        let from_text =
            eco::config::parse_str(minimal, Path::new("/t/eco.toml"), base).expect("minimal file");
        let built = parsed(&ConfigBuilder::eco_defaults("c", "g"));
        assert_eq!(format!("{from_text:?}"), format!("{built:?}"));
    }
}

//! Deriving etcd's command line from config and state. Pure: the same inputs
//! give the same flags, which is what the tests pin down.

use crate::config::{EtcdConfig, Scheme};
use std::net::IpAddr;
use std::path::PathBuf;

/// Whether etcd creates a new cluster or joins an existing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitialClusterState {
    New,
    Existing,
}

/// Everything that decides etcd's flags for one start.
#[derive(Clone, Debug)]
pub struct LaunchSpec {
    pub name: String,
    pub data_dir: PathBuf,
    pub address: IpAddr,
    /// `(member name, peer URL)` of every member etcd must know at start.
    pub initial_cluster: Vec<(String, String)>,
    pub initial_state: InitialClusterState,
    pub token: String,
}

/// `scheme://address:port`, with IPv6 addresses bracketed.
pub fn url(scheme: Scheme, address: IpAddr, port: u32) -> String {
    match address {
        IpAddr::V4(a) => format!("{}://{a}:{port}", scheme.as_str()),
        IpAddr::V6(a) => format!("{}://[{a}]:{port}", scheme.as_str()),
    }
}

/// Client URL of an instance at `address`.
pub fn client_url(config: &EtcdConfig, address: IpAddr) -> String {
    url(config.client_scheme, address, config.client_port)
}

/// Peer URL of an instance at `address`.
pub fn peer_url(config: &EtcdConfig, address: IpAddr) -> String {
    url(config.peer_scheme, address, config.peer_port)
}

/// The full argument list for etcd.
pub fn etcd_args(config: &EtcdConfig, spec: &LaunchSpec) -> Vec<String> {
    let client = client_url(config, spec.address);
    let peer = peer_url(config, spec.address);
    let metrics = url(Scheme::Http, spec.address, config.metrics_port);
    let initial_cluster = spec
        .initial_cluster
        .iter()
        .map(|(name, url)| format!("{name}={url}"))
        .collect::<Vec<_>>()
        .join(",");
    let state = match spec.initial_state {
        InitialClusterState::New => "new",
        InitialClusterState::Existing => "existing",
    };
    let mut args = vec![
        format!("--name={}", spec.name),
        format!("--data-dir={}", spec.data_dir.display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster={initial_cluster}"),
        format!("--initial-cluster-state={state}"),
        format!("--initial-cluster-token={}", spec.token),
        format!("--listen-metrics-urls={metrics}"),
        format!("--quota-backend-bytes={}", config.quota_backend_bytes),
        format!(
            "--auto-compaction-mode={}",
            config.auto_compaction_mode.as_str()
        ),
        format!(
            "--auto-compaction-retention={}",
            config.auto_compaction_retention.trim()
        ),
        format!(
            "--heartbeat-interval={}",
            config.heartbeat_interval.get().as_millis()
        ),
        format!(
            "--election-timeout={}",
            config.election_timeout.get().as_millis()
        ),
        "--logger=zap".to_string(),
        "--log-outputs=stderr".to_string(),
    ];
    args.extend(config.extra_flags.iter().cloned());
    args
}

/// The token passed to etcd for incarnation `incarnation` of `cluster`:
/// never etcd's default, and different for every seeding.
pub fn cluster_token(cluster: &str, incarnation: u64, random_suffix: u32) -> String {
    format!("{cluster}-{incarnation}-{random_suffix:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FLAGS_OWNED_BY_ECO;

    fn spec() -> LaunchSpec {
        LaunchSpec {
            name: "eco-1".into(),
            data_dir: "/var/lib/eco/etcd".into(),
            address: "127.0.0.11".parse().unwrap(),
            initial_cluster: vec![("eco-1".into(), "http://127.0.0.11:2380".into())],
            initial_state: InitialClusterState::New,
            token: cluster_token("c1", 1, 0xabc),
        }
    }

    #[test]
    fn derives_every_owned_flag_from_config_and_state() {
        let config = EtcdConfig {
            extra_flags: vec!["--snapshot-count=5000".into()],
            ..Default::default()
        };
        let args = etcd_args(&config, &spec());
        let has = |f: &str| args.iter().any(|a| a == f);
        assert!(has("--name=eco-1"));
        assert!(has("--data-dir=/var/lib/eco/etcd"));
        assert!(has("--listen-client-urls=http://127.0.0.11:2379"));
        assert!(has("--advertise-client-urls=http://127.0.0.11:2379"));
        assert!(has("--listen-peer-urls=http://127.0.0.11:2380"));
        assert!(has("--initial-cluster=eco-1=http://127.0.0.11:2380"));
        assert!(has("--initial-cluster-state=new"));
        assert!(has("--initial-cluster-token=c1-1-00000abc"));
        assert!(has("--listen-metrics-urls=http://127.0.0.11:2381"));
        assert!(has("--quota-backend-bytes=2147483648"));
        assert!(has("--auto-compaction-mode=periodic"));
        assert!(has("--auto-compaction-retention=1h"));
        assert!(has("--heartbeat-interval=100"));
        assert!(has("--election-timeout=1000"));
        assert_eq!(
            args.last().map(String::as_str),
            Some("--snapshot-count=5000")
        );
        // Every flag eco derives is one that extra_flags may not override.
        for a in &args[..args.len() - 1] {
            let name = a.trim_start_matches("--").split('=').next().unwrap();
            assert!(
                FLAGS_OWNED_BY_ECO.contains(&name),
                "{name} should be owned by eco"
            );
        }
    }

    #[test]
    fn schemes_come_from_config_and_ipv6_is_bracketed() {
        let config = EtcdConfig {
            peer_scheme: Scheme::Https,
            ..Default::default()
        };
        assert_eq!(
            peer_url(&config, "127.0.0.1".parse().unwrap()),
            "https://127.0.0.1:2380"
        );
        assert_eq!(
            client_url(&config, "::1".parse().unwrap()),
            "http://[::1]:2379"
        );
    }

    #[test]
    fn token_is_never_the_etcd_default() {
        let t = cluster_token("c1", 7, 1);
        assert_ne!(t, "etcd-cluster");
        assert_eq!(t, "c1-7-00000001");
    }
}

//! Every etcd command line eco runs, derived from config and state: the
//! supervised member ([`etcd_args`]) and the WAL replay's temporary member
//! ([`replay_args`]). Pure: the same inputs give the same flags, which is
//! what the tests pin down. Listeners bind the instance's bind address;
//! advertised URLs carry its host (an IP address or a DNS name). TLS
//! surfaces get etcd's certificate flags from `[etcd.tls]`.

use crate::config::{EtcdConfig, Scheme, SurfaceTls};
use crate::provider::Host;
use std::net::{IpAddr, Ipv4Addr};
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
    /// Where peers and clients reach this member (advertised URLs).
    pub host: Host,
    /// The address its listeners bind.
    pub bind: IpAddr,
    /// `(member name, peer URL)` of every member etcd must know at start.
    pub initial_cluster: Vec<(String, String)>,
    pub initial_state: InitialClusterState,
    pub token: String,
    /// `--auth-token` (`[auth.token]`, see `config::auth_token_flag`);
    /// `None`: etcd's default.
    pub auth_token: Option<String>,
    /// The scheme of the peer listener and advertised peer URL: the one
    /// the cluster records for this member (`recovery::peer_scheme`),
    /// which differs from the config's while TLS is being turned on.
    pub peer_scheme: Scheme,
    /// The release that will run: the flags only some releases accept
    /// (`recovery::etcd_flags::ECO_VERSIONED_FLAGS`) follow it.
    pub release: crate::etcd::binaries::EtcdVersion,
}

/// `scheme://host:port`, with IPv6 addresses bracketed.
pub fn url(scheme: Scheme, host: &Host, port: u32) -> String {
    format!("{}://{}:{port}", scheme.as_str(), host.authority())
}

/// Client URL of an instance at `host`.
pub fn client_url(config: &EtcdConfig, host: &Host) -> String {
    url(config.effective_client_scheme(), host, config.client_port)
}

/// The scheme of the client surface of a member whose peer listener
/// speaks `peer_scheme`: the config's, except while TLS is being turned on
/// for a running cluster and the others still dial this member over
/// `http` (`recovery::peer_scheme`) — then `http` too, so nothing on the
/// wire changes before the member's own switch (every instance, whatever
/// its config yet, still reaches it). etcd could serve both schemes on one
/// port, but 3.5.1 then answers plain gRPC with its TLS server.
pub fn client_scheme(config: &EtcdConfig, peer_scheme: Scheme) -> Scheme {
    SurfaceSchemes::of(config).client_for(peer_scheme)
}

/// The schemes a config wants on etcd's two surfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurfaceSchemes {
    pub client: Scheme,
    pub peer: Scheme,
}

impl SurfaceSchemes {
    pub fn of(config: &EtcdConfig) -> Self {
        Self {
            client: config.effective_client_scheme(),
            peer: config.effective_peer_scheme(),
        }
    }

    /// [`client_scheme`] of a member whose peer listener speaks
    /// `peer_scheme`.
    pub fn client_for(self, peer_scheme: Scheme) -> Scheme {
        if peer_scheme == Scheme::Http && self.peer == Scheme::Https {
            Scheme::Http
        } else {
            self.client
        }
    }
}

/// Peer URL of an instance at `host`.
pub fn peer_url(config: &EtcdConfig, host: &Host) -> String {
    url(config.effective_peer_scheme(), host, config.peer_port)
}

/// Whether etcd `release` serves the client surface's HTTP endpoints on
/// `etcd.client_http_port`, apart from gRPC (`--listen-client-http-urls`).
pub fn client_http_apart(config: &EtcdConfig, release: crate::etcd::binaries::EtcdVersion) -> bool {
    config.client_http_port != config.client_port
        && recovery::etcd_flags::eco_passes("listen-client-http-urls", release)
}

/// The full argument list for the supervised etcd.
pub fn etcd_args(config: &EtcdConfig, spec: &LaunchSpec) -> Vec<String> {
    let bind = Host::Ip(spec.bind);
    let client_scheme = client_scheme(config, spec.peer_scheme);
    let client = if config.advertise_client_urls.is_empty() {
        url(client_scheme, &spec.host, config.client_port)
    } else {
        config.advertise_client_urls.join(",")
    };
    let peer = url(spec.peer_scheme, &spec.host, config.peer_port);
    let listen_client = url(client_scheme, &bind, config.client_port);
    let listen_peer = url(spec.peer_scheme, &bind, config.peer_port);
    let metrics = url(Scheme::Http, &bind, config.metrics_port);
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
        format!("--listen-client-urls={listen_client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={listen_peer}"),
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
    if client_http_apart(config, spec.release) {
        let http = url(client_scheme, &bind, config.client_http_port);
        args.push(format!("--listen-client-http-urls={http}"));
    }
    let tls = config.tls_files();
    if let Some(tls) = &tls.client {
        args.extend(surface_flags("", tls));
    }
    if let Some(tls) = &tls.peer {
        args.extend(surface_flags("peer-", tls));
    }
    if let Some(token) = &spec.auth_token {
        args.push(format!("--auth-token={token}"));
    }
    args.extend(config.extra_flags.iter().cloned());
    args
}

/// etcd's flags of one TLS surface (`prefix` is `""` for the client
/// surface, `"peer-"` for the peer one).
fn surface_flags(prefix: &str, tls: &SurfaceTls) -> Vec<String> {
    vec![
        format!("--{prefix}cert-file={}", tls.cert_file.display()),
        format!("--{prefix}key-file={}", tls.key_file.display()),
        format!(
            "--{prefix}trusted-ca-file={}",
            tls.trusted_ca_file.display()
        ),
        format!("--{prefix}client-cert-auth={}", tls.client_cert_auth),
    ]
}

/// A WAL replay's temporary member: a copy of a stopped member's data
/// directory, started alone with `--force-new-cluster` on loopback ports
/// nobody else knows, so no old member can reach it. With client TLS it
/// serves the instance's client certificate on 127.0.0.1 (eco verifies it
/// under the instance's own name); its peer port has no peer and stays
/// plain.
#[derive(Clone, Debug)]
pub struct ReplaySpec {
    pub name: String,
    /// The copy of the data directory.
    pub data_dir: PathBuf,
    pub client_port: u16,
    pub peer_port: u16,
    /// The client surface's TLS (`etcd.tls.client`).
    pub client_tls: Option<SurfaceTls>,
}

impl ReplaySpec {
    /// Its client URL (on 127.0.0.1; `https` with client TLS).
    pub fn client_url(&self) -> String {
        let scheme = match self.client_tls {
            Some(_) => Scheme::Https,
            None => Scheme::Http,
        };
        url(scheme, &loopback(), self.client_port as u32)
    }
}

fn loopback() -> Host {
    Host::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The argument list of a WAL replay's temporary member.
pub fn replay_args(spec: &ReplaySpec) -> Vec<String> {
    let client = spec.client_url();
    let peer = url(Scheme::Http, &loopback(), spec.peer_port as u32);
    let mut args = vec![
        format!("--name={}", spec.name),
        format!("--data-dir={}", spec.data_dir.display()),
        "--force-new-cluster".to_string(),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster={}={peer}", spec.name),
        "--logger=zap".to_string(),
        "--log-outputs=stderr".to_string(),
    ];
    if let Some(tls) = &spec.client_tls {
        args.extend(surface_flags("", tls));
    }
    args
}

/// The argument list of a learner's data directory restarted as it was
/// (no `--force-new-cluster`, which etcd refuses on a learner's WAL:
/// "removed all voters") so that it applies its WAL up to the commit
/// index: every listener on `127.0.0.1` ports nobody else knows, in plain
/// http (nothing but eco's metrics read reaches it, on `metrics_port`);
/// it never serves clients (it has no leader).
pub fn apply_args(spec: &ReplaySpec, metrics_port: u16) -> Vec<String> {
    let client = url(Scheme::Http, &loopback(), spec.client_port as u32);
    let peer = url(Scheme::Http, &loopback(), spec.peer_port as u32);
    let metrics = url(Scheme::Http, &loopback(), metrics_port as u32);
    vec![
        format!("--name={}", spec.name),
        format!("--data-dir={}", spec.data_dir.display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--listen-metrics-urls={metrics}"),
        "--logger=zap".to_string(),
        "--log-outputs=stderr".to_string(),
    ]
}

/// A restored snapshot's throwaway member (the verified restore,
/// `snapshot/verify.rs`): the data `etcdutl snapshot restore` made for
/// `name` with the peer URL [`VerifySpec::peer_url`], alone on
/// 127.0.0.1 ports nobody else knows, plain http (eco alone asks it, for
/// its revision and HashKV).
#[derive(Clone, Debug)]
pub struct VerifySpec {
    pub name: String,
    pub data_dir: PathBuf,
    pub client_port: u16,
    pub peer_port: u16,
    /// `--unsafe-no-fsync` (etcd ≥ 3.5): the member's data is never
    /// served and is gone when it stops — a crash loses nothing a retry
    /// would not redo — so syncing its log at every write (one per
    /// replayed revision) only costs time.
    pub unsafe_no_fsync: bool,
}

impl VerifySpec {
    pub fn client_url(&self) -> String {
        url(Scheme::Http, &loopback(), self.client_port as u32)
    }

    pub fn peer_url(&self) -> String {
        url(Scheme::Http, &loopback(), self.peer_port as u32)
    }
}

/// The argument list of a verified restore's throwaway member.
pub fn verify_args(spec: &VerifySpec) -> Vec<String> {
    let client = spec.client_url();
    let peer = spec.peer_url();
    let mut args = vec![
        format!("--name={}", spec.name),
        format!("--data-dir={}", spec.data_dir.display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster={}={peer}", spec.name),
    ];
    if spec.unsafe_no_fsync {
        args.push("--unsafe-no-fsync".to_string());
    }
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
    use recovery::etcd_flags::owned_by_eco;

    fn spec() -> LaunchSpec {
        LaunchSpec {
            name: "eco-1".into(),
            data_dir: "/var/lib/eco/etcd".into(),
            host: Host::parse("127.0.0.11").unwrap(),
            bind: "127.0.0.11".parse().unwrap(),
            initial_cluster: vec![("eco-1".into(), "http://127.0.0.11:2380".into())],
            initial_state: InitialClusterState::New,
            token: cluster_token("c1", 1, 0xabc),
            auth_token: None,
            peer_scheme: Scheme::Http,
            release: crate::etcd::binaries::EtcdVersion::new(3, 5, 30),
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
            assert!(owned_by_eco(name), "{name} should be owned by eco");
        }
    }

    /// Every flag eco passes (its member's, with auth and TLS on both
    /// surfaces, and the surface flags) is one the version-keyed table
    /// says every supported release accepts.
    #[test]
    fn every_flag_eco_passes_is_in_the_version_keyed_table() {
        let mut spec = spec();
        spec.auth_token = Some("jwt,pub-key=/k.pub,priv-key=/k,sign-method=RS256".into());
        let mut args = etcd_args(&EtcdConfig::default(), &spec);
        args.extend(surface_flags("", &surface("client", true)));
        args.extend(surface_flags("peer-", &surface("peer", true)));
        args.push("--force-new-cluster".into());
        for a in &args {
            let name = recovery::etcd_flags::flag_name(a);
            assert!(
                recovery::etcd_flags::ECO_FLAGS.contains(&name)
                    || recovery::etcd_flags::ECO_VERSIONED_FLAGS.contains(&name),
                "--{name} is passed by eco but in neither recovery::etcd_flags::ECO_FLAGS nor ECO_VERSIONED_FLAGS"
            );
        }
    }

    /// etcd's HTTP endpoints of the client surface get their own port from
    /// etcd 3.5.8 on, with the client surface's scheme; not before, and not
    /// when the config puts them on the client port.
    #[test]
    fn http_apart_from_grpc_from_3_5_8_on() {
        let http_flag = |config: &EtcdConfig, spec: &LaunchSpec| {
            etcd_args(config, spec)
                .into_iter()
                .find(|a| a.starts_with("--listen-client-http-urls"))
        };
        let plain = EtcdConfig::default();
        assert_eq!(
            http_flag(&plain, &spec()).as_deref(),
            Some("--listen-client-http-urls=http://127.0.0.11:2382")
        );
        for release in [(3, 4, 23), (3, 5, 7)] {
            let old = LaunchSpec {
                release: crate::etcd::binaries::EtcdVersion::new(release.0, release.1, release.2),
                ..spec()
            };
            assert_eq!(http_flag(&plain, &old), None, "{release:?}");
        }
        let shared = EtcdConfig {
            client_http_port: plain.client_port,
            ..EtcdConfig::default()
        };
        assert_eq!(http_flag(&shared, &spec()), None);
        let mut tls = EtcdConfig::default();
        tls.tls.client = Some(surface("c", true));
        assert_eq!(
            http_flag(&tls, &spec()).as_deref(),
            Some("--listen-client-http-urls=https://127.0.0.11:2382")
        );
    }

    fn surface(dir: &str, client_cert_auth: bool) -> SurfaceTls {
        SurfaceTls {
            cert_file: format!("/{dir}/server.crt").into(),
            key_file: format!("/{dir}/server.key").into(),
            trusted_ca_file: format!("/{dir}/ca.crt").into(),
            client_cert_auth,
        }
    }

    #[test]
    fn tls_surfaces_map_to_etcds_flags_and_https() {
        let mut config = EtcdConfig::default();
        config.tls.client = Some(surface("c", true));
        config.tls.peer = Some(surface("p", false));
        let tls_spec = LaunchSpec {
            peer_scheme: Scheme::Https,
            ..spec()
        };
        let args = etcd_args(&config, &tls_spec);
        let has = |f: &str| args.iter().any(|a| a == f);
        for flag in [
            "--listen-client-urls=https://127.0.0.11:2379",
            "--advertise-client-urls=https://127.0.0.11:2379",
            "--listen-peer-urls=https://127.0.0.11:2380",
            "--initial-advertise-peer-urls=https://127.0.0.11:2380",
            "--cert-file=/c/server.crt",
            "--key-file=/c/server.key",
            "--trusted-ca-file=/c/ca.crt",
            "--client-cert-auth=true",
            "--peer-cert-file=/p/server.crt",
            "--peer-key-file=/p/server.key",
            "--peer-trusted-ca-file=/p/ca.crt",
            "--peer-client-cert-auth=false",
            // etcd's metrics listener stays plain (read by monitoring).
            "--listen-metrics-urls=http://127.0.0.11:2381",
        ] {
            assert!(has(flag), "{flag} missing from {args:?}");
        }
        for a in &args {
            let name = a.trim_start_matches("--").split('=').next().unwrap();
            assert!(owned_by_eco(name), "{name}");
        }
        let plain = etcd_args(&EtcdConfig::default(), &spec());
        assert!(!plain.iter().any(|a| a.contains("cert")), "{plain:?}");
    }

    /// While the cluster still dials this member over `http` (TLS being
    /// turned on), the peer listener keeps `http` with the TLS material
    /// loaded for dialing `https` peers, and the client port stays `http`.
    #[test]
    fn a_member_waiting_for_its_switch_keeps_http_with_its_tls_material_loaded() {
        let mut config = EtcdConfig::default();
        config.tls.client = Some(surface("c", true));
        config.tls.peer = Some(surface("p", true));
        let args = etcd_args(&config, &spec());
        let has = |f: &str| args.iter().any(|a| a == f);
        for flag in [
            "--listen-client-urls=http://127.0.0.11:2379",
            "--advertise-client-urls=http://127.0.0.11:2379",
            "--listen-peer-urls=http://127.0.0.11:2380",
            "--initial-advertise-peer-urls=http://127.0.0.11:2380",
            "--peer-cert-file=/p/server.crt",
            "--peer-trusted-ca-file=/p/ca.crt",
            "--cert-file=/c/server.crt",
        ] {
            assert!(has(flag), "{flag} missing from {args:?}");
        }
    }

    #[test]
    fn schemes_follow_the_surfaces_tls_and_ipv6_is_bracketed() {
        let mut config = EtcdConfig::default();
        config.tls.peer = Some(crate::config::SurfaceTls {
            cert_file: "/p/server.crt".into(),
            key_file: "/p/server.key".into(),
            trusted_ca_file: "/p/ca.crt".into(),
            client_cert_auth: true,
        });
        assert_eq!(
            peer_url(&config, &Host::parse("127.0.0.1").unwrap()),
            "https://127.0.0.1:2380"
        );
        assert_eq!(
            client_url(&config, &Host::parse("::1").unwrap()),
            "http://[::1]:2379"
        );
    }

    #[test]
    fn a_dns_host_is_advertised_and_every_address_bound() {
        let spec = LaunchSpec {
            host: Host::parse("eco-0.eco.ns.svc.cluster.local").unwrap(),
            bind: "0.0.0.0".parse().unwrap(),
            ..spec()
        };
        let args = etcd_args(&EtcdConfig::default(), &spec);
        let has = |f: &str| args.iter().any(|a| a == f);
        assert!(has("--listen-client-urls=http://0.0.0.0:2379"));
        assert!(has(
            "--advertise-client-urls=http://eco-0.eco.ns.svc.cluster.local:2379"
        ));
        assert!(has("--listen-peer-urls=http://0.0.0.0:2380"));
        assert!(has(
            "--initial-advertise-peer-urls=http://eco-0.eco.ns.svc.cluster.local:2380"
        ));
        assert!(has("--listen-metrics-urls=http://0.0.0.0:2381"));
    }

    #[test]
    fn a_verified_restore_runs_alone_on_loopback_in_plain_http() {
        let args = verify_args(&VerifySpec {
            name: "eco-verify".into(),
            data_dir: "/tmp/v/data".into(),
            client_port: 40011,
            peer_port: 40012,
            unsafe_no_fsync: false,
        });
        assert_eq!(
            args,
            [
                "--name=eco-verify",
                "--data-dir=/tmp/v/data",
                "--listen-client-urls=http://127.0.0.1:40011",
                "--advertise-client-urls=http://127.0.0.1:40011",
                "--listen-peer-urls=http://127.0.0.1:40012",
                "--initial-advertise-peer-urls=http://127.0.0.1:40012",
                "--initial-cluster=eco-verify=http://127.0.0.1:40012",
            ]
        );
        for a in &args {
            let name = a.trim_start_matches("--").split('=').next().unwrap();
            assert!(owned_by_eco(name), "{name}");
        }
    }

    #[test]
    fn a_throwaway_member_skips_fsync_only_when_asked() {
        let spec = |unsafe_no_fsync| VerifySpec {
            name: "eco-verify".into(),
            data_dir: "/tmp/v/data".into(),
            client_port: 40011,
            peer_port: 40012,
            unsafe_no_fsync,
        };
        let with = verify_args(&spec(true));
        assert_eq!(with.last().map(String::as_str), Some("--unsafe-no-fsync"));
        assert_eq!(with[..with.len() - 1], verify_args(&spec(false))[..]);
        assert!(
            !verify_args(&spec(false))
                .iter()
                .any(|a| a.contains("fsync"))
        );
    }

    #[test]
    fn a_replay_runs_alone_on_loopback_with_force_new_cluster() {
        let args = replay_args(&ReplaySpec {
            name: "eco-2".into(),
            data_dir: "/var/lib/eco/replay-3".into(),
            client_port: 40001,
            peer_port: 40002,
            client_tls: None,
        });
        assert_eq!(
            args,
            [
                "--name=eco-2",
                "--data-dir=/var/lib/eco/replay-3",
                "--force-new-cluster",
                "--listen-client-urls=http://127.0.0.1:40001",
                "--advertise-client-urls=http://127.0.0.1:40001",
                "--listen-peer-urls=http://127.0.0.1:40002",
                "--initial-advertise-peer-urls=http://127.0.0.1:40002",
                "--initial-cluster=eco-2=http://127.0.0.1:40002",
                "--logger=zap",
                "--log-outputs=stderr",
            ]
        );
        // Every flag the replay sets is one eco owns.
        for a in &args {
            let name = a.trim_start_matches("--").split('=').next().unwrap();
            assert!(owned_by_eco(name), "{name}");
        }
    }

    #[test]
    fn a_replay_with_client_tls_serves_it_on_loopback() {
        let spec = ReplaySpec {
            name: "eco-2".into(),
            data_dir: "/r".into(),
            client_port: 40001,
            peer_port: 40002,
            client_tls: Some(surface("c", true)),
        };
        assert_eq!(spec.client_url(), "https://127.0.0.1:40001");
        let args = replay_args(&spec);
        let has = |f: &str| args.iter().any(|a| a == f);
        assert!(has("--listen-client-urls=https://127.0.0.1:40001"));
        assert!(has("--listen-peer-urls=http://127.0.0.1:40002"));
        assert!(has("--cert-file=/c/server.crt"));
        assert!(has("--client-cert-auth=true"));
    }

    #[test]
    fn token_is_never_the_etcd_default() {
        let t = cluster_token("c1", 7, 1);
        assert_ne!(t, "etcd-cluster");
        assert_eq!(t, "c1-7-00000001");
    }

    #[test]
    fn a_jwt_auth_token_is_one_flag_eco_owns() {
        use crate::config::{ConfigDuration, SignMethod, TokenConfig, TokenKind, auth_token_flag};
        assert_eq!(
            auth_token_flag(&TokenConfig::default()),
            None,
            "simple: etcd's default, no flag"
        );
        let jwt = TokenConfig {
            kind: TokenKind::Jwt,
            sign_method: Some(SignMethod::ES256),
            public_key_file: Some("/k/jwt.pub".into()),
            private_key_file: Some("/k/jwt.key".into()),
            ttl: Some(ConfigDuration::from_secs(600)),
        };
        let with_jwt = LaunchSpec {
            auth_token: auth_token_flag(&jwt),
            ..spec()
        };
        let args = etcd_args(&EtcdConfig::default(), &with_jwt);
        let flags: Vec<&String> = args
            .iter()
            .filter(|a| a.starts_with("--auth-token"))
            .collect();
        assert_eq!(
            flags,
            ["--auth-token=jwt,pub-key=/k/jwt.pub,priv-key=/k/jwt.key,sign-method=ES256,ttl=600s"]
        );
        assert!(owned_by_eco("auth-token"));
        let subsecond = TokenConfig {
            ttl: Some(ConfigDuration::from_millis(1500)),
            ..jwt
        };
        assert!(
            auth_token_flag(&subsecond)
                .unwrap()
                .ends_with(",ttl=1500ms")
        );
        assert!(
            !etcd_args(&EtcdConfig::default(), &spec())
                .iter()
                .any(|a| a.starts_with("--auth-token"))
        );
    }
}

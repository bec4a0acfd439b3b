//! A process cluster: `eco run` instances on distinct addresses with the
//! static provider, a shared group file (written atomically), a shared
//! directory store and one gossip key, under one root directory:
//!
//! ```text
//! <root>/group.toml  gossip.keys  store/  <id>/eco.toml  <id>/eco.log  <id>/data/
//! ```
//!
//! The integration tests ([`Options::integration`]) run the debug `eco`
//! on loopback addresses they choose, in a temporary directory, and check
//! what eco does when an instance stops by itself. The chaos harness runs
//! the binary it is given in a directory it keeps, with ids, zones (a, b,
//! c in turn) and addresses from a block (`127.0.<net>.<n>`, or
//! `10.<net>.0.<n>` in network namespaces for partitions, see [`netns`]),
//! every eco dying with the harness (`PR_SET_PDEATHSIG`), and forces a
//! stop that does not finish in time.
//!
//! Nothing is left behind: `Drop` kills every eco and every etcd on an
//! instance's data directory by pid, and removes the namespaces.

pub mod aws_group;
pub mod netns;

pub use aws_group::{AwsOptions, AwsSide};
pub use netns::{partitions_unavailable, remove_all_namespaces};

use crate::address_claim::{self, AddressClaim};
use crate::config::ConfigBuilder;
use crate::etcd::{self, block_on, client};
use crate::process::{EcoRun, eco_lines, kill, wait_exit};
use crate::wait_until;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

const ZONES: [&str; 3] = ["a", "b", "c"];

/// Where the instances live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// Loopback addresses (no partitions possible).
    Loopback,
    /// One network namespace per instance on a bridge (partitions).
    Namespaces,
}

/// How [`Cluster::stop`] ends an instance.
#[derive(Clone, Copy, Debug)]
pub struct Stopping {
    /// How long to wait for eco to exit after the signal.
    pub wait: Duration,
    /// When eco has not exited by then, kill it (SIGKILL); and after a
    /// SIGKILL (a machine crash) kill its etcd too. Without it an eco that
    /// does not exit is left running (and killed on drop), and its etcd
    /// is left to eco: what the integration tests check.
    pub force: bool,
}

/// What a cluster is made of.
#[derive(Clone, Debug)]
pub struct Options {
    /// The `eco` binary.
    pub eco: PathBuf,
    /// Where the group file, gossip key, store and instance directories
    /// go (kept); `None`: a new temporary directory, removed on drop.
    pub root: Option<PathBuf>,
    pub network: Network,
    /// The address block of [`Cluster::add_next`]: `127.0.<net>.<n>` on
    /// loopback, `10.<net>.0.<n>` in namespaces.
    pub net: u8,
    /// The instances' config, less what the cluster sets itself (the
    /// group file, gossip key file and store are the shared ones);
    /// [`Cluster::node_config`] is the usual start.
    pub config: ConfigBuilder,
    /// The group's gossip key (64 hex digits).
    pub gossip_key: String,
    /// Every eco dies with the thread that started it (see
    /// [`crate::process::die_with_parent`]).
    pub die_with_harness: bool,
    pub stopping: Stopping,
    /// The AWS provider and S3 store on the local AWS emulator instead of
    /// the group file and the directory store (see [`aws_group`]).
    pub aws: Option<AwsOptions>,
    /// TLS on etcd's client and peer surfaces, with client certificates
    /// required on both, from a CA of the cluster's own
    /// (`<root>/pki/cluster-ca.crt`): each instance gets a certificate for
    /// its address (both surfaces), eco a client certificate `eco`. Test
    /// clients are trusted through [`etcd::trust`].
    pub tls: bool,
    /// TLS on both surfaces from certificates eco generates
    /// (`[etcd.tls.generated]`, the CA sealed in the store). Test clients
    /// trust each instance's generated `ca.crt` and present eco's client
    /// certificate (read when they connect: the files appear once eco made
    /// them).
    pub generated_tls: bool,
    /// With `generated_tls`: add `127.0.0.1` to each certificate's names
    /// (`extra_names`) — on loopback etcd's peer connections come from
    /// there, and peers check it. Off only to test a join whose
    /// certificate the peers reject.
    pub loopback_source_name: bool,
}

impl Options {
    /// The integration tests' cluster: `eco`, a temporary directory,
    /// loopback, cluster `it` of [`Cluster::node_config`] with the etcd of
    /// this test run and a snapshot every minute, eco left to exit by
    /// itself within 20 s.
    ///
    /// # Panics
    /// When this test run's etcd is missing (see [`etcd::bin_dir`]).
    pub fn integration(eco: PathBuf) -> Self {
        Self {
            eco,
            root: None,
            network: Network::Loopback,
            net: 0,
            config: Cluster::node_config("it", &etcd::bin_dir())
                .snapshot_interval(Duration::from_secs(60)),
            gossip_key: key_pattern(37, 11),
            die_with_harness: false,
            stopping: Stopping {
                wait: Duration::from_secs(20),
                force: false,
            },
            aws: None,
            tls: false,
            generated_tls: false,
            loopback_source_name: true,
        }
    }
}

/// A deterministic gossip key: byte `i` is `(i * step + offset) % 256`.
pub fn key_pattern(step: usize, offset: usize) -> String {
    (0..32)
        .map(|i| format!("{:02x}", (i * step + offset) % 256))
        .collect()
}

pub struct Node {
    pub id: String,
    pub address: String,
    /// Written to the group file when set.
    pub zone: Option<String>,
    /// The instance's directory.
    pub dir: PathBuf,
    /// Its config file.
    pub config: PathBuf,
    /// What is in it.
    pub settings: ConfigBuilder,
    /// Its network namespace, if any.
    pub netns: Option<String>,
    /// Environment of its eco (the AWS emulator's endpoints).
    pub env: Vec<(String, String)>,
    pub process: Option<Child>,
    /// `https` on both etcd surfaces ([`Options::tls`]).
    pub tls: bool,
    /// Its own eco binary, when not the cluster's ([`Options::eco`]): a
    /// mixed-version cluster ([`Cluster::use_eco`]).
    pub eco: Option<PathBuf>,
}

impl Node {
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data/etcd")
    }

    fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    pub fn endpoint(&self) -> String {
        format!("{}://{}:2379", self.scheme(), self.address)
    }

    pub fn peer_url(&self) -> String {
        format!("{}://{}:2380", self.scheme(), self.address)
    }

    /// eco's API address.
    pub fn api(&self) -> String {
        format!("{}:2390", self.address)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("eco.log")).unwrap_or_default()
    }

    pub fn etcd_pids(&self) -> Vec<i32> {
        etcd::pids_on(&self.data_dir())
    }
}

enum Root {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

pub struct Cluster {
    // Dropped after `Drop::drop` killed everything.
    root: Root,
    opts: Options,
    /// Number of the next instance of [`Self::add_next`].
    next: usize,
    pub nodes: BTreeMap<String, Node>,
    /// eco processes that did not exit when stopped (killed on drop).
    strays: Vec<Child>,
    /// The AWS emulator, group and bucket (dropped after every process).
    pub aws: Option<AwsSide>,
    /// The CA of a TLS cluster (`<root>/pki`).
    pub pki: Option<crate::pki::Pki>,
    /// The addresses (and namespace block) this cluster runs on, held
    /// against other tests until every process is killed
    /// ([`crate::address_claim`]).
    claims: BTreeMap<String, AddressClaim>,
}

impl Cluster {
    /// The instances' config: the test timings of [`ConfigBuilder::new`]
    /// with the group re-read every 300 ms, probes every 300 ms, calls
    /// timing out after 2 s, learners given a minute, and etcd from
    /// `etcd_bin_dir`.
    pub fn node_config(name: &str, etcd_bin_dir: &Path) -> ConfigBuilder {
        ConfigBuilder::new(name, "../group.toml")
            .refresh_interval(Duration::from_millis(300))
            .etcd_bin_dir(etcd_bin_dir)
            .probe_interval(Duration::from_millis(300))
            .call_timeout(Duration::from_secs(2))
            .learner_timeout(Duration::from_secs(60))
    }

    /// The integration tests' cluster ([`Options::integration`]).
    pub fn integration(eco: PathBuf) -> anyhow::Result<Self> {
        Self::new(Options::integration(eco))
    }

    pub fn new(opts: Options) -> anyhow::Result<Self> {
        let root = match &opts.root {
            // Absolute: the instances' config files name files under it,
            // and eco reads a relative name from its config's directory.
            Some(dir) => Root::Kept(
                std::path::absolute(dir)
                    .with_context(|| format!("the cluster root {}", dir.display()))?,
            ),
            None => Root::Temp(
                tempfile::Builder::new()
                    .prefix("eco-cluster-")
                    .tempdir()
                    .context("temporary directory")?,
            ),
        };
        let dir = match &root {
            Root::Temp(t) => t.path().to_path_buf(),
            Root::Kept(p) => p.clone(),
        };
        // The store must exist: a missing store is an error, never "empty".
        std::fs::create_dir_all(dir.join("store")).context("store dir")?;
        let mut claims = BTreeMap::new();
        if opts.network == Network::Namespaces {
            let block = format!("ns-10.{}", opts.net);
            claims.insert(block.clone(), address_claim::claim(&block)?);
            netns::add_bridge(opts.net)?;
        }
        let keys = dir.join("gossip.keys");
        std::fs::write(&keys, format!("{}\n", opts.gossip_key)).context("gossip keys")?;
        // A secret: eco refuses a key file others can read.
        std::fs::set_permissions(
            &keys,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600),
        )
        .context("gossip keys mode")?;
        let aws = match &opts.aws {
            Some(a) => {
                anyhow::ensure!(
                    opts.network == Network::Loopback,
                    "the AWS emulator's instances live on loopback"
                );
                let name = opts.config.config().cluster.name.clone();
                Some(AwsSide::start(&dir, &name, opts.net, a.clone())?)
            }
            None => None,
        };
        let pki = match opts.tls {
            true => Some(crate::pki::Pki::new(&dir.join("pki"), "cluster")?),
            false => None,
        };
        Ok(Self {
            root,
            opts,
            next: 1,
            nodes: BTreeMap::new(),
            strays: Vec::new(),
            aws,
            pki,
            claims,
        })
    }

    pub fn root(&self) -> &Path {
        match &self.root {
            Root::Temp(t) => t.path(),
            Root::Kept(p) => p,
        }
    }

    pub fn network(&self) -> Network {
        self.opts.network
    }

    /// The cluster's name (in the store: `<store>/<name>/...`).
    pub fn name(&self) -> &str {
        &self.opts.config.config().cluster.name
    }

    /// The instances' `recovery.quorum_loss_timeout`.
    pub fn quorum_loss_timeout(&self) -> Duration {
        self.opts.config.config().recovery.quorum_loss_timeout.get()
    }

    pub fn store(&self) -> PathBuf {
        self.root().join("store")
    }

    /// Declares instance `id` on the loopback `address` with a new, empty
    /// directory (not yet in the group file, not started). Declaring an id
    /// again replaces it.
    pub fn add(&mut self, id: &str, address: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.opts.network == Network::Loopback,
            "instances with chosen addresses live on loopback"
        );
        self.declare(id, address.to_string(), None, None)
    }

    /// Declares a new instance `eco-<n>` (a new id, an empty disk, the next
    /// address of the block) in `zone`, or in the next zone in turn.
    pub fn add_next(&mut self, zone: Option<&str>) -> anyhow::Result<String> {
        let n = self.next;
        self.next += 1;
        let id = format!("eco-{n}");
        let zone = zone
            .map(str::to_string)
            .unwrap_or_else(|| ZONES[(n - 1) % ZONES.len()].to_string());
        let net = self.opts.net;
        let (address, ns) = match self.opts.network {
            Network::Loopback => (format!("127.0.{net}.{n}"), None),
            Network::Namespaces => {
                let (ns, address) = netns::add_namespace(net, n)?;
                (address, Some(ns))
            }
        };
        self.declare(&id, address, Some(zone), ns)?;
        Ok(id)
    }

    fn declare(
        &mut self,
        id: &str,
        address: String,
        zone: Option<String>,
        netns: Option<String>,
    ) -> anyhow::Result<()> {
        if netns.is_none() && !self.claims.contains_key(&address) {
            let claim = address_claim::claim(&address)?;
            self.claims.insert(address.clone(), claim);
        }
        let dir = self.root().join(id);
        std::fs::create_dir_all(&dir).context("node dir")?;
        let config = dir.join("eco.toml");
        let (settings, env) = match &self.aws {
            None => (
                self.opts
                    .config
                    .clone()
                    .group_file("../group.toml")
                    .gossip_key_file("../gossip.keys")
                    .dir_store("../store"),
                Vec::new(),
            ),
            Some(aws) => {
                let endpoint = aws.emulator.endpoint();
                (
                    self.opts
                        .config
                        .clone()
                        .aws_provider(&endpoint, aws.options.refresh)
                        .gossip_key_file("../gossip.keys")
                        .s3_store(&endpoint, &aws.bucket),
                    aws.emulator.env(&address),
                )
            }
        };
        let settings = if self.opts.tls {
            self.tls_for(id, &address, settings)?
        } else if self.opts.generated_tls {
            Self::generated_tls_for(&dir, &address, settings, self.opts.loopback_source_name)
        } else {
            settings
        };
        settings.write(&config)?;
        self.nodes.insert(
            id.to_string(),
            Node {
                id: id.into(),
                address,
                zone,
                dir,
                config,
                settings,
                netns,
                env,
                process: None,
                tls: self.opts.tls || self.opts.generated_tls,
                eco: None,
            },
        );
        Ok(())
    }

    /// `settings` with generated TLS for the instance in `dir` at
    /// `address`; test clients of its endpoint trust its generated CA file
    /// and present eco's generated client certificate.
    fn generated_tls_for(
        dir: &Path,
        address: &str,
        settings: ConfigBuilder,
        loopback_source_name: bool,
    ) -> ConfigBuilder {
        let tls = eco::config::generated_dir(&dir.join("data/etcd"));
        etcd::trust(
            &format!("{address}:2379"),
            etcd::ClientTlsFiles {
                ca: tls.join("ca.crt"),
                identity: Some(crate::pki::CertFiles {
                    cert: tls.join("eco.crt"),
                    key: tls.join("eco.key"),
                }),
            },
        );
        let generated: eco::config::GeneratedTls = match toml::from_str(
            // etcd checks a peer's client certificate against the address
            // the connection comes from: 127.0.0.1 on loopback (see
            // `tls_for`).
            if loopback_source_name {
                "extra_names = [\"127.0.0.1\"]"
            } else {
                ""
            },
        ) {
            Ok(g) => g,
            Err(_) => return settings,
        };
        settings.etcd_tls(eco::config::EtcdTlsConfig {
            generated: Some(generated),
            ..Default::default()
        })
    }

    /// `settings` with TLS on both surfaces for the instance `id` at
    /// `address`: its own certificate, the cluster's CA, eco's client
    /// certificate; test clients of its endpoint trust the CA and present
    /// a client certificate.
    fn tls_for(
        &self,
        id: &str,
        address: &str,
        settings: ConfigBuilder,
    ) -> anyhow::Result<ConfigBuilder> {
        use crate::pki::{Usage, Validity};
        use eco::config::{EcoClientTls, EtcdTlsConfig, SurfaceTls};
        let pki = self.pki.as_ref().context("a TLS cluster has a CA")?;
        // etcd checks a peer's client certificate against the address the
        // connection comes from, and on loopback that is 127.0.0.1 whatever
        // address the peer listens on: a test-only name (on real hosts the
        // source is the instance's address).
        let own = pki.issue(
            id,
            id,
            &[address, "127.0.0.1"],
            Usage::ServerAndClient,
            Validity::Current,
        )?;
        let eco = pki.issue(
            &format!("{id}-eco"),
            "eco",
            &[],
            Usage::Client,
            Validity::Current,
        )?;
        let test = pki.issue(
            &format!("{id}-test-client"),
            "test",
            &[],
            Usage::Client,
            Validity::Current,
        )?;
        etcd::trust(
            &format!("{address}:2379"),
            etcd::ClientTlsFiles {
                ca: pki.ca_file(),
                identity: Some(test),
            },
        );
        let surface = SurfaceTls {
            cert_file: own.cert,
            key_file: own.key,
            trusted_ca_file: pki.ca_file(),
            client_cert_auth: true,
        };
        Ok(settings.etcd_tls(EtcdTlsConfig {
            client: Some(surface.clone()),
            peer: Some(surface),
            eco: Some(EcoClientTls {
                cert_file: eco.cert,
                key_file: eco.key,
                trusted_ca_file: None,
            }),
            generated: None,
            plaintext: false,
        }))
    }

    /// Turns generated TLS on in the config of `id` (eco reads it when it
    /// starts: restart it after), the way an operator would for a running
    /// plaintext cluster; test clients of its `https` endpoint trust its
    /// generated CA. Its [`Node::endpoint`] stays `http` (the member serves
    /// `http` until its switch): set [`Node::tls`] once it switched.
    pub fn turn_on_generated_tls(&mut self, id: &str) -> anyhow::Result<()> {
        let loopback_source_name = self.opts.loopback_source_name;
        let n = self.nodes.get_mut(id).context("unknown instance")?;
        n.settings =
            Self::generated_tls_for(&n.dir, &n.address, n.settings.clone(), loopback_source_name);
        n.settings.write(&n.config)
    }

    /// Changes the config file of `id` (eco reads it when it starts).
    pub fn configure(
        &mut self,
        id: &str,
        f: impl FnOnce(ConfigBuilder) -> ConfigBuilder,
    ) -> anyhow::Result<()> {
        let n = self.nodes.get_mut(id).context("unknown instance")?;
        n.settings = f(n.settings.clone());
        n.settings.write(&n.config)
    }

    /// Launches a group of `n` instances (not started): the next `n`
    /// instances in the group file, or an auto-scaling group of `n` on the
    /// AWS emulator. Returns their ids.
    pub fn launch(&mut self, n: usize) -> anyhow::Result<Vec<String>> {
        if self.aws.is_none() {
            let mut group = Vec::new();
            for _ in 0..n {
                group.push(self.add_next(None)?);
            }
            self.set_group(&group)?;
            return Ok(group);
        }
        let launched = match self.aws.as_mut() {
            Some(aws) => aws.create(n as u32)?,
            None => Vec::new(),
        };
        self.declare_launched(&launched)
    }

    /// Declares the instances the AWS group launched.
    fn declare_launched(
        &mut self,
        launched: &[crate::aws::GroupInstance],
    ) -> anyhow::Result<Vec<String>> {
        let mut ids = Vec::new();
        for i in launched {
            if let Some(aws) = &self.aws {
                aws.wait_imds(&i.private_ip)?;
            }
            if !self.nodes.contains_key(&i.id) {
                self.declare(&i.id, i.private_ip.clone(), Some(i.zone.clone()), None)?;
            }
            ids.push(i.id.clone());
        }
        Ok(ids)
    }

    /// `gone` (stopped already) are replaced by new instances with empty
    /// disks, which are started: in the group file (new ids, same zones),
    /// or on AWS by terminating their EC2 instances, which the group
    /// replaces at once (new ids and addresses). Returns the group.
    pub fn replace(&mut self, group: &[String], gone: &[String]) -> anyhow::Result<Vec<String>> {
        let mut now: Vec<String> = group
            .iter()
            .filter(|id| !gone.contains(id))
            .cloned()
            .collect();
        let fresh = match &self.aws {
            None => {
                let mut fresh = Vec::new();
                for id in gone {
                    let zone = self.nodes.get(id).and_then(|n| n.zone.clone());
                    fresh.push(self.add_next(zone.as_deref())?);
                }
                now.extend(fresh.iter().cloned());
                self.set_group(&now)?;
                fresh
            }
            Some(aws) => {
                let g = aws.group();
                for id in gone {
                    g.terminate_ec2(id);
                }
                let serving = aws.in_service(group.len(), gone);
                let launched: Vec<_> = serving
                    .into_iter()
                    .filter(|i| !now.contains(&i.id))
                    .collect();
                let fresh = self.declare_launched(&launched)?;
                now.extend(fresh.iter().cloned());
                fresh
            }
        };
        for id in &fresh {
            self.start(id)?;
        }
        Ok(now)
    }

    /// AWS: sets the group's desired capacity to `n`. Growing, the new
    /// instances are declared and started once running; shrinking, the
    /// group holds the instances it chose in `Terminating:Wait` (with a
    /// hook) for their eco to leave. Returns the instances in service.
    pub fn scale_to(&mut self, n: usize) -> anyhow::Result<Vec<String>> {
        let aws = self.aws.as_ref().context("scale_to needs the AWS group")?;
        aws.group().set_desired(n as u32);
        let serving = aws.in_service(n, &[]);
        let fresh: Vec<_> = serving
            .iter()
            .filter(|i| !self.nodes.contains_key(&i.id))
            .cloned()
            .collect();
        let ids: Vec<String> = serving.iter().map(|i| i.id.clone()).collect();
        for id in self.declare_launched(&fresh)? {
            self.start(&id)?;
        }
        Ok(ids)
    }

    /// The store is unreachable for `span` (the directory moved away, or
    /// the emulator's S3 answering 503), then back.
    pub fn store_outage(&self, span: Duration) -> anyhow::Result<()> {
        if let Some(aws) = &self.aws {
            aws.emulator.outage(&["s3"], span);
            std::thread::sleep(span);
            return Ok(());
        }
        let store = self.store();
        let away = store.with_file_name("store.away");
        std::fs::rename(&store, &away).context("store away")?;
        std::thread::sleep(span);
        std::fs::rename(&away, &store).context("store back")
    }

    /// Writes the group file with these instances (atomically).
    pub fn set_group<S: AsRef<str>>(&self, ids: &[S]) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.aws.is_none(),
            "the AWS group is changed through the emulator, not a group file"
        );
        let mut members = Vec::new();
        for id in ids {
            let n = self.nodes.get(id.as_ref()).context("unknown instance")?;
            members.push((n.id.as_str(), n.address.as_str(), n.zone.as_deref()));
        }
        write_group_file(&self.root().join("group.toml"), &members)
    }

    /// Starts `eco run` for `id`; its output is appended to `<id>/eco.log`.
    pub fn start(&mut self, id: &str) -> anyhow::Result<()> {
        let n = self.nodes.get_mut(id).context("unknown instance")?;
        let child = EcoRun {
            eco: n.eco.as_ref().unwrap_or(&self.opts.eco),
            config: &n.config,
            instance_id: id,
            log: &n.dir.join("eco.log"),
            netns: n.netns.as_deref(),
            die_with_parent: self.opts.die_with_harness,
            env: &n.env,
        }
        .spawn()
        .context("spawn eco")?;
        n.process = Some(child);
        Ok(())
    }

    /// Runs `id` with `eco` from its next start on (a release other than
    /// the cluster's: the mixed-version tests swap binaries this way).
    pub fn use_eco(&mut self, id: &str, eco: PathBuf) -> anyhow::Result<()> {
        self.nodes.get_mut(id).context("unknown instance")?.eco = Some(eco);
        Ok(())
    }

    /// Signals the eco process of `id` and waits for it (bounded, see
    /// [`Stopping`]).
    pub fn stop(&mut self, id: &str, signal: i32) -> anyhow::Result<()> {
        let Stopping { wait, force } = self.opts.stopping;
        let n = self.nodes.get_mut(id).context("unknown instance")?;
        let etcd = if force && signal == libc::SIGKILL {
            n.etcd_pids()
        } else {
            Vec::new()
        };
        if let Some(mut c) = n.process.take() {
            kill(c.id() as i32, signal);
            if !wait_exit(&mut c, wait) {
                if force {
                    let _ = c.kill();
                    let _ = c.wait();
                } else {
                    self.strays.push(c);
                }
            }
        }
        for pid in etcd {
            kill(pid, libc::SIGKILL);
        }
        Ok(())
    }

    /// Sends `signal` to the eco process of `id` and returns at once
    /// (`SIGSTOP` freezes it with its etcd running; `SIGCONT` thaws it).
    pub fn signal_eco(&self, id: &str, signal: i32) -> anyhow::Result<()> {
        let n = self.nodes.get(id).context("unknown instance")?;
        let c = n.process.as_ref().context("its eco is not running")?;
        kill(c.id() as i32, signal);
        Ok(())
    }

    /// `kill -9` of the etcd process of `id` only (eco's supervisor
    /// restarts it).
    pub fn kill_etcd(&self, id: &str) -> anyhow::Result<()> {
        let pids = self.etcd_pids(id);
        anyhow::ensure!(!pids.is_empty(), "no etcd running for the instance");
        for pid in pids {
            kill(pid, libc::SIGKILL);
        }
        Ok(())
    }

    /// `kill -9` of the eco of `id` and of its etcd (an instance that
    /// dies with its disk), then waits up to 10 s for its etcd to be gone.
    pub fn kill_with_etcd(&mut self, id: &str) -> anyhow::Result<()> {
        let etcd = self.etcd_pids(id);
        self.stop(id, libc::SIGKILL)?;
        for pid in &etcd {
            kill(*pid, libc::SIGKILL);
        }
        // Exited, not only gone from the list of etcds on the data
        // directory: an exiting etcd's command line reads empty while its
        // threads still tear it down and hold its ports.
        wait_until(Duration::from_secs(10), || {
            (self.etcd_pids(id).is_empty() && etcd.iter().all(|pid| crate::process::exited(*pid)))
                .then_some(())
        })
        .with_context(|| format!("the etcd of {id} is still running"))
    }

    /// `eco-1`, `eco-2`, `eco-3` on `<base>.1..3`, the whole group, started
    /// together; returns the cluster id once all three are voters (90 s at
    /// most).
    pub fn form_three(&mut self, base: &str) -> anyhow::Result<u64> {
        let ids = ["eco-1", "eco-2", "eco-3"];
        for (i, id) in ids.iter().enumerate() {
            self.add(id, &format!("{base}.{}", i + 1))?;
        }
        self.set_group(&ids)?;
        for id in ids {
            self.start(id)?;
        }
        self.wait_voters(&ids, Duration::from_secs(90))
            .with_context(|| format!("three voters did not form\n{}", self.log_tail("eco-1", 40)))
    }

    /// Two of `eco-1`, `eco-2`, `eco-3` (on `<base>.1..3`) lose their
    /// disks at once: `eco-2` and `eco-3` are killed with their etcd and
    /// replaced in the group by new, empty `eco-4` and `eco-5` (on
    /// `<base>.4` and `<base>.5`), which are started. Returns when the
    /// quorum was lost.
    pub fn lose_two_of_three(&mut self, base: &str) -> anyhow::Result<std::time::Instant> {
        self.kill_with_etcd("eco-2")?;
        self.kill_with_etcd("eco-3")?;
        let lost_at = std::time::Instant::now();
        self.add("eco-4", &format!("{base}.4"))?;
        self.add("eco-5", &format!("{base}.5"))?;
        self.set_group(&["eco-1", "eco-4", "eco-5"])?;
        self.start("eco-4")?;
        self.start("eco-5")?;
        Ok(lost_at)
    }

    /// `eco snapshot now` for `id` with its config: an error with eco's
    /// output when it fails.
    pub fn snapshot_now(&self, id: &str) -> anyhow::Result<()> {
        let n = self.nodes.get(id).context("unknown instance")?;
        let out = std::process::Command::new(&self.opts.eco)
            .args(["snapshot", "now", "--config"])
            .arg(&n.config)
            .args(["--instance-id", id])
            .output()
            .context("eco snapshot now")?;
        anyhow::ensure!(
            out.status.success(),
            "eco snapshot now failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// When `id`'s etcd first took a write, waiting at most `limit`.
    pub fn wait_writable(&self, id: &str, limit: Duration) -> Option<std::time::Instant> {
        let endpoint = self.nodes.get(id)?.endpoint();
        wait_until(limit, || {
            etcd::write(&endpoint, "probe/writable", "yes").then(std::time::Instant::now)
        })
    }

    /// Pids of the etcd processes on the data directory of `id`.
    pub fn etcd_pids(&self, id: &str) -> Vec<i32> {
        self.nodes.get(id).map(Node::etcd_pids).unwrap_or_default()
    }

    /// The disk of `id` is lost: its `data/` directory (etcd's data and
    /// eco's state) goes. It must be stopped.
    pub fn wipe(&self, id: &str) -> anyhow::Result<()> {
        let n = self.nodes.get(id).context("unknown instance")?;
        let data = n.dir.join("data");
        if data.exists() {
            std::fs::remove_dir_all(&data).context("wipe")?;
        }
        Ok(())
    }

    /// Ids of the instances whose eco was started and not stopped.
    pub fn running(&self) -> Vec<String> {
        self.nodes
            .values()
            .filter(|n| n.process.is_some())
            .map(|n| n.id.clone())
            .collect()
    }

    /// The etcd client URLs of these instances (unknown ids skipped).
    pub fn endpoints<S: AsRef<str>>(&self, ids: &[S]) -> Vec<String> {
        ids.iter()
            .filter_map(|id| self.nodes.get(id.as_ref()))
            .map(Node::endpoint)
            .collect()
    }

    /// The last `lines` lines of eco's log of `id` (without etcd's).
    pub fn log_tail(&self, id: &str, lines: usize) -> String {
        let Some(n) = self.nodes.get(id) else {
            return String::new();
        };
        let text = n.log();
        let all = eco_lines(&text);
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Numbers of the incarnation records in the store.
    pub fn records(&self) -> Vec<u64> {
        if let Some(aws) = &self.aws {
            let mut out: Vec<u64> = aws
                .keys(self.name(), "incarnations/")
                .iter()
                .filter_map(|k| k.parse().ok())
                .collect();
            out.sort();
            return out;
        }
        let dir = self.store().join(self.name()).join("incarnations");
        let mut out: Vec<u64> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        out.sort();
        out
    }

    /// Names of the snapshot objects in the store.
    pub fn snapshot_names(&self) -> Vec<String> {
        if let Some(aws) = &self.aws {
            return aws
                .keys(self.name(), "snapshots/")
                .into_iter()
                .filter(|n| n.ends_with(".db") && !n.contains('/'))
                .collect();
        }
        snapshot_names(&self.store(), self.name())
    }

    /// The newest stored snapshot's revision (from its name), if any.
    pub fn newest_snapshot_revision(&self) -> Option<i64> {
        self.snapshot_names()
            .iter()
            .filter_map(|n| {
                let rev = n.split("-r").nth(1)?.get(..20)?;
                rev.parse::<i64>().ok()
            })
            .max()
    }

    /// Cuts every instance of `a` from every instance of `b`, both
    /// directions (replaces any earlier cut).
    pub fn partition<S: AsRef<str>>(&self, a: &[S], b: &[S]) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.opts.network == Network::Namespaces,
            "partitions need the namespaces network"
        );
        let addresses = |ids: &[S]| -> Vec<String> {
            ids.iter()
                .filter_map(|id| self.nodes.get(id.as_ref()))
                .map(|n| n.address.clone())
                .collect()
        };
        netns::cut(self.opts.net, &addresses(a), &addresses(b))
    }

    /// Drops TCP from the instances `from` to port `port` of the instances
    /// `to` (namespaces network; replaces any earlier cut): a firewall on
    /// one port, everything else passes.
    pub fn drop_port<S: AsRef<str>>(&self, from: &[S], to: &[S], port: u16) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.opts.network == Network::Namespaces,
            "dropping a port needs the namespaces network"
        );
        let addresses = |ids: &[S]| -> Vec<String> {
            ids.iter()
                .filter_map(|id| self.nodes.get(id.as_ref()))
                .map(|n| n.address.clone())
                .collect()
        };
        netns::drop_port(self.opts.net, &addresses(from), &addresses(to), port)
    }

    /// Removes every cut.
    pub fn heal(&self) {
        if self.opts.network == Network::Namespaces {
            netns::heal(self.opts.net);
        }
    }

    /// The member list as the first answering node sees it:
    /// (name, is_learner) sorted, and the cluster id.
    pub fn members(&self) -> Option<(u64, Vec<(String, bool)>)> {
        let r = self.member_list()?;
        let cluster = r.header()?.cluster_id();
        Some((cluster, etcd::names_and_roles(&r)))
    }

    /// The member list response of the first running node that answers
    /// (nodes in id order, so eco-1 while it runs).
    fn member_list(&self) -> Option<etcd_client::MemberListResponse> {
        self.nodes
            .values()
            .filter(|n| n.process.is_some())
            .find_map(|n| {
                block_on(async {
                    let mut c = client(&n.endpoint()).await?;
                    tokio::time::timeout(Duration::from_secs(2), c.member_list())
                        .await
                        .ok()?
                        .ok()
                })
            })
    }

    /// `eco status --json` of instance `id` (through its API, as a user
    /// runs it); `None` when it does not answer or the answer is not JSON.
    pub fn status_json(&self, id: &str) -> Option<serde_json::Value> {
        let n = self.nodes.get(id)?;
        let config = n.config.to_str()?;
        let (code, out, _) = crate::process::run_eco(
            &self.opts.eco,
            &["status", "--json", "--config", config, "--instance-id", id],
        );
        (code == 0)
            .then(|| serde_json::from_str(&out).ok())
            .flatten()
    }

    /// `(seer, seen, up, times_down)` for every pair of `ids`: how each
    /// instance's `eco status --json` shows each in gossip (`up` false and
    /// `times_down` `None` when it lists no such peer). Panics when an
    /// instance does not answer.
    pub fn gossip_rows(&self, ids: &[&str]) -> Vec<(String, String, bool, Option<u64>)> {
        let mut rows = Vec::new();
        for seer in ids {
            let status = self
                .status_json(seer)
                .unwrap_or_else(|| panic!("{seer}: no eco status --json"));
            for seen in ids {
                let row = status["gossip"]
                    .as_array()
                    .and_then(|rows| rows.iter().find(|r| r["instance_id"] == *seen));
                rows.push((
                    seer.to_string(),
                    seen.to_string(),
                    row.is_some_and(|r| r["up"] == true),
                    row.and_then(|r| r["times_down"].as_u64()),
                ));
            }
        }
        rows
    }

    /// The member list as eco-1 (or, if it is not running, the first
    /// answering node) sees it, keyed by member id: `(id, name, learner)`.
    /// Names are empty until a member has started, so changes are counted
    /// per id, not per name.
    pub fn member_ids(&self) -> Option<Vec<(u64, String, bool)>> {
        let r = self.member_list()?;
        let mut v: Vec<(u64, String, bool)> = r
            .members()
            .iter()
            .map(|m| (m.id(), m.name().to_string(), m.is_learner()))
            .collect();
        v.sort();
        Some(v)
    }

    /// The instance whose etcd leads (its own Status says so), if one
    /// does.
    pub fn leader(&self) -> Option<String> {
        self.nodes
            .values()
            .filter(|n| n.process.is_some())
            .find_map(|n| {
                block_on(async {
                    let mut c = client(&n.endpoint()).await?;
                    let s = tokio::time::timeout(Duration::from_secs(2), c.status())
                        .await
                        .ok()?
                        .ok()?;
                    let me = s.header()?.member_id();
                    (s.leader() != 0 && s.leader() == me).then(|| n.id.clone())
                })
            })
    }

    /// Each started member's name and peer URLs, sorted by name.
    pub fn peer_urls(&self) -> Option<Vec<(String, Vec<String>)>> {
        let r = self.member_list()?;
        let mut v: Vec<(String, Vec<String>)> = r
            .members()
            .iter()
            .filter(|m| !m.name().is_empty())
            .map(|m| (m.name().to_string(), m.peer_urls().to_vec()))
            .collect();
        v.sort();
        Some(v)
    }

    /// Waits until the members are exactly `names`, all started voters, and
    /// every one of them answers reads with the same cluster id. Each member
    /// is read through a patient connection (`etcd::PATIENT`: on a loaded
    /// machine with authentication on, connecting alone may take seconds);
    /// when the time is up, what the last try saw goes to the test's
    /// output.
    pub fn wait_voters(&self, names: &[&str], limit: Duration) -> Option<u64> {
        let mut want: Vec<(String, bool)> = names.iter().map(|n| (n.to_string(), false)).collect();
        want.sort();
        let mut last = String::from("not tried");
        let found = wait_until(limit, || {
            let Some((cluster, members)) = self.members() else {
                last = "no running member answered the member list".into();
                return None;
            };
            if members != want {
                last = format!("the members are {members:?}, not {want:?}");
                return None;
            }
            for id in names {
                let Some(node) = self.nodes.get(*id) else {
                    last = format!("{id} is not a node of this cluster");
                    return None;
                };
                match etcd::read_patiently(&node.endpoint(), "health") {
                    Ok((c, _)) if c == cluster => {}
                    Ok((c, _)) => {
                        last = format!("{id} answers for cluster {c:x}, not {cluster:x}");
                        return None;
                    }
                    Err(why) => {
                        last = format!("{id} did not answer a read: {why}");
                        return None;
                    }
                }
            }
            Some(cluster)
        });
        if found.is_none() {
            eprintln!("wait_voters {names:?}: not so after {limit:?}; the last try: {last}");
        }
        found
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let wait = self.opts.stopping.wait;
        for n in self.nodes.values_mut() {
            if let Some(mut c) = n.process.take() {
                let _ = c.kill();
                wait_exit(&mut c, wait);
            }
            for pid in n.etcd_pids() {
                kill(pid, libc::SIGKILL);
            }
        }
        for c in &mut self.strays {
            let _ = c.kill();
            wait_exit(c, wait);
        }
        if self.opts.network == Network::Namespaces {
            netns::remove_namespaces(self.opts.net);
        }
        // A failing test prints every instance's log; so does any test
        // with `ECO_TEST_PRINT_LOGS` set (to read a passing run's timeline).
        if std::thread::panicking() || std::env::var_os("ECO_TEST_PRINT_LOGS").is_some() {
            for n in self.nodes.values() {
                eprintln!("--- {} ---\n{}", n.id, eco_lines(&n.log()).join("\n"));
            }
        }
    }
}

/// Writes a group file of `(id, address, zone)` instances atomically.
pub fn write_group_file(path: &Path, members: &[(&str, &str, Option<&str>)]) -> anyhow::Result<()> {
    let mut text = String::new();
    for (id, address, zone) in members {
        text.push_str(&format!(
            "[[instance]]\nid = \"{id}\"\naddress = \"{address}\"\n"
        ));
        if let Some(zone) = zone {
            text.push_str(&format!("zone = \"{zone}\"\n"));
        }
    }
    let name = path
        .file_name()
        .context("a group file path names a file")?
        .to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).context("group file")?;
    std::fs::rename(tmp, path).context("group file")?;
    Ok(())
}

/// Snapshot object names of cluster `name` in the store directory.
pub fn snapshot_names(store: &Path, name: &str) -> Vec<String> {
    let dir = store.join(name).join("snapshots");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".db") && !n.starts_with('.'))
        .collect()
}

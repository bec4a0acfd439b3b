//! The processes of one chaos run: N `eco run` instances (the release
//! binary) on distinct loopback addresses with the static provider, a
//! shared group file, a shared directory store and one gossip key; each
//! instance labelled with a zone (a, b, c in turn).
//!
//! Nothing is left behind: every eco child gets `PR_SET_PDEATHSIG =
//! SIGKILL` (it dies with the harness, even on SIGKILL, and eco's own etcd
//! dies with eco the same way), and `Drop` kills every eco and every etcd
//! whose pid file is known.
//!
//! Partitions need each instance in a network namespace of its own: on
//! loopback, etcd's outgoing connections all leave from 127.0.0.1, so no
//! filter on address pairs could tell instances apart. With
//! [`Network::Namespaces`] every instance gets a namespace `ecoch<net>-<n>`
//! with a veth into the bridge `ecoch<net>` and the address 10.<net>.0.<n>;
//! the harness (in the root namespace) reaches them through the bridge
//! (10.<net>.0.254). A partition is an nftables table `bridge ecoch<net>`
//! dropping the pairs' frames on the bridge, both directions, TCP and UDP;
//! healing deletes the table. `Drop` deletes the table, the namespaces and
//! the bridge, and a new run first removes leftovers of the same names.

use anyhow::Context;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const CLUSTER: &str = "chaos";
const ZONES: [&str; 3] = ["a", "b", "c"];

pub struct Node {
    pub id: String,
    pub address: String,
    pub zone: String,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub child: Option<Child>,
}

impl Node {
    pub fn endpoint(&self) -> String {
        format!("http://{}:2379", self.address)
    }

    pub fn api(&self) -> String {
        format!("{}:2390", self.address)
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data/etcd")
    }

    fn etcd_pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.dir.join("data/etcd.pid")).ok()?;
        let pid: i32 = text.trim().parse().ok()?;
        // Alive and really an etcd on our data directory.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline);
        let ours = format!("--data-dir={}", self.data_dir().display());
        cmdline.contains(&ours).then_some(pid)
    }
}

/// Where the instances live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// 127.0.<net>.<n> on loopback (no partitions possible).
    Loopback,
    /// One network namespace per instance on a bridge (partitions).
    Namespaces,
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip").args(args).output().context("run ip")?;
    anyhow::ensure!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

fn nft(script: &str) -> anyhow::Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("run nft")?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(script.as_bytes()).context("nft input")?;
    }
    let out = child.wait_with_output().context("nft")?;
    anyhow::ensure!(
        out.status.success(),
        "nft: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// Why partitions cannot be made here, if they cannot.
pub fn partitions_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("partitions need root (network namespaces and nftables); run as root".into());
    }
    for tool in ["ip", "nft"] {
        let found = Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Some(format!(
                "partitions need `{tool}` (scripts/install-deps.sh installs iproute2 and nftables)"
            ));
        }
    }
    None
}

pub struct Cluster {
    pub root: PathBuf,
    pub network: Network,
    eco: PathBuf,
    etcd_bin_dir: PathBuf,
    /// Third octet of the instances' addresses (127.0.<net>.<n>).
    net: u8,
    next: usize,
    pub quorum_loss_timeout_s: u64,
    pub nodes: BTreeMap<String, Node>,
}

fn kill(pid: i32, signal: i32) {
    // SAFETY: kill(2) with a pid we spawned or read from our pid file.
    unsafe {
        libc::kill(pid, signal);
    }
}

impl Cluster {
    pub fn new(
        root: PathBuf,
        eco: PathBuf,
        etcd_bin_dir: PathBuf,
        net: u8,
        quorum_loss_timeout_s: u64,
        network: Network,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(root.join("store")).context("store dir")?;
        if network == Network::Namespaces {
            remove_namespaces(net);
            let bridge = format!("ecoch{net}");
            ip(&["link", "add", &bridge, "type", "bridge"])?;
            ip(&["addr", "add", &format!("10.{net}.0.254/24"), "dev", &bridge])?;
            ip(&["link", "set", &bridge, "up"])?;
        }
        let key: String = (0..32)
            .map(|i| format!("{:02x}", (i * 53 + 7) % 256))
            .collect();
        std::fs::write(root.join("gossip.keys"), format!("{key}\n")).context("gossip keys")?;
        Ok(Self {
            root,
            network,
            eco,
            etcd_bin_dir,
            net,
            next: 1,
            quorum_loss_timeout_s,
            nodes: BTreeMap::new(),
        })
    }

    pub fn store(&self) -> PathBuf {
        self.root.join("store")
    }

    /// Declares a new instance (a new id and an empty disk) in `zone`, or
    /// in the next zone in turn.
    pub fn add(&mut self, zone: Option<&str>) -> anyhow::Result<String> {
        let n = self.next;
        self.next += 1;
        let id = format!("eco-{n}");
        let zone = zone
            .map(str::to_string)
            .unwrap_or_else(|| ZONES[(n - 1) % ZONES.len()].to_string());
        let dir = self.root.join(&id);
        std::fs::create_dir_all(&dir).context("node dir")?;
        let config = dir.join("eco.toml");
        let t = self.quorum_loss_timeout_s;
        std::fs::write(
            &config,
            format!(
                r#"[cluster]
name = "{CLUSTER}"
[provider]
kind = "static"
[provider.static]
group_file = "../group.toml"
refresh_interval = "300ms"
[etcd]
etcd_bin = "{bin}/etcd"
data_dir = "data/etcd"
heartbeat_interval = "50ms"
election_timeout = "250ms"
probe_interval = "300ms"
call_timeout = "2s"
stop_timeout = "5s"
[gossip]
key_file = "../gossip.keys"
[snapshot]
store = "dir"
interval = "10s"
max_age = "1m"
[snapshot.dir]
path = "../store"
[recovery]
quorum_loss_timeout = "{t}s"
unhealthy_member_ttl = "{t}s"
learner_timeout = "1m"
"#,
                bin = self.etcd_bin_dir.display()
            ),
        )
        .context("config")?;
        let address = match self.network {
            Network::Loopback => format!("127.0.{}.{n}", self.net),
            Network::Namespaces => {
                let net = self.net;
                let ns = format!("ecoch{net}-{n}");
                let veth = format!("ecoch{net}v{n}");
                ip(&["netns", "add", &ns])?;
                ip(&[
                    "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
                ])?;
                ip(&["link", "set", &veth, "master", &format!("ecoch{net}"), "up"])?;
                let address = format!("10.{net}.0.{n}");
                ip(&[
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{address}/24"),
                    "dev",
                    "eth0",
                ])?;
                ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
                ip(&["-n", &ns, "link", "set", "lo", "up"])?;
                address
            }
        };
        self.nodes.insert(
            id.clone(),
            Node {
                id: id.clone(),
                address,
                zone,
                dir,
                config,
                child: None,
            },
        );
        Ok(id)
    }

    /// Writes the group file with these instances (atomically).
    pub fn set_group(&self, ids: &[String]) -> anyhow::Result<()> {
        let mut text = String::new();
        for id in ids {
            let n = self.nodes.get(id).context("unknown instance")?;
            text.push_str(&format!(
                "[[instance]]\nid = \"{id}\"\naddress = \"{}\"\nzone = \"{}\"\n",
                n.address, n.zone
            ));
        }
        let tmp = self.root.join(".group.toml.tmp");
        std::fs::write(&tmp, text).context("group file")?;
        std::fs::rename(tmp, self.root.join("group.toml")).context("group file")?;
        Ok(())
    }

    pub fn start(&mut self, id: &str) -> anyhow::Result<()> {
        let eco = self.eco.clone();
        let network = self.network;
        let net = self.net;
        let n = self.nodes.get_mut(id).context("unknown instance")?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(n.dir.join("eco.log"))
            .context("log")?;
        let mut command = match network {
            Network::Loopback => Command::new(eco),
            Network::Namespaces => {
                let number = id.trim_start_matches("eco-");
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &format!("ecoch{net}-{number}")])
                    .arg(eco);
                c
            }
        };
        command
            .args(["run", "--config"])
            .arg(&n.config)
            .args(["--instance-id", id])
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("log")?)
            .stderr(log);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        n.child = Some(command.spawn().context("spawn eco")?);
        Ok(())
    }

    /// Signals the eco process of `id` and waits for it (bounded); with
    /// SIGKILL its etcd is killed too (as a machine crash would).
    pub fn stop(&mut self, id: &str, signal: i32) -> anyhow::Result<()> {
        let n = self.nodes.get_mut(id).context("unknown instance")?;
        let etcd = n.etcd_pid();
        if let Some(mut c) = n.child.take() {
            kill(c.id() as i32, signal);
            let limit = Instant::now() + Duration::from_secs(30);
            while Instant::now() < limit {
                if c.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if c.try_wait().ok().flatten().is_none() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if signal == libc::SIGKILL {
            if let Some(pid) = etcd {
                kill(pid, libc::SIGKILL);
            }
        }
        Ok(())
    }

    /// `kill -9` of the etcd process only (eco's supervisor restarts it).
    pub fn kill_etcd(&self, id: &str) -> anyhow::Result<()> {
        let n = self.nodes.get(id).context("unknown instance")?;
        let pid = n.etcd_pid().context("no etcd running for the instance")?;
        kill(pid, libc::SIGKILL);
        Ok(())
    }

    /// The disk of `id` is lost (it must be stopped).
    pub fn wipe(&self, id: &str) -> anyhow::Result<()> {
        let n = self.nodes.get(id).context("unknown instance")?;
        let data = n.dir.join("data");
        if data.exists() {
            std::fs::remove_dir_all(&data).context("wipe")?;
        }
        Ok(())
    }

    pub fn running(&self) -> Vec<String> {
        self.nodes
            .values()
            .filter(|n| n.child.is_some())
            .map(|n| n.id.clone())
            .collect()
    }

    pub fn endpoints(&self, ids: &[String]) -> Vec<String> {
        ids.iter()
            .filter_map(|id| self.nodes.get(id))
            .map(Node::endpoint)
            .collect()
    }

    pub fn log_tail(&self, id: &str, lines: usize) -> String {
        let Some(n) = self.nodes.get(id) else {
            return String::new();
        };
        let text = std::fs::read_to_string(n.dir.join("eco.log")).unwrap_or_default();
        let all: Vec<&str> = text.lines().filter(|l| !l.contains(" etcd:")).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Names of the incarnation records in the store.
    pub fn records(&self) -> Vec<u64> {
        let dir = self.store().join(CLUSTER).join("incarnations");
        let mut out: Vec<u64> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        out.sort();
        out
    }

    /// The newest stored snapshot's revision (from its name), if any.
    pub fn newest_snapshot_revision(&self) -> Option<i64> {
        snapshot_names(&self.store())
            .iter()
            .filter_map(|n| {
                let rev = n.split("-r").nth(1)?.get(..20)?;
                rev.parse::<i64>().ok()
            })
            .max()
    }
}

impl Cluster {
    /// Cuts every instance of `a` from every instance of `b`, both
    /// directions (replaces any earlier cut).
    pub fn partition(&self, a: &[String], b: &[String]) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.network == Network::Namespaces,
            "partitions need the namespaces network"
        );
        self.heal();
        let addr = |id: &String| self.nodes.get(id).map(|n| n.address.clone());
        let mut rules = String::new();
        for x in a.iter().filter_map(addr) {
            for y in b.iter().filter_map(addr) {
                rules.push_str(&format!(
                    "    ip saddr {x} ip daddr {y} drop\n    ip saddr {y} ip daddr {x} drop\n"
                ));
            }
        }
        nft(&format!(
            "table bridge ecoch{net} {{\n  chain cut {{\n    type filter hook forward priority 0;\n{rules}  }}\n}}\n",
            net = self.net
        ))
    }

    /// Removes every cut.
    pub fn heal(&self) {
        if self.network == Network::Namespaces {
            let _ = nft(&format!("delete table bridge ecoch{}\n", self.net));
        }
    }
}

/// Removes every namespace, bridge and nft table this harness may have
/// made (any block): at start, for leftovers of a killed run, and on
/// SIGINT/SIGTERM.
pub fn remove_all_namespaces() {
    let mut nets = std::collections::BTreeSet::new();
    let names = |args: &[&str]| -> Vec<String> {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default()
            .lines()
            .flat_map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect()
    };
    for word in names(&["ip", "-br", "link"])
        .into_iter()
        .chain(names(&["ip", "netns", "list"]))
        .chain(names(&["nft", "list", "tables"]))
    {
        let digits: String = word
            .strip_prefix("ecoch")
            .unwrap_or_default()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(net) = digits.parse::<u8>() {
            nets.insert(net);
        }
    }
    for net in nets {
        remove_namespaces(net);
    }
}

/// Removes the namespaces, bridge and nft table of block `net` (leftovers
/// of an interrupted run included).
fn remove_namespaces(net: u8) {
    let _ = nft(&format!("delete table bridge ecoch{net}\n"));
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        let prefix = format!("ecoch{net}-");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = line
                .split_whitespace()
                .next()
                .filter(|n| n.starts_with(&prefix))
            {
                let _ = ip(&["netns", "del", name]);
            }
        }
    }
    // The namespaces' veth ends in the root namespace (deleting one end
    // deletes the pair; a namespace the kernel has not torn down yet would
    // otherwise keep them).
    if let Ok(out) = Command::new("ip").args(["-br", "link"]).output() {
        let prefix = format!("ecoch{net}v");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            let name = name.split('@').next().unwrap_or_default();
            if name.starts_with(&prefix) {
                let _ = ip(&["link", "del", name]);
            }
        }
    }
    let _ = ip(&["link", "del", &format!("ecoch{net}")]);
}

/// Snapshot object names of the chaos cluster in the store directory.
pub fn snapshot_names(store: &Path) -> Vec<String> {
    let dir = store.join(CLUSTER).join("snapshots");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".db") && !n.starts_with('.'))
        .collect()
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let ids: Vec<String> = self.nodes.keys().cloned().collect();
        for id in ids {
            let _ = self.stop(&id, libc::SIGKILL);
            if let Some(pid) = self.nodes.get(&id).and_then(Node::etcd_pid) {
                kill(pid, libc::SIGKILL);
            }
        }
        if self.network == Network::Namespaces {
            remove_namespaces(self.net);
        }
    }
}

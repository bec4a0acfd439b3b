//! Several eco instances sharing a group file and a directory store, each
//! on its own loopback address; everything is killed on drop.

use super::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Node {
    pub id: String,
    pub address: String,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub process: Option<Child>,
}

impl Node {
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data/etcd")
    }
    pub fn endpoint(&self) -> String {
        format!("http://{}:2379", self.address)
    }
    pub fn peer_url(&self) -> String {
        format!("http://{}:2380", self.address)
    }
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("eco.log")).unwrap_or_default()
    }
}

pub struct Cluster {
    pub root: tempfile::TempDir,
    pub nodes: BTreeMap<String, Node>,
}

impl Cluster {
    pub fn new() -> Self {
        let root = tempfile::Builder::new()
            .prefix("eco-cluster-")
            .tempdir()
            .expect("tempdir");
        // The store must exist: a missing store is an error, never "empty".
        std::fs::create_dir_all(root.path().join("store")).expect("store dir");
        // One gossip key for the group (64 hex digits).
        let key: String = (0..32)
            .map(|i| format!("{:02x}", (i * 37 + 11) % 256))
            .collect();
        std::fs::write(root.path().join("gossip.keys"), format!("{key}\n")).expect("gossip keys");
        Self {
            root,
            nodes: BTreeMap::new(),
        }
    }

    pub fn store(&self) -> PathBuf {
        self.root.path().join("store")
    }

    /// Declares a node (not yet in the group file, not started).
    pub fn add(&mut self, id: &str, address: &str) {
        let dir = self.root.path().join(id);
        std::fs::create_dir_all(&dir).expect("node dir");
        let config = dir.join("eco.toml");
        let bin = etcd_bin_dir();
        std::fs::write(
            &config,
            format!(
                r#"[cluster]
name = "it"
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
interval = "1m"
[snapshot.dir]
path = "../store"
[recovery]
quorum_loss_timeout = "5s"
unhealthy_member_ttl = "5s"
learner_timeout = "1m"
"#,
                bin = bin.display()
            ),
        )
        .expect("config");
        self.nodes.insert(
            id.to_string(),
            Node {
                id: id.into(),
                address: address.into(),
                dir,
                config,
                process: None,
            },
        );
    }

    /// Writes the group file with these nodes.
    pub fn set_group(&self, ids: &[&str]) {
        let mut text = String::new();
        for id in ids {
            let n = &self.nodes[*id];
            text.push_str(&format!(
                "[[instance]]\nid = \"{id}\"\naddress = \"{}\"\n",
                n.address
            ));
        }
        let path = self.root.path().join("group.toml");
        let tmp = self.root.path().join(".group.toml.tmp");
        std::fs::write(&tmp, text).expect("group file");
        std::fs::rename(tmp, path).expect("group file");
    }

    pub fn start(&mut self, id: &str) {
        let n = self.nodes.get_mut(id).expect("node");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(n.dir.join("eco.log"))
            .expect("log");
        let child = Command::new(eco_bin())
            .args(["run", "--config"])
            .arg(&n.config)
            .args(["--instance-id", id])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn eco");
        n.process = Some(child);
    }

    pub fn signal(&mut self, id: &str, signal: i32) {
        let n = self.nodes.get_mut(id).expect("node");
        if let Some(c) = n.process.as_mut() {
            kill(c.id() as i32, signal);
            let _ = wait_until(Duration::from_secs(20), || c.try_wait().ok().flatten());
        }
        n.process = None;
    }

    pub fn etcd_pids(&self, id: &str) -> Vec<i32> {
        etcd_pids_on(&self.nodes[id].data_dir())
    }

    /// The member list as the first answering node sees it:
    /// (name, is_learner) sorted, and the cluster id.
    pub fn members(&self) -> Option<(u64, Vec<(String, bool)>)> {
        let r = self.member_list()?;
        let cluster = r.header()?.cluster_id();
        let mut v: Vec<(String, bool)> = r
            .members()
            .iter()
            .map(|m| (m.name().to_string(), m.is_learner()))
            .collect();
        v.sort();
        Some((cluster, v))
    }

    /// The member list response of the first running node that answers
    /// (nodes in id order, so eco-1 while it runs).
    fn member_list(&self) -> Option<etcd_client::MemberListResponse> {
        self.nodes
            .values()
            .filter(|n| n.process.is_some())
            .find_map(|n| {
                rt().block_on(async {
                    let mut c = client(&n.endpoint()).await?;
                    tokio::time::timeout(Duration::from_secs(2), c.member_list())
                        .await
                        .ok()?
                        .ok()
                })
            })
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

    /// Waits until the members are exactly `names`, all started voters, and
    /// every running node answers reads with the same cluster id.
    pub fn wait_voters(&self, names: &[&str], limit: Duration) -> Option<u64> {
        let want: Vec<(String, bool)> = names.iter().map(|n| (n.to_string(), false)).collect();
        wait_until(limit, || {
            let (cluster, members) = self.members()?;
            if members != want {
                return None;
            }
            for id in names {
                let (c, _) = read(&self.nodes[*id].endpoint(), "health")?;
                if c != cluster {
                    return None;
                }
            }
            Some(cluster)
        })
    }

    pub fn endpoints(&self, ids: &[&str]) -> Vec<String> {
        ids.iter().map(|id| self.nodes[*id].endpoint()).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let ids: Vec<String> = self.nodes.keys().cloned().collect();
        for id in &ids {
            if let Some(mut c) = self.nodes.get_mut(id).and_then(|n| n.process.take()) {
                let _ = c.kill();
                let _ = c.wait();
            }
            for pid in self.etcd_pids(id) {
                kill(pid, libc::SIGKILL);
            }
        }
        if std::thread::panicking() {
            for n in self.nodes.values() {
                let log: String = n
                    .log()
                    .lines()
                    .filter(|l| !l.contains(" etcd:"))
                    .collect::<Vec<_>>()
                    .join("\n");
                eprintln!("--- {} ---\n{log}", n.id);
            }
        }
    }
}

/// A writer that puts unique keys in a loop and records every acknowledged
/// write; bounded by `max_writes` and stopped by `stop`.
/// Acknowledged `(key, value)` writes and the number of failed writes.
pub type LedgerResult = (Vec<(String, String)>, usize);

pub struct Ledger {
    pub stop: Arc<AtomicBool>,
    pub handle: Option<std::thread::JoinHandle<LedgerResult>>,
}

impl Ledger {
    pub fn start(endpoints: Vec<String>, max_writes: usize) -> Self {
        Self::with_prefix(endpoints, max_writes, "ledger")
    }

    /// Keys are `<prefix>/<n>`: two ledgers with different prefixes never
    /// write the same key.
    pub fn with_prefix(endpoints: Vec<String>, max_writes: usize, prefix: &str) -> Self {
        let prefix = prefix.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let rt = rt();
            rt.block_on(async move {
                let mut acked = Vec::new();
                let mut failed = 0;
                let opts = etcd_client::ConnectOptions::new()
                    .with_connect_timeout(Duration::from_millis(500))
                    .with_timeout(Duration::from_secs(1));
                let mut conn = None;
                for n in 0..max_writes {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    if conn.is_none() {
                        conn = etcd_client::Client::connect(endpoints.clone(), Some(opts.clone()))
                            .await
                            .ok();
                    }
                    let key = format!("{prefix}/{n:06}");
                    let value = format!("v{n}");
                    let ok = match conn.as_mut() {
                        Some(c) => matches!(
                            tokio::time::timeout(
                                Duration::from_secs(2),
                                c.put(key.clone(), value.clone(), None)
                            )
                            .await,
                            Ok(Ok(_))
                        ),
                        None => false,
                    };
                    if ok {
                        acked.push((key, value));
                    } else {
                        failed += 1;
                        conn = None;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                (acked, failed)
            })
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops the writer; returns the acknowledged writes and failures.
    pub fn finish(mut self) -> LedgerResult {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

/// Acknowledged writes missing (or with another value) at `endpoint`.
pub fn lost_writes(endpoint: &str, acked: &[(String, String)]) -> Vec<String> {
    let Some((_, kvs)) = dump(endpoint) else {
        return vec!["<cannot read>".into()];
    };
    let present: BTreeMap<String, String> = kvs.into_iter().collect();
    acked
        .iter()
        .filter(|(k, v)| present.get(k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect()
}

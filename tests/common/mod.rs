//! Shared helpers for integration tests: real `eco` processes running real
//! etcd on loopback addresses, cleaned up even when a test fails.
#![allow(dead_code)]

pub mod cluster;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The etcd binaries for this run: `.tools/etcd-$ECO_TEST_ETCD_VERSION/bin`
/// (default 3.5), installed by scripts/install-deps.sh.
pub fn etcd_bin_dir() -> PathBuf {
    let version = std::env::var("ECO_TEST_ETCD_VERSION").unwrap_or_else(|_| "3.5".into());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(".tools/etcd-{version}/bin"));
    assert!(
        dir.join("etcd").exists(),
        "{} is missing: run scripts/install-deps.sh (make test does)",
        dir.display()
    );
    dir
}

pub fn eco_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_eco"))
}

/// Polls `f` every 50 ms until it returns `Some` or `limit` passes.
pub fn wait_until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Pids of processes whose command line has `--data-dir=<dir>`.
pub fn etcd_pids_on(data_dir: &Path) -> Vec<i32> {
    let needle = format!("--data-dir={}", data_dir.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        // Zombies have an empty command line and are not running.
        if cmdline.split(|b| *b == 0).any(|a| a == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

pub fn kill(pid: i32, signal: i32) {
    unsafe {
        libc::kill(pid, signal);
    }
}

/// One eco instance in a temporary directory, static provider, group of
/// one, on its own loopback address, with timeouts lowered for tests.
pub struct Instance {
    pub dir: tempfile::TempDir,
    pub address: IpAddr,
    pub id: String,
    pub config: PathBuf,
    pub process: Option<Child>,
}

impl Instance {
    pub fn new(address: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("eco-it-")
            .tempdir()
            .expect("tempdir");
        let id = "eco-1".to_string();
        let address: IpAddr = address.parse().expect("address");
        std::fs::write(
            dir.path().join("group.toml"),
            format!("[[instance]]\nid = \"{id}\"\naddress = \"{address}\"\n"),
        )
        .expect("group file");
        let bin = etcd_bin_dir();
        let config = dir.path().join("eco.toml");
        std::fs::write(
            &config,
            format!(
                r#"[cluster]
name = "it"
[provider]
kind = "static"
[provider.static]
group_file = "group.toml"
refresh_interval = "500ms"
[etcd]
etcd_bin = "{bin}/etcd"
data_dir = "data/etcd"
heartbeat_interval = "50ms"
election_timeout = "250ms"
probe_interval = "200ms"
call_timeout = "1s"
stop_timeout = "5s"
[recovery]
quorum_loss_timeout = "5s"
unhealthy_member_ttl = "5s"
[log]
level = "info"
"#,
                bin = bin.display()
            ),
        )
        .expect("config");
        Self {
            dir,
            address,
            id,
            config,
            process: None,
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data/etcd")
    }

    pub fn state_file(&self) -> PathBuf {
        self.dir.path().join("data/eco-state.json")
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}:2379", self.address)
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("eco.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Starts `eco run`; output goes to `eco.log` (appended).
    pub fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("log");
        let child = Command::new(eco_bin())
            .args(["run", "--config"])
            .arg(&self.config)
            .arg("--instance-id")
            .arg(&self.id)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn eco");
        self.process = Some(child);
    }

    pub fn pid(&self) -> i32 {
        self.process.as_ref().expect("running").id() as i32
    }

    /// Waits for eco to exit, at most `limit`; returns its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let child = self.process.as_mut()?;
        let code = wait_until(limit, || child.try_wait().ok().flatten())?;
        self.process = None;
        Some(code.code().unwrap_or(-1))
    }

    /// Sends `signal` to eco.
    pub fn signal(&self, signal: i32) {
        kill(self.pid(), signal);
    }

    pub fn etcd_pids(&self) -> Vec<i32> {
        etcd_pids_on(&self.data_dir())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(mut c) = self.process.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for pid in self.etcd_pids() {
            kill(pid, libc::SIGKILL);
        }
        if std::thread::panicking() {
            eprintln!(
                "--- eco log ({}) ---\n{}",
                self.log_path().display(),
                self.log()
            );
        }
    }
}

/// A tokio runtime for the async etcd client.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

pub async fn client(endpoint: &str) -> Option<etcd_client::Client> {
    let opts = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_millis(500))
        .with_timeout(Duration::from_millis(1000));
    tokio::time::timeout(
        Duration::from_secs(2),
        etcd_client::Client::connect([endpoint], Some(opts)),
    )
    .await
    .ok()?
    .ok()
}

/// `(cluster id, value of key)` when etcd answers a linearizable read.
pub fn read(endpoint: &str, key: &str) -> Option<(u64, Option<String>)> {
    rt().block_on(async {
        let mut c = client(endpoint).await?;
        let r = tokio::time::timeout(Duration::from_secs(2), c.get(key, None))
            .await
            .ok()?
            .ok()?;
        let cluster = r.header()?.cluster_id();
        let value = r
            .kvs()
            .first()
            .map(|kv| String::from_utf8_lossy(kv.value()).to_string());
        Some((cluster, value))
    })
}

pub fn write(endpoint: &str, key: &str, value: &str) -> bool {
    rt().block_on(async {
        let Some(mut c) = client(endpoint).await else {
            return false;
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), c.put(key, value, None)).await,
            Ok(Ok(_))
        )
    })
}

/// Waits until etcd serves reads; returns the cluster id.
pub fn wait_serving(endpoint: &str, limit: Duration) -> Option<u64> {
    wait_until(limit, || read(endpoint, "health-probe").map(|(c, _)| c))
}

impl Instance {
    /// Adds a directory snapshot store at `<tempdir>/store` to the config.
    pub fn with_dir_store(self) -> Self {
        let mut text = std::fs::read_to_string(&self.config).expect("config");
        text.push_str("[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"store\"\n");
        std::fs::write(&self.config, text).expect("config");
        std::fs::create_dir_all(self.store_dir()).expect("store dir");
        self
    }

    pub fn store_dir(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// Runs `eco <args>`; returns (exit code, stdout, stderr).
    pub fn eco(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(eco_bin())
            .args(args)
            .output()
            .expect("run eco");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
}

/// Every key and value under "" with the revision, via a linearizable read.
pub fn dump(endpoint: &str) -> Option<(i64, Vec<(String, String)>)> {
    rt().block_on(async {
        let mut c = client(endpoint).await?;
        let opts = etcd_client::GetOptions::new().with_all_keys();
        let r = tokio::time::timeout(Duration::from_secs(5), c.get("", Some(opts)))
            .await
            .ok()?
            .ok()?;
        let rev = r.header()?.revision();
        let kvs = r
            .kvs()
            .iter()
            .map(|kv| {
                (
                    String::from_utf8_lossy(kv.key()).into(),
                    String::from_utf8_lossy(kv.value()).into(),
                )
            })
            .collect();
        Some((rev, kvs))
    })
}

/// A raw etcd (not managed by eco) on an existing data dir; killed on drop.
pub struct RawEtcd(pub Child);

impl RawEtcd {
    /// A new one-member cluster.
    pub fn start_new(data_dir: &Path, name: &str, address: &str) -> Self {
        Self::spawn(
            data_dir,
            name,
            address,
            &[
                format!("--initial-cluster={name}=http://{address}:2380"),
                "--initial-cluster-token=raw-test".into(),
            ],
        )
    }

    /// etcd on an existing data dir.
    pub fn start(data_dir: &Path, name: &str, address: &str) -> Self {
        Self::spawn(data_dir, name, address, &[])
    }

    fn spawn(data_dir: &Path, name: &str, address: &str, extra: &[String]) -> Self {
        let child = Command::new(etcd_bin_dir().join("etcd"))
            .arg(format!("--name={name}"))
            .arg(format!("--data-dir={}", data_dir.display()))
            .arg(format!("--listen-client-urls=http://{address}:2379"))
            .arg(format!("--advertise-client-urls=http://{address}:2379"))
            .arg(format!("--listen-peer-urls=http://{address}:2380"))
            .arg(format!(
                "--initial-advertise-peer-urls=http://{address}:2380"
            ))
            .arg("--listen-metrics-urls=http://127.0.0.1:0")
            .args(["--heartbeat-interval=50", "--election-timeout=250"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start etcd");
        Self(child)
    }
}

impl Drop for RawEtcd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

//! `snapshot-bench` (M7): fills a real, plain etcd (one member, started
//! here) with `size_mib` MiB of values, then times `eco snapshot now` into
//! a directory store against `etcdctl snapshot save` on the same etcd,
//! alternating the two (ABBA order, so neither always runs first). Reports
//! the ratio of the median wall times (eco / etcdctl) and the peak RSS of
//! each process, read exactly from `wait4`'s rusage.
//!
//! Everything lives in a temporary directory that is removed at the end;
//! etcd is killed when the benchmark ends, fails, or its own process dies
//! (`PR_SET_PDEATHSIG`).

use anyhow::{Context, bail};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use testkit::cluster::write_group_file;
use testkit::config::ConfigBuilder;
use testkit::etcd::RawEtcd;
use testkit::process::die_with_parent;

/// Loopback address of the benchmark's etcd (and of instance `eco-1`).
pub const ADDRESS: &str = "127.0.20.1";
const CLUSTER: &str = "bench";
const INSTANCE: &str = "eco-1";
const TOKEN: &str = "snapshot-bench";
/// The goals of M7.
pub const RATIO_GOAL: f64 = 1.1;
pub const RSS_GOAL_MIB: f64 = 64.0;

#[derive(Clone, Debug)]
pub struct Options {
    pub size_mib: u64,
    pub runs: usize,
    /// Directory with `etcd` and `etcdctl` (default: `.tools/etcd-3.5/bin`).
    pub etcd_bin_dir: Option<PathBuf>,
    /// The `eco` binary (default: `$ECO_BIN`, else `target/release/eco`).
    pub eco_bin: Option<PathBuf>,
    /// Where the temporary directory goes (default: the system's).
    pub work_dir: Option<PathBuf>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    pub size_mib: u64,
    /// Size of the snapshot file (etcd's bbolt database).
    pub snapshot_mib: f64,
    pub etcd_version: String,
    pub runs: usize,
    pub eco_median_s: f64,
    pub etcdctl_median_s: f64,
    /// Median eco time / median etcdctl time.
    pub time_ratio_vs_etcdctl: f64,
    /// eco's peak RSS, the largest over its runs.
    pub peak_rss_mib: f64,
    pub etcdctl_peak_rss_mib: f64,
    pub eco_throughput_mib_s: f64,
    pub eco_s: Vec<f64>,
    pub etcdctl_s: Vec<f64>,
    pub eco_rss_mib: Vec<f64>,
    pub etcdctl_rss_mib: Vec<f64>,
    pub time_ratio_goal: f64,
    pub peak_rss_goal_mib: f64,
    pub goals_met: bool,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

/// The benchmark's etcd, killed on drop.
struct Etcd {
    etcd: RawEtcd,
    log: PathBuf,
}

impl Etcd {
    fn start(bin_dir: &Path, data_dir: &Path, log: PathBuf) -> anyhow::Result<Self> {
        for port in [2379, 2380] {
            TcpListener::bind((ADDRESS, port)).with_context(|| {
                format!("{ADDRESS}:{port} is in use (another etcd or benchmark running?)")
            })?;
        }
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("etcd log")?;
        // Children die with the benchmark, whatever kills it.
        let child = die_with_parent(
            RawEtcd::command(bin_dir, data_dir, "bench", ADDRESS)
                .arg(format!("--initial-cluster=bench=http://{ADDRESS}:2380"))
                .arg(format!("--initial-cluster-token={TOKEN}"))
                .arg(format!("--quota-backend-bytes={}", 8u64 << 30))
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err),
        )
        .spawn()
        .with_context(|| format!("starting {}", bin_dir.join("etcd").display()))?;
        Ok(Self {
            etcd: RawEtcd(child),
            log,
        })
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn check_running(&mut self) -> anyhow::Result<()> {
        if let Ok(Some(status)) = self.etcd.0.try_wait() {
            bail!("etcd exited ({status}); its log ends:\n{}", self.log_tail());
        }
        Ok(())
    }
}

fn endpoint() -> String {
    format!("http://{ADDRESS}:2379")
}

async fn connect() -> anyhow::Result<etcd_client::Client> {
    let opts = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(1))
        .with_timeout(Duration::from_secs(30));
    tokio::time::timeout(
        Duration::from_secs(3),
        etcd_client::Client::connect([endpoint()], Some(opts)),
    )
    .await
    .context("connecting to etcd: no answer")?
    .context("connecting to etcd")
}

/// Waits (bounded) until etcd answers a status request; returns its version.
async fn wait_ready(etcd: &mut Etcd) -> anyhow::Result<String> {
    let start = Instant::now();
    loop {
        etcd.check_running()?;
        if let Ok(mut c) = connect().await {
            if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), c.status()).await {
                if s.leader() != 0 {
                    return Ok(s.version().to_string());
                }
            }
        }
        if start.elapsed() > Duration::from_secs(30) {
            bail!(
                "etcd did not serve within 30 s; its log ends:\n{}",
                etcd.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A tiny deterministic generator (xorshift64*): incompressible values
/// without caring which `rand` API this crate pins.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

/// Writes `size_mib` MiB of values of 512 KiB..1 MiB (etcd's default
/// request limit is 1.5 MiB), four puts in flight; returns etcd's db size.
async fn fill(etcd: &mut Etcd, size_mib: u64) -> anyhow::Result<u64> {
    let client = connect().await?;
    let total = size_mib << 20;
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut written = 0u64;
    let mut key = 0u64;
    let mut next_report = total / 10;
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    while written < total || !tasks.is_empty() {
        if written < total && tasks.len() < 4 {
            let len = (512 * 1024 + (rng.next() % (512 * 1024 + 1))).min(total - written);
            let value = rng.bytes(len as usize);
            let mut kv = client.kv_client();
            let k = format!("bench/{key:08}");
            tasks.spawn(async move {
                tokio::time::timeout(Duration::from_secs(60), kv.put(k.clone(), value, None))
                    .await
                    .with_context(|| format!("put {k}: no answer within 60 s"))?
                    .with_context(|| format!("put {k}"))
                    .map(|_| ())
            });
            written += len;
            key += 1;
            continue;
        }
        if let Some(done) = tasks.join_next().await {
            done.context("put task")??;
        }
        if written >= next_report && total > 0 {
            eprintln!(
                "snapshot-bench: filled {} / {} MiB ({:.0} s)",
                written >> 20,
                size_mib,
                started.elapsed().as_secs_f64()
            );
            next_report = next_report.saturating_add((total / 10).max(1));
        }
        etcd.check_running()?;
    }
    let mut c = connect().await?;
    let status = tokio::time::timeout(Duration::from_secs(10), c.status())
        .await
        .context("status: no answer")?
        .context("status")?;
    eprintln!(
        "snapshot-bench: filled {size_mib} MiB in {key} keys in {:.1} s; db size {} MiB",
        started.elapsed().as_secs_f64(),
        status.db_size() >> 20
    );
    Ok(status.db_size().max(0) as u64)
}

/// Wall time and peak RSS (MiB) of one child process.
struct Measured {
    seconds: f64,
    rss_mib: f64,
}

/// Runs `cmd` to its end (killed after `limit`), output to `log`; fails on
/// a non-zero exit. Peak RSS comes from `wait4` (ru_maxrss, KiB on Linux).
fn measure(mut cmd: Command, log: &Path, limit: Duration) -> anyhow::Result<Measured> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone().context("log")?;
    let what = format!("{cmd:?}");
    let started = Instant::now();
    let child = die_with_parent(cmd.stdin(Stdio::null()).stdout(out).stderr(err))
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let pid = child.id() as libc::pid_t;
    // A watchdog kills the child after `limit`. The child is reaped only
    // after the watchdog is gone, so it can never signal a reused pid.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(limit).is_err() {
            // SAFETY: plain syscall; `pid` is our unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return true;
        }
        false
    });
    // Wait for the exit without reaping.
    let exited = loop {
        // SAFETY: zeroed siginfo_t is a valid out-parameter.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            break Ok(started.elapsed());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            break Err(e);
        }
    };
    let _ = done_tx.send(());
    let killed = watchdog.join().unwrap_or(false);
    let elapsed = exited.with_context(|| format!("waiting for {what}"))?;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    drop(child);
    if r != pid {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("reaping {what}"));
    }
    let output = std::fs::read_to_string(log).unwrap_or_default();
    if killed {
        bail!("{what} did not finish within {limit:?}; output:\n{output}");
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{what} failed (wait status {status}); output:\n{output}");
    }
    Ok(Measured {
        seconds: elapsed.as_secs_f64(),
        rss_mib: usage.ru_maxrss as f64 / 1024.0,
    })
}

/// Sizes of the `.db` files under `dir` (recursively).
fn db_files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "db")
                && !entry.file_name().to_string_lossy().starts_with('.')
            {
                let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
                found.push((p, len));
            }
        }
    }
    found
}

fn write_eco_config(dir: &Path, bin_dir: &Path) -> anyhow::Result<PathBuf> {
    write_group_file(&dir.join("group.toml"), &[(INSTANCE, ADDRESS, None)])
        .context("writing the group file")?;
    std::fs::create_dir_all(dir.join("data")).context("creating data/")?;
    std::fs::create_dir_all(dir.join("store")).context("creating store/")?;
    // The state file `eco snapshot now` reads (a plain etcd has none).
    std::fs::write(
        dir.join("data/eco-state.json"),
        serde_json::json!({
            "format": 1,
            "cluster_name": CLUSTER,
            "instance_id": INSTANCE,
            "incarnation": 1,
            "cluster_token": TOKEN,
        })
        .to_string(),
    )
    .context("writing the state file")?;
    let config = dir.join("eco.toml");
    ConfigBuilder::eco_defaults(CLUSTER, "group.toml")
        .etcd_bin_dir(bin_dir)
        .data_dir("data/etcd")
        .call_timeout(Duration::from_secs(30))
        .dir_store("store")
        .log_level("warn")
        .write(&config)
        .context("writing the eco config")?;
    Ok(config)
}

pub fn run(opts: &Options) -> anyhow::Result<BenchResult> {
    if opts.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let root = testkit::workspace_root();
    let bin_dir = opts
        .etcd_bin_dir
        .clone()
        .unwrap_or_else(|| testkit::etcd::bin_dir_of(testkit::etcd::DEFAULT_VERSION));
    for b in ["etcd", "etcdctl"] {
        if !bin_dir.join(b).exists() {
            bail!(
                "{} is missing: run `bash scripts/install-deps.sh` or pass --etcd-bin-dir",
                bin_dir.join(b).display()
            );
        }
    }
    let eco_bin = opts
        .eco_bin
        .clone()
        .or_else(|| std::env::var_os("ECO_BIN").map(PathBuf::from))
        .unwrap_or_else(|| root.join("target/release/eco"));
    if !eco_bin.exists() {
        bail!(
            "{} is missing: build it with `cargo build --release -p eco` (or set ECO_BIN / --eco-bin)",
            eco_bin.display()
        );
    }

    let mut builder = tempfile::Builder::new();
    builder.prefix("eco-snapshot-bench-");
    let tmp = match &opts.work_dir {
        Some(d) => builder.tempdir_in(d),
        None => builder.tempdir(),
    }
    .context("creating the temporary directory")?;
    let dir = tmp.path();
    let config = write_eco_config(dir, &bin_dir)?;
    let store = dir.join("store");
    let saved = dir.join("etcdctl.db");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    // Declared after `tmp`: etcd is killed before the directory goes.
    let mut etcd = Etcd::start(&bin_dir, &dir.join("data/etcd"), dir.join("etcd.log"))?;
    let etcd_version = rt.block_on(wait_ready(&mut etcd))?;
    rt.block_on(fill(&mut etcd, opts.size_mib))?;
    // Write back the fill's dirty pages now, not during the first run.
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };

    // Generous: 60 s plus 0.5 s per MiB (2 MiB/s).
    let limit = Duration::from_secs(60 + opts.size_mib / 2);
    let (mut eco_s, mut ctl_s, mut eco_rss, mut ctl_rss) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut snapshot_bytes = 0u64;
    for i in 0..opts.runs {
        // ABBA: eco first on even runs, etcdctl first on odd ones.
        let order = if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_eco in order {
            etcd.check_running()?;
            if is_eco {
                let mut cmd = Command::new(&eco_bin);
                cmd.args(["snapshot", "now", "--config"])
                    .arg(&config)
                    .args(["--instance-id", INSTANCE]);
                let m = measure(cmd, &dir.join("eco-run.log"), limit)?;
                let files = db_files(&store);
                let Some((_, len)) = files.first() else {
                    bail!("eco reported success but stored no snapshot");
                };
                snapshot_bytes = snapshot_bytes.max(*len);
                eprintln!(
                    "snapshot-bench: run {}: eco     {:7.2} s, peak RSS {:6.1} MiB, {} MiB",
                    i + 1,
                    m.seconds,
                    m.rss_mib,
                    len >> 20
                );
                eco_s.push(m.seconds);
                eco_rss.push(m.rss_mib);
                std::fs::remove_dir_all(&store).context("emptying the store")?;
                std::fs::create_dir_all(&store).context("creating store/")?;
            } else {
                let mut cmd = Command::new(bin_dir.join("etcdctl"));
                cmd.env("ETCDCTL_API", "3")
                    .arg(format!("--endpoints={}", endpoint()))
                    .args(["--dial-timeout=5s", "--command-timeout=600s"])
                    .args(["snapshot", "save"])
                    .arg(&saved);
                let m = measure(cmd, &dir.join("etcdctl-run.log"), limit)?;
                let len = std::fs::metadata(&saved)
                    .with_context(|| format!("etcdctl saved no {}", saved.display()))?
                    .len();
                snapshot_bytes = snapshot_bytes.max(len);
                eprintln!(
                    "snapshot-bench: run {}: etcdctl {:7.2} s, peak RSS {:6.1} MiB, {} MiB",
                    i + 1,
                    m.seconds,
                    m.rss_mib,
                    len >> 20
                );
                ctl_s.push(m.seconds);
                ctl_rss.push(m.rss_mib);
                std::fs::remove_file(&saved).context("removing etcdctl's snapshot")?;
            }
        }
    }
    drop(etcd);
    drop(tmp);

    let eco_median_s = median(&eco_s);
    let etcdctl_median_s = median(&ctl_s);
    let ratio = eco_median_s / etcdctl_median_s;
    let peak = max(&eco_rss);
    let snapshot_mib = snapshot_bytes as f64 / (1u64 << 20) as f64;
    Ok(BenchResult {
        size_mib: opts.size_mib,
        snapshot_mib,
        etcd_version,
        runs: opts.runs,
        eco_median_s,
        etcdctl_median_s,
        time_ratio_vs_etcdctl: ratio,
        peak_rss_mib: peak,
        etcdctl_peak_rss_mib: max(&ctl_rss),
        eco_throughput_mib_s: snapshot_mib / eco_median_s,
        eco_s,
        etcdctl_s: ctl_s,
        eco_rss_mib: eco_rss,
        etcdctl_rss_mib: ctl_rss,
        time_ratio_goal: RATIO_GOAL,
        peak_rss_goal_mib: RSS_GOAL_MIB,
        goals_met: ratio <= RATIO_GOAL && peak <= RSS_GOAL_MIB,
    })
}

/// The human-readable table.
pub fn render(r: &BenchResult) -> String {
    let mut out = format!(
        "{:>8} {:>9} {:>5} {:>12} {:>16} {:>6} {:>16} {:>20}\n",
        "size MiB",
        "snap MiB",
        "runs",
        "eco med. s",
        "etcdctl med. s",
        "ratio",
        "eco peak RSS MiB",
        "etcdctl peak RSS MiB"
    );
    out.push_str(&format!(
        "{:>8} {:>9.0} {:>5} {:>12.2} {:>16.2} {:>6.2} {:>16.1} {:>20.1}\n",
        r.size_mib,
        r.snapshot_mib,
        r.runs,
        r.eco_median_s,
        r.etcdctl_median_s,
        r.time_ratio_vs_etcdctl,
        r.peak_rss_mib,
        r.etcdctl_peak_rss_mib
    ));
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    out.push_str(&format!(
        "etcd {}; goals: ratio <= {} {}, eco peak RSS <= {} MiB {}\n",
        r.etcd_version,
        r.time_ratio_goal,
        verdict(r.time_ratio_vs_etcdctl <= r.time_ratio_goal),
        r.peak_rss_goal_mib,
        verdict(r.peak_rss_mib <= r.peak_rss_goal_mib)
    ));
    out
}

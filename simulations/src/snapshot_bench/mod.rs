//! `snapshot-bench` (M7): fills a real, plain etcd (one member, started
//! here) with `size_mib` MiB of values, then times `eco snapshot now`
//! against what a user does by hand on the same etcd, alternating the two
//! (ABBA order, so neither always runs first), and reports the ratio of
//! the median wall times and the peak RSS of each process, read exactly
//! from `wait4`'s rusage.
//!
//! - `--store dir` ([`dir`]): eco into a directory store against
//!   `etcdctl snapshot save`.
//! - `--store s3` ([`s3`]): eco streaming into S3 (the local AWS emulator,
//!   `testkit::aws`) against `etcdctl snapshot save FILE` followed by
//!   `aws s3 cp FILE s3://…` (the two timed together).
//!
//! Everything lives in a temporary directory that is removed at the end;
//! etcd (and the emulator) are killed when the benchmark ends, fails, or
//! its own process dies (`PR_SET_PDEATHSIG`).

pub(crate) mod dir;
pub(crate) mod s3;

pub use dir::DirResult;
pub use s3::S3Result;

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
pub(crate) const CLUSTER: &str = "bench";
const INSTANCE: &str = "eco-1";
const TOKEN: &str = "snapshot-bench";
/// The goals of M7: eco's peak RSS, whatever the store.
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
    pub store: Store,
    /// `snapshot.s3.part_size` in MiB (S3 only; default: eco's).
    pub part_size_mib: Option<u64>,
    /// `snapshot.s3.parts_in_flight` (S3 only; default: eco's).
    pub parts_in_flight: Option<u32>,
    /// What eco's snapshots carry (the directory store only).
    pub encoding: Encoding,
    /// `snapshot.compression_level` of encoded runs.
    pub compression_level: i32,
    /// What fills etcd.
    pub fill: Fill,
    /// Keep the temporary directory (the logs of the last runs, etcd's
    /// data) instead of removing it.
    pub keep: bool,
}

/// Where eco's snapshots go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Store {
    Dir,
    S3,
}

/// What eco's snapshots carry in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Encoding {
    /// The bytes etcd sent (a cluster at format 1 or 2, or
    /// `snapshot.compression = "none"`).
    None,
    /// zstd at eco's default level (a cluster at format 3).
    Zstd,
    /// zstd, then age to one X25519 recipient.
    #[serde(rename = "zstd+age")]
    #[value(name = "zstd+age")]
    ZstdAge,
}

/// What fills the benchmark's etcd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Fill {
    /// Incompressible values of 512 KiB to 1 MiB.
    Random,
    /// Kubernetes-like objects (1–8 KiB of structured text) and one
    /// incompressible 100 KiB value every 25 keys.
    Mixed,
    /// As `mixed`, with the history Kubernetes leaves: one put in four
    /// overwrites an object written before (a status update), and each
    /// tenth of the fill the history is compacted to the revision then
    /// (the API server compacts every five minutes).
    Kubernetes,
}

/// The result of either variant; serialized as the variant's own object.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Report {
    Dir(Box<DirResult>),
    S3(Box<S3Result>),
}

/// Runs the benchmark `opts.store` asks for.
pub fn run(opts: &Options) -> anyhow::Result<Report> {
    match opts.store {
        Store::Dir => dir::run(opts).map(|r| Report::Dir(Box::new(r))),
        Store::S3 => s3::run(opts).map(|r| Report::S3(Box::new(r))),
    }
}

/// The human-readable table.
pub fn render(r: &Report) -> String {
    match r {
        Report::Dir(r) => dir::render(r),
        Report::S3(r) => s3::render(r),
    }
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub(crate) fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

/// The benchmark's etcd, killed on drop.
struct Etcd {
    etcd: RawEtcd,
    log: PathBuf,
}

impl Etcd {
    /// A member whose quota holds `size_mib` twice (8 GiB at least): a
    /// fill with updates outgrows its live data between compactions.
    fn start(bin_dir: &Path, data_dir: &Path, log: PathBuf, size_mib: u64) -> anyhow::Result<Self> {
        let quota = (size_mib.saturating_mul(2) << 20).max(8u64 << 30);
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
                .arg(format!("--quota-backend-bytes={quota}"))
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
    connect_to(&[endpoint()]).await
}

/// A client of `endpoints` (plain text), calls bounded by 30 s.
pub(crate) async fn connect_to(endpoints: &[String]) -> anyhow::Result<etcd_client::Client> {
    connect_bounded(endpoints, Duration::from_secs(30)).await
}

/// A client of `endpoints` (plain text), calls bounded by `calls`.
pub(crate) async fn connect_bounded(
    endpoints: &[String],
    calls: Duration,
) -> anyhow::Result<etcd_client::Client> {
    let opts = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(1))
        .with_timeout(calls);
    tokio::time::timeout(
        Duration::from_secs(3),
        etcd_client::Client::connect(endpoints, Some(opts)),
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
        if let Ok(mut c) = connect().await
            && let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), c.status()).await
            && s.leader() != 0
        {
            return Ok(s.version().to_string());
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

/// An object as Kubernetes would store it (structured text: field names
/// repeat, names and ids do not), `len` bytes long.
fn object_value(rng: &mut XorShift, key: u64, len: usize) -> Vec<u8> {
    let hex = |rng: &mut XorShift| format!("{:016x}", rng.next());
    let mut v = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"object-{key}\",\"namespace\":\"ns-{}\",\"uid\":\"{}-{}\",\"resourceVersion\":\"{}\",\"labels\":{{\"app.kubernetes.io/name\":\"app-{}\",\"app.kubernetes.io/managed-by\":\"controller\"}}}},\"data\":{{",
        key % 97,
        hex(rng),
        hex(rng),
        rng.next() % 1_000_000,
        key % 13
    )
    .into_bytes();
    let mut field = 0u64;
    while v.len() < len {
        let entry = format!(
            "\"key-{field}\":\"value {field} of object {key}: checksum {} status Ready replicas {}\",",
            hex(rng),
            rng.next() % 7
        );
        v.extend_from_slice(entry.as_bytes());
        field += 1;
    }
    v.truncate(len);
    v
}

/// Writes `size_mib` MiB (etcd's default request limit is 1.5 MiB): with
/// [`Fill::Random`] values of 512 KiB..1 MiB, four puts in flight; with
/// [`Fill::Mixed`] objects of 1–8 KiB and a random 100 KiB value every 25
/// keys, sixteen in flight.
async fn fill(etcd: &mut Etcd, size_mib: u64, kind: Fill) -> anyhow::Result<Filled> {
    fill_through(&[endpoint()], size_mib, kind, &mut || etcd.check_running()).await
}

/// [`fill`] through `endpoints` (any etcd cluster), `alive` asked after
/// each put whether the benchmark's processes still run.
pub(crate) async fn fill_through(
    endpoints: &[String],
    size_mib: u64,
    kind: Fill,
    alive: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Filled> {
    let client = connect_to(endpoints).await?;
    // A physical compaction of gigabytes on a loaded machine takes longer
    // than a put may.
    let compactor = connect_bounded(endpoints, COMPACTION_LIMIT).await?;
    let total = size_mib << 20;
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut written = 0u64;
    let mut key = 0u64;
    let mut next_report = total / 10;
    let mut compacted = 0i64;
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    while written < total || !tasks.is_empty() {
        let in_flight = match kind {
            Fill::Random => 4,
            Fill::Mixed | Fill::Kubernetes => 16,
        };
        if written < total && tasks.len() < in_flight {
            let (k, value) = match kind {
                Fill::Random => {
                    let len = (512 * 1024 + (rng.next() % (512 * 1024 + 1))).min(total - written);
                    (format!("bench/{key:08}"), rng.bytes(len as usize))
                }
                Fill::Mixed | Fill::Kubernetes if key % 25 == 24 => (
                    format!("/registry/secrets/ns-{}/blob-{key:08}", key % 97),
                    rng.bytes((100 * 1024).min(total - written) as usize),
                ),
                Fill::Mixed | Fill::Kubernetes => {
                    let len = (1024 + rng.next() % (7 * 1024 + 1)).min(total - written);
                    // An update of an object written before (never a blob).
                    let id = if kind == Fill::Kubernetes && key % 4 == 3 && key > 100 {
                        let old = rng.next() % key;
                        if old % 25 == 24 { old - 1 } else { old }
                    } else {
                        key
                    };
                    (
                        format!("/registry/configmaps/ns-{}/object-{id:08}", id % 97),
                        object_value(&mut rng, id, len as usize),
                    )
                }
            };
            let len = value.len() as u64;
            let mut kv = client.kv_client();
            tasks.spawn(async move {
                // A loaded machine may time a put out inside etcd
                // ("request timed out"): asked again (the same key and
                // value), three times at most.
                let mut attempt = 1;
                loop {
                    let put = tokio::time::timeout(
                        Duration::from_secs(60),
                        kv.put(k.clone(), value.clone(), None),
                    )
                    .await
                    .with_context(|| format!("put {k}: no answer within 60 s"))
                    .and_then(|r| r.with_context(|| format!("put {k}")));
                    match put {
                        Ok(_) => return Ok(()),
                        Err(e) if attempt >= 3 => return Err(e),
                        Err(e) => {
                            eprintln!("snapshot-bench: {e:#}; asking again");
                            attempt += 1;
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
            });
            written += len;
            key += 1;
            continue;
        }
        if let Some(done) = tasks.join_next().await {
            done.context("put task")??;
        }
        if written >= next_report && total > 0 {
            if kind == Fill::Kubernetes {
                compact_all(&compactor, &mut compacted).await?;
            }
            eprintln!(
                "snapshot-bench: filled {} / {} MiB ({:.0} s)",
                written >> 20,
                size_mib,
                started.elapsed().as_secs_f64()
            );
            next_report = next_report.saturating_add((total / 10).max(1));
        }
        alive()?;
    }
    if kind == Fill::Kubernetes {
        compact_all(&compactor, &mut compacted).await?;
    }
    let mut c = connect_to(endpoints).await?;
    let status = tokio::time::timeout(Duration::from_secs(10), c.status())
        .await
        .context("status: no answer")?
        .context("status")?;
    eprintln!(
        "snapshot-bench: filled {size_mib} MiB in {key} keys in {:.1} s; db size {} MiB",
        started.elapsed().as_secs_f64(),
        status.db_size() >> 20
    );
    Ok(Filled {
        db_bytes: status.db_size().max(0) as u64,
        puts: key,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// What [`fill`] wrote.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Filled {
    /// etcd's database size after the fill.
    pub(crate) db_bytes: u64,
    /// Puts made (new keys and overwrites).
    pub(crate) puts: u64,
    pub(crate) seconds: f64,
}

/// The longest a physical compaction may take.
const COMPACTION_LIMIT: Duration = Duration::from_secs(600);

/// Compacts etcd's history to its current revision and waits until the
/// compaction is done (physical), so no compaction runs during the
/// timed commands.
async fn compact_all(client: &etcd_client::Client, compacted: &mut i64) -> anyhow::Result<()> {
    let mut kv = client.kv_client();
    let read = tokio::time::timeout(Duration::from_secs(30), kv.get("/", None))
        .await
        .context("reading the revision: no answer within 30 s")?
        .context("reading the revision")?;
    let revision = read.header().map(|h| h.revision()).unwrap_or(0);
    if revision > (*compacted).max(1) {
        let physical = etcd_client::CompactionOptions::new().with_physical();
        tokio::time::timeout(COMPACTION_LIMIT, kv.compact(revision, Some(physical)))
            .await
            .with_context(|| format!("compacting: no answer within {COMPACTION_LIMIT:?}"))?
            .with_context(|| format!("compacting to revision {revision}"))?;
        *compacted = revision;
    }
    Ok(())
}

/// Wall time, peak RSS (MiB) and CPU time (user + system) of one child
/// process.
pub(crate) struct Measured {
    pub(crate) seconds: f64,
    pub(crate) rss_mib: f64,
    pub(crate) cpu_s: f64,
}

/// Runs `cmd` to its end (killed after `limit`), output to `log`; fails on
/// a non-zero exit. Peak RSS comes from `wait4` (ru_maxrss, KiB on Linux).
pub(crate) fn measure(mut cmd: Command, log: &Path, limit: Duration) -> anyhow::Result<Measured> {
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
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Measured {
        seconds: elapsed.as_secs_f64(),
        rss_mib: usage.ru_maxrss as f64 / 1024.0,
        cpu_s: tv(usage.ru_utime) + tv(usage.ru_stime),
    })
}

/// What both variants start from: the binaries, the temporary directory
/// with the group file and the state file `eco snapshot now` reads, and a
/// filled, synced etcd.
pub(crate) struct Prepared {
    // Declared before `tmp`: etcd is killed before the directory goes.
    etcd: Etcd,
    pub(crate) etcd_version: String,
    pub(crate) bin_dir: PathBuf,
    pub(crate) eco_bin: PathBuf,
    tmp: tempfile::TempDir,
    keep: bool,
    /// How long one timed command may take.
    pub(crate) limit: Duration,
    /// What the fill wrote.
    pub(crate) filled: Filled,
    /// `snapshot.compression_level` of eco's config.
    compression_level: i32,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.keep {
            // etcd is killed first (the field's own drop, after this).
            self.tmp.disable_cleanup(true);
        }
    }
}

impl Prepared {
    pub(crate) fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// eco's config without a store: eco's defaults, the static provider
    /// with the one-instance group file, etcd's data in `data/etcd`, etcd
    /// calls bounded by 30 s (the quorum-loss timeout raised to stay
    /// longer than a pass, as validation requires; `snapshot now` does not
    /// use it). The benchmark's etcd serves plain text, so the config says
    /// so: eco's default with a store is generated TLS, whose files a
    /// member eco never started does not have.
    pub(crate) fn eco_config(&self) -> ConfigBuilder {
        ConfigBuilder::eco_defaults(CLUSTER, "group.toml")
            .plaintext()
            .etcd_bin_dir(&self.bin_dir)
            .data_dir("data/etcd")
            .call_timeout(Duration::from_secs(30))
            .quorum_loss_timeout(Duration::from_secs(120))
            .log_level("warn")
    }

    /// `eco snapshot now` with `config`.
    fn eco_snapshot(&self, config: &Path) -> Command {
        let mut cmd = Command::new(&self.eco_bin);
        cmd.args(["snapshot", "now", "--config"])
            .arg(config)
            .args(["--instance-id", INSTANCE]);
        cmd
    }

    /// `etcdctl snapshot save <to>` against the benchmark's etcd.
    pub(crate) fn etcdctl_save(&self, to: &Path) -> Command {
        let mut cmd = Command::new(self.bin_dir.join("etcdctl"));
        cmd.env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", endpoint()))
            .args(["--dial-timeout=5s", "--command-timeout=600s"])
            .args(["snapshot", "save"])
            .arg(to);
        cmd
    }
}

/// Checks the binaries, creates the temporary directory, the group file
/// and eco's state file, starts etcd and fills it with `opts.size_mib`.
pub(crate) fn prepare(opts: &Options) -> anyhow::Result<Prepared> {
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
    if opts.keep {
        eprintln!("snapshot-bench: keeping {}", tmp.path().display());
    }
    let dir = tmp.path();
    write_group_file(&dir.join("group.toml"), &[(INSTANCE, ADDRESS, None)])
        .context("writing the group file")?;
    std::fs::create_dir_all(dir.join("data")).context("creating data/")?;
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

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let mut etcd = Etcd::start(
        &bin_dir,
        &dir.join("data/etcd"),
        dir.join("etcd.log"),
        opts.size_mib,
    )?;
    let etcd_version = rt.block_on(wait_ready(&mut etcd))?;
    let filled = rt.block_on(fill(&mut etcd, opts.size_mib, opts.fill))?;
    // Write back the fill's dirty pages now, not during the first run.
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
    Ok(Prepared {
        etcd,
        etcd_version,
        bin_dir,
        eco_bin,
        filled,
        tmp,
        keep: opts.keep,
        // Generous: 60 s plus 0.5 s per MiB (2 MiB/s).
        limit: Duration::from_secs(60 + opts.size_mib / 2),
        compression_level: opts.compression_level,
    })
}

//! `snapshot-bench --store dir`: `eco snapshot now` into a directory store
//! against `etcdctl snapshot save` on the same etcd.

use super::{Encoding, Fill, Options, Prepared, RSS_GOAL_MIB, max, measure, median, prepare};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

/// The time goal of M7 for the directory store (eco / etcdctl, medians).
pub const RATIO_GOAL: f64 = 1.1;

#[derive(Clone, Debug, serde::Serialize)]
pub struct DirResult {
    pub size_mib: u64,
    pub fill: Fill,
    /// What eco's snapshots carry in the store.
    pub encoding: Encoding,
    /// Size of the snapshot file (etcd's bbolt database).
    pub snapshot_mib: f64,
    /// Size of eco's stored object (the snapshot as encoded).
    pub stored_mib: f64,
    /// The snapshot's size over the stored object's.
    pub compression_ratio: f64,
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
    /// `snapshot.compression_level` (encoded runs).
    pub compression_level: i32,
    pub eco_s: Vec<f64>,
    /// eco's CPU time (user + system) of each run.
    pub eco_cpu_s: Vec<f64>,
    pub etcdctl_s: Vec<f64>,
    pub eco_rss_mib: Vec<f64>,
    pub etcdctl_rss_mib: Vec<f64>,
    pub time_ratio_goal: f64,
    pub peak_rss_goal_mib: f64,
    pub goals_met: bool,
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

/// eco's config with a directory store in `store/`, encoding as asked:
/// `none` turns compression off, `zstd+age` encrypts to a key made by
/// `eco snapshot keygen` (the product's own command).
fn write_eco_config(p: &Prepared, encoding: Encoding) -> anyhow::Result<PathBuf> {
    let dir = p.dir();
    std::fs::create_dir_all(dir.join("store")).context("creating store/")?;
    let config = dir.join("eco.toml");
    let level = p.compression_level;
    let mut builder = p
        .eco_config()
        .dir_store("store")
        .edit(|c| c.snapshot.compression_level = level);
    match encoding {
        Encoding::None => {
            builder =
                builder.edit(|c| c.snapshot.compression = eco::config::SnapshotCompression::None);
        }
        Encoding::Zstd => {}
        Encoding::ZstdAge => {
            let identity = dir.join("snapshot-identity.txt");
            let out = std::process::Command::new(&p.eco_bin)
                .args(["snapshot", "keygen", "--out"])
                .arg(&identity)
                .output()
                .context("running eco snapshot keygen")?;
            if !out.status.success() {
                bail!(
                    "eco snapshot keygen failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let text = std::fs::read_to_string(&identity)
                .with_context(|| format!("reading {}", identity.display()))?;
            let recipient = text
                .lines()
                .find_map(|l| l.strip_prefix("# public key: "))
                .context("the identity file names no public key")?
                .to_string();
            builder = builder.snapshot_encryption(&[recipient], Some(&identity));
        }
    }
    builder.write(&config).context("writing the eco config")?;
    Ok(config)
}

/// An empty store for the next run; for an encoded snapshot, with the
/// record a new cluster writes at formation (finalized at eco's newest
/// format: compression is written from format 3 on).
fn reset_store(store: &Path, encoding: Encoding) -> anyhow::Result<()> {
    if store.exists() {
        std::fs::remove_dir_all(store).context("emptying the store")?;
    }
    std::fs::create_dir_all(store).context("creating store/")?;
    if encoding == Encoding::None {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let dir_store = eco::store::dir::DirStore::new(store.to_path_buf());
    rt.block_on(eco::store::cluster_version::finalize(
        &dir_store,
        &eco::store::cluster_version::Finalized {
            cluster: super::CLUSTER.to_string(),
            format: recovery::cluster_version::NEWEST,
            by: "snapshot-bench".into(),
            reason: "a new cluster: finalized at formation".into(),
            at_unix_ms: 0,
        },
    ))
    .context("recording the cluster version")?;
    Ok(())
}

pub fn run(opts: &Options) -> anyhow::Result<DirResult> {
    let mut p = prepare(opts)?;
    run_on(&mut p, opts)
}

/// The runs of [`run`] on an etcd already filled (`p`); the store and the
/// files they make are removed after each run.
pub(crate) fn run_on(p: &mut Prepared, opts: &Options) -> anyhow::Result<DirResult> {
    let dir = p.dir().to_path_buf();
    let config = write_eco_config(p, opts.encoding)?;
    let store = dir.join("store");
    reset_store(&store, opts.encoding)?;
    let saved = dir.join("etcdctl.db");
    let limit = p.limit;
    let (mut eco_s, mut ctl_s, mut eco_rss, mut ctl_rss, mut eco_cpu) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut snapshot_bytes = 0u64;
    let mut stored_bytes = 0u64;
    for i in 0..opts.runs {
        // ABBA: eco first on even runs, etcdctl first on odd ones.
        let order = if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_eco in order {
            p.etcd.check_running()?;
            if is_eco {
                let cmd = p.eco_snapshot(&config);
                let m = measure(cmd, &dir.join("eco-run.log"), limit)?;
                let files = db_files(&store);
                let Some((_, len)) = files.first() else {
                    bail!("eco reported success but stored no snapshot");
                };
                stored_bytes = stored_bytes.max(*len);
                eprintln!(
                    "snapshot-bench: run {}: eco     {:7.2} s, peak RSS {:6.1} MiB, {} MiB, CPU {:.2} s",
                    i + 1,
                    m.seconds,
                    m.rss_mib,
                    len >> 20,
                    m.cpu_s
                );
                eco_s.push(m.seconds);
                eco_cpu.push(m.cpu_s);
                eco_rss.push(m.rss_mib);
                reset_store(&store, opts.encoding)?;
            } else {
                let cmd = p.etcdctl_save(&saved);
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
    let etcd_version = p.etcd_version.clone();
    if store.exists() {
        std::fs::remove_dir_all(&store).context("removing the store")?;
    }

    let eco_median_s = median(&eco_s);
    let etcdctl_median_s = median(&ctl_s);
    let ratio = eco_median_s / etcdctl_median_s;
    let peak = max(&eco_rss);
    let snapshot_mib = snapshot_bytes as f64 / (1u64 << 20) as f64;
    let stored_mib = stored_bytes as f64 / (1u64 << 20) as f64;
    Ok(DirResult {
        size_mib: opts.size_mib,
        fill: opts.fill,
        encoding: opts.encoding,
        snapshot_mib,
        stored_mib,
        compression_ratio: snapshot_mib / stored_mib,
        etcd_version,
        runs: opts.runs,
        eco_median_s,
        etcdctl_median_s,
        time_ratio_vs_etcdctl: ratio,
        peak_rss_mib: peak,
        etcdctl_peak_rss_mib: max(&ctl_rss),
        eco_throughput_mib_s: snapshot_mib / eco_median_s,
        compression_level: opts.compression_level,
        eco_s,
        eco_cpu_s: eco_cpu,
        etcdctl_s: ctl_s,
        eco_rss_mib: eco_rss,
        etcdctl_rss_mib: ctl_rss,
        time_ratio_goal: RATIO_GOAL,
        peak_rss_goal_mib: RSS_GOAL_MIB,
        goals_met: ratio <= RATIO_GOAL && peak <= RSS_GOAL_MIB,
    })
}

/// The human-readable table.
pub fn render(r: &DirResult) -> String {
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
        "fill {:?}, encoding {:?} (level {}): stored {:.0} MiB (the snapshot / stored: {:.2}); eco's CPU {:.2} s (median)\n",
        r.fill,
        r.encoding,
        r.compression_level,
        r.stored_mib,
        r.compression_ratio,
        median(&r.eco_cpu_s)
    ));
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

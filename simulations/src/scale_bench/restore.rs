//! `scale-bench`'s restores: one `etcdctl snapshot save` of the filled
//! member (not timed), then, alternating (ABBA):
//!
//! - `eco restore --from FILE` (etcd's trailing checksum read first, then
//!   `etcdutl snapshot restore` into a staging directory renamed into
//!   place) against `etcdutl snapshot restore FILE` alone, each into a new
//!   data directory removed after the run;
//! - the check a snapshot from outside goes through before eco stores it,
//!   `eco snapshot import FILE` into a directory store (the checksum, a
//!   restore into a throwaway etcd that must serve and hash, the store
//!   write), the stored copy removed after the run.

use crate::snapshot_bench::{Prepared, max, measure, median};
use anyhow::{Context, bail};
use std::path::Path;
use std::process::Command;

/// The goal: eco's restore at most 1.1 × etcdutl's (medians).
pub const RATIO_GOAL: f64 = 1.1;

#[derive(Clone, Debug, serde::Serialize)]
pub struct RestoreResult {
    pub snapshot_mib: f64,
    pub eco_s: Vec<f64>,
    pub etcdutl_s: Vec<f64>,
    pub eco_median_s: f64,
    pub etcdutl_median_s: f64,
    pub time_ratio_vs_etcdutl: f64,
    pub eco_peak_rss_mib: f64,
    pub etcdutl_peak_rss_mib: f64,
    /// `eco snapshot import` of the same file: each run and the median.
    pub check_s: Vec<f64>,
    pub check_median_s: f64,
    pub check_peak_rss_mib: f64,
    pub time_ratio_goal: f64,
    pub goal_met: bool,
}

/// A data directory the next run can restore into (removed if there).
fn fresh(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(())
}

pub fn run_on(p: &mut Prepared, runs: usize) -> anyhow::Result<RestoreResult> {
    let dir = p.dir().to_path_buf();
    let limit = p.limit;
    let file = dir.join("restore-source.db");
    measure(p.etcdctl_save(&file), &dir.join("save.log"), limit)
        .context("saving the snapshot the restores read")?;
    let snapshot_mib = std::fs::metadata(&file)
        .with_context(|| format!("etcdctl saved no {}", file.display()))?
        .len() as f64
        / (1u64 << 20) as f64;
    let target = dir.join("restored");
    let peer_url = "http://127.0.20.9:2380";
    let etcdutl = p.bin_dir.join("etcdutl");
    if !etcdutl.exists() {
        bail!("{} is missing", etcdutl.display());
    }

    let store = dir.join("check-store");
    std::fs::create_dir_all(&store).context("creating check-store/")?;
    let config = dir.join("check.toml");
    p.eco_config()
        .dir_store("check-store")
        .write(&config)
        .context("writing the import's config")?;

    let (mut eco_s, mut utl_s, mut check_s) = (Vec::new(), Vec::new(), Vec::new());
    let (mut eco_rss, mut utl_rss, mut check_rss) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let order = if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_eco in order {
            fresh(&target)?;
            // SAFETY: sync(2) has no preconditions.
            unsafe { libc::sync() };
            let (cmd, log) = if is_eco {
                let mut cmd = Command::new(&p.eco_bin);
                cmd.args(["restore", "--from"])
                    .arg(&file)
                    .arg("--data-dir")
                    .arg(&target)
                    .args(["--name", "restored", "--peer-url", peer_url])
                    .arg("--etcd-bin-dir")
                    .arg(&p.bin_dir);
                (cmd, "eco-restore.log")
            } else {
                let mut cmd = Command::new(&etcdutl);
                cmd.args(["snapshot", "restore"])
                    .arg(&file)
                    .arg("--data-dir")
                    .arg(&target)
                    .args([
                        "--name",
                        "restored",
                        "--initial-cluster",
                        &format!("restored={peer_url}"),
                        "--initial-advertise-peer-urls",
                        peer_url,
                    ]);
                (cmd, "etcdutl-restore.log")
            };
            let m = measure(cmd, &dir.join(log), limit)?;
            if !target.join("member").is_dir() {
                bail!(
                    "{log}: the run succeeded but left no member/ in {}",
                    target.display()
                );
            }
            eprintln!(
                "scale-bench: restore run {}: {} {:7.2} s, peak RSS {:6.1} MiB",
                i + 1,
                if is_eco { "eco    " } else { "etcdutl" },
                m.seconds,
                m.rss_mib
            );
            if is_eco {
                eco_s.push(m.seconds);
                eco_rss.push(m.rss_mib);
            } else {
                utl_s.push(m.seconds);
                utl_rss.push(m.rss_mib);
            }
        }
        fresh(&target)?;
        let mut cmd = Command::new(&p.eco_bin);
        cmd.args(["snapshot", "import", "--by", "scale-bench", "--config"])
            .arg(&config)
            .arg(&file);
        let m = measure(cmd, &dir.join("import.log"), limit)?;
        eprintln!(
            "scale-bench: restore run {}: import  {:7.2} s, peak RSS {:6.1} MiB",
            i + 1,
            m.seconds,
            m.rss_mib
        );
        check_s.push(m.seconds);
        check_rss.push(m.rss_mib);
        fresh(&store)?;
        std::fs::create_dir_all(&store).context("creating check-store/")?;
    }
    std::fs::remove_file(&file).context("removing the restores' snapshot")?;
    fresh(&store)?;

    let eco_median_s = median(&eco_s);
    let etcdutl_median_s = median(&utl_s);
    let ratio = eco_median_s / etcdutl_median_s;
    Ok(RestoreResult {
        snapshot_mib,
        eco_median_s,
        etcdutl_median_s,
        time_ratio_vs_etcdutl: ratio,
        eco_peak_rss_mib: max(&eco_rss),
        etcdutl_peak_rss_mib: max(&utl_rss),
        check_median_s: median(&check_s),
        check_peak_rss_mib: max(&check_rss),
        eco_s,
        etcdutl_s: utl_s,
        check_s,
        time_ratio_goal: RATIO_GOAL,
        goal_met: ratio <= RATIO_GOAL,
    })
}

/// Two lines: the restore's medians and ratio, the check's median.
pub fn render(r: &RestoreResult) -> String {
    format!(
        "restore of a {:.0} MiB snapshot: eco {:.2} s, etcdutl {:.2} s (medians), ratio {:.2} (goal <= {}: {}); eco's peak RSS {:.1} MiB, etcdutl's {:.1}\n\
         the check before eco stores a snapshot (eco snapshot import): {:.2} s (median), peak RSS {:.1} MiB\n",
        r.snapshot_mib,
        r.eco_median_s,
        r.etcdutl_median_s,
        r.time_ratio_vs_etcdutl,
        r.time_ratio_goal,
        if r.goal_met { "met" } else { "MISSED" },
        r.eco_peak_rss_mib,
        r.etcdutl_peak_rss_mib,
        r.check_median_s,
        r.check_peak_rss_mib
    )
}

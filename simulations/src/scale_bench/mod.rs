//! `scale-bench`: eco measured at the sizes production etcd holds. For each
//! size (1, 4 and 8 GiB by default) one real etcd 3.5 member is filled once
//! with the `kubernetes` mix (objects of 1–8 KiB, a 100 KiB value every 25
//! keys, one put in four an update of an earlier object, the history
//! compacted each tenth of the fill), then, on that member:
//!
//! - snapshots into a directory store against `etcdctl snapshot save`
//!   ([`crate::snapshot_bench::dir`], eco's default encoding: zstd);
//! - snapshots streamed into S3 (the local AWS emulator) against
//!   `etcdctl snapshot save` + `aws s3 cp` ([`crate::snapshot_bench::s3`]);
//! - `eco restore --from FILE` against `etcdutl snapshot restore`, and the
//!   check a snapshot goes through before eco trusts it (`eco snapshot
//!   import`: etcd's checksum, a restore into a throwaway etcd that must
//!   serve, the store write) ([`restore`]).
//!
//! With `--measure rejoin`, also an empty-disk instance of three back to a
//! voter at that size, against etcd's own transfer of its database to the
//! learner ([`rejoin`]); with `--measure steady`, eco's CPU and memory
//! beside a member of that size at rest, with eco's production defaults
//! ([`steady`]); with `--measure quorum-loss` and `--measure defrag`,
//! on three instances filled once ([`faulted_cluster`]), two of three
//! replaced empty under a write ledger ([`quorum_loss`]: M3 at size),
//! then the space governor's defragmentation of every member under one
//! writer per member ([`defrag`]: the cluster's write gap).
//!
//! Each size's directory (etcd's data, the files) is removed before the
//! next size starts, so 8 GiB fits a machine with ~40 GB free (a rejoin:
//! three copies). The results are JSON (`--json`) for
//! `scripts/plot-scale-bench.py`.
//!
mod cluster_fill;
pub mod defrag;
pub mod disk_latency;
mod faulted_cluster;
pub mod quorum_loss;
pub mod rejoin;
pub mod restore;
pub mod steady;

use crate::snapshot_bench::{self, DirResult, Encoding, Fill, S3Result, Store};
use anyhow::Context;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct Options {
    /// Database sizes to fill, MiB.
    pub sizes_mib: Vec<u64>,
    /// Runs of each timed command pair (ABBA order).
    pub runs: usize,
    pub etcd_bin_dir: PathBuf,
    pub eco_bin: PathBuf,
    pub work_dir: Option<PathBuf>,
    /// Which snapshot stores to measure.
    pub stores: Vec<Store>,
    /// What to measure at each size.
    pub measure: Vec<Measure>,
}

/// The parts of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Measure {
    /// Snapshots into the stores of `--stores` (one member).
    Snapshots,
    /// `eco restore` against etcdutl, and the import's check (one member).
    Restore,
    /// An empty-disk instance back to a voter (three instances).
    Rejoin,
    /// eco's CPU and memory beside the member at rest (one instance,
    /// eco's production defaults).
    Steady,
    /// Two of three instances replaced empty under a write ledger (M3).
    QuorumLoss,
    /// The space governor's defragmentation of every member, the
    /// cluster's write gap (after the quorum loss when both are asked).
    Defrag,
}

/// One size's figures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SizeResult {
    /// The target of the fill, MiB of values written.
    pub size_mib: u64,
    /// etcd's database size after the fill, MiB.
    pub db_mib: f64,
    pub puts: u64,
    pub fill_s: f64,
    pub etcd_version: String,
    pub snapshot_dir: Option<DirResult>,
    pub snapshot_s3: Option<S3Result>,
    pub restore: Option<restore::RestoreResult>,
    pub rejoin: Option<rejoin::RejoinResult>,
    pub steady: Option<steady::SteadyResult>,
    pub quorum_loss: Option<quorum_loss::QuorumLossResult>,
    pub defrag: Option<defrag::DefragResult>,
    pub seconds: f64,
}

/// Runs every size in turn; each result is printed as it comes (stderr).
pub fn run(opts: &Options) -> anyhow::Result<Vec<SizeResult>> {
    if opts.sizes_mib.is_empty() {
        anyhow::bail!("--sizes-mib names no size");
    }
    let mut results = Vec::new();
    for &size_mib in &opts.sizes_mib {
        let started = Instant::now();
        let snap = snapshot_bench::Options {
            size_mib,
            runs: opts.runs,
            etcd_bin_dir: Some(opts.etcd_bin_dir.clone()),
            eco_bin: Some(opts.eco_bin.clone()),
            work_dir: opts.work_dir.clone(),
            store: Store::Dir,
            part_size_mib: None,
            parts_in_flight: None,
            encoding: Encoding::Zstd,
            compression_level: eco::config::defaults::snapshot_compression_level(),
            fill: Fill::Kubernetes,
            keep: false,
        };
        let wants = |m: Measure| opts.measure.contains(&m);
        let mut r = SizeResult {
            size_mib,
            db_mib: 0.0,
            puts: 0,
            fill_s: 0.0,
            etcd_version: String::new(),
            snapshot_dir: None,
            snapshot_s3: None,
            restore: None,
            rejoin: None,
            steady: None,
            quorum_loss: None,
            defrag: None,
            seconds: 0.0,
        };
        if wants(Measure::Snapshots) || wants(Measure::Restore) {
            eprintln!("scale-bench: {size_mib} MiB: filling one member");
            let mut p = snapshot_bench::prepare(&snap)
                .with_context(|| format!("filling etcd with {size_mib} MiB"))?;
            r.db_mib = p.filled.db_bytes as f64 / (1u64 << 20) as f64;
            r.puts = p.filled.puts;
            r.fill_s = p.filled.seconds;
            r.etcd_version = p.etcd_version.clone();
            if wants(Measure::Snapshots) && opts.stores.contains(&Store::Dir) {
                let d = snapshot_bench::dir::run_on(&mut p, &snap)
                    .with_context(|| format!("{size_mib} MiB: snapshots to a directory"))?;
                eprint!(
                    "{}",
                    snapshot_bench::render(&snapshot_bench::Report::Dir(Box::new(d.clone())))
                );
                r.snapshot_dir = Some(d);
            }
            if wants(Measure::Snapshots) && opts.stores.contains(&Store::S3) {
                let s3_opts = snapshot_bench::Options {
                    store: Store::S3,
                    encoding: Encoding::None,
                    ..snap.clone()
                };
                let s = snapshot_bench::s3::run_on(&mut p, &s3_opts)
                    .with_context(|| format!("{size_mib} MiB: snapshots to S3"))?;
                eprint!(
                    "{}",
                    snapshot_bench::render(&snapshot_bench::Report::S3(Box::new(s.clone())))
                );
                r.snapshot_s3 = Some(s);
            }
            if wants(Measure::Restore) {
                let x = restore::run_on(&mut p, opts.runs)
                    .with_context(|| format!("{size_mib} MiB: restores"))?;
                eprint!("{}", restore::render(&x));
                r.restore = Some(x);
            }
        }
        if wants(Measure::Rejoin) {
            let x = rejoin::run(&opts.eco_bin, &opts.etcd_bin_dir, size_mib)
                .with_context(|| format!("{size_mib} MiB: the empty-disk rejoin"))?;
            eprint!("{}", rejoin::render(&x));
            if r.db_mib == 0.0 {
                r.db_mib = x.db_mib;
                r.puts = x.puts;
                r.fill_s = x.fill_s;
            }
            r.rejoin = Some(x);
        }
        if wants(Measure::Steady) {
            let x = steady::run(&opts.eco_bin, &opts.etcd_bin_dir, size_mib)
                .with_context(|| format!("{size_mib} MiB: eco beside the member at rest"))?;
            eprint!("{}", steady::render(&x));
            if r.db_mib == 0.0 {
                r.db_mib = x.db_mib;
                r.puts = x.puts;
                r.fill_s = x.fill_s;
            }
            r.steady = Some(x);
        }
        if wants(Measure::QuorumLoss) || wants(Measure::Defrag) {
            let x = faulted_cluster::run(
                &opts.eco_bin,
                &opts.etcd_bin_dir,
                size_mib,
                wants(Measure::QuorumLoss),
                wants(Measure::Defrag),
            )?;
            if r.db_mib == 0.0 {
                r.db_mib = x.filled.db_bytes as f64 / (1u64 << 20) as f64;
                r.puts = x.filled.puts;
                r.fill_s = x.filled.seconds;
            }
            r.quorum_loss = x.quorum_loss;
            r.defrag = x.defrag;
        }
        r.seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "scale-bench: {size_mib} MiB done in {:.0} s (db {:.0} MiB, {} puts filled in {:.0} s)",
            r.seconds, r.db_mib, r.puts, r.fill_s
        );
        results.push(r);
    }
    Ok(results)
}

/// The summary table, one row per size.
pub fn render(results: &[SizeResult]) -> String {
    let mut out = format!(
        "{:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>8}\n",
        "size MiB",
        "db MiB",
        "snap dir",
        "eco RSS",
        "snap S3",
        "eco RSS",
        "restore",
        "check s",
        "fill s",
        "rejoin"
    );
    let ratio = |r: Option<f64>| r.map_or("-".to_string(), |v| format!("{v:.2}"));
    let rss = |r: Option<f64>| r.map_or("-".to_string(), |v| format!("{v:.0}"));
    for r in results {
        out.push_str(&format!(
            "{:>8} {:>8.0} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10.0} {:>8}\n",
            r.size_mib,
            r.db_mib,
            ratio(r.snapshot_dir.as_ref().map(|d| d.time_ratio_vs_etcdctl)),
            rss(r.snapshot_dir.as_ref().map(|d| d.peak_rss_mib)),
            ratio(r.snapshot_s3.as_ref().map(|s| s.time_ratio_vs_manual)),
            rss(r.snapshot_s3.as_ref().map(|s| s.peak_rss_mib)),
            ratio(r.restore.as_ref().map(|x| x.time_ratio_vs_etcdutl)),
            ratio(r.restore.as_ref().map(|x| x.check_median_s)),
            r.fill_s,
            ratio(r.rejoin.as_ref().map(|x| x.time_ratio_vs_etcd_send))
        ));
    }
    out.push_str(
        "snap dir / snap S3: eco's median time over etcdctl's (+ aws s3 cp); restore: eco restore over etcdutl; check: eco snapshot import's median; rejoin: an empty disk back a voter over etcd's own snapshot send\n",
    );
    out
}

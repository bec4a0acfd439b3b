//! `scale-bench`'s eco beside a large member at rest: one eco instance
//! (127.0.25.1, a directory store) whose etcd 3.5 member is filled with
//! the `kubernetes` mix (the change archive off and no scheduled snapshot
//! while it fills), then killed and started again on its data with eco's
//! production defaults (its probe interval, timeouts and heartbeats, the
//! change archive on, snapshots every 30 minutes): the first snapshot of
//! the new chain is taken, then nothing is written for the measured
//! period. Measured: eco's CPU over that period (user + system time from
//! `/proc`, as a percentage of one core), its resident memory at the end
//! and its peak over its whole life (the snapshot included), and etcd's
//! beside it for scale.
//!
//! One instance: gossip has no peer to talk to, so what gossip costs at
//! rest is not in this figure (`gossip-bench` measures it).

use crate::process_cpu::Cpu;
use anyhow::Context;
use std::path::Path;
use std::time::{Duration, Instant};
use testkit::config::ConfigBuilder;

/// The goals: eco beside an 8 GiB member at rest.
pub const RSS_GOAL_MIB: f64 = 32.0;
pub const CPU_GOAL_PERCENT: f64 = 1.0;

/// How long the member is left alone before and while it is measured.
const SETTLE: Duration = Duration::from_secs(30);
const MEASURED: Duration = Duration::from_secs(120);

#[derive(Clone, Debug, serde::Serialize)]
pub struct SteadyResult {
    pub size_mib: u64,
    pub db_mib: f64,
    pub puts: u64,
    pub fill_s: f64,
    /// From eco's start on the filled member until the store held the new
    /// chain's first snapshot.
    pub first_snapshot_s: f64,
    pub measured_s: f64,
    /// eco's CPU at rest, percent of one core.
    pub eco_cpu_percent: f64,
    /// eco's resident memory at the end of the period, and its peak over
    /// its life (`VmHWM`: the snapshot of the database included).
    pub eco_rss_mib: f64,
    pub eco_peak_rss_mib: f64,
    pub etcd_cpu_percent: f64,
    pub etcd_rss_mib: f64,
    pub rss_goal_mib: f64,
    pub cpu_goal_percent: f64,
    pub goal_met: bool,
}

/// A `VmRSS`-like line of `/proc/<pid>/status`, MiB.
fn status_mib(pid: i32, field: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .with_context(|| format!("no {field} in /proc/{pid}/status"))?;
    Ok(kib / 1024.0)
}

pub fn run(eco: &Path, etcd_bin_dir: &Path, size_mib: u64) -> anyhow::Result<SteadyResult> {
    let quota = (size_mib * 2).max(8192) << 20;
    let (mut c, group) = crate::bench_cluster::form_of(1, eco, etcd_bin_dir, 25, 6, false, |b| {
        b.archive(false)
            .snapshot_interval(Duration::from_secs(24 * 3600))
            .edit(|cfg| cfg.etcd.quota_backend_bytes = quota)
    })?;
    let id = group.first().context("no instance")?.clone();
    eprintln!("scale-bench: steady at {size_mib} MiB: filling one instance");
    let filled = super::cluster_fill::fill_cluster(&c, &group, size_mib)?;

    // A crash of eco and its etcd (gone before eco starts again), then eco
    // with its production defaults.
    c.kill_with_etcd(&id)?;
    let defaults = ConfigBuilder::eco_defaults("bench", "../group.toml");
    let d = defaults.config().clone();
    c.configure(&id, |b| {
        b.archive(true).edit(|cfg| {
            cfg.etcd.probe_interval = d.etcd.probe_interval;
            cfg.etcd.call_timeout = d.etcd.call_timeout;
            cfg.etcd.heartbeat_interval = d.etcd.heartbeat_interval;
            cfg.etcd.election_timeout = d.etcd.election_timeout;
            cfg.provider.refresh_interval = d.provider.refresh_interval;
            cfg.snapshot.interval = d.snapshot.interval;
            cfg.recovery.unhealthy_member_ttl = d.recovery.unhealthy_member_ttl;
            cfg.recovery.quorum_loss_timeout = d.recovery.quorum_loss_timeout;
        })
    })?;
    let before = c.snapshot_names().len();
    let started = Instant::now();
    c.start(&id)?;
    let limit = Duration::from_secs(300 + size_mib / 8);
    testkit::wait_until(limit, || (c.snapshot_names().len() > before).then_some(())).with_context(
        || {
            format!(
                "no snapshot in the store within {limit:?}\n{}",
                c.log_tail(&id, 30)
            )
        },
    )?;
    let first_snapshot_s = started.elapsed().as_secs_f64();
    eprintln!(
        "scale-bench: steady: the first snapshot after {first_snapshot_s:.1} s; settling {SETTLE:?}, then measuring {MEASURED:?} at rest"
    );
    std::thread::sleep(SETTLE);
    let eco_pid = c.nodes[&id]
        .process
        .as_ref()
        .map(|p| p.id() as i32)
        .context("eco is not running")?;
    let etcd_pid = *c.nodes[&id]
        .etcd_pids()
        .first()
        .context("etcd is not running")?;
    let (eco0, etcd0, t0) = (Cpu::of(eco_pid), Cpu::of(etcd_pid), Instant::now());
    std::thread::sleep(MEASURED);
    let (eco1, etcd1, measured) = (Cpu::of(eco_pid), Cpu::of(etcd_pid), t0.elapsed());
    let percent = |a: Cpu, b: Cpu| 100.0 * b.since(a).total() / measured.as_secs_f64();
    let eco_cpu_percent = percent(eco0, eco1);
    let eco_rss_mib = status_mib(eco_pid, "VmRSS:")?;
    let eco_peak_rss_mib = status_mib(eco_pid, "VmHWM:")?;
    let etcd_rss_mib = status_mib(etcd_pid, "VmRSS:")?;
    let _ = c.stop(&id, libc::SIGKILL);
    Ok(SteadyResult {
        size_mib,
        db_mib: filled.db_bytes as f64 / (1u64 << 20) as f64,
        puts: filled.puts,
        fill_s: filled.seconds,
        first_snapshot_s,
        measured_s: measured.as_secs_f64(),
        eco_cpu_percent,
        eco_rss_mib,
        eco_peak_rss_mib,
        etcd_cpu_percent: percent(etcd0, etcd1),
        etcd_rss_mib,
        rss_goal_mib: RSS_GOAL_MIB,
        cpu_goal_percent: CPU_GOAL_PERCENT,
        goal_met: eco_rss_mib <= RSS_GOAL_MIB && eco_cpu_percent <= CPU_GOAL_PERCENT,
    })
}

/// One line.
pub fn render(r: &SteadyResult) -> String {
    format!(
        "steady at {} MiB (db {:.0} MiB): eco at rest {:.2} % of a core, {:.0} MiB resident ({:.0} MiB at its peak, the snapshot's); etcd {:.2} %, {:.0} MiB; goal eco <= {} % and <= {} MiB: {}\n",
        r.size_mib,
        r.db_mib,
        r.eco_cpu_percent,
        r.eco_rss_mib,
        r.eco_peak_rss_mib,
        r.etcd_cpu_percent,
        r.etcd_rss_mib,
        r.cpu_goal_percent,
        r.rss_goal_mib,
        if r.goal_met { "met" } else { "MISSED" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_resident_size_and_a_peak() {
        let me = std::process::id() as i32;
        let rss = status_mib(me, "VmRSS:").unwrap();
        assert!(rss > 0.1 && rss <= status_mib(me, "VmHWM:").unwrap());
    }
}

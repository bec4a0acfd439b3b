//! `simulations chaos --monkey --duration D --seed S`: a soak. For the whole
//! duration, faults of the matrix's vocabulary (kills, wipes, replacements,
//! partitions, store outages and wipes, eco restarts during a recovery,
//! scale in and out) hit one cluster at random times on random instances,
//! under the write ledger. One fault at a time: the next comes only once
//! the cluster is whole again (members = the group, all voters healthy, one
//! cluster id), so no fault goes beyond the tolerance its scenario declares
//! — the quorum-loss faults declare theirs. At the end every acknowledged
//! write must be present, except, for a declared lossy fault (every disk
//! wiped at once), writes acknowledged in the change archive's last
//! interval before it struck ([`super::ARCHIVE_LOSS_BOUND`]); `HashKV`
//! equal; one cluster id.
//!
//! The seed fixes the schedule: which fault comes next (from those the
//! cluster's size and network allow) and how long the cluster runs
//! between faults. The instances a fault hits follow from the cluster's
//! state (the leader, the group), as in the matrix.
//!
//! A cluster that is not whole within the matrix's bound after a fault is
//! stuck: the report holds every instance's `/status` (phase, next action
//! and why) and the soak stops there.

use super::load::{Acked, Load};
use super::scenario::{self, Scenario};
use super::{Options, leader_of, verify, wait_whole};
use anyhow::Context;
use recovery::fenced::harness::rng::Rng;
use serde::Serialize;
use std::time::{Duration, Instant};
use testkit::cluster::{self, Cluster};

/// Bound of the wait for the cluster to be whole after a fault.
const WHOLE_WITHIN: Duration = Duration::from_secs(180);

/// An acknowledgement is timed when the load's thread gets to it, which on
/// a loaded machine can be a little after the old cluster sent it. The
/// restored cluster cannot acknowledge anything this soon after its
/// processes died (it needs the quorum-loss timeout, then a restore), so
/// the slack, at most half that timeout, cannot excuse a write it
/// acknowledged.
const ACK_RECORDING_SLACK: Duration = Duration::from_secs(1);

/// One fault of the soak.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRun {
    /// Seconds since the load started.
    pub at_s: f64,
    pub name: String,
    /// Seconds from the fault to the cluster being whole again.
    pub whole_after_s: Option<f64>,
    pub notes: Vec<String>,
}

/// What the soak did and found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MonkeyReport {
    pub seed: u64,
    pub instances: usize,
    pub duration_s: f64,
    pub partitions: bool,
    pub faults: Vec<FaultRun>,
    pub acked_writes: usize,
    pub failed_writes: usize,
    pub lost_acked_writes: usize,
    /// Lost writes a declared lossy fault allowed.
    pub allowed_loss: usize,
    pub passed: bool,
    pub failures: Vec<String>,
    /// Every instance's `/status` (phase, next action and why) when the
    /// cluster was stuck.
    pub stuck: Vec<String>,
}

/// A fault of the soak: a matrix scenario, or a change of the group's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Scenario(Scenario),
    /// One more instance (a new id, an empty disk).
    ScaleOut,
    /// One follower removed from the group while its eco runs; once it has
    /// left, its machine goes (eco stopped).
    ScaleIn,
}

impl Fault {
    fn name(self) -> String {
        match self {
            Fault::Scenario(s) => s.name().to_string(),
            Fault::ScaleOut => "scale-out".into(),
            Fault::ScaleIn => "scale-in".into(),
        }
    }
}

/// The faults a cluster of `size` instances (started with `initial`) on
/// this network may take now.
fn vocabulary(size: usize, initial: usize, partitions: bool) -> Vec<Fault> {
    let mut v: Vec<Fault> = [
        Scenario::KillEtcdLeader,
        Scenario::KillEtcdFollower,
        Scenario::KillMajority,
        Scenario::KillAll,
        Scenario::WipeOne,
        Scenario::WipeMajority,
        Scenario::WipeAll,
        Scenario::StopWipeAll,
        Scenario::ZoneLoss,
        Scenario::StoreOutage,
        Scenario::StoreWiped,
        Scenario::CrashDuringRecovery,
        Scenario::RestartSurvivors,
        Scenario::SecondLoss,
    ]
    .into_iter()
    .map(Fault::Scenario)
    .collect();
    if partitions {
        v.push(Fault::Scenario(Scenario::PartitionMinority));
        v.push(Fault::Scenario(Scenario::PartitionLeader));
    }
    if size <= initial {
        v.push(Fault::ScaleOut);
    }
    if size > 3 {
        v.push(Fault::ScaleIn);
    }
    v
}

/// What `inject` did: the group to end with, the instances that must have
/// left, notes, and for a lossy fault when every process was dead.
type Injected = (Vec<String>, Vec<String>, Vec<String>, Option<Duration>);

/// A window in which a declared lossy fault may lose acknowledged writes:
/// those acknowledged in the change archive's last interval before every
/// process was dead (`from`..=`until`).
struct LossWindow {
    from: Duration,
    until: Duration,
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// Runs the soak for `duration` with `seed`.
pub fn run(opts: &Options, duration: Duration, seed: u64) -> MonkeyReport {
    let partitions = cluster::partitions_unavailable().is_none();
    let mut report = MonkeyReport {
        seed,
        instances: opts.instances,
        partitions,
        ..MonkeyReport::default()
    };
    if let Err(e) = soak(opts, duration, seed, &mut report) {
        report.failures.push(format!("{e:#}"));
    }
    report.passed = report.failures.is_empty();
    report
}

fn soak(
    opts: &Options,
    duration: Duration,
    seed: u64,
    report: &mut MonkeyReport,
) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("runtime")?;
    let root = opts.work.join(format!("monkey-{}-s{seed}", opts.instances));
    if root.exists() {
        std::fs::remove_dir_all(&root).context("clean the previous soak")?;
    }
    let network = if report.partitions {
        cluster::remove_all_namespaces();
        cluster::Network::Namespaces
    } else {
        cluster::Network::Loopback
    };
    let (mut c, mut group) = super::start_cluster(opts, &rt, root.clone(), network, 250)?;
    let load = Load::start(c.endpoints(&group), opts.rate, opts.writers);
    let started = load.started;
    let t = move || started.elapsed();
    let mut rng = Rng::new(seed);
    let mut windows: Vec<LossWindow> = Vec::new();
    let soak_started = Instant::now();
    let slack = ACK_RECORDING_SLACK.min(Duration::from_secs(opts.quorum_loss_timeout_s) / 2);
    let result = (|| -> anyhow::Result<()> {
        while soak_started.elapsed() < duration {
            // The cluster runs undisturbed for 2 to 10 s.
            std::thread::sleep(Duration::from_millis(rng.range(2_000, 10_000)));
            let faults = vocabulary(group.len(), opts.instances, report.partitions);
            let fault = faults[rng.below(faults.len() as u64) as usize];
            let leader = rt
                .block_on(leader_of(&c, &group))
                .context("no leader before a fault")?;
            let at = t();
            eprintln!("==> monkey: {} at {:.1} s", fault.name(), at.as_secs_f64());
            let moved_before = verify::moved_aside(&c, &group);
            let (want, leaving, notes, killed_all) =
                inject(fault, &mut c, &group, &leader, &load, &t)?;
            if let Some(until) = killed_all {
                // Writes acknowledged in the change archive's last
                // interval before the last process died may be lost with
                // the disks (the survivors keep acknowledging while the
                // others are killed one by one).
                windows.push(LossWindow {
                    from: until.saturating_sub(super::ARCHIVE_LOSS_BOUND),
                    until: until + slack,
                });
            }
            load.set_endpoints(c.endpoints(&want));
            let whole = wait_whole(&rt, &want, &c.endpoints(&want), WHOLE_WITHIN);
            let mut run = FaultRun {
                at_s: secs(at),
                name: fault.name(),
                whole_after_s: None,
                notes,
            };
            if let Err(e) = whole {
                report.stuck = stuck(&c);
                report.faults.push(run);
                anyhow::bail!(
                    "stuck after {}: not whole within {WHOLE_WITHIN:?}: {e}",
                    fault.name()
                );
            }
            run.whole_after_s = Some(secs(t().saturating_sub(at)));
            for id in &leaving {
                if let Err(e) = verify::left(&c, id, &moved_before) {
                    report.faults.push(run.clone());
                    anyhow::bail!("after {}: {e}", fault.name());
                }
                // Its machine goes, as a cloud group terminates it.
                c.stop(id, libc::SIGTERM)?;
            }
            eprintln!(
                "    whole again after {:.1} s",
                run.whole_after_s.unwrap_or_default()
            );
            report.faults.push(run);
            group = want;
        }
        Ok(())
    })();
    std::thread::sleep(Duration::from_secs(2));
    let ledger = load.finish();
    report.duration_s = secs(soak_started.elapsed());
    report.acked_writes = ledger.acked.len();
    report.failed_writes = ledger.failed.len();
    result?;
    let endpoints = c.endpoints(&group);
    wait_whole(&rt, &group, &endpoints, WHOLE_WITHIN)
        .map_err(|e| anyhow::anyhow!("not whole at the end: {e}"))?;
    let reader = endpoints.first().context("no instance left")?;
    let lost = rt
        .block_on(verify::lost_writes(reader, &ledger.acked))
        .map_err(anyhow::Error::msg)?;
    report.lost_acked_writes = lost.len();
    let allowed = |a: &Acked| windows.iter().any(|w| a.at >= w.from && a.at <= w.until);
    report.allowed_loss = ledger.acked.iter().filter(|a| allowed(a)).count();
    let beyond: Vec<&str> = lost
        .iter()
        .filter(|a| !allowed(a))
        .map(|a| a.key.as_str())
        .collect();
    if !beyond.is_empty() {
        report.failures.push(format!(
            "{} acknowledged writes lost outside a declared lossy fault, e.g. {:?}",
            beyond.len(),
            &beyond[..beyond.len().min(5)]
        ));
    }
    if let Err(e) = rt.block_on(verify::hash_kv_equal(&endpoints)) {
        report.failures.push(e);
    }
    if report.failures.is_empty() && !opts.keep {
        drop(c);
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(())
}

/// Applies `fault`; returns the group the cluster must end up with, the
/// instances that must have left, notes, and for a lossy fault the time
/// every process was dead.
fn inject(
    fault: Fault,
    c: &mut Cluster,
    group: &[String],
    leader: &str,
    load: &Load,
    t: &dyn Fn() -> Duration,
) -> anyhow::Result<Injected> {
    match fault {
        Fault::Scenario(s) => {
            // A partition's majority keeps the load.
            let cut = s.cut_side(group, leader);
            if !cut.is_empty() {
                let majority: Vec<String> = group
                    .iter()
                    .filter(|id| !cut.contains(id))
                    .cloned()
                    .collect();
                load.set_endpoints(c.endpoints(&majority));
            }
            let injected = scenario::inject(s, c, group, leader, t)?;
            let killed_all = if s.lossy() {
                let step = injected
                    .steps
                    .iter()
                    .find(|(_, l)| l == scenario::KILLED_ALL)
                    .map(|(at, _)| *at);
                Some(step.context("a lossy fault without its kill step")?)
            } else {
                None
            };
            Ok((injected.want, injected.leaving, injected.notes, killed_all))
        }
        Fault::ScaleOut => {
            let id = c.add_next(None)?;
            let mut want = group.to_vec();
            want.push(id.clone());
            c.set_group(&want)?;
            c.start(&id)?;
            Ok((want, Vec::new(), vec![format!("{id} added")], None))
        }
        Fault::ScaleIn => {
            let injected = scenario::inject(Scenario::LeaveFollower, c, group, leader, t)?;
            Ok((injected.want, injected.leaving, injected.notes, None))
        }
    }
}

/// Every running instance's `/status`: phase, next action and why.
fn stuck(c: &Cluster) -> Vec<String> {
    c.running()
        .iter()
        .map(|id| {
            let api = c.nodes.get(id).map(|n| n.api()).unwrap_or_default();
            match super::observe::eco_status(&api) {
                Some(s) => format!(
                    "{id}: phase {}, next {}: {}",
                    s["phase"], s["next"]["action"], s["next"]["reason"]
                ),
                None => format!("{id}: /status does not answer"),
            }
        })
        .collect()
}

/// The report for humans.
pub fn render(r: &MonkeyReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "monkey soak, seed {}, {} instances{}, {:.0} s: {} — {} faults, {} writes acknowledged, {} failed, {} lost ({} allowed by declared lossy faults)",
        r.seed,
        r.instances,
        if r.partitions {
            ""
        } else {
            " (no partitions: needs root, ip, nft)"
        },
        r.duration_s,
        if r.passed { "PASS" } else { "FAIL" },
        r.faults.len(),
        r.acked_writes,
        r.failed_writes,
        r.lost_acked_writes,
        r.allowed_loss
    );
    let _ = writeln!(
        out,
        "{:>8}  {:<28} {:>14}",
        "at s", "fault", "whole after s"
    );
    for f in &r.faults {
        let _ = writeln!(
            out,
            "{:>8.1}  {:<28} {:>14}",
            f.at_s,
            f.name,
            f.whole_after_s
                .map_or_else(|| "STUCK".to_string(), |s| format!("{s:.1}"))
        );
    }
    let mut recoveries: Vec<f64> = r.faults.iter().filter_map(|f| f.whole_after_s).collect();
    recoveries.sort_by(f64::total_cmp);
    if let (Some(max), false) = (recoveries.last(), recoveries.is_empty()) {
        let median = recoveries[recoveries.len() / 2];
        let _ = writeln!(
            out,
            "whole again after a fault: median {median:.1} s, max {max:.1} s"
        );
    }
    for f in &r.failures {
        let _ = writeln!(out, "FAILURE: {f}");
    }
    for s in &r.stuck {
        let _ = writeln!(out, "  {s}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_follows_the_size_and_the_network() {
        let names = |v: Vec<Fault>| v.into_iter().map(Fault::name).collect::<Vec<_>>();
        let three = names(vocabulary(3, 3, false));
        assert!(three.contains(&"scale-out".to_string()));
        assert!(
            !three.contains(&"scale-in".to_string()),
            "never below three"
        );
        assert!(!three.iter().any(|n| n.starts_with("partition")));
        let four = names(vocabulary(4, 3, true));
        assert!(four.contains(&"scale-in".to_string()));
        assert!(
            !four.contains(&"scale-out".to_string()),
            "at most one above the start"
        );
        assert!(four.contains(&"partition-leader".to_string()));
    }

    #[test]
    fn a_seed_fixes_the_schedule() {
        let schedule = |seed| {
            let mut rng = Rng::new(seed);
            (0..20)
                .map(|_| {
                    let pause = rng.range(2_000, 10_000);
                    let v = vocabulary(3, 3, true);
                    (pause, v[rng.below(v.len() as u64) as usize].name())
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(schedule(7), schedule(7));
        assert_ne!(schedule(7), schedule(8));
    }
}

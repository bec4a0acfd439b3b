//! The failure matrix: names (fixed), and what each one does to the group.

use anyhow::Context;
use std::time::{Duration, Instant};
use testkit::cluster::Cluster;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    KillEtcdLeader,
    KillEtcdFollower,
    KillMajority,
    KillAll,
    WipeOne,
    WipeMajority,
    WipeAll,
    StopWipeAll,
    PartitionMinority,
    PartitionLeader,
    ZoneLoss,
    StoreOutage,
    CrashDuringRecovery,
    PartitionMajorityReplaced,
    StoreWiped,
    LeaveFollower,
    LeaveLeader,
    RestartSurvivors,
    SecondLoss,
}

pub const ALL: [Scenario; 19] = [
    Scenario::KillEtcdLeader,
    Scenario::KillEtcdFollower,
    Scenario::KillMajority,
    Scenario::KillAll,
    Scenario::WipeOne,
    Scenario::WipeMajority,
    Scenario::WipeAll,
    Scenario::StopWipeAll,
    Scenario::PartitionMinority,
    Scenario::PartitionLeader,
    Scenario::ZoneLoss,
    Scenario::StoreOutage,
    Scenario::CrashDuringRecovery,
    Scenario::PartitionMajorityReplaced,
    Scenario::StoreWiped,
    Scenario::LeaveFollower,
    Scenario::LeaveLeader,
    Scenario::RestartSurvivors,
    Scenario::SecondLoss,
];

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::KillEtcdLeader => "kill-etcd-leader",
            Scenario::KillEtcdFollower => "kill-etcd-follower",
            Scenario::KillMajority => "kill-majority",
            Scenario::KillAll => "kill-all",
            Scenario::WipeOne => "wipe-one",
            Scenario::WipeMajority => "wipe-majority",
            Scenario::WipeAll => "wipe-all",
            Scenario::StopWipeAll => "stop-wipe-all",
            Scenario::PartitionMinority => "partition-minority",
            Scenario::PartitionLeader => "partition-leader",
            Scenario::ZoneLoss => "zone-loss",
            Scenario::StoreOutage => "store-outage",
            Scenario::CrashDuringRecovery => "crash-during-recovery",
            Scenario::PartitionMajorityReplaced => "partition-majority-replaced",
            Scenario::StoreWiped => "store-wiped",
            Scenario::LeaveFollower => "leave-follower",
            Scenario::LeaveLeader => "leave-leader",
            Scenario::RestartSurvivors => "restart-survivors",
            Scenario::SecondLoss => "second-loss",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        ALL.into_iter().find(|s| s.name() == name)
    }

    /// Writes after the newest snapshot may be lost (every disk is gone).
    pub fn lossy(self) -> bool {
        self == Scenario::WipeAll
    }

    /// The scenario cuts the network (it runs in network namespaces).
    pub fn partitions(self) -> bool {
        matches!(
            self,
            Scenario::PartitionMinority
                | Scenario::PartitionLeader
                | Scenario::PartitionMajorityReplaced
        )
    }

    /// The instances a partition scenario cuts off (the rest is the
    /// majority, which must keep serving), given the leader's instance.
    pub fn cut_side(self, group: &[String], leader: &str) -> Vec<String> {
        let followers: Vec<String> = group.iter().filter(|id| *id != leader).cloned().collect();
        match self {
            Scenario::PartitionMinority => followers.into_iter().take(1).collect(),
            Scenario::PartitionLeader => vec![leader.to_string()],
            Scenario::PartitionMajorityReplaced => followers
                .iter()
                .rev()
                .take(group.len() - recovery::quorum::quorum(group.len()))
                .cloned()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Why this scenario cannot run here, if it cannot (`aws`: on the AWS
    /// provider and the emulator's S3).
    pub fn unsupported(self, aws: bool) -> Option<String> {
        if aws {
            let why = match self {
                s if s.partitions() => Some(
                    "partitions need network namespaces; the AWS emulator's instances live on loopback",
                ),
                Scenario::LeaveFollower | Scenario::LeaveLeader => Some(
                    "an AWS group removes an instance through the termination hook (tests/aws.rs scales in)",
                ),
                Scenario::StoreWiped => Some("wipes a directory store"),
                _ => None,
            };
            if let Some(why) = why {
                return Some(format!("not on --provider aws: {why}"));
            }
        }
        if self.partitions() {
            return testkit::cluster::partitions_unavailable();
        }
        None
    }
}

/// What the scenario did, for the report.
pub struct Injected {
    /// The group the cluster must end up with.
    pub want: Vec<String>,
    /// Instances removed from the group while their eco runs: once the
    /// cluster is whole they must have left (etcd stopped, data in place,
    /// nothing moved aside, phase `leaving`).
    pub leaving: Vec<String>,
    /// Steps with their times (since the load started), for the timeline.
    pub steps: Vec<(Duration, String)>,
    pub notes: Vec<String>,
    /// The times to writable and to full membership are measured from
    /// here instead of the fault's start (a scenario of two faults: from
    /// the second).
    pub measured_from: Option<Duration>,
}

/// The step at which every process of a wipe-all is dead.
pub const KILLED_ALL: &str = "every instance killed";

/// Replaces `gone` by new instances (empty disks, started): new ids in
/// the same zones in the group file, or new EC2 instances the AWS group
/// launches when they are terminated; returns the group.
fn replace(c: &mut Cluster, group: &[String], gone: &[String]) -> anyhow::Result<Vec<String>> {
    c.replace(group, gone)
}

/// Injects the fault of `s` into the running `group`; `leader` is the
/// instance beside the etcd leader; `t` gives the time since the load
/// started. Returns when the fault is in place (recovery is the harness's
/// wait).
pub fn inject(
    s: Scenario,
    c: &mut Cluster,
    group: &[String],
    leader: &str,
    t: &dyn Fn() -> Duration,
) -> anyhow::Result<Injected> {
    let followers: Vec<String> = group.iter().filter(|id| *id != leader).cloned().collect();
    let first_follower = followers.first().cloned().context("no follower")?;
    // The majority to lose: followers first, then the leader.
    let mut losers: Vec<String> = followers.clone();
    losers.push(leader.to_string());
    losers.truncate(recovery::quorum::quorum(group.len()));
    let snapshot_revision = c.newest_snapshot_revision();
    let mut steps = vec![(t(), "fault".to_string())];
    let mut notes = Vec::new();
    let mut leaving = Vec::new();
    let mut measured_from = None;
    let want = match s {
        // A majority (the leader's instance first) killed with -9 and
        // wiped, started again with the same ids; the survivor seeds, the
        // others join and are promoted — and at the first moment the member
        // list shows every instance a voter, the new leader's instance and
        // enough others to lose the quorum again are killed and wiped,
        // before the store's record and the state files catch up.
        Scenario::SecondLoss => {
            let lose = |c: &mut Cluster,
                        steps: &mut Vec<(Duration, String)>,
                        leader: &str,
                        label: &str|
             -> anyhow::Result<()> {
                let mut victims = vec![leader.to_string()];
                victims.extend(
                    group
                        .iter()
                        .filter(|id| *id != leader)
                        .take(recovery::quorum::quorum(group.len()) - 1)
                        .cloned(),
                );
                for id in &victims {
                    c.stop(id, libc::SIGKILL)?;
                    c.wipe(id)?;
                }
                for id in &victims {
                    c.start(id)?;
                }
                steps.push((
                    t(),
                    format!("{label}: {victims:?} killed, wiped, restarted"),
                ));
                Ok(())
            };
            let before = c.members().map(|(cluster, _)| cluster);
            lose(c, &mut steps, leader, "first loss")?;
            // Every instance a started voter of the new incarnation and
            // serving it (a member list of the old one, answered before
            // its members froze, lists them all too).
            let names: Vec<&str> = group.iter().map(String::as_str).collect();
            let limit = Instant::now() + Duration::from_secs(120);
            loop {
                let now = c.wait_voters(&names, Duration::from_millis(500));
                if now.is_some_and(|cluster| Some(cluster) != before) {
                    break;
                }
                anyhow::ensure!(
                    Instant::now() < limit,
                    "the first loss did not come back to every instance a voter of a new incarnation within 120 s"
                );
            }
            steps.push((t(), "every instance a voter again".into()));
            let second = testkit::wait_until(Duration::from_secs(10), || c.leader())
                .context("no leader within 10 s of the first recovery's promotions")?;
            measured_from = Some(t());
            lose(c, &mut steps, &second, "second loss")?;
            group.to_vec()
        }
        // Removed from the group file while eco keeps running (a cloud
        // group does this for a moment before termination, a StatefulSet
        // during scale-down): they leave, they do not fight.
        Scenario::LeaveFollower | Scenario::LeaveLeader => {
            leaving = if s == Scenario::LeaveLeader {
                vec![leader.to_string(), first_follower.clone()]
            } else {
                vec![first_follower.clone()]
            };
            let kept: Vec<String> = group
                .iter()
                .filter(|id| !leaving.contains(id))
                .cloned()
                .collect();
            c.set_group(&kept)?;
            steps.push((
                t(),
                format!("{leaving:?} removed from the group, eco running"),
            ));
            kept
        }
        // A majority loses its disks (restarted with the same ids, empty);
        // a second later the survivors' eco processes are killed and
        // restarted with their data, in the middle of the recovery.
        Scenario::RestartSurvivors => {
            let survivors: Vec<String> = group
                .iter()
                .filter(|id| !losers.contains(id))
                .cloned()
                .collect();
            for id in &losers {
                c.stop(id, libc::SIGKILL)?;
                c.wipe(id)?;
                c.start(id)?;
            }
            steps.push((t(), format!("{losers:?} wiped, restarted")));
            std::thread::sleep(Duration::from_secs(1));
            for id in &survivors {
                c.stop(id, libc::SIGKILL)?;
                c.start(id)?;
            }
            steps.push((t(), format!("survivors {survivors:?} restarted")));
            group.to_vec()
        }
        Scenario::KillEtcdLeader => {
            c.kill_etcd(leader)?;
            group.to_vec()
        }
        Scenario::KillEtcdFollower => {
            c.kill_etcd(&first_follower)?;
            group.to_vec()
        }
        Scenario::KillMajority | Scenario::KillAll => {
            let victims: Vec<String> = if s == Scenario::KillAll {
                group.to_vec()
            } else {
                losers.clone()
            };
            for id in &victims {
                c.stop(id, libc::SIGKILL)?;
            }
            std::thread::sleep(Duration::from_secs(2));
            for id in &victims {
                c.start(id)?;
            }
            steps.push((t(), "restarted with their disks".into()));
            group.to_vec()
        }
        Scenario::WipeOne => {
            c.stop(&first_follower, libc::SIGKILL)?;
            c.wipe(&first_follower)?;
            c.start(&first_follower)?;
            steps.push((t(), "restarted empty, same id".into()));
            group.to_vec()
        }
        Scenario::WipeMajority | Scenario::CrashDuringRecovery => {
            for id in &losers {
                c.stop(id, libc::SIGKILL)?;
            }
            let now = replace(c, group, &losers)?;
            steps.push((t(), "replaced".into()));
            if s == Scenario::CrashDuringRecovery {
                crash_mid_recovery(c, &now, t, &mut steps, &mut notes)?;
            }
            now
        }
        Scenario::WipeAll => {
            for id in group {
                c.stop(id, libc::SIGKILL)?;
            }
            // The last write the old disks could hold was acknowledged
            // before this step: a lossy fault's window ends here.
            steps.push((t(), KILLED_ALL.into()));
            let now = replace(c, group, group)?;
            steps.push((t(), "replaced".into()));
            now
        }
        Scenario::StopWipeAll => {
            for id in group {
                c.stop(id, libc::SIGTERM)?;
            }
            steps.push((t(), "stopped (SIGTERM)".into()));
            let now = replace(c, group, group)?;
            steps.push((t(), "replaced".into()));
            now
        }
        Scenario::ZoneLoss => {
            let zone = c
                .nodes
                .get(leader)
                .and_then(|n| n.zone.clone())
                .unwrap_or_default();
            let lost: Vec<String> = group
                .iter()
                .filter(|id| {
                    c.nodes
                        .get(*id)
                        .is_some_and(|n| n.zone.as_deref() == Some(zone.as_str()))
                })
                .cloned()
                .collect();
            notes.push(format!("zone {zone}: {lost:?}"));
            for id in &lost {
                c.stop(id, libc::SIGKILL)?;
            }
            let now = replace(c, group, &lost)?;
            steps.push((t(), "replaced".into()));
            now
        }
        Scenario::StoreOutage => {
            let before = c.snapshot_names().len();
            c.store_outage(Duration::from_secs(10))?;
            steps.push((t(), "store back".into()));
            let limit = Instant::now() + Duration::from_secs(30);
            let mut resumed = false;
            while Instant::now() < limit {
                if c.snapshot_names().len() > before
                    || c.newest_snapshot_revision() > snapshot_revision
                {
                    resumed = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            anyhow::ensure!(
                resumed,
                "no new snapshot within 30 s of the store coming back"
            );
            anyhow::ensure!(
                !c.snapshot_names().is_empty(),
                "retention left the store without a snapshot"
            );
            steps.push((t(), "snapshots resumed".into()));
            group.to_vec()
        }
        Scenario::StoreWiped => {
            let dir = c.store().join(c.name()).join("snapshots");
            // The writer may be uploading into it: retry while a new
            // temporary file appears between the walk and the last rmdir.
            let mut wiped = Ok(());
            for _ in 0..20 {
                wiped = match std::fs::remove_dir_all(&dir) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    other => other,
                };
                if wiped.is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            wiped.context("wipe the snapshots")?;
            let limit = Instant::now() + Duration::from_secs(30);
            let mut alert = None;
            let mut again = false;
            while Instant::now() < limit && (alert.is_none() || !again) {
                again = again || !c.snapshot_names().is_empty();
                for id in group {
                    let api = c.nodes.get(id).map(|n| n.api()).unwrap_or_default();
                    if let Some(v) = super::observe::eco_status(&api)
                        && let Some(a) = v["snapshots"]["alert"].as_str()
                    {
                        alert = Some(a.to_string());
                    }
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            let alert = alert.context("no instance raised the store alert within 30 s")?;
            anyhow::ensure!(again, "no snapshot taken again within 30 s");
            notes.push(format!("alert: {alert}"));
            steps.push((t(), "snapshot again, alerted".into()));
            group.to_vec()
        }
        Scenario::PartitionMinority | Scenario::PartitionLeader => {
            let cut = if s == Scenario::PartitionLeader {
                leader.to_string()
            } else {
                first_follower.clone()
            };
            let rest: Vec<String> = group.iter().filter(|id| **id != cut).cloned().collect();
            // Compared with the records after: a soak's earlier faults
            // leave earlier incarnations' records in the store.
            let records_before = c.records();
            c.partition(std::slice::from_ref(&cut), &rest)?;
            steps.push((t(), format!("{cut} cut off")));
            // Longer than the quorum-loss timeout: the cut side must not
            // reseed, the majority must keep serving.
            let hold = c.quorum_loss_timeout() * 2 + Duration::from_secs(5);
            std::thread::sleep(hold);
            notes.push(format!(
                "records while cut: {:?} (must stay {records_before:?})",
                c.records()
            ));
            anyhow::ensure!(
                c.records() == records_before,
                "a reseed happened during the partition: {:?}",
                c.records()
            );
            c.heal();
            steps.push((t(), "healed".into()));
            group.to_vec()
        }
        Scenario::PartitionMajorityReplaced => {
            // The majority keeps its members; the minority's instances are
            // terminated and replaced by new ones on the minority side.
            let minority: Vec<String> = followers
                .iter()
                .rev()
                .take(group.len() - recovery::quorum::quorum(group.len()))
                .cloned()
                .collect();
            let kept: Vec<String> = group
                .iter()
                .filter(|id| !minority.contains(id))
                .cloned()
                .collect();
            let records_before = c.records();
            c.partition(&kept, &minority)?;
            steps.push((t(), format!("{minority:?} cut off")));
            for id in &minority {
                c.stop(id, libc::SIGKILL)?;
            }
            let mut fresh = Vec::new();
            for id in &minority {
                let zone = c.nodes.get(id).and_then(|n| n.zone.clone());
                fresh.push(c.add_next(zone.as_deref())?);
            }
            let mut cut_side = minority.clone();
            cut_side.extend(fresh.iter().cloned());
            c.partition(&kept, &cut_side)?;
            let mut now = kept.clone();
            now.extend(fresh.iter().cloned());
            c.set_group(&now)?;
            for id in &fresh {
                c.start(id)?;
            }
            steps.push((t(), format!("replaced on the cut side by {fresh:?}")));
            let hold = c.quorum_loss_timeout() * 2 + Duration::from_secs(5);
            std::thread::sleep(hold);
            anyhow::ensure!(
                c.records() == records_before,
                "a reseed happened on the cut side: {:?}",
                c.records()
            );
            c.heal();
            steps.push((t(), "healed".into()));
            now
        }
    };
    Ok(Injected {
        want,
        leaving,
        steps,
        notes,
        measured_from,
    })
}

/// Waits until an instance is frozen or seeding in the recovery, then kills
/// its eco (and etcd) and restarts it with its disk.
fn crash_mid_recovery(
    c: &mut Cluster,
    group: &[String],
    t: &dyn Fn() -> Duration,
    steps: &mut Vec<(Duration, String)>,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    let limit = Instant::now() + Duration::from_secs(60);
    while Instant::now() < limit {
        for id in group {
            let api = c.nodes.get(id).map(|n| n.api()).unwrap_or_default();
            let Some(v) = super::observe::eco_status(&api) else {
                continue;
            };
            let phase = v["phase"].as_str().unwrap_or_default().to_string();
            if phase == "frozen" || phase == "seeding" {
                c.stop(id, libc::SIGKILL)?;
                steps.push((t(), format!("killed {id} ({phase})")));
                notes.push(format!("killed {id} while {phase}"));
                std::thread::sleep(Duration::from_secs(1));
                c.start(id)?;
                steps.push((t(), format!("restarted {id}")));
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    anyhow::bail!("no instance was frozen or seeding within 60 s")
}

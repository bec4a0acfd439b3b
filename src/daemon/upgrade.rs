//! Rolling etcd upgrades, the daemon's side (`recovery::upgrade` decides):
//! the etcd binary the config names is looked at again every ten probe
//! intervals, at least every second (a package upgrade or a symbolic link moved
//! to another release changes it without restarting eco); when its
//! version differs from the one the local member runs, each settled pass
//! asks the pure rules for this instance's step and takes it: store a
//! snapshot first (the first step of the cluster's upgrade), hand
//! leadership away (the leader's instance, last), or restart the member
//! on the configured binary and watch it until it answers with a leader on
//! the new version (`recovery::upgrade::step_progress`; `/status` says the
//! member is not ready meanwhile). `/status` says what it waits for, or
//! why the configured version is refused.
//!
//! A step that fails stops the roll: the member goes back to the binary it
//! last answered on when the new one never answered
//! (`recovery::upgrade::fallback`), and this instance tries no step on
//! that configured binary again until it changes (`/status`:
//! `upgrade.state = failed`, with why). Outside steps, a member whose etcd
//! never answered since its launch and keeps exiting moves to the
//! configured binary when that is another file (a link fixed), else back
//! to the last one that answered ([`Daemon::fall_back_from_failing_etcd`]).
//!
//! What it does not do: run etcd's downgrade procedure.

use super::Daemon;
use super::observe::Observed;
use crate::api::status::UpgradeStatus;
use crate::base::events::Event;
use crate::base::file_stamp::FileStamp;
use crate::etcd::binaries::{self, EtcdBinaries};
use crate::etcd::launched;
use crate::etcd::members;
use recovery::upgrade::{
    self, Fallback, FallbackFacts, LaunchAtStart, StepProgress, StepWatch, UpgradeFacts,
    UpgradeMember, UpgradeStep, Version,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The configured etcd binary is looked at again every this many probe
/// intervals (at least every [`CHECK_AT_MOST_EVERY`]).
const CHECK_EVERY_PROBES: u32 = 10;
const CHECK_AT_MOST_EVERY: Duration = Duration::from_secs(1);
/// How often the member restarted by a step is asked whether it answers.
const STEP_POLL: Duration = Duration::from_millis(200);

/// The etcd binaries the config names now, looked at again every
/// [`CHECK_EVERY_PROBES`] probe intervals.
#[derive(Default)]
pub(super) struct ConfiguredEtcd {
    checked: Option<Instant>,
    /// The stamp of the configured path when `found` was found.
    stamp: Option<FileStamp>,
    found: Option<EtcdBinaries>,
    /// The last refusal reported (an event once per reason).
    refused: Option<String>,
    /// This member's step onto the configured binary failed: no step is
    /// tried on that binary again until it changes.
    failed: Option<FailedStep>,
    /// The v2-store check of the local data for a step onto 3.6: for which
    /// target, when, and what it found.
    v2store: Option<(Version, Instant, Result<(), String>)>,
}

/// A v2-store check that found content (or could not run) is run again
/// after this long: the operator may have cleaned the data.
const V2STORE_RECHECK: Duration = Duration::from_secs(300);

/// A step that failed, and on which configured binary.
struct FailedStep {
    etcd: PathBuf,
    version: Version,
    stamp: FileStamp,
    reason: String,
}

impl FailedStep {
    fn of(b: &EtcdBinaries, reason: String) -> Self {
        Self {
            etcd: b.etcd.clone(),
            version: b.version,
            stamp: FileStamp::of(&b.etcd),
            reason,
        }
    }

    /// `b` is the very binary the step failed on (the same file, as it
    /// was).
    fn is_for(&self, b: &EtcdBinaries) -> bool {
        b.etcd == self.etcd && b.version == self.version && FileStamp::of(&b.etcd) == self.stamp
    }
}

/// Why an upgrade step failed; `launched`: the new etcd was launched
/// (else the member stays on, or is started again on, the binary it ran).
struct StepFailure {
    why: String,
    launched: bool,
}

fn described(b: &EtcdBinaries) -> String {
    format!("etcd {} ({})", b.version, b.etcd.display())
}

/// The binaries an eco that starts launches its member on
/// (`recovery::upgrade::launch_at_start`): the configured ones, or the
/// last ones the member answered on while the configured version waits
/// for its turn (or failed its step).
pub(super) async fn binaries_at_start(configured: EtcdBinaries, pid_file: &Path) -> EtcdBinaries {
    let record = launched::load(&launched::path_beside(pid_file));
    let ran_version = record
        .answered
        .as_ref()
        .and_then(|l| Version::parse(&l.version));
    let ran = match &record.answered {
        Some(l) => binaries::at(&l.etcd)
            .await
            .filter(|b| Some(b.version) == ran_version),
        None => None,
    };
    let never_answered = record
        .never_answered()
        .and_then(|l| Version::parse(&l.version));
    let (choice, warning) = upgrade::launch_at_start(
        configured.version,
        ran_version,
        ran.is_some(),
        never_answered,
    );
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    match (choice, ran) {
        (LaunchAtStart::LastRun { reason }, Some(b)) => {
            tracing::warn!(etcd = %b.etcd.display(), %reason, "launching the etcd the member last ran");
            b
        }
        _ => configured,
    }
}

impl Daemon {
    /// The configured binaries, found again when the last look is old. A
    /// configured path is looked at by its stamp (symbolic links
    /// followed): `etcd --version` runs again only when the file it leads
    /// to changed; a name looked up on `PATH` is found again every time.
    async fn configured_etcd(&mut self) -> Option<EtcdBinaries> {
        let every = (self.ctx.config.etcd.probe_interval.get() * CHECK_EVERY_PROBES)
            .max(CHECK_AT_MOST_EVERY);
        let c = &mut self.configured_etcd;
        if c.checked.is_none_or(|at| at.elapsed() >= every) {
            c.checked = Some(Instant::now());
            let stamp = self
                .ctx
                .config
                .etcd
                .etcd_bin
                .as_deref()
                .filter(|p| p.components().count() > 1)
                .map(FileStamp::of);
            if c.found.is_some() && stamp.is_some() && stamp == c.stamp {
                return c.found.clone();
            }
            match binaries::find(&self.ctx.config.etcd).await {
                Ok(b) => {
                    c.found = Some(b);
                    c.stamp = stamp;
                }
                Err(e) => {
                    // Keep the last answer: a binary being replaced may be
                    // missing for a moment.
                    tracing::warn!(error = %e, "cannot look at the configured etcd binary");
                }
            }
        }
        c.found.clone()
    }

    /// Before a step onto 3.6: the local data checked for v2-store content
    /// (`etcdutl check v2store`, with the running release's etcdutl), once
    /// per target (again after [`V2STORE_RECHECK`] when it found some);
    /// `None` for any other step.
    async fn v2store_checked(
        &mut self,
        local: &crate::etcd::probe::MemberStatus,
        configured: &EtcdBinaries,
    ) -> Option<Result<(), String>> {
        let running = Version::parse(&local.version)?;
        if !upgrade::needs_v2store_check(running, configured.version) {
            return None;
        }
        if let Some((target, at, found)) = &self.configured_etcd.v2store
            && *target == configured.version
            && (found.is_ok() || at.elapsed() < V2STORE_RECHECK)
        {
            return Some(found.clone());
        }
        let etcdutl = self.ctx.binaries.get().etcdutl;
        let found =
            crate::etcd::v2store_check::check(etcdutl.as_deref(), &self.ctx.config.etcd.data_dir)
                .await;
        match &found {
            Ok(()) => {
                tracing::info!(to = %configured.version, "the member's data holds no v2-store content: it may move to etcd 3.6")
            }
            Err(why) => {
                tracing::warn!(to = %configured.version, %why, "the member's data cannot move to etcd 3.6 as it is")
            }
        }
        self.configured_etcd.v2store = Some((configured.version, Instant::now(), found.clone()));
        Some(found)
    }

    /// One upgrade step when the configured etcd is another version than
    /// the running one; `true` when it acted (the pass changed etcd).
    pub(super) async fn govern_upgrade(&mut self, seen: &Observed) -> bool {
        let Some(configured) = self.configured_etcd().await else {
            return false;
        };
        let (Some(local), Some((list, _))) = (seen.local.as_ref(), seen.cluster.members.as_ref())
        else {
            return false;
        };
        let leader = seen
            .cluster
            .statuses
            .values()
            .map(|s| s.leader)
            .find(|l| *l != 0)
            .unwrap_or(0);
        let facts = UpgradeFacts {
            local_member_id: local.member_id,
            leader_id: leader,
            leader_raft_index: seen
                .cluster
                .statuses
                .get(&leader)
                .map_or(0, |s| s.raft_index),
            target: configured.version,
            members: list
                .iter()
                .map(|m| {
                    let st = seen.cluster.statuses.get(&m.id);
                    UpgradeMember {
                        id: m.id,
                        name: m.name.clone(),
                        is_learner: m.is_learner,
                        version: st.and_then(|s| Version::parse(&s.version)),
                        raft_applied_index: st.map_or(0, |s| s.raft_applied_index),
                    }
                })
                .collect(),
            group: self.group.group.ids().map(str::to_string).collect(),
            max_lag_entries: upgrade::DEFAULT_MAX_LAG_ENTRIES,
            v2store: self.v2store_checked(local, &configured).await,
            extra_flags: self.ctx.config.etcd.extra_flags.clone(),
        };
        let step = upgrade::next_step(&facts);
        // A step failed on this very binary: the roll stops here until the
        // configured binary changes (or the member runs it after all).
        if self
            .configured_etcd
            .failed
            .as_ref()
            .is_some_and(|f| !f.is_for(&configured) || step == UpgradeStep::Nothing)
        {
            self.configured_etcd.failed = None;
        }
        let running = local.version.clone();
        let show = |state: &str, reason: &str| {
            Some(UpgradeStatus {
                running: running.clone(),
                configured: configured.version.to_string(),
                state: state.into(),
                reason: reason.into(),
            })
        };
        let shown = match &step {
            UpgradeStep::Nothing => None,
            UpgradeStep::Refused { reason } => show("refused", reason),
            UpgradeStep::Wait { reason } => show("waiting", reason),
            UpgradeStep::TransferLeadership { reason, .. } => {
                show("transferring_leadership", reason)
            }
            UpgradeStep::Restart { reason, .. } => show("restarting", reason),
        };
        if let Some(failed) = &self.configured_etcd.failed {
            let shown = show("failed", &failed.reason);
            self.status.send_modify(|s| s.upgrade = shown);
            return false;
        }
        // The member restarts for its step (after a snapshot, if first):
        // not ready from now on, until it answers again.
        let restarts = matches!(step, UpgradeStep::Restart { .. });
        self.status.send_modify(|s| {
            s.upgrade = shown;
            s.ready &= !restarts;
        });
        match step {
            UpgradeStep::Nothing | UpgradeStep::Wait { .. } => {
                self.configured_etcd.refused = None;
                false
            }
            UpgradeStep::Refused { reason } => {
                if self.configured_etcd.refused.as_ref() != Some(&reason) {
                    crate::event!(error, Event::UpgradeRefused, %running, configured = %configured.version, %reason, "the configured etcd cannot be rolled onto this cluster; nothing restarts");
                    self.configured_etcd.refused = Some(reason);
                }
                false
            }
            UpgradeStep::TransferLeadership {
                member_id,
                name,
                reason,
            } => {
                let moved = async {
                    let mut client = self.ctx.access.connect(&self.ctx.client_url.get()).await?;
                    members::move_leader(&mut client, member_id, self.ctx.access.call_timeout())
                        .await?;
                    anyhow::Ok(())
                }
                .await;
                match moved {
                    Ok(()) => {
                        crate::event!(info, Event::LeadershipTransferred, member_id = format!("{member_id:x}"), %name, "handed leadership away")
                    }
                    Err(e) => {
                        crate::event!(error, Event::UpgradeFailed, step = "transfer_leadership", error = %format!("{e:#}"), %reason, "the upgrade step failed; trying again next pass")
                    }
                }
                true
            }
            UpgradeStep::Restart {
                from,
                to,
                first,
                reason,
            } => {
                if first && !self.snapshot_before_upgrade(from, to).await {
                    crate::event!(error, Event::UpgradeFailed, step = "snapshot", error = "no snapshot could be stored", %reason, "the upgrade step failed; trying again next pass");
                    return true;
                }
                crate::event!(warn, Event::UpgradeRestarting, %from, %to, %reason, "restarting the member on the configured etcd");
                let started = Instant::now();
                match self.upgrade_step(configured.clone(), to).await {
                    Ok(()) => {
                        let duration_ms = started.elapsed().as_millis() as u64;
                        self.status.send_modify(|s| {
                            s.etcd_version = to.to_string();
                            s.upgrade = None;
                        });
                        crate::event!(warn, Event::UpgradeRestarted, %from, %to, duration_ms, "the member answers on the new etcd");
                    }
                    Err(StepFailure { why, launched }) => {
                        let back = if launched {
                            self.fall_back(seen, true).await.unwrap_or_else(|| {
                                "the member stays on it (no binary it answered on is left)".into()
                            })
                        } else {
                            format!(
                                "the member stays on {}",
                                described(&self.ctx.binaries.get())
                            )
                        };
                        let failed = format!(
                            "the step onto {} failed: {why}; {back}; the roll stops here until etcd.etcd_bin names another binary",
                            described(&configured),
                        );
                        crate::event!(error, Event::UpgradeFailed, step = "restart", error = %why, reason = %failed, "the upgrade step failed; the roll stops here");
                        let shown = show("failed", &failed);
                        self.status.send_modify(|s| s.upgrade = shown);
                        self.configured_etcd.failed = Some(FailedStep::of(&configured, failed));
                    }
                }
                true
            }
        }
    }

    /// A member whose etcd never answered since its launch and keeps
    /// exiting moves to another binary (`recovery::upgrade::fallback`):
    /// the configured one when it is another file (the fix), else the last
    /// one it answered on. `true` when it did (etcd is stopped; the planner
    /// starts it on that binary in the next pass).
    pub(super) async fn fall_back_from_failing_etcd(&mut self, seen: &Observed) -> bool {
        self.fall_back(seen, false).await.is_some()
    }

    /// [`Self::fall_back_from_failing_etcd`], also after an upgrade step
    /// gave up on its etcd (`step_gave_up`): what it did, if anything.
    async fn fall_back(&mut self, seen: &Observed, step_gave_up: bool) -> Option<String> {
        let launch = self.etcd.launch()?;
        if !upgrade::may_fall_back(launch.answered, launch.exits, step_gave_up) {
            return None;
        }
        let configured = self.configured_etcd().await;
        let last_ran = match self.etcd.last_answered() {
            Some(l) => binaries::at(&l.etcd)
                .await
                .filter(|b| b.version.to_string() == l.version),
            None => None,
        };
        let own = self.durable.state().and_then(|s| s.member_id);
        let running = &launch.binaries;
        let facts = FallbackFacts {
            running: running.version,
            answered: launch.answered,
            exits: launch.exits,
            step_gave_up,
            configured: configured
                .as_ref()
                .map(|c| (c.version, c.etcd == running.etcd)),
            last_ran: last_ran
                .as_ref()
                .map(|b| (b.version, b.etcd == running.etcd)),
            others: seen
                .cluster
                .statuses
                .iter()
                .filter(|(id, _)| Some(**id) != own)
                .filter_map(|(_, s)| Version::parse(&s.version))
                .collect(),
        };
        let (to, reason) = match upgrade::fallback(&facts)? {
            Fallback::Configured { reason } => (configured?, reason),
            Fallback::LastRan { reason } => (last_ran?, reason),
        };
        crate::event!(warn, Event::EtcdFallback, from = %described(running), to = %described(&to), %reason, "the member's etcd does not start: it moves to another binary");
        if let Err(e) = self.etcd.stop().await {
            tracing::warn!(error = %format!("{e:#}"), "cannot stop etcd");
        }
        self.etcd.left_launch();
        let done = format!("the member moves to {}", described(&to));
        self.status
            .send_modify(|s| s.etcd_version = to.version.to_string());
        self.ctx.binaries.set(to);
        Some(done)
    }

    /// A snapshot of the local member to the store before the first step;
    /// `true` when one is stored (or there is no store to hold it: the
    /// upgrade goes on, with a warning).
    async fn snapshot_before_upgrade(&self, from: Version, to: Version) -> bool {
        if self.ctx.store.is_none() {
            tracing::warn!(
                "no snapshot store is configured: the upgrade starts without a snapshot"
            );
            return true;
        }
        self.snapshot_to_store(
            &self.ctx.client_url.get(),
            crate::etcd::access::LONG_CALL_TIMEOUTS,
            &format!("before upgrading etcd {from} → {to}"),
        )
        .await
        .is_some()
    }

    /// Stops the member, launches it on `configured`, and watches it until
    /// it answers with a leader on `to` (`recovery::upgrade::step_progress`,
    /// within `recovery::upgrade::step_deadline_ms` of the unhealthy-member
    /// TTL); `Err` says why the step failed. `/status` shows the member as
    /// not ready meanwhile, with etcd's process as it is.
    async fn upgrade_step(
        &mut self,
        configured: EtcdBinaries,
        to: Version,
    ) -> Result<(), StepFailure> {
        let not_launched = |why: String| StepFailure {
            why,
            launched: false,
        };
        let token = self
            .durable
            .state()
            .map(|s| s.cluster_token.clone())
            .ok_or_else(|| not_launched("no state: cannot restart etcd".into()))?;
        let deadline_ms =
            upgrade::step_deadline_ms(self.ctx.config.recovery.unhealthy_member_ttl.millis());
        let started = Instant::now();
        let previous = self.ctx.binaries.get();
        self.etcd
            .stop()
            .await
            .map_err(|e| not_launched(format!("cannot stop etcd: {e:#}")))?;
        self.ctx.binaries.set(configured);
        if let Err(e) = self
            .etcd
            .start_on_data(&self.ctx, &token, self.peer_listener())
            .await
        {
            // Never launched: the planner starts the member again on the
            // binary it ran.
            self.ctx.binaries.set(previous);
            return Err(not_launched(format!("cannot start etcd {to}: {e:#}")));
        }
        let url = self.ctx.client_url.get();
        loop {
            let answer = self.view.local(&url).await;
            if answer.is_some() {
                self.etcd.answered();
            }
            let launch = self.etcd.launch();
            let watch = StepWatch {
                to,
                elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                deadline_ms,
                answer: answer
                    .as_ref()
                    .map(|m| (Version::parse(&m.version), m.has_leader())),
                answered: launch.as_ref().is_some_and(|l| l.answered),
                exits: launch.as_ref().map_or(0, |l| l.exits),
            };
            let process = self.etcd.process();
            self.status.send_modify(|s| {
                s.ready = false;
                s.process = process;
            });
            match upgrade::step_progress(&watch) {
                StepProgress::Done => return Ok(()),
                StepProgress::Failed { reason } => {
                    return Err(StepFailure {
                        why: reason,
                        launched: true,
                    });
                }
                StepProgress::Waiting => tokio::time::sleep(STEP_POLL).await,
            }
        }
    }
}

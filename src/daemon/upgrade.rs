//! Rolling etcd upgrades, the daemon's side (`recovery::upgrade` decides):
//! the etcd binary the config names is looked at again every ten probe
//! intervals, at least every second (a package upgrade or a symbolic link moved
//! to another release changes it without restarting eco); when its
//! version differs from the one the local member runs, each settled pass
//! asks the pure rules for this instance's step and takes it: store a
//! snapshot first (the first step of the cluster's upgrade), hand
//! leadership away (the leader's instance, last), or restart the member
//! on the configured binary and wait for it to answer. `/status` says what
//! it waits for, or why the configured version is refused.
//!
//! What it does not do: go back to the previous binary when the new one
//! does not start (the member stays down, `upgrade.failed` and the
//! member's health say so), or run etcd's downgrade procedure.

use super::Daemon;
use super::observe::Observed;
use crate::etcd::binaries::{self, EtcdBinaries};
use crate::etcd::launched;
use crate::etcd::members;
use crate::events::Event;
use crate::file_stamp::FileStamp;
use crate::status::UpgradeStatus;
use recovery::upgrade::{self, LaunchAtStart, UpgradeFacts, UpgradeMember, UpgradeStep, Version};
use std::path::Path;
use std::time::{Duration, Instant};

/// The configured etcd binary is looked at again every this many probe
/// intervals (at least every [`CHECK_AT_MOST_EVERY`]).
const CHECK_EVERY_PROBES: u32 = 10;
const CHECK_AT_MOST_EVERY: Duration = Duration::from_secs(1);
/// How long a restarted member has to answer on its new version.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);
/// The snapshot before the first step gets this many call timeouts per call.
const SNAPSHOT_TIMEOUTS: u32 = 5;

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
}

/// The binaries an eco that starts launches its member on
/// (`recovery::upgrade::launch_at_start`): the configured ones, or the
/// ones the member last ran while the configured version waits for its
/// turn.
pub(super) async fn binaries_at_start(configured: EtcdBinaries, pid_file: &Path) -> EtcdBinaries {
    let last = launched::load(&launched::path_beside(pid_file));
    let last_version = last.as_ref().and_then(|l| Version::parse(&l.version));
    let last_run = match &last {
        Some(l) => binaries::at(&l.etcd)
            .await
            .filter(|b| Some(b.version) == last_version),
        None => None,
    };
    let (choice, warning) =
        upgrade::launch_at_start(configured.version, last_version, last_run.is_some());
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    match (choice, last_run) {
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
            max_lag_entries: upgrade::DEFAULT_MAX_LAG_ENTRIES,
        };
        let step = upgrade::next_step(&facts);
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
        self.status.send_modify(|s| s.upgrade = shown);
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
                match self.restart_on(configured).await {
                    Ok(()) => {
                        let duration_ms = started.elapsed().as_millis() as u64;
                        self.status.send_modify(|s| {
                            s.etcd_version = to.to_string();
                            s.upgrade = None;
                        });
                        crate::event!(warn, Event::UpgradeRestarted, %from, %to, duration_ms, "the member answers on the new etcd");
                    }
                    Err(e) => {
                        crate::event!(error, Event::UpgradeFailed, step = "restart", error = %format!("{e:#}"), %reason, "the upgrade step failed; trying again next pass")
                    }
                }
                true
            }
        }
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
            SNAPSHOT_TIMEOUTS,
            &format!("before upgrading etcd {from} → {to}"),
        )
        .await
        .is_some()
    }

    /// Stops the member, launches it again on `configured`, and waits for
    /// it to answer (at most [`ANSWER_WITHIN`]).
    async fn restart_on(&mut self, configured: EtcdBinaries) -> anyhow::Result<()> {
        use anyhow::Context;
        let token = self
            .durable
            .state()
            .map(|s| s.cluster_token.clone())
            .context("no state: cannot restart etcd")?;
        self.etcd.stop().await?;
        self.ctx.binaries.set(configured);
        self.etcd
            .start_on_data(&self.ctx, &token, self.peer_listener())
            .await?;
        self.view
            .await_leader(
                &self.ctx.client_url.get(),
                ANSWER_WITHIN,
                "the member restarted on the new etcd",
            )
            .await?;
        Ok(())
    }
}

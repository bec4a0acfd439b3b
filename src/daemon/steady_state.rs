//! The steady-state pass: the pure planner (`recovery::planner::plan`)
//! decides from this pass's facts, its first step is shown as the next
//! action, and the steps run in order (`execute.rs`); a "wait" answer from
//! etcd ends the pass. Then `V_n` is kept where recovery reads it
//! (`recovery::voters::upkeep`): in the state file, and — beside the
//! leader — in the store's voters record.

use super::Daemon;
use super::observe::Observed;
use crate::base::events::Event;
use crate::etcd::members::MembershipError;
use crate::metrics::decisions::ActionOutcome;
use crate::quorum_loss::facts;
use crate::store::record;
use recovery::maintenance::{self, MaintenanceJob};
use recovery::planner::{self, Action, LocalFacts, Observation, PlannerConfig, WaitReason};
use recovery::voters::{self, ListedMember, OwnMembership, VotersFacts};

/// What `eco status` says for an action.
pub(super) fn action_name(a: &Action) -> &'static str {
    match a {
        Action::StartEtcd { .. } => "start etcd",
        Action::StopEtcd => "stop etcd",
        Action::MoveDataAside { .. } => "move the data directory aside",
        Action::JoinAsLearner { .. } => "join as a learner",
        Action::Promote { .. } => "promote a learner",
        Action::RemoveMember { .. } => "remove a member",
        Action::TransferLeadership { .. } => "hand leadership away",
        Action::RecordMemberId { .. } => "record the member id",
        Action::Wait { .. } => "wait",
        Action::Nothing => "keep etcd running",
    }
}

impl Daemon {
    pub(super) async fn steady_state(&mut self, seen: &Observed) -> anyhow::Result<()> {
        // An etcd that does not start leaves its binary first; the planner
        // starts it on the other one next pass.
        if self.fall_back_from_failing_etcd(seen).await {
            return Ok(());
        }
        let ctx = &self.ctx;
        let observation = Observation {
            now_ms: seen.now_ms,
            local: LocalFacts {
                instance_id: ctx.id().to_string(),
                peer_url: ctx.peer_url.clone(),
                recorded_member_id: self.durable.state().and_then(|s| s.member_id),
                data: seen.data,
                etcd_running: seen.running,
                is_leader: seen.local.as_ref().is_some_and(|m| m.is_leader()),
            },
            group: self
                .group
                .group
                .instances
                .iter()
                .map(|i| (i.id.clone(), ctx.peer_url_of(&i.host)))
                .collect(),
            desired_size: self.group.group.desired_size,
            absences_confirmed: self.group.absences_confirmed,
            absent_unconfirmed: self.group.group.departing.contains(ctx.id()),
            members: self.view.facts(&seen.cluster, seen.now_ms),
            live: self.gossip.as_ref().map(|g| {
                self.live_since.update(
                    facts::live_instances(
                        &g.node.view(),
                        tokio::time::Instant::now(),
                        ctx.protocol.peer_fresh,
                        ctx.id(),
                    ),
                    seen.now_ms,
                )
            }),
            config: PlannerConfig {
                unhealthy_member_ttl_ms: ctx.config.recovery.unhealthy_member_ttl.millis(),
                learner_timeout_ms: ctx.config.recovery.learner_timeout.millis(),
                group_lag_ms: PlannerConfig::group_lag_ms_for(
                    u64::try_from(ctx.provider.refresh_interval().as_millis()).unwrap_or(u64::MAX),
                ),
            },
        };
        self.last_members = observation.members.clone();
        let plan = planner::plan(&observation);
        tracing::debug!(?plan, "planned");
        if let Some(next) = plan.next() {
            self.show_next(action_name(&next.action), &next.reason);
        }
        let decisions = &self.ctx.metrics.decisions;
        decisions.waiting_on(plan.next().and_then(|s| match s.action {
            Action::Wait { on } => Some(on),
            _ => None,
        }));
        for step in &plan.steps {
            if matches!(step.action, Action::Nothing | Action::Wait { .. }) {
                continue;
            }
            let kind = step.action.kind();
            crate::event!(info, Event::ActionStarted, action = kind, reason = %step.reason, "acting");
            if let Err(e) = self.execute(step, &seen.cluster).await {
                let decisions = &self.ctx.metrics.decisions;
                let wait = e
                    .downcast_ref::<MembershipError>()
                    .is_some_and(|m| m.is_wait());
                if wait {
                    decisions.action(&step.action, ActionOutcome::Refused);
                    decisions.waiting_on(Some(WaitReason::EtcdRefusedForNow));
                    crate::event!(info, Event::ActionRefused, action = kind, reason = %step.reason, error = %e, "etcd refused for now: waiting");
                    self.show_next("wait", &format!("{}: {e}", step.reason));
                    return Ok(());
                }
                decisions.action(&step.action, ActionOutcome::Failed);
                crate::event!(warn, Event::ActionFailed, action = kind, reason = %step.reason, error = %format!("{e:#}"), "the action failed; planning again next pass");
                return Err(e.context(step.reason.clone()));
            }
            self.ctx
                .metrics
                .decisions
                .action(&step.action, ActionOutcome::Done);
        }
        self.keep_voters(seen, observation.local.is_leader).await;
        // Maintenance only after a settled plan, in recovery's order; the
        // first member-restarting job that acts ends it.
        for job in maintenance::after_plan(&plan, observation.members.is_some()) {
            let acted = match job {
                MaintenanceJob::PeerScheme => {
                    if let Some(members) = &observation.members {
                        self.keep_peer_scheme(seen, members).await?;
                    }
                    false
                }
                MaintenanceJob::Upgrade => self.govern_upgrade(seen).await,
                MaintenanceJob::Space => {
                    self.govern_space(seen).await;
                    true
                }
            };
            if acted && job.exclusive() {
                break;
            }
        }
        Ok(())
    }

    /// Keeps `V_n`: every member in its state file; the leader also in the
    /// store's voters record.
    async fn keep_voters(&mut self, seen: &Observed, is_leader: bool) {
        let members: Option<Vec<ListedMember>> = seen.cluster.members.as_ref().map(|(list, _)| {
            list.iter()
                .map(|m| ListedMember {
                    id: m.id,
                    name: m.name.clone(),
                    is_learner: m.is_learner,
                })
                .collect()
        });
        let upkeep = voters::upkeep(&VotersFacts {
            members: members.as_deref(),
            own: self.durable.state().map(|s| OwnMembership {
                incarnation: s.incarnation,
                member_id: s.member_id,
                voters: &s.voting_members,
                learners: &s.learners,
            }),
            is_leader,
            raft_index: seen.cluster.raft_index(),
            written: self.voters_written.as_ref(),
        });
        if let Some((voters, learners)) = upkeep.record_locally
            && let Err(e) = self.durable.record_voters(voters, learners)
        {
            tracing::warn!(error = %format!("{e:#}"), "cannot record the voting members");
        }
        let (Some(record), Some(store)) = (upkeep.write_to_store, self.ctx.store.as_deref()) else {
            return;
        };
        match record::write_voters(
            store,
            self.ctx.cluster(),
            &record,
            self.cluster_version.writing(),
        )
        .await
        {
            Ok(_) => self.voters_written = Some(record),
            Err(e) => tracing::warn!(error = %e, "cannot write the voting members to the store"),
        }
    }
}

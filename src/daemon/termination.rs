//! A termination notice from the provider (an EC2 termination lifecycle
//! hook holding this instance in `Terminating:Wait`), carried out: the
//! pure `recovery::termination::decide` says what the notice adds to this
//! pass's leave — the final snapshot first, a heartbeat to the hook, or
//! completion (gossip left, then `CompleteLifecycleAction`) — and this file
//! does it. The leave itself is the planner's leaving rules: the provider
//! no longer lists this instance as a member, so it hands leadership away,
//! its member is removed by the leader's instance when that keeps quorum,
//! and etcd stops once it is no longer a member.

use super::Daemon;
use super::observe::Observed;
use crate::base::events::Event;
use crate::provider::{TerminationHook, TerminationNotice};
use recovery::termination::{self, MemberNow, TerminationFacts, TerminationStep};

/// What the daemon remembers of a termination in progress.
#[derive(Debug)]
pub(super) struct Terminating {
    since_ms: u64,
    last_heartbeat_ms: Option<u64>,
    final_snapshot_taken: bool,
    final_snapshot_failures: u32,
    completed: bool,
}

impl Daemon {
    /// Handles a termination notice, if the provider announced one; true
    /// when the planner must not act this pass.
    pub(super) async fn terminating(&mut self, seen: &Observed) -> bool {
        let Some(notice) = self.ctx.provider.termination() else {
            if let Some(t) = self.termination.take()
                && !t.completed
            {
                crate::event!(
                    warn,
                    Event::TerminationWithdrawn,
                    "the termination notice was withdrawn; this instance stays"
                );
            }
            return false;
        };
        let member = self.own_member_now(seen);
        let t = self.termination.get_or_insert_with(|| {
            crate::event!(warn, Event::TerminationNoticed, source = %notice.source, hook = ?notice.hook, "this instance is being terminated: leaving gracefully");
            Terminating {
                since_ms: seen.now_ms,
                last_heartbeat_ms: None,
                final_snapshot_taken: false,
                final_snapshot_failures: 0,
                completed: false,
            }
        });
        let facts = TerminationFacts {
            now_ms: seen.now_ms,
            since_ms: t.since_ms,
            hook_heartbeat_ms: notice.hook.as_ref().map(|h| h.heartbeat_timeout_ms),
            bound_ms: bound_ms(&self.ctx.config.provider, &notice),
            member,
            etcd_running: seen.running,
            final_snapshot_due: self.ctx.store.is_some()
                && self.leader_facts.final_due_leaving().is_some(),
            final_snapshot_taken: t.final_snapshot_taken,
            final_snapshot_failures: t.final_snapshot_failures,
            last_heartbeat_ms: t.last_heartbeat_ms,
            completed: t.completed,
        };
        let step = termination::decide(&facts);
        let holds = step.holds_planner();
        match step {
            TerminationStep::FinalSnapshot { reason } => {
                self.show_next("final snapshot", &reason);
                // The hook's clock restarts before a snapshot that may take
                // a while (it cannot heartbeat during the upload).
                if let Some(hook) = &notice.hook {
                    if let Err(e) = self.ctx.provider.termination_heartbeat(hook).await {
                        tracing::warn!(error = %e, "cannot heartbeat the lifecycle hook");
                    } else if let Some(t) = self.termination.as_mut() {
                        t.last_heartbeat_ms = Some(seen.now_ms);
                    }
                }
                let ok = self.final_snapshot().await;
                if let Some(t) = self.termination.as_mut() {
                    if ok {
                        t.final_snapshot_taken = true;
                    } else {
                        t.final_snapshot_failures += 1;
                    }
                }
            }
            TerminationStep::Heartbeat { reason } => {
                tracing::info!(%reason, "terminating");
                if let Some(hook) = &notice.hook {
                    match self.ctx.provider.termination_heartbeat(hook).await {
                        Ok(()) => {
                            if let Some(t) = self.termination.as_mut() {
                                t.last_heartbeat_ms = Some(seen.now_ms);
                            }
                        }
                        Err(e) => tracing::warn!(error = %e, "cannot heartbeat the lifecycle hook"),
                    }
                }
            }
            TerminationStep::Complete { reason } => {
                if let Some(hook) = &notice.hook {
                    self.complete(hook, &reason).await;
                }
            }
            TerminationStep::Continue { .. } | TerminationStep::Done { .. } => {}
        }
        holds
    }

    /// This instance's member in the last member list.
    fn own_member_now(&self, seen: &Observed) -> MemberNow {
        let Some((list, _)) = &seen.cluster.members else {
            return MemberNow::Unknown;
        };
        let recorded = self.durable.state().and_then(|s| s.member_id);
        let present = list
            .iter()
            .any(|m| Some(m.id) == recorded || m.name == self.ctx.id());
        if present {
            MemberNow::Present
        } else {
            MemberNow::Gone
        }
    }

    /// A snapshot of this instance's own etcd to the store.
    async fn final_snapshot(&self) -> bool {
        self.snapshot_to_store(
            &self.ctx.client_url.get(),
            crate::etcd::access::LONG_CALL_TIMEOUTS,
            "the final snapshot before the termination",
        )
        .await
        .is_some()
    }

    /// Leaves gossip, then lets the group continue the termination.
    async fn complete(&mut self, hook: &TerminationHook, reason: &str) {
        self.show_next("complete the termination", reason);
        if let Some(g) = self.gossip.take() {
            g.node.shutdown().await;
            tracing::info!("left gossip");
        }
        match self.ctx.provider.complete_termination(hook).await {
            Ok(()) => {
                crate::event!(warn, Event::TerminationCompleted, %reason, hook = %hook.name, "completed the lifecycle action (CONTINUE): the group terminates this instance");
                if let Some(t) = self.termination.as_mut() {
                    t.completed = true;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot complete the lifecycle action; trying again on the next pass")
            }
        }
    }
}

/// The leave's bound (`recovery::termination::leave_bound_ms`) from
/// `provider.aws.leave_timeout` and the hook.
fn bound_ms(provider: &crate::config::ProviderConfig, notice: &TerminationNotice) -> u64 {
    let configured = provider
        .aws
        .as_ref()
        .map(|a| a.leave_timeout.millis())
        .unwrap_or_else(|| crate::config::defaults::aws_leave_timeout().millis());
    termination::leave_bound_ms(
        configured,
        notice.hook.as_ref().and_then(|h| h.global_timeout_ms),
    )
}

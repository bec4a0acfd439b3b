//! One pass of the daemon, every `etcd.probe_interval`: observe → decide →
//! dispatch. The quorum-loss driver runs first (it may freeze, seed or join
//! this very pass); then the pure `recovery::pass::decide` says who decides
//! now, whether the instance is ready, and its phase; the outputs
//! (`/status`, gossip, the snapshot writer's facts) are published; and the
//! decider chosen acts.

use super::Daemon;
use super::observe::Observed;
use recovery::pass::{self, Decider, LocalMember, PassFacts, Ready};

impl Daemon {
    pub(super) async fn pass(&mut self) -> anyhow::Result<()> {
        let t = std::time::Instant::now();
        let seen = self.observe().await?;
        let observed_ms = t.elapsed().as_millis();
        if seen.local.is_some() {
            // The binary of the launch in force runs (etcd-launched.json).
            self.etcd.answered();
        }
        self.keep_cluster_version().await;
        let versioned_ms = t.elapsed().as_millis();
        let leader_known = seen.cluster.statuses.values().any(|s| s.has_leader());
        self.ctx.metrics.decisions.quorum_seen(leader_known);
        // Paused by a human: the protocol is not run (no freeze, no seed,
        // no join) until the resume.
        if self.refused.is_none() && seen.paused.is_none() {
            self.drive_quorum_loss(&seen).await;
        }
        let driven_ms = t.elapsed().as_millis();
        let ready = pass::decide(&self.pass_facts(&seen));
        if let Some(why) = &ready.stale {
            tracing::warn!(reason = %why, "not ready");
        }
        self.publish(&seen, &ready);
        let retention = self.ctx.moved_aside_retention();
        self.etcd.prune_moved_aside(retention);
        if self.refused.is_none() {
            self.consider_replacement(&seen).await;
        }
        let before_dispatch_ms = t.elapsed().as_millis();
        let r = self.dispatch(&seen, &ready).await;
        tracing::debug!(
            observed_ms,
            versioned_ms,
            driven_ms,
            before_dispatch_ms,
            total_ms = t.elapsed().as_millis(),
            "pass timings"
        );
        r
    }

    fn pass_facts(&self, seen: &Observed) -> PassFacts {
        let local_incarnation = self.durable.incarnation();
        PassFacts {
            refused: self.refused.clone(),
            paused: seen.paused.as_ref().map(|p| p.describe()),
            hold: self
                .quorum_loss
                .as_ref()
                .and_then(|d| d.hold(local_incarnation)),
            protocol_acted: self.quorum_loss.as_ref().is_some_and(|d| d.acted()),
            etcd_running: seen.running,
            local: seen.local.as_ref().map(|m| LocalMember {
                has_leader: m.has_leader(),
                is_leader: m.is_leader(),
                etcd_ready: seen.etcd_readyz.as_ref().map(Result::is_ok),
            }),
            members_answer: seen.cluster.members.is_some(),
            data: seen.data,
            group_size: self.group.group.instances.len(),
            in_group: self.group.group.me().is_some(),
            state: self.durable.state().map(|s| s.summary()),
            newest_recorded: seen.newest_recorded,
        }
    }

    async fn dispatch(&mut self, seen: &Observed, ready: &Ready) -> anyhow::Result<()> {
        if !matches!(ready.decider, Decider::Planner) {
            // The planner's waits are over while another decider decides.
            self.ctx.metrics.decisions.waiting_on(None);
        }
        match &ready.decider {
            Decider::Refused { reason } => {
                self.show_next("wait for a human", reason);
                Ok(())
            }
            Decider::Paused { reason } => {
                self.show_next("paused", reason);
                Ok(())
            }
            Decider::QuorumLoss { reason } => {
                let reason = match &self.problem {
                    Some(problem) => format!("{reason}; {problem}"),
                    None => reason.clone(),
                };
                self.show_next(self.held_action(), &reason);
                Ok(())
            }
            Decider::Formation => self.form().await,
            Decider::Planner => {
                if self.terminating(seen).await {
                    return Ok(());
                }
                self.steady_state(seen).await
            }
        }
    }
}

//! Self-replacement, the daemon's side (`recovery::self_replacement`
//! decides): every pass, how long the local member has been unusable
//! (etcd down, not answering, or without a leader) and how healthy the
//! rest of the cluster is; when the rules say so, the provider is asked
//! once per episode to replace this instance (on AWS `SetInstanceHealth
//! Unhealthy`), or says it cannot and eco logs it for a human.

use super::Daemon;
use super::observe::Observed;
use crate::base::events::Event;
use crate::provider::Replacement;
use recovery::self_replacement::{self, EpisodeNow, ReplacementFacts, ReplacementStep};

impl Daemon {
    pub(super) async fn consider_replacement(&mut self, seen: &Observed) {
        let Some(after) = self.ctx.config.recovery.replace_unusable_after else {
            return;
        };
        let because = match (&seen.local, seen.running) {
            (_, false) => "etcd is not running",
            (None, true) => "etcd does not answer",
            (Some(_), true) => "its member knows no leader",
        };
        let recorded = self.durable.state().and_then(|s| s.member_id);
        let is_member = seen.cluster.members.as_ref().is_some_and(|(list, _)| {
            list.iter()
                .any(|m| m.name == self.ctx.id() || Some(m.id) == recorded)
        });
        let usable = seen.local.as_ref().is_some_and(|m| m.has_leader());
        let (was_member, unusable_for_ms, asked) =
            match self.unusable.observe(seen.now_ms, usable, is_member) {
                EpisodeNow::Usable | EpisodeNow::RetryLater => return,
                EpisodeNow::Unusable {
                    was_member,
                    unusable_for_ms,
                    asked,
                } => (was_member, unusable_for_ms, asked),
            };
        let me = self.ctx.id();
        let (mut other_voters, mut healthy, mut local_is_voter) = (0, 0, false);
        if let Some((list, _)) = &seen.cluster.members {
            for m in list.iter().filter(|m| !m.is_learner) {
                if m.name == me {
                    local_is_voter = true;
                    continue;
                }
                other_voters += 1;
                if seen
                    .cluster
                    .statuses
                    .get(&m.id)
                    .is_some_and(|s| s.has_leader())
                {
                    healthy += 1;
                }
            }
        }
        let facts = ReplacementFacts {
            after_ms: Some(after.millis()),
            unusable_for_ms,
            unusable_because: because.into(),
            in_group: self.group.group.me().is_some(),
            was_member,
            leaving: self.ctx.provider.termination().is_some(),
            paused: seen.paused.is_some(),
            other_voters,
            healthy_other_voters: healthy,
            local_is_voter,
            asked,
        };
        let reason = match self_replacement::decide(&facts) {
            ReplacementStep::Nothing => return,
            ReplacementStep::Wait { reason } => {
                tracing::debug!(%reason, "self-replacement waits");
                return;
            }
            ReplacementStep::Ask { reason } => reason,
        };
        let decisions = &self.ctx.metrics.decisions;
        match self.ctx.provider.request_replacement(&reason).await {
            Ok(answer) => {
                let (outcome, detail) = match answer {
                    Replacement::Requested(d) => ("requested", d),
                    Replacement::NotSupported(d) => ("logged", d),
                };
                decisions.replacement(outcome);
                crate::event!(warn, Event::ReplacementRequested, outcome, %detail, %reason, "asked for this instance to be replaced");
                self.unusable.asked();
            }
            Err(e) => {
                decisions.replacement("failed");
                crate::event!(error, Event::ReplacementFailed, error = %e, %reason, "the provider did not take the replacement request; asking again later");
                self.unusable.failed(seen.now_ms);
            }
        }
    }
}

//! A planned stop of the local member (eco's shutdown, a restart of the
//! peer listener) hands raft leadership away first when the member leads:
//! who takes it is `recovery::handover`'s decision from the members the
//! last pass saw; whether the member leads is asked of etcd now. Bounded:
//! the whole handover takes at most [`HANDOVER_BOUND`] (or one call
//! timeout, if shorter), then etcd is stopped whatever happened — a stop
//! is never held up by a cluster that cannot take over.

use super::Daemon;
use crate::base::events::Event;
use crate::etcd::{members, probe};
use recovery::handover::{self, Handover};
use std::time::Duration;

/// The longest a planned stop waits for leadership to move. etcd's
/// `MoveLeader` returns once the heir leads: a few heartbeats when the heir
/// is caught up.
pub(super) const HANDOVER_BOUND: Duration = Duration::from_secs(3);

impl Daemon {
    /// Stops the local etcd, handing leadership away first when its
    /// member leads.
    pub(super) async fn stop_etcd_handing_over(&mut self) -> anyhow::Result<()> {
        self.hand_over_if_leading().await;
        self.etcd.stop().await
    }

    /// Hands leadership away when the local member leads, bounded. eco's
    /// shutdown calls it first of all (before the final snapshot): a stop
    /// cut short by SIGKILL (a short grace period) then costs no election.
    pub(super) async fn hand_over_if_leading(&mut self) {
        let bound = HANDOVER_BOUND.min(self.ctx.access.call_timeout());
        if tokio::time::timeout(bound, self.hand_leadership_over(bound))
            .await
            .is_err()
        {
            tracing::warn!(
                bound_ms = bound.as_millis() as u64,
                "handing leadership away took too long: stopping etcd anyway"
            );
        }
    }

    async fn hand_leadership_over(&self, bound: Duration) {
        let Some(members) = self.last_members.as_ref() else {
            return;
        };
        if !self.etcd.running() {
            return;
        }
        let endpoint = self.ctx.client_url.get();
        let Ok(mut client) = self.ctx.access.connect(&endpoint).await else {
            return;
        };
        let Ok(local) = probe::status(&mut client, &endpoint, bound).await else {
            return;
        };
        match handover::before_stop(local.member_id, local.is_leader(), members) {
            Handover::NotLeading => {}
            Handover::Nobody { reason } => tracing::info!(%reason, "stopping etcd"),
            Handover::To {
                member_id,
                name,
                reason,
            } => match members::move_leader(&mut client, member_id, bound).await {
                Ok(()) => {
                    crate::event!(info, Event::LeadershipTransferred, member_id = format!("{member_id:x}"), %name, "handed leadership away before stopping etcd: {reason}")
                }
                Err(e) => {
                    tracing::warn!(error = %e, %reason, "could not hand leadership away: stopping etcd anyway (an election follows)")
                }
            },
        }
    }
}

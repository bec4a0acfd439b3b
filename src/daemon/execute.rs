//! Executing the steady-state planner's actions. Every etcd call has the
//! access point's timeout; etcd's "not now" answers (another learner, a
//! learner not in sync, an unsafe change) come back as waits.

use super::Daemon;
use crate::base::events::Event;
use crate::etcd::cluster_view::Seen;
use crate::etcd::flags::InitialClusterState;
use crate::etcd::members::{self, MembershipError};
use crate::store::record;

use crate::local::state_file::LocalState;
use anyhow::Context;
use recovery::planner::{Action, Step};

impl Daemon {
    pub(super) async fn execute(&mut self, step: &Step, seen: &Seen) -> anyhow::Result<()> {
        match &step.action {
            Action::Nothing | Action::Wait { .. } => Ok(()),
            Action::StartEtcd { initial_cluster } => {
                let token = self
                    .durable
                    .state()
                    .map(|s| s.cluster_token.clone())
                    .context("no state: cannot start etcd")?;
                self.etcd
                    .start(
                        &self.ctx,
                        &token,
                        initial_cluster.clone(),
                        InitialClusterState::Existing,
                        self.peer_listener(),
                    )
                    .await
            }
            Action::StopEtcd => self.etcd.stop().await,
            Action::MoveDataAside { why } => {
                self.etcd.stop().await?;
                self.etcd.move_aside(why)?;
                Ok(())
            }
            Action::RecordMemberId { member_id } => match self.durable.state() {
                Some(_) => self.durable.record_member_id(*member_id),
                None => {
                    let state = self.state_of_cluster(*member_id, Vec::new()).await?;
                    self.durable.persist(state)
                }
            },
            Action::JoinAsLearner { peer_url } => self.join_as_learner(peer_url, seen).await,
            Action::Promote { member_id, name } => {
                self.record_promotion_first(name, seen).await?;
                let mut client = self.ctx.access.connect(&self.ctx.client_url.get()).await?;
                members::promote(&mut client, *member_id, self.ctx.access.call_timeout()).await?;
                crate::event!(info, Event::MemberPromoted, member_id = format!("{member_id:x}"), %name, "promoted a learner to voter");
                Ok(())
            }
            Action::TransferLeadership { member_id, name } => {
                // MoveLeader must reach the leader: this instance's member.
                let mut client = self.ctx.access.connect(&self.ctx.client_url.get()).await?;
                members::move_leader(&mut client, *member_id, self.ctx.access.call_timeout())
                    .await?;
                crate::event!(info, Event::LeadershipTransferred, member_id = format!("{member_id:x}"), %name, "handed leadership away");
                Ok(())
            }
            Action::RemoveMember {
                member_id,
                name,
                snapshot_first,
            } => {
                let endpoints = seen.healthy_endpoints();
                let endpoint = endpoints
                    .first()
                    .context("no healthy member to remove the member through")?;
                if *snapshot_first {
                    self.snapshot_before(endpoint, &format!("removing member {name}"))
                        .await;
                }
                let timeout = self.ctx.access.call_timeout();
                let removed = self
                    .through_each(&endpoints, async |client| {
                        match members::remove(client, *member_id, timeout).await {
                            Ok(()) | Err(MembershipError::NotFound(_)) => Ok(()),
                            Err(e) => Err(e),
                        }
                    })
                    .await;
                removed?;
                crate::event!(warn, Event::MemberRemoved, member_id = format!("{member_id:x}"), %name, "removed a member");
                Ok(())
            }
        }
    }

    /// Asks `endpoints` in turn to make a membership change until one does
    /// it. etcd judges whether a change is safe on the member that receives
    /// it (`--strict-reconfig-check`: that member's own connections to every
    /// voter, over the last 5 s), and a member can keep a peer marked
    /// inactive long after its connections came back (seen when a pod's
    /// address changed: a late failed dial to the old address after the
    /// streams reconnected to the new one). Only that refusal moves on to
    /// the next member: it comes before anything is proposed, so the change
    /// cannot happen twice; every other error ends here. The last refusal
    /// is the answer when every member refuses.
    async fn through_each<T>(
        &self,
        endpoints: &[String],
        mut change: impl AsyncFnMut(&mut etcd_client::Client) -> Result<T, MembershipError>,
    ) -> anyhow::Result<T> {
        let mut refused = None;
        for endpoint in endpoints {
            let mut client = self.ctx.access.connect(endpoint).await?;
            match change(&mut client).await {
                Ok(done) => return Ok(done),
                Err(e @ MembershipError::Unsafe(_)) => {
                    tracing::debug!(%endpoint, error = %e, "refused by this member; asking the next");
                    refused = Some(e);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(refused
            .map(anyhow::Error::from)
            .unwrap_or_else(|| anyhow::anyhow!("no healthy member to change membership through")))
    }

    /// Adds this instance as a learner and starts etcd with the member list
    /// the add returns.
    async fn join_as_learner(&mut self, peer_url: &str, seen: &Seen) -> anyhow::Result<()> {
        // The group may have changed since the last refresh (this instance
        // may just have been removed from it): read it again before adding
        // a member.
        let group = self.ctx.provider.discover().await?;
        let still_in_group = group.me().is_some();
        self.group.group = group;
        if !still_in_group {
            tracing::info!("this instance left the group; not joining");
            return Ok(());
        }
        let endpoints = seen.healthy_endpoints();
        anyhow::ensure!(
            !endpoints.is_empty(),
            "no healthy member to add this instance through"
        );
        // Know the cluster's identity before changing membership.
        let (incarnation, token) = self.cluster_identity().await?;
        let timeout = self.ctx.access.call_timeout();
        let (added, list) = self
            .through_each(&endpoints, async |client| {
                members::add_learner(client, peer_url, timeout).await
            })
            .await?;
        let voters = list
            .iter()
            .filter(|m| !m.is_learner && !m.name.is_empty())
            .map(|m| m.name.clone())
            .collect();
        let mut state = LocalState::new(
            self.ctx.cluster(),
            self.ctx.id(),
            incarnation,
            token.clone(),
            voters,
        )
        .with_peer_scheme(self.ctx.config.etcd.effective_peer_scheme());
        state.member_id = Some(added.id);
        self.durable.persist(state)?;
        if let Err(e) = self
            .record_join(incarnation, added.id, &list, &endpoints)
            .await
        {
            tracing::warn!(error = %format!("{e:#}"), "cannot record this learner in the store yet; the leader's instance records it at its next pass");
        }
        let me = self.ctx.id().to_string();
        let initial: Vec<(String, String)> = list
            .iter()
            .flat_map(|m| {
                let name = if m.id == added.id {
                    me.clone()
                } else {
                    m.name.clone()
                };
                m.peer_urls.iter().map(move |u| (name.clone(), u.clone()))
            })
            .filter(|(name, _)| !name.is_empty())
            .collect();
        crate::event!(
            info,
            Event::MemberAddedAsLearner,
            member_id = format!("{:x}", added.id),
            "added as a learner; starting etcd"
        );
        let scheme = self.peer_listener();
        self.etcd
            .start(
                &self.ctx,
                &token,
                initial,
                InitialClusterState::Existing,
                scheme,
            )
            .await
    }

    /// The incarnation and token of the cluster to join: the store's newest
    /// record (the record of truth), else this instance's state.
    async fn cluster_identity(&self) -> anyhow::Result<(u64, String)> {
        if let Some(store) = self.ctx.store.as_deref()
            && let Some(r) = record::newest(store, self.ctx.cluster()).await?
        {
            return Ok((r.incarnation, r.token));
        }
        if let Some(s) = self.durable.state() {
            return Ok((s.incarnation, s.cluster_token.clone()));
        }
        anyhow::bail!(
            "the cluster's incarnation is unknown: joining needs the snapshot store (the record of truth) configured and holding a record of this cluster"
        )
    }

    /// A state of the cluster this instance joins, for member `member_id`.
    async fn state_of_cluster(
        &self,
        member_id: u64,
        voters: Vec<String>,
    ) -> anyhow::Result<LocalState> {
        let (incarnation, token) = self.cluster_identity().await?;
        let mut state = LocalState::new(
            self.ctx.cluster(),
            self.ctx.id(),
            incarnation,
            token,
            voters,
        );
        state.member_id = Some(member_id);
        Ok(state)
    }

    /// A snapshot into the store before a risky membership change (the
    /// planner says which: `recovery::planner::snapshot_first`). A failure is logged and does not block the change: removals
    /// keep the cluster healthy, and the periodic snapshots go on.
    async fn snapshot_before(&self, endpoint: &str, what: &str) {
        let reason = format!("snapshot before {what}");
        if self.ctx.store.is_some()
            && self
                .snapshot_to_store(endpoint, crate::etcd::access::LONG_CALL_TIMEOUTS, &reason)
                .await
                .is_none()
        {
            tracing::warn!("no {reason}; going on");
        }
    }

    /// A promotion is recorded in the store's record of `V_n` before it
    /// takes effect (`recovery::voters::before_promotion`): an instance
    /// that restarts empty right after it still finds itself in `V_n`. A
    /// record that cannot be written stops the promotion (it is retried at
    /// the next pass); without a store there is nothing to write.
    async fn record_promotion_first(&mut self, name: &str, seen: &Seen) -> anyhow::Result<()> {
        let (Some(store), Some(state), Some((list, _))) = (
            self.ctx.store.as_deref(),
            self.durable.state(),
            seen.members.as_ref(),
        ) else {
            return Ok(());
        };
        let members: Vec<recovery::voters::ListedMember> = list
            .iter()
            .map(|m| recovery::voters::ListedMember {
                id: m.id,
                name: m.name.clone(),
                is_learner: m.is_learner,
            })
            .collect();
        let Some(first) = recovery::voters::before_promotion(
            self.voters_written.as_ref(),
            state.incarnation,
            &members,
            name,
            seen.raft_index(),
        ) else {
            return Ok(());
        };
        record::write_voters(
            store,
            self.ctx.cluster(),
            &first,
            self.cluster_version.writing(),
        )
        .await
        .with_context(|| {
            format!("recording the promotion of {name} in the store before it takes effect")
        })?;
        self.voters_written = Some(first);
        Ok(())
    }

    /// A join is recorded in the store's record of the membership right
    /// after the add and before etcd starts (`recovery::voters::after_join`):
    /// a round after a loss soon after waits for this learner even when
    /// every instance that would have recorded it is gone. The raft index
    /// is read after the add, so the leader's record of an older member
    /// list cannot replace it. Without a store there is nothing to write;
    /// a record that cannot be written is logged and the join goes on (the
    /// leader's instance records the learner at its next pass).
    async fn record_join(
        &mut self,
        incarnation: u64,
        added: u64,
        list: &[crate::etcd::members::Member],
        endpoints: &[String],
    ) -> anyhow::Result<()> {
        let Some(store) = self.ctx.store.as_deref() else {
            return Ok(());
        };
        let members: Vec<recovery::voters::ListedMember> = list
            .iter()
            .map(|m| recovery::voters::ListedMember {
                id: m.id,
                name: m.name.clone(),
                is_learner: m.is_learner,
            })
            .collect();
        let mut raft_index = 0;
        for endpoint in endpoints {
            if let Ok(st) =
                crate::etcd::probe::MemberProbe::new(endpoint.clone(), self.ctx.access.clone())
                    .status(self.ctx.access.call_timeout())
                    .await
            {
                raft_index = st.raft_index;
                break;
            }
        }
        let existing = record::voters(store, self.ctx.cluster(), incarnation).await?;
        let Some(rec) = recovery::voters::after_join(
            existing.as_ref(),
            incarnation,
            &members,
            added,
            self.ctx.id(),
            raft_index,
        ) else {
            return Ok(());
        };
        record::write_voters(
            store,
            self.ctx.cluster(),
            &rec,
            self.cluster_version.writing(),
        )
        .await
        .context("recording this learner in the store's record of the membership")?;
        Ok(())
    }
}

//! The space governor's pass (`recovery::space`): on the instance beside
//! the raft leader, in a pass where the planner changed nothing, gather
//! every member's database size and size in use (this pass's Status
//! probes, and what it remembers of each member's size in use: whether a
//! compaction is still freeing pages) and the cluster's `NOSPACE` alarms,
//! ask the pure rules for one step, and do it: a physical compaction, a
//! defragmentation of one member (through its own endpoint, bounded by
//! `etcd.defrag.timeout`; the pass waits for it: nothing else should
//! change meanwhile), a leadership handover before the leader's own turn,
//! or disarming the alarm. Each is an event; defragmentations are counted
//! by outcome.

use super::Daemon;
use super::observe::Observed;
use crate::base::events::Event;
use crate::etcd::maintenance;
use recovery::space::{
    self, InUseMemory, InUseSeen, MemberSpace, SpaceFacts, SpacePolicy, SpaceStep,
};
use std::time::Instant;

impl Daemon {
    pub(super) async fn govern_space(&mut self, seen: &Observed) {
        let Some(local) = seen.local.as_ref().filter(|l| l.is_leader()) else {
            // What it remembered while it governed before is stale by the
            // time this instance governs again.
            self.space_in_use_seen.clear();
            return;
        };
        let Some((members, _)) = seen.cluster.members.as_ref() else {
            return;
        };
        let timeout = self.ctx.access.call_timeout();
        // One client to the local member (the leader) for the alarm list,
        // the compaction and the disarm.
        let Ok(mut client) = self.ctx.access.connect(&self.ctx.client_url.get()).await else {
            return;
        };
        let nospace = match maintenance::nospace_alarms(&mut client, timeout).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::debug!(error = %e, "cannot read the alarm list");
                return;
            }
        };
        if nospace.is_empty() {
            self.nospace_episode = None;
        }
        self.ctx.metrics.decisions.nospace_seen(!nospace.is_empty());
        let spaces: Vec<MemberSpace> = members
            .iter()
            .map(|m| {
                let st = seen.cluster.statuses.get(&m.id);
                MemberSpace {
                    id: m.id,
                    name: m.name.clone(),
                    is_learner: m.is_learner,
                    is_leader: m.id == local.member_id,
                    answered: st.is_some(),
                    db_size: st.map_or(0, |s| s.db_size.max(0) as u64),
                    db_size_in_use: st.map_or(0, |s| s.db_size_in_use.max(0) as u64),
                    in_use_before: self.space_in_use_seen.get(&m.id).map(|(bytes, since)| {
                        InUseSeen {
                            bytes: *bytes,
                            age_ms: since.elapsed().as_millis() as u64,
                        }
                    }),
                }
            })
            .collect();
        let now = Instant::now();
        self.space_in_use_seen = spaces
            .iter()
            .filter(|m| m.answered)
            .map(|m| {
                let kept = match space::remember_in_use(m) {
                    InUseMemory::Keep { bytes } => (
                        bytes,
                        self.space_in_use_seen
                            .get(&m.id)
                            .map_or(now, |(_, since)| *since),
                    ),
                    InUseMemory::Restart { bytes } => (bytes, now),
                };
                (m.id, kept)
            })
            .collect();
        let d = &self.ctx.config.etcd.defrag;
        let facts = SpaceFacts {
            local_is_leader: true,
            members: spaces,
            nospace,
            revision: local.revision,
            compacted: self.nospace_episode.is_some(),
            defragmented: self.nospace_episode.clone().unwrap_or_default(),
            policy: SpacePolicy {
                enabled: d.enabled,
                min_ratio: d.min_ratio,
                min_bytes: d.min_bytes,
            },
        };
        match space::next_step(&facts) {
            SpaceStep::Nothing { .. } => {}
            SpaceStep::Wait { reason } => tracing::debug!(%reason, "space governor waits"),
            SpaceStep::Compact { revision, reason } => {
                // A client whose every call may take the long bound: the
                // connection's own per-call timeout would cut the
                // compaction of a large database at `etcd.call_timeout`.
                let long = timeout * crate::etcd::access::LONG_CALL_TIMEOUTS;
                let compacted = match self
                    .ctx
                    .access
                    .with_call_timeout(long)
                    .connect(&self.ctx.client_url.get())
                    .await
                {
                    Ok(mut c) => maintenance::compact(&mut c, revision, long)
                        .await
                        .map_err(anyhow::Error::from),
                    Err(e) => Err(e.into()),
                };
                match compacted {
                    Ok(()) => {
                        self.nospace_episode = Some(Vec::new());
                        crate::event!(warn, Event::SpaceCompacted, revision, %reason, "compacted to the current revision");
                    }
                    Err(e) => {
                        crate::event!(error, Event::SpaceFailed, step = "compact", error = %format!("{e:#}"), %reason, "the space step failed; trying again next pass")
                    }
                }
            }
            SpaceStep::Defragment {
                member_id,
                name,
                reason,
            } => {
                let Some(endpoint) = seen.cluster.endpoints.get(&member_id).cloned() else {
                    return;
                };
                let started = Instant::now();
                // Bounded by `etcd.defrag.timeout`, the connection too (its
                // per-call timeout is otherwise `etcd.call_timeout`, which
                // cut every defragmentation longer than that: a member of
                // a few GiB takes tens of seconds).
                let access = self.ctx.access.with_call_timeout(d.timeout.get());
                let done = match access.connect(&endpoint).await {
                    Ok(mut client) => maintenance::defragment(&mut client, d.timeout.get())
                        .await
                        .map_err(anyhow::Error::from),
                    Err(e) => Err(e.into()),
                };
                let duration_ms = started.elapsed().as_millis() as u64;
                self.ctx.metrics.decisions.defragmented(done.is_ok());
                if done.is_ok()
                    && let Some(defragmented) = &mut self.nospace_episode
                {
                    defragmented.push(member_id);
                }
                match done {
                    Ok(()) => crate::event!(
                        warn,
                        Event::SpaceDefragmented,
                        member_id = format!("{member_id:x}"),
                        %name,
                        duration_ms,
                        %reason,
                        "defragmented a member"
                    ),
                    Err(e) => crate::event!(
                        error,
                        Event::SpaceFailed,
                        step = "defragment",
                        error = %format!("{e:#}"),
                        %reason,
                        "the space step failed; trying again next pass"
                    ),
                }
            }
            SpaceStep::HandOver { to, name, reason } => {
                // MoveLeader goes to the leader: this instance's member.
                match crate::etcd::members::move_leader(&mut client, to, timeout).await {
                    Ok(()) => crate::event!(
                        info,
                        Event::LeadershipTransferred,
                        member_id = format!("{to:x}"),
                        %name,
                        %reason,
                        "handed leadership away before defragmenting this member"
                    ),
                    Err(e) => crate::event!(
                        error,
                        Event::SpaceFailed,
                        step = "hand_over",
                        error = %format!("{e:#}"),
                        %reason,
                        "the space step failed; trying again next pass"
                    ),
                }
            }
            SpaceStep::Disarm { members, reason } => {
                let mut failed = None;
                for m in &members {
                    if let Err(e) = maintenance::disarm_nospace(&mut client, *m, timeout).await {
                        failed = Some(e.to_string());
                    }
                }
                match failed {
                    None => {
                        self.nospace_episode = None;
                        crate::event!(warn, Event::SpaceDisarmed, members = ?members.iter().map(|m| format!("{m:x}")).collect::<Vec<_>>(), %reason, "NOSPACE disarmed: writes resume");
                    }
                    Some(e) => {
                        crate::event!(error, Event::SpaceFailed, step = "disarm", error = %e, %reason, "the space step failed; trying again next pass")
                    }
                }
            }
        }
    }
}

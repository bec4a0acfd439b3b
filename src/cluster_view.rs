//! Gathering what the pass needs to know about the cluster: the own
//! member's Status, the member list (from the local etcd, else any group
//! instance that answers) and each member's health through its own client
//! (Status answers for the member it is connected to). Every call has a
//! timeout and they run concurrently, so a slow or silent member never
//! makes a pass slower than two call timeouts (the quorum-loss detector's
//! evidence comes one sample per pass). It also remembers since when a
//! member has been unhealthy or a learner — observation memory, not a
//! decision.

use crate::etcd::access::EtcdAccess;
use crate::etcd::members::{self, Member};
use crate::etcd::probe::{MemberProbe, MemberStatus};
use recovery::planner::MemberFacts;
use std::collections::HashMap;

pub struct ClusterView {
    access: EtcdAccess,
    probes: HashMap<String, MemberProbe>,
    unhealthy_since: HashMap<u64, u64>,
    learner_since: HashMap<u64, u64>,
}

/// One observation of the cluster.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// The member list and the endpoint that gave it.
    pub members: Option<(Vec<Member>, String)>,
    /// Status by member id, for members that answered.
    pub statuses: HashMap<u64, MemberStatus>,
}

impl Seen {
    /// Client URL of a healthy member, preferring the leader.
    pub fn healthy_endpoint(&self) -> Option<String> {
        let (members, _) = self.members.as_ref()?;
        let healthy = |m: &&Member| self.statuses.get(&m.id).is_some_and(|s| s.has_leader());
        let leader = members
            .iter()
            .filter(healthy)
            .find(|m| self.statuses.get(&m.id).is_some_and(|s| s.is_leader()));
        leader
            .or_else(|| members.iter().find(healthy))
            .and_then(|m| m.client_urls.first().cloned())
    }

    /// The cluster's highest raft index seen (for the voters record).
    pub fn raft_index(&self) -> u64 {
        self.statuses
            .values()
            .map(|s| s.raft_index)
            .max()
            .unwrap_or(0)
    }
}

impl ClusterView {
    pub fn new(access: EtcdAccess) -> Self {
        Self {
            access,
            probes: HashMap::new(),
            unhealthy_since: HashMap::new(),
            learner_since: HashMap::new(),
        }
    }

    async fn status_of(&mut self, endpoint: &str) -> Option<MemberStatus> {
        let probe = self
            .probes
            .entry(endpoint.to_string())
            .or_insert_with(|| self.access.probe(endpoint.to_string()));
        probe.status().await.ok()
    }

    /// One observation: the own member's Status (`local`, when etcd runs
    /// here) and the member list, asked of every candidate at once (the
    /// first answer in `candidates` order wins), then every member's
    /// Status at once. Each call is bounded by the call timeout, so a
    /// pass waits on etcd for at most two of them however many members
    /// are silent.
    pub async fn observe(
        &mut self,
        local: Option<&str>,
        candidates: &[String],
    ) -> (Option<MemberStatus>, Seen) {
        let mut own = local.map(|endpoint| {
            let probe = self
                .probes
                .remove(endpoint)
                .unwrap_or_else(|| self.access.probe(endpoint.to_string()));
            tokio::spawn(async move {
                let mut probe = probe;
                let status = probe.status().await.ok();
                (probe, status)
            })
        });
        let mut lists = tokio::task::JoinSet::new();
        for (rank, endpoint) in candidates.iter().enumerate() {
            let (access, endpoint) = (self.access.clone(), endpoint.clone());
            lists.spawn(async move {
                let mut client = access.connect(&endpoint).await.ok()?;
                let list = members::list(&mut client, access.call_timeout())
                    .await
                    .ok()?;
                Some((rank, list, endpoint))
            });
        }
        let mut answers: Vec<(usize, Vec<Member>, String)> = Vec::new();
        while let Some(done) = lists.join_next().await {
            if let Ok(Some(answer)) = done {
                answers.push(answer);
            }
        }
        answers.sort_by_key(|(rank, _, _)| *rank);
        let mut seen = Seen {
            members: answers
                .into_iter()
                .next()
                .map(|(_, list, endpoint)| (list, endpoint)),
            statuses: HashMap::new(),
        };
        let local_status = match own.take() {
            Some(task) => match task.await {
                Ok((probe, status)) => {
                    self.probes.insert(probe.endpoint().to_string(), probe);
                    status
                }
                Err(_) => None,
            },
            None => None,
        };
        let Some((list, _)) = &seen.members else {
            return (local_status, seen);
        };
        let endpoints: Vec<(u64, String)> = list
            .iter()
            .filter_map(|m| m.client_urls.first().map(|u| (m.id, u.clone())))
            .collect();
        let mut tasks = tokio::task::JoinSet::new();
        for (id, endpoint) in endpoints {
            // The own member answered already this pass.
            if let (Some(s), Some(l)) = (&local_status, local) {
                if s.member_id == id && endpoint == l {
                    seen.statuses.insert(id, s.clone());
                    continue;
                }
            }
            let mut probe = self
                .probes
                .remove(&endpoint)
                .unwrap_or_else(|| self.access.probe(endpoint.clone()));
            tasks.spawn(async move {
                let status = probe.status().await.ok();
                (id, endpoint, probe, status)
            });
        }
        while let Some(done) = tasks.join_next().await {
            let Ok((id, endpoint, probe, status)) = done else {
                continue;
            };
            self.probes.insert(endpoint, probe);
            if let Some(s) = status {
                seen.statuses.insert(id, s);
            }
        }
        (local_status, seen)
    }

    /// Status of one endpoint (the local member).
    pub async fn local(&mut self, endpoint: &str) -> Option<MemberStatus> {
        self.status_of(endpoint).await
    }

    /// Member facts for the planner, with the since-times updated.
    pub fn facts(&mut self, seen: &Seen, now_ms: u64) -> Option<Vec<MemberFacts>> {
        let (list, _) = seen.members.as_ref()?;
        let mut out = Vec::new();
        for m in list {
            let healthy = seen.statuses.get(&m.id).is_some_and(|s| s.has_leader());
            if healthy {
                self.unhealthy_since.remove(&m.id);
            } else {
                self.unhealthy_since.entry(m.id).or_insert(now_ms);
            }
            if m.is_learner {
                self.learner_since.entry(m.id).or_insert(now_ms);
            } else {
                self.learner_since.remove(&m.id);
            }
            out.push(MemberFacts {
                id: m.id,
                name: m.name.clone(),
                peer_urls: m.peer_urls.clone(),
                is_learner: m.is_learner,
                healthy,
                unhealthy_since_ms: self.unhealthy_since.get(&m.id).copied(),
                learner_since_ms: self.learner_since.get(&m.id).copied(),
            });
        }
        let present: std::collections::HashSet<u64> = list.iter().map(|m| m.id).collect();
        self.unhealthy_since.retain(|id, _| present.contains(id));
        self.learner_since.retain(|id, _| present.contains(id));
        Some(out)
    }
}

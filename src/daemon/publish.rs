//! The pass's outputs, projected in one place: `/status` (what this
//! instance knows, whether it is ready, its phase, what it does next and
//! why), its gossip PeerState (typed facts for its peers' decisions, and
//! its phase for humans), and the snapshot writer's facts. Nothing here is
//! read back by a decision.

use super::Daemon;
use super::observe::Observed;
use crate::api::status::{GossipPeer, MemberRow, NextAction, Phase};
use crate::base::events::Event;
use crate::local::data_dir::DataState;
use crate::snapshot::writer::WriterInput;
use gossip::Liveness;
use recovery::pass::{Hold, Ready};
use recovery::snapshot_schedule::{LeaderFacts, WriterMember};

impl Daemon {
    pub(super) fn publish(&mut self, seen: &Observed, ready: &Ready) {
        self.publish_gossip(seen, ready);
        self.publish_writer(seen, ready);
        let rows: Vec<MemberRow> = seen
            .cluster
            .members
            .as_ref()
            .map(|(list, _)| {
                list.iter()
                    .map(|m| {
                        let st = seen.cluster.statuses.get(&m.id);
                        MemberRow {
                            id: format!("{:x}", m.id),
                            name: m.name.clone(),
                            learner: m.is_learner,
                            leader: st.is_some_and(|s| s.is_leader()),
                            healthy: st.is_some_and(|s| s.has_leader()),
                            revision: st.map(|s| s.revision),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let gossip = self.gossip_rows();
        let probe_error = match (&seen.local, seen.process.running) {
            (None, true) => Some(format!("{} does not answer", self.ctx.client_url.get())),
            _ => None,
        };
        let state = self.durable.state().cloned();
        let group = self.group.group.clone();
        let group_problem = self.group.problem.clone();
        let termination = self.ctx.provider.termination();
        let recovery = self.quorum_loss.as_ref().map(|d| d.explain());
        let tls_files = self.ctx.config.etcd.tls_files();
        let tls_problem = self
            .certificates
            .problem(&tls_files, &self.ctx.me.host.to_string());
        let before = self.status.borrow().tls_problem.clone();
        if tls_problem != before {
            match &tls_problem {
                Some(problem) => {
                    tracing::warn!(%problem, "etcd's TLS files as they are now cannot be used: new connections to etcd will fail (see eco status)")
                }
                None if before.is_some() => tracing::info!("etcd's TLS files can be used again"),
                None => {}
            }
        }
        let described = self.certificates.now(&tls_files);
        let peer_names: Vec<String> = described
            .iter()
            .find(|(key, _)| *key == "etcd.tls.peer.cert_file")
            .and_then(|(_, d)| d.as_ref().ok())
            .map(|d| d.names.clone())
            .unwrap_or_default();
        let join_problem = self.join_problem(seen, &peer_names);
        if join_problem != self.status.borrow().join_problem
            && let Some(problem) = &join_problem
        {
            crate::event!(warn, Event::JoinFailing, %problem, "this instance's join keeps failing");
        }
        let running = self.ctx.binaries.get().version;
        let etcd_advisories = recovery::etcd_advisories::advisories(running);
        if etcd_advisories != self.status.borrow().etcd_advisories {
            for a in &etcd_advisories {
                crate::event!(warn, Event::EtcdAdvisory, version = %running, severity = a.severity.as_str(), advisory = %a.text, source = %a.source, "the etcd release the member runs has an advisory");
            }
        }
        let certificates = described
            .into_iter()
            .map(|(key, described)| match described {
                Ok(d) => crate::api::status::CertificateExpiry {
                    key: key.to_string(),
                    subject: d.subject,
                    names: d.names,
                    not_after_unix: Some(d.not_after_unix),
                    problem: None,
                },
                Err(problem) => crate::api::status::CertificateExpiry {
                    key: key.to_string(),
                    subject: String::new(),
                    names: Vec::new(),
                    not_after_unix: None,
                    problem: Some(problem),
                },
            })
            .collect();
        self.status.send_modify(|s| {
            s.certificates = certificates;
            s.tls_problem = tls_problem;
            s.join_problem = join_problem;
            s.etcd_advisories = etcd_advisories;
            s.etcd_not_ready = seen.etcd_readyz.clone().and_then(Result::err);
            s.ready = ready.ready;
            s.phase = ready.phase;
            s.process = seen.process.clone();
            s.probe_error = probe_error;
            s.member = seen.local.clone();
            s.members = rows;
            s.gossip = gossip;
            s.group = Some(group);
            s.group_problem = group_problem;
            s.termination = termination;
            s.paused = seen.paused.as_ref().and_then(|p| p.pause().cloned());
            s.paused_unreadable = match &seen.paused {
                Some(p @ crate::store::pause::PauseSeen::Unreadable(_)) => Some(p.describe()),
                _ => None,
            };
            s.pause_problem = seen.pause_problem.clone();
            s.state = state;
            if recovery.is_some() {
                s.recovery = recovery;
            }
        });
    }

    /// This instance's PeerState: typed facts (its data, its etcd, whether
    /// the quorum-loss protocol freezes it) and its phase for humans.
    fn publish_gossip(&mut self, seen: &Observed, ready: &Ready) {
        let hold = self
            .quorum_loss
            .as_ref()
            .and_then(|d| d.hold(self.durable.incarnation()))
            .map(|(h, _)| h);
        let state = self.durable.state();
        let local = seen.local.as_ref();
        let peer_state = gossip::PeerState {
            instance_id: self.ctx.id().to_string(),
            gossip_addr: None,
            client_url: self.ctx.client_url.get(),
            peer_url: self.ctx.peer_url.clone(),
            zone: self.ctx.me.zone.clone(),
            etcd: gossip::EtcdFacts {
                running: seen.running,
                member_id: local.map(|m| m.member_id),
                cluster_id: local.map(|m| m.cluster_id),
                cluster_token: state.map(|s| s.cluster_token.clone()),
                incarnation: state.map(|s| s.incarnation),
                healthy: local.is_some_and(|m| m.has_leader()),
                is_leader: local.is_some_and(|m| m.is_leader()),
                revision: local.map_or(0, |m| m.revision),
                raft_index: local.map_or(0, |m| m.raft_index),
                raft_term: local.map_or(0, |m| m.raft_term),
                peer_https: self.etcd.peer_scheme() == Some(crate::config::Scheme::Https),
                peer_tls_ready: self.ctx.config.etcd.tls_files().peer.is_some(),
            },
            data: gossip::DataFacts {
                has_state: state.is_some(),
                present: seen.data == DataState::Present,
                incarnation: state.map(|s| s.incarnation),
                revision: None,
                voters: state.map_or_else(Vec::new, |s| s.voting_members.clone()),
                learners: state.map_or_else(Vec::new, |s| s.learners.clone()),
            },
            phase: ready.phase.as_str().to_string(),
            // Frozen by a promise, or owing a join of a newer incarnation:
            // either way it will not rejoin its incarnation by itself.
            frozen: matches!(hold, Some(Hold::Frozen | Hold::Joining)),
            software_version: crate::base::version::VERSION.into(),
            formats: gossip::Formats {
                written: self.cluster_version.writing(),
                reads: recovery::cluster_version::NEWEST,
            },
        };
        if let Some(g) = self.gossip.as_mut() {
            g.publish(peer_state);
        }
    }

    /// What the snapshot writer needs from this pass.
    fn publish_writer(&mut self, seen: &Observed, ready: &Ready) {
        let (voters, healthy_other_voters) = match &seen.cluster.members {
            Some((list, _)) => {
                let voters: Vec<_> = list.iter().filter(|m| !m.is_learner).collect();
                let healthy_others = voters
                    .iter()
                    .filter(|m| {
                        m.name != self.ctx.id()
                            && seen
                                .cluster
                                .statuses
                                .get(&m.id)
                                .is_some_and(|s| s.has_leader())
                    })
                    .count();
                (voters.len(), healthy_others)
            }
            None => (0, 0),
        };
        let facts = LeaderFacts {
            ready: ready.ready,
            etcd_running: seen.process.running,
            member: seen.local.as_ref().map(|m| WriterMember {
                is_leader: m.is_leader(),
                is_learner: m.is_learner,
                revision: m.revision,
            }),
            voters,
            healthy_other_voters,
        };
        // The daemon's own copy (the termination handling reads it); the
        // channel only carries it out, to the writer and the reconciler.
        self.leader_facts = facts;
        let input = WriterInput {
            facts,
            naming: self
                .durable
                .state()
                .map(|s| (s.incarnation, s.cluster_token.clone())),
            format: self.cluster_version.writing(),
        };
        self.writer.send_replace(input);
    }

    /// What gossip says about every instance it knows, for humans.
    fn gossip_rows(&self) -> Vec<GossipPeer> {
        let Some(g) = &self.gossip else {
            return Vec::new();
        };
        let now = tokio::time::Instant::now();
        let mut peers: Vec<GossipPeer> = g
            .node
            .view()
            .into_iter()
            .map(|(id, v)| GossipPeer {
                instance_id: id,
                up: v.liveness == Liveness::Up,
                phase: v.state.phase.clone(),
                heard_ms_ago: now.saturating_duration_since(v.last_heard).as_millis() as u64,
                has_state: v.state.data.has_state,
                data_present: v.state.data.present,
                times_down: v.times_down,
            })
            .collect();
        peers.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        peers
    }

    /// The next action and its reason, in `/status`.
    pub(super) fn show_next(&self, action: &str, reason: &str) {
        self.status.send_modify(|s| {
            s.next = NextAction {
                action: action.into(),
                reason: reason.into(),
            };
        });
    }

    pub(super) fn set_phase(&self, phase: Phase) {
        self.status.send_modify(|s| s.phase = phase);
    }

    /// The protocol's explanation in `/status` (after a message).
    pub(super) fn show_recovery(&self) {
        if let Some(p) = self.protocol() {
            let e = p.explain();
            self.status.send_modify(|s| s.recovery = Some(e));
        }
    }
}

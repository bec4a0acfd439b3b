//! TLS turned on for a running cluster, in the daemon: the facts for
//! `recovery::peer_scheme::decide` (the member list and probes, what each
//! instance says in gossip), and its steps — record this member's new
//! peer URL (`member update`), or restart etcd with the listener the
//! cluster's record wants. The state file holds the listener's scheme
//! before etcd restarts, so a crash at any point resumes from the member
//! list.

use super::Daemon;
use super::observe::Observed;
use crate::base::events::Event;
use crate::config::Scheme;
use crate::etcd::flags::url;
use crate::etcd::members;
use anyhow::Context;
use recovery::peer_scheme::{self, Facts, InstanceFacts, MemberFacts, Step};

impl Daemon {
    /// The scheme etcd's peer listener starts with
    /// (`recovery::peer_scheme::start_listener`).
    pub(super) fn peer_listener(&self) -> Scheme {
        let etcd = &self.ctx.config.etcd;
        peer_scheme::start_listener(
            etcd.tls_files().peer.is_some(),
            self.durable.state().map(|s| s.peer_scheme),
            etcd.effective_peer_scheme(),
        )
    }

    /// One pass of the peer-scheme rules, in a pass where the planner did
    /// nothing to etcd.
    pub(super) async fn keep_peer_scheme(
        &mut self,
        seen: &Observed,
        members: &[recovery::planner::MemberFacts],
    ) -> anyhow::Result<()> {
        let Some(listening) = self.etcd.peer_scheme().filter(|_| seen.running) else {
            return Ok(());
        };
        let view = self.gossip.as_ref().map(|g| g.node.view());
        let me = self.ctx.id().to_string();
        // A member cut off from the others (its listener on a scheme they
        // no longer dial) may never have applied the change of its own
        // record: then the record is read from a member that has a leader.
        // (Only while a switch is pending: a member whose listener speaks
        // the wanted scheme was switched by its own record.)
        let want = self.ctx.config.etcd.effective_peer_scheme();
        let cut_off = !seen.local.as_ref().is_some_and(|m| m.has_leader());
        let recorded_elsewhere = if cut_off && want != listening {
            self.peer_urls_from_a_healthy_member(seen).await
        } else {
            None
        };
        let recorded_scheme = |m: &recovery::planner::MemberFacts| {
            let urls = recorded_elsewhere
                .as_ref()
                .and_then(|r| r.get(&m.id))
                .unwrap_or(&m.peer_urls);
            urls.first().and_then(|u| Scheme::of_url(u))
        };
        let facts = Facts {
            me: me.clone(),
            want,
            listening,
            members: members
                .iter()
                .filter_map(|m| {
                    let recorded = recorded_scheme(m)?;
                    let instance = if m.name == me {
                        Some(InstanceFacts {
                            listening: Some(listening),
                            tls_ready: self.ctx.config.etcd.tls_files().peer.is_some(),
                        })
                    } else {
                        view.as_ref().and_then(|v| v.get(&m.name)).map(|p| {
                            let e = &p.state.etcd;
                            InstanceFacts {
                                listening: e.running.then_some(if e.peer_https {
                                    Scheme::Https
                                } else {
                                    Scheme::Http
                                }),
                                tls_ready: e.peer_tls_ready,
                            }
                        })
                    };
                    Some(MemberFacts {
                        name: m.name.clone(),
                        recorded,
                        healthy: m.healthy,
                        learner: m.is_learner,
                        instance,
                    })
                })
                .collect(),
        };
        match peer_scheme::decide(&facts) {
            Step::Keep => Ok(()),
            Step::Wait { reason } => {
                self.show_next("wait", &reason);
                Ok(())
            }
            Step::Record { to, reason } => {
                self.show_next("record this member's new peer URL", &reason);
                tracing::warn!(scheme = %to, %reason, "recording this member's peer URL with the new scheme");
                let member_id = members
                    .iter()
                    .find(|m| m.name == me)
                    .map(|m| m.id)
                    .context("this member is not in the member list")?;
                let endpoint = seen
                    .cluster
                    .healthy_endpoint()
                    .context("no healthy member to record the new peer URL through")?;
                let mut client = self.ctx.access.connect(&endpoint).await?;
                let peer_url = url(to, &self.ctx.me.host, self.ctx.config.etcd.peer_port);
                members::update_peer_urls(
                    &mut client,
                    member_id,
                    vec![peer_url],
                    self.ctx.access.call_timeout(),
                )
                .await
                .context("MemberUpdate of this member's peer URL")?;
                // The listener follows at once (the next rule), rather than
                // a pass later: this member is cut off until it does.
                self.restart_peer_listener(to, "the cluster now dials this member with it")
                    .await
            }
            Step::Restart { listen, reason } => {
                self.show_next("restart etcd with the recorded peer scheme", &reason);
                self.restart_peer_listener(listen, &reason).await
            }
        }
    }

    /// Each member's peer URLs as a healthy member other than this one
    /// (the leader first) lists them; `None` when none answers.
    async fn peer_urls_from_a_healthy_member(
        &self,
        seen: &Observed,
    ) -> Option<std::collections::HashMap<u64, Vec<String>>> {
        let endpoint = seen.cluster.healthy_endpoint()?;
        let mut client = self.ctx.access.connect_for_status(&endpoint).await.ok()?;
        let list = members::list(&mut client, self.ctx.access.call_timeout())
            .await
            .ok()?;
        Some(list.into_iter().map(|m| (m.id, m.peer_urls)).collect())
    }

    /// Records `scheme` in the state file, then restarts etcd with its
    /// peer listener on it.
    async fn restart_peer_listener(&mut self, scheme: Scheme, reason: &str) -> anyhow::Result<()> {
        crate::event!(warn, Event::PeerSchemeChanged, %scheme, %reason, "restarting etcd with its peer listener on {scheme}");
        let mut state = self
            .durable
            .state()
            .cloned()
            .context("no state file: cannot restart etcd")?;
        state.peer_scheme = Some(scheme);
        let token = state.cluster_token.clone();
        self.durable.persist(state)?;
        self.stop_etcd_handing_over().await?;
        self.etcd.start_on_data(&self.ctx, &token, scheme).await
    }
}

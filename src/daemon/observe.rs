//! Gathering one pass's facts: the etcd process, the own member's Status,
//! the member list and every member's health (`ClusterView`), the data
//! directory, and the newest incarnation the store records; and, on its
//! own tick, the provider's group and the instances it certifies gone —
//! both as the provider's confirmed view gives them (`provider/confirmed.rs`:
//! the last good group over a bad read, departures only once confirmed).
//! Facts only: nothing here decides.

use super::Daemon;
use crate::etcd::cluster_view::Seen;
use crate::etcd::probe::MemberStatus;
use crate::etcd::supervisor::ProcessStatus;
use crate::local::data_dir::DataState;
use crate::provider::Group;
use crate::store::ObjectStore;
use crate::store::record;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long the store's newest incarnation is trusted before it is read
/// again.
const NEWEST_RECORD_FRESH: Duration = Duration::from_secs(10);

/// One pass's facts.
pub(super) struct Observed {
    /// Milliseconds since the daemon started (the decisions' clock).
    pub now_ms: u64,
    pub process: ProcessStatus,
    /// The process runs or a restart is pending.
    pub running: bool,
    /// The own member's Status, `None` when it did not answer (or etcd is
    /// not running).
    pub local: Option<MemberStatus>,
    pub cluster: Seen,
    pub data: DataState,
    /// The newest incarnation the store records, `None` when unknown.
    pub newest_recorded: Option<u64>,
    /// The cluster is paused (`eco pause`, or a pause object that cannot
    /// be read), as the store last said.
    pub paused: Option<crate::store::pause::PauseSeen>,
    /// What is wrong with the pause object, if anything (`/status`).
    pub pause_problem: Option<String>,
    /// etcd's own `/readyz` where the member's release has it: `Ok` ready,
    /// `Err(why)` not; `None` where it has not or it did not answer.
    pub etcd_readyz: Option<Result<(), String>>,
}

/// The provider's last answers.
pub(super) struct GroupView {
    pub group: Group,
    /// Of the instances asked about (`V_n`), those the provider certifies
    /// gone.
    pub departed: BTreeSet<String>,
    /// Why `group` is not what the provider last read (a failed or refused
    /// read, a departure not confirmed yet).
    pub problem: Option<String>,
    /// Every instance `group` leaves out has certainly departed
    /// (`Provider::absences_confirmed`).
    pub absences_confirmed: bool,
    /// When `group` was last answered.
    pub answered_at: Option<Instant>,
}

/// The store's newest incarnation, read at most every
/// [`NEWEST_RECORD_FRESH`]; the last known value while the store does not
/// answer.
#[derive(Default)]
pub(super) struct NewestRecord {
    read: Option<(Option<u64>, Instant)>,
}

impl NewestRecord {
    pub async fn get(&mut self, store: Option<&dyn ObjectStore>, cluster: &str) -> Option<u64> {
        let fresh = self
            .read
            .is_some_and(|(_, at)| at.elapsed() < NEWEST_RECORD_FRESH);
        if let (false, Some(store)) = (fresh, store)
            && let Ok(r) = record::newest(store, cluster).await
        {
            self.read = Some((r.map(|r| r.incarnation), Instant::now()));
        }
        self.read.and_then(|(n, _)| n)
    }
}

impl Daemon {
    pub(super) async fn observe(&mut self) -> anyhow::Result<Observed> {
        let process = self.etcd.process();
        let running = self.etcd.running();
        let newest_recorded = self
            .newest
            .get(self.ctx.store.as_deref(), &self.ctx.config.cluster.name)
            .await;
        let local_endpoint = process.running.then(|| self.ctx.client_url.get());
        let own_stopped = (!process.running).then(|| self.ctx.client_url.get());
        let mut candidates: Vec<String> = local_endpoint.iter().cloned().collect();
        for i in self
            .group
            .group
            .instances
            .iter()
            .filter(|i| i.id != self.ctx.me.id)
        {
            candidates.push(self.ctx.client_url_of(&i.host));
        }
        // etcd's /readyz beside the member calls, not after them: on
        // 3.5.19 and later it waits for a linearizable read, which hangs
        // for its whole timeout while the cluster has no leader, and a
        // pass that waits for it in turn slows the quorum-loss detector.
        // The release is the one the last pass saw (a member's release
        // changes only with a restart, which the next pass sees).
        let readyz_version = match local_endpoint {
            Some(_) => self.etcd_release_seen.clone(),
            None => None,
        };
        let readyz_url = readyz_version
            .as_deref()
            .and_then(|v| self.etcd_readyz_url(v));
        // Bounded by the probe interval too: a healthy member answers in
        // milliseconds, and one that waits (no leader) would hold the pass
        // for a whole call timeout — the detector's samples, taken once a
        // pass, would come that far apart. Unanswered is "unknown".
        let timeout = self
            .ctx
            .access
            .call_timeout()
            .min(self.ctx.config.etcd.probe_interval.get());
        let ((local, cluster), etcd_readyz) = tokio::join!(
            self.view.observe(
                local_endpoint.as_deref(),
                own_stopped.as_deref(),
                &candidates
            ),
            async {
                match &readyz_url {
                    Some(url) => etcd_readyz(url, timeout).await,
                    None => None,
                }
            }
        );
        let etcd_readyz = match &local {
            Some(m) => {
                self.etcd_release_seen = Some(m.version.clone());
                // A release other than the one asked about: unknown this pass.
                etcd_readyz.filter(|_| readyz_version.as_deref() == Some(m.version.as_str()))
            }
            None => None,
        };
        Ok(Observed {
            etcd_readyz,
            now_ms: self.started.elapsed().as_millis() as u64,
            process,
            running,
            local,
            cluster,
            data: self.etcd.data()?,
            newest_recorded,
            paused: self
                .pause
                .get(self.ctx.store.as_deref(), self.ctx.cluster())
                .await,
            pause_problem: self.pause.problem().map(str::to_string),
        })
    }

    /// Where etcd's own readiness is asked, for a member of `version`:
    /// `/readyz` on its metrics listener (plain http, served whatever TLS
    /// the client port speaks) where the release has it
    /// (`recovery::etcd_readiness`); `None` where it has not.
    fn etcd_readyz_url(&self, version: &str) -> Option<String> {
        let version = crate::etcd::binaries::EtcdVersion::parse(version)?;
        if !recovery::etcd_readiness::has_readyz(version) {
            return None;
        }
        let bind = self.ctx.me.bind;
        let host = if bind.is_unspecified() {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        } else {
            bind
        };
        let url = crate::etcd::flags::url(
            crate::config::Scheme::Http,
            &crate::provider::Host::Ip(host),
            self.ctx.config.etcd.metrics_port,
        );
        Some(format!("{url}/readyz"))
    }

    /// Asks the provider for the group and for which members of `V_n` (as
    /// the state file and the protocol know it) are certified gone; the
    /// gossip seeds follow the group. An error keeps the last answers (the
    /// confirmed view answers its last good group itself, and says why in
    /// its problem).
    pub(super) async fn refresh_group(&mut self) {
        match self.ctx.provider.discover().await {
            Ok(group) => {
                if let Some(g) = &self.gossip {
                    g.set_seeds(&group).await;
                }
                self.group.group = group;
                self.group.problem = self.ctx.provider.problem();
                self.group.absences_confirmed = self.ctx.provider.absences_confirmed();
                self.group.answered_at = Some(Instant::now());
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot refresh the group; keeping the last complete view");
                let age = self
                    .group
                    .answered_at
                    .map(|at| format!("{} s ago", at.elapsed().as_secs()))
                    .unwrap_or_else(|| "at start".into());
                self.group.problem = Some(format!(
                    "{e}: keeping the last complete view of the group (answered {age}); nothing is removed or reseeded on a failed answer"
                ));
            }
        }
        let mut watched: BTreeSet<String> = self
            .durable
            .state()
            .map(|s| s.voting_members.iter().cloned().collect())
            .unwrap_or_default();
        if let Some(d) = &self.quorum_loss {
            watched.extend(d.protocol().state().voters.iter().cloned());
        }
        match self.ctx.provider.departed(&watched).await {
            Ok(departed) => self.group.departed = departed,
            Err(e) => {
                tracing::error!(error = %e, "cannot ask the provider which instances are gone")
            }
        }
    }
}

/// etcd's answer at `url` (its `/readyz`): `None` when the listener does
/// not answer within `timeout` (unknown: the leader rule alone decides
/// readiness then).
async fn etcd_readyz(url: &str, timeout: std::time::Duration) -> Option<Result<(), String>> {
    match crate::etcd::metrics_text::fetch(url, timeout).await {
        Ok(_) => Some(Ok(())),
        Err(e @ crate::etcd::metrics_text::ScrapeError::Status { .. }) => {
            Some(Err(format!("etcd's own readiness check fails: {e}")))
        }
        Err(e) => {
            tracing::debug!(error = %e, "etcd's /readyz did not answer");
            None
        }
    }
}

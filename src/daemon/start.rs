//! The start: the pure start decision (`recovery::startup`) from what is on
//! disk, in the store and in the quorum-loss protocol's state; data of a
//! stale incarnation is moved aside (with its state file) and the decision
//! taken again; then the decision is carried out.

use super::Daemon;
use super::first_incarnation::Bootstrapped;
use super::signals::Signals;
use crate::base::events::Event;
use crate::store::record;
use anyhow::Context;
use recovery::pass::Phase;
use recovery::startup::{self, Recorded, StartDecision, StartFacts};
use std::time::Duration;

/// Attempts at reading the store's newest record at start, and the pause
/// between them: a transient error should not decide the start.
const RECORD_ATTEMPTS: u32 = 3;
const RECORD_RETRY: Duration = Duration::from_millis(500);

/// How the start ended.
pub(super) enum Begun {
    /// The daemon's loop runs (etcd started, joining, held or refused).
    Running,
    /// A signal came during a bootstrap.
    Signalled,
}

impl Daemon {
    /// The store's newest incarnation record; a store that keeps failing
    /// is `Unanswered`, never "no record".
    async fn newest_recorded(&self, store: &dyn crate::store::ObjectStore) -> Recorded {
        let mut last = String::new();
        for attempt in 1..=RECORD_ATTEMPTS {
            match record::newest(store, self.ctx.cluster()).await {
                Ok(r) => return Recorded::Newest(r.map(|r| r.incarnation)),
                Err(e) => last = e.to_string(),
            }
            if attempt < RECORD_ATTEMPTS {
                tokio::time::sleep(RECORD_RETRY).await;
            }
        }
        tracing::warn!(error = %last, "cannot read the store's incarnation records at start: whether a newer incarnation exists is unknown");
        Recorded::Unanswered
    }

    /// The start decision, after moving a stale incarnation aside.
    async fn decide_start(&mut self) -> anyhow::Result<StartDecision> {
        // At most twice: once the stale data and state are aside, there is
        // no state left to be stale.
        for _ in 0..2 {
            let held = self
                .durable
                .protocol_state()?
                .is_some_and(|p| p.frozen || p.seed_pending);
            let recorded = match (self.durable.state(), self.ctx.store.as_deref(), held) {
                (Some(_), Some(store), false) => self.newest_recorded(store).await,
                _ => Recorded::NotAsked,
            };
            let decision = startup::decide(&StartFacts {
                state: self.durable.state().map(|s| s.summary()),
                data: self.etcd.data()?,
                group_size: self.group.group.instances.len(),
                held,
                recorded,
            });
            let StartDecision::DiscardStale { reason } = decision else {
                return Ok(decision);
            };
            crate::event!(warn, Event::StaleIncarnationMovedAside, %reason, "stale incarnation: its data and state are moved aside");
            self.etcd.move_aside("stale-incarnation")?;
            self.durable.move_aside()?;
        }
        anyhow::bail!("the start decision kept finding a stale incarnation")
    }

    /// Decides how to start and does it.
    pub(super) async fn begin(&mut self, signals: &mut Signals) -> anyhow::Result<Begun> {
        if let Some(reason) = self.admit_cluster_version().await {
            self.refuse(reason);
            return Ok(Begun::Running);
        }
        let decision = self.decide_start().await?;
        crate::event!(info, Event::StartDecided, decision = ?decision, "start decision");
        self.show_next("start", decision.reason());
        match decision {
            StartDecision::Refuse { reason } => self.refuse(reason),
            StartDecision::Bootstrap { reason } => {
                crate::event!(info, Event::ClusterForming, %reason, "bootstrapping a group of one");
                match self.bootstrap(signals).await? {
                    Bootstrapped::Started => {}
                    Bootstrapped::Refused(reason) => self.refuse(reason),
                    Bootstrapped::Signalled => return Ok(Begun::Signalled),
                }
            }
            StartDecision::Hold { reason } => tracing::warn!(%reason, "held"),
            StartDecision::Resume { .. } => {
                let token = self
                    .durable
                    .state()
                    .map(|s| s.cluster_token.clone())
                    .context("no state: cannot resume")?;
                let scheme = self.peer_listener();
                self.etcd.start_on_data(&self.ctx, &token, scheme).await?;
            }
            StartDecision::Join { reason } => {
                tracing::info!(%reason, "joining through the planner")
            }
            StartDecision::DiscardStale { reason } => {
                anyhow::bail!("a stale incarnation is still here: {reason}")
            }
        }
        Ok(Begun::Running)
    }

    /// etcd is not started; the instance stays up so `/status` and gossip
    /// say why.
    fn refuse(&mut self, reason: String) {
        crate::event!(error, Event::StartRefused, %reason, "not starting etcd");
        self.set_phase(Phase::Refused);
        self.show_next("wait for a human", &reason);
        self.refused = Some(reason);
    }
}

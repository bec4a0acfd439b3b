//! The cluster version, kept every pass: the store's finalization and the
//! operator's request read (at most every [`READ_EVERY`], every
//! [`READ_EVERY_CURRENT`] once nothing is left to finalize; the last answer
//! kept while the store fails), gossip's formats gathered,
//! `recovery::cluster_version` asked what holds and what is next, a due
//! finalization recorded, and the answer shown in `/status`. The format
//! everything is written in ([`ClusterVersionView::writing`]) is read from
//! here by the record writers and the quorum-loss driver.
//!
//! At start ([`Daemon::admit_cluster_version`]), a cluster finalized at a
//! format this build does not read refuses the start: etcd is not started
//! and `/status` says why.

use super::Daemon;
use crate::api::status::ClusterVersionStatus;
use crate::base::events::Event;
use crate::store::cluster_version::{self as stored, Finalized, Request};
use gossip::Liveness;
use recovery::cluster_version::{self as cv, Assessment, Facts, Format, Next};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often the store's cluster version and the request are read while
/// a finalization is pending…
const READ_EVERY: Duration = Duration::from_secs(5);
/// …and once the cluster is finalized at this build's newest format
/// (nothing is left to finalize; a later release's finalization is found
/// within this).
const READ_EVERY_CURRENT: Duration = Duration::from_secs(60);

#[derive(Default)]
pub(super) struct ClusterVersionView {
    /// The store's last answer and when it came.
    read: Option<(Option<Finalized>, Option<Request>, Instant)>,
    since_ms: Option<u64>,
    assessment: Option<Assessment>,
    problem: Option<String>,
    /// This instance created incarnation 1 in this process and no
    /// instance has been seen behind since (`Facts::new_cluster`).
    pub formed_here: bool,
}

impl ClusterVersionView {
    /// The format this instance writes now: the finalized one (format 1
    /// until the store has answered: every release reads it).
    pub fn writing(&self) -> Format {
        self.assessment.as_ref().map_or(cv::UNTAGGED, |a| a.writing)
    }

    fn finalized(&self) -> Option<&Finalized> {
        self.read.as_ref().and_then(|(f, _, _)| f.as_ref())
    }
}

fn next_name(next: &Next) -> String {
    match next {
        Next::Current => "current".into(),
        Next::Finalize { to } => format!("finalize to format {to}"),
        Next::WaitsForInstances { to } => format!("finalizing to format {to} waits for instances"),
        Next::FinalizesAt { to, at_ms } => format!(
            "finalizes to format {to} in {} s",
            at_ms.saturating_sub(crate::base::wall_clock::unix_ms()) / 1000
        ),
        Next::WaitsForOperator { to } => {
            format!("finalizing to format {to} waits for `eco upgrade finalize`")
        }
    }
}

impl Daemon {
    /// Why this build may not run against the cluster, when the store says
    /// it was finalized at a format this build does not read.
    pub(super) async fn admit_cluster_version(&mut self) -> Option<String> {
        let store = self.ctx.store.clone()?;
        match stored::finalized(store.as_ref(), self.ctx.cluster()).await {
            Ok(f) => {
                let format = stored::format_of(f.as_ref());
                self.cluster_version.read = Some((f, None, Instant::now()));
                cv::admit(format).err().map(|r| r.to_string())
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the cluster version at start; checked again every pass");
                None
            }
        }
    }

    /// Reads the store when due, assesses, finalizes when due, and shows
    /// the answer in `/status`.
    pub(super) async fn keep_cluster_version(&mut self) {
        let Some(store) = self.ctx.store.clone() else {
            // Without a store there is nothing to finalize or record in a
            // format: every message is written in format 1.
            return;
        };
        let cluster = self.ctx.cluster().to_string();
        let every = match self.cluster_version.assessment.as_ref().map(|a| &a.next) {
            Some(Next::Current) => READ_EVERY_CURRENT,
            _ => READ_EVERY,
        };
        let due = self
            .cluster_version
            .read
            .as_ref()
            .is_none_or(|(_, _, at)| at.elapsed() >= every);
        if due {
            let finalized = stored::finalized(store.as_ref(), &cluster).await;
            let request = stored::read_request(store.as_ref(), &cluster).await;
            match (finalized, request) {
                (Ok(f), Ok(r)) => {
                    self.cluster_version.read = Some((f, r, Instant::now()));
                    self.cluster_version.problem = None;
                }
                (Err(e), _) => {
                    self.cluster_version.problem = Some(format!(
                        "cannot read the cluster version ({e}); keeping the last answer"
                    ))
                }
                (_, Err(e)) => {
                    self.cluster_version.problem = Some(format!(
                        "cannot read the finalize request ({e}); keeping the last answer"
                    ))
                }
            }
        }
        let mut reads: BTreeMap<String, Format> = BTreeMap::new();
        if let Some(g) = &self.gossip {
            for (id, v) in g.node.view() {
                if v.liveness == Liveness::Up {
                    reads.insert(id, v.state.formats.reads);
                }
            }
        }
        reads.insert(self.ctx.id().to_string(), cv::NEWEST);
        let upgrade = &self.ctx.config.upgrade;
        let facts = Facts {
            group: self
                .group
                .group
                .instances
                .iter()
                .map(|i| i.id.clone())
                .collect(),
            reads,
            finalized: stored::format_of(self.cluster_version.finalized()),
            requested: self
                .cluster_version
                .read
                .as_ref()
                .and_then(|(_, r, _)| r.as_ref().map(|r| r.to)),
            finalize_after_ms: upgrade
                .auto_finalize
                .then(|| upgrade.finalize_after.millis()),
            all_newest_since_ms: self.cluster_version.since_ms,
            new_cluster: self.cluster_version.formed_here,
            now_ms: crate::base::wall_clock::unix_ms(),
        };
        let mut a = cv::assess(&facts);
        if !a.behind.is_empty() {
            // An instance that reads an older format was in the group:
            // the cluster is an upgrade's, finalized the usual way.
            self.cluster_version.formed_here = false;
        }
        if let Next::Finalize { to } = a.next {
            let f = Finalized {
                cluster: cluster.clone(),
                format: to,
                by: self.ctx.id().to_string(),
                reason: a.reason.clone(),
                at_unix_ms: facts.now_ms,
            };
            match stored::finalize(store.as_ref(), &f).await {
                Ok(holds) => {
                    if holds == f {
                        crate::event!(warn, Event::ClusterVersionFinalized, format = to, by = %f.by, reason = %f.reason, "the cluster is finalized at format {to}: every instance writes it from now on; the previous release of eco can no longer run against this cluster");
                    }
                    self.cluster_version.read = Some((
                        Some(holds),
                        self.cluster_version.read.take().and_then(|(_, r, _)| r),
                        Instant::now(),
                    ));
                    a = cv::assess(&Facts {
                        finalized: stored::format_of(self.cluster_version.finalized()),
                        ..facts
                    });
                }
                Err(e) => {
                    self.cluster_version.problem = Some(format!(
                        "cannot record the finalization ({e}); trying again next pass"
                    ));
                }
            }
        }
        let before = self
            .cluster_version
            .assessment
            .as_ref()
            .map(|b| (b.writing, b.next.clone()));
        if before.as_ref().is_none_or(|(w, n)| {
            *w != a.writing || std::mem::discriminant(n) != std::mem::discriminant(&a.next)
        }) {
            tracing::info!(writing = a.writing, finalized = a.finalized, next = %next_name(&a.next), reason = %a.reason, "cluster version");
        }
        self.cluster_version.since_ms = a.all_newest_since_ms;
        self.ctx.metrics.cluster_format(a.writing, a.finalized);
        let shown = ClusterVersionStatus {
            reads: (cv::OLDEST, cv::NEWEST),
            writing: a.writing,
            finalized: a.finalized,
            behind: a.behind.iter().map(cv::Behind::describe).collect(),
            next: next_name(&a.next),
            reason: a.reason.clone(),
            problem: self.cluster_version.problem.clone(),
        };
        self.status.send_modify(|s| s.cluster_version = Some(shown));
        self.cluster_version.assessment = Some(a);
    }
}

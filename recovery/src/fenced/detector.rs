//! `lost(n)`: has incarnation `n` lost its quorum? A pure function of a
//! window of observations, with hysteresis: every condition must hold over
//! the whole window, and the window must span at least `T`.
//!
//! 1. local: if this instance is in `V_n`, its etcd reported no leader on
//!    every probe (at least `min_probes` of them); if not, every member of
//!    `V_n` is certified gone;
//! 2. fewer than a quorum of `V_n` are viable on every sample — viable:
//!    not certified gone, PeerState fresh, data of `n` intact, not frozen
//!    by a promise, whatever its etcd is doing (a restart or a WAL replay
//!    is a rejoin, not a loss);
//! 3. no member of `V_n` reported a leader within `T`.
//!
//! Safety never rests on this: the promise/accept rules and the store's
//! conditional create do. Detection only keeps a healthy cluster from being
//! frozen by a blip.

use super::config::ProtocolConfig;
use super::ids::{Incarnation, InstanceId, Millis, majority};
use super::observation::{Observation, Probe};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The detector's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// `lost(n)` holds; the reason says why.
    Lost { reason: String },
    /// Positive evidence of a healthy cluster (a leader seen within `T`).
    Healthy { evidence: String },
    /// Neither: not (yet) a loss; the reason says which condition fails.
    Undecided { reason: String },
}

impl Verdict {
    pub fn is_lost(&self) -> bool {
        matches!(self, Verdict::Lost { .. })
    }

    pub fn text(&self) -> &str {
        match self {
            Verdict::Lost { reason } => reason,
            Verdict::Healthy { evidence } => evidence,
            Verdict::Undecided { reason } => reason,
        }
    }
}

/// The observations of the last `T` (plus the one sample just before, so
/// the window's span is known).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    samples: VecDeque<Observation>,
}

impl Window {
    pub fn new() -> Self {
        Window::default()
    }

    /// Add a sample (samples arrive in time order; an older one is
    /// dropped) and forget what is older than needed.
    pub fn push(&mut self, obs: Observation, t: Millis) {
        if self.samples.back().is_some_and(|last| last.at > obs.at) {
            return;
        }
        let now = obs.at;
        self.samples.push_back(obs);
        let horizon = now.saturating_sub(t);
        while self.samples.len() >= 2 && self.samples.get(1).is_some_and(|s| s.at <= horizon) {
            self.samples.pop_front();
        }
    }

    pub fn samples(&self) -> &VecDeque<Observation> {
        &self.samples
    }

    pub fn latest(&self) -> Option<&Observation> {
        self.samples.back()
    }

    pub fn clear(&mut self) {
        self.samples.clear();
    }
}

/// Whether member `id` of `V_n` is viable in `obs`.
pub fn viable(obs: &Observation, id: &str, n: Incarnation, cfg: &ProtocolConfig) -> bool {
    if obs.certified_gone.contains(id) {
        return false;
    }
    obs.peers.get(id).is_some_and(|p| {
        p.has_data
            && !p.frozen
            && p.incarnation == n
            && obs.at.saturating_sub(p.last_heard) <= cfg.peer_fresh
    })
}

/// `lost(n)` for instance `me` with voters `voters`, at `now`.
pub fn lost(
    me: &str,
    n: Incarnation,
    voters: &[InstanceId],
    window: &Window,
    now: Millis,
    cfg: &ProtocolConfig,
) -> Verdict {
    let t = cfg.quorum_loss_timeout;
    let samples = window.samples();
    let since = now.saturating_sub(t);
    // 3 (checked first: positive evidence of health wins over everything).
    for s in samples {
        if s.at + t < now {
            continue;
        }
        if voters.iter().any(|v| v == me) && s.probe == Some(Probe::Leader) {
            return Verdict::Healthy {
                evidence: format!("my etcd saw a leader of incarnation {n} at {} ms", s.at),
            };
        }
        for v in voters {
            if let Some(seen) = s.peers.get(v).and_then(|p| p.leader_seen_at) {
                if seen >= since && s.peers.get(v).is_some_and(|p| p.incarnation == n) {
                    return Verdict::Healthy {
                        evidence: format!(
                            "{v} (member of V_{n}) saw a leader at {seen} ms, within T"
                        ),
                    };
                }
            }
        }
    }
    if voters.is_empty() {
        return Verdict::Undecided {
            reason: format!("V_{n} is unknown"),
        };
    }
    let Some(first) = samples.front() else {
        return Verdict::Undecided {
            reason: "no observation yet".into(),
        };
    };
    if now < t || first.at > since {
        return Verdict::Undecided {
            reason: format!(
                "observed for {} ms only; a loss must hold for T = {t} ms",
                now.saturating_sub(first.at)
            ),
        };
    }
    // 1.
    if voters.iter().any(|v| v == me) {
        let probes = samples.iter().filter(|s| s.probe.is_some()).count();
        if probes < cfg.min_probes {
            return Verdict::Undecided {
                reason: format!("{probes} etcd probe(s) within T; {} needed", cfg.min_probes),
            };
        }
    } else if let Some(last) = samples.back() {
        if let Some(v) = voters.iter().find(|v| !last.certified_gone.contains(*v)) {
            return Verdict::Undecided {
                reason: format!("not a member of V_{n}, and {v} (a member) is not certified gone"),
            };
        }
    }
    // 2.
    let q = majority(voters.len());
    for s in samples {
        let alive: Vec<&InstanceId> = voters.iter().filter(|v| viable(s, v, n, cfg)).collect();
        if alive.len() >= q {
            return Verdict::Undecided {
                reason: format!(
                    "{} of {} members of V_{n} were viable at {} ms (quorum {q}): a restart or rejoin, not a loss",
                    alive.len(),
                    voters.len(),
                    s.at
                ),
            };
        }
    }
    let last_viable = samples.back().map_or(0, |s| {
        voters.iter().filter(|v| viable(s, v, n, cfg)).count()
    });
    Verdict::Lost {
        reason: format!(
            "for {} ms: no leader of incarnation {n} seen, {last_viable} of {} members of V_{n} viable (quorum {q})",
            now.saturating_sub(first.at),
            voters.len()
        ),
    }
}

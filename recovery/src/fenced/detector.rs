//! `lost(n)`: has incarnation `n` lost its quorum? A pure function of a
//! window of observations, with hysteresis: every condition must hold over
//! the whole window, and the window must span at least `T`.
//!
//! 1. local: if this instance is in `V_n`, its etcd reported no leader on
//!    every probe, and the probes span at least `T` (at least `min_probes`
//!    of them, default 2: the evidence is time, not a count — a pass that
//!    takes longer than expected yields fewer probes within `T`, never
//!    none spanning it); if not, every member of `V_n` is certified gone;
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
use super::observation::{DetectorSample, Probe};
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
    samples: VecDeque<DetectorSample>,
}

impl Window {
    pub fn new() -> Self {
        Window::default()
    }

    /// Add a sample (samples arrive in time order; an older one is
    /// dropped) and forget what is older than needed.
    pub fn push(&mut self, obs: DetectorSample, t: Millis) {
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

    pub fn samples(&self) -> &VecDeque<DetectorSample> {
        &self.samples
    }

    pub fn latest(&self) -> Option<&DetectorSample> {
        self.samples.back()
    }

    pub fn clear(&mut self) {
        self.samples.clear();
    }
}

/// Whether member `id` of `V_n` is viable in `obs`: not certified gone,
/// fresh in gossip, holding data of `n`, not frozen, and a voter by its
/// own account (a learner listed in a view that counted a promotion
/// before it took effect is not one of the quorum).
pub fn viable(obs: &DetectorSample, id: &str, n: Incarnation, cfg: &ProtocolConfig) -> bool {
    if obs.certified_gone.contains(id) {
        return false;
    }
    obs.peers.get(id).is_some_and(|p| {
        p.holds(n)
            && !p.frozen
            && p.votes(id)
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
        if s.at.saturating_add(t) < now {
            continue;
        }
        if voters.iter().any(|v| v == me) && s.probe == Some(Probe::Leader) {
            return Verdict::Healthy {
                evidence: format!("my etcd saw a leader of incarnation {n} at {} ms", s.at),
            };
        }
        for v in voters {
            if let Some(seen) = s.peers.get(v).and_then(|p| p.leader_seen_at)
                && seen >= since
                && s.peers.get(v).is_some_and(|p| p.incarnation == n)
            {
                return Verdict::Healthy {
                    evidence: format!("{v} (member of V_{n}) saw a leader at {seen} ms, within T"),
                };
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
        let probed: Vec<Millis> = samples
            .iter()
            .filter(|s| s.probe.is_some())
            .map(|s| s.at)
            .collect();
        let span = match (probed.first(), probed.last()) {
            (Some(first), Some(last)) => last - first,
            _ => 0,
        };
        if probed.len() < cfg.min_probes.max(2) || span < t {
            return Verdict::Undecided {
                reason: format!(
                    "{} etcd probe(s) spanning {span} ms; a loss needs at least {} spanning T = {t} ms",
                    probed.len(),
                    cfg.min_probes.max(2)
                ),
            };
        }
    } else if let Some(last) = samples.back()
        && let Some(v) = voters.iter().find(|v| !last.certified_gone.contains(*v))
    {
        return Verdict::Undecided {
            reason: format!("not a member of V_{n}, and {v} (a member) is not certified gone"),
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fenced::observation::PeerFact;
    use std::collections::{BTreeMap, BTreeSet};

    const T: Millis = 20_000;

    fn cfg() -> ProtocolConfig {
        ProtocolConfig {
            quorum_loss_timeout: T,
            peer_fresh: 6_000,
            ..ProtocolConfig::default()
        }
    }

    /// A peer of incarnation 3 with its data; `viable` unless frozen.
    fn peer(at: Millis, frozen: bool, leader_seen_at: Option<Millis>) -> PeerFact {
        PeerFact {
            incarnation: 3,
            cluster_id: Some(7),
            has_data: true,
            leader_seen_at,
            frozen,
            last_heard: at,
            voters: Vec::new(),
            learners: Vec::new(),
        }
    }

    /// One sample every 2 s over `span` ms ending at `end`, built by `f`.
    fn window(end: Millis, span: Millis, f: impl Fn(Millis) -> DetectorSample) -> Window {
        let mut w = Window::new();
        let mut at = end.saturating_sub(span);
        while at <= end {
            w.push(f(at), T);
            at += 2_000;
        }
        w
    }

    /// `a` (this instance) probes without a leader; `b` and `c` are silent
    /// unless `alive` says otherwise.
    fn sample(at: Millis, probe: Option<Probe>, alive: &[(&str, PeerFact)]) -> DetectorSample {
        DetectorSample {
            at,
            probe,
            peers: alive
                .iter()
                .map(|(id, p)| (id.to_string(), p.clone()))
                .collect::<BTreeMap<_, _>>(),
            certified_gone: BTreeSet::new(),
        }
    }

    fn kind(v: &Verdict) -> &'static str {
        match v {
            Verdict::Lost { .. } => "lost",
            Verdict::Healthy { .. } => "healthy",
            Verdict::Undecided { .. } => "undecided",
        }
    }

    #[test]
    fn table() {
        let voters: Vec<InstanceId> = vec!["a".into(), "b".into(), "c".into()];
        let end = 100_000;
        let frozen_a = |at| peer(at, true, None);
        #[allow(clippy::type_complexity)]
        let cases: Vec<(&str, &str, Window, Millis, &str)> = vec![
            ("no observation yet", "a", Window::new(), end, "undecided"),
            (
                "no leader, nobody else viable, for T",
                "a",
                window(end, T + 2_000, |at| sample(at, Some(Probe::NoLeader), &[])),
                end,
                "lost",
            ),
            (
                "the same for less than T",
                "a",
                window(end, T - 4_000, |at| sample(at, Some(Probe::NoLeader), &[])),
                end,
                "undecided",
            ),
            (
                "one probe saw a leader within T",
                "a",
                window(end, T + 2_000, |at| {
                    let p = if at == end - 6_000 {
                        Probe::Leader
                    } else {
                        Probe::NoLeader
                    };
                    sample(at, Some(p), &[])
                }),
                end,
                "healthy",
            ),
            (
                "a member reported a leader within T",
                "a",
                window(end, T + 2_000, |at| {
                    sample(
                        at,
                        Some(Probe::NoLeader),
                        &[("b", peer(at, false, Some(end - 3_000)))],
                    )
                }),
                end,
                "healthy",
            ),
            (
                "a member restarting (data intact, fresh) keeps a quorum viable",
                "a",
                window(end, T + 2_000, |at| {
                    sample(
                        at,
                        Some(Probe::NoLeader),
                        &[("a", peer(at, false, None)), ("b", peer(at, false, None))],
                    )
                }),
                end,
                "undecided",
            ),
            (
                "a frozen member is not viable",
                "a",
                window(end, T + 2_000, |at| {
                    sample(
                        at,
                        Some(Probe::NoLeader),
                        &[("a", frozen_a(at)), ("b", peer(at, true, None))],
                    )
                }),
                end,
                "lost",
            ),
            (
                "probes spanning less than T (failed ones count) are too few for a verdict",
                "a",
                window(end, T + 2_000, |at| {
                    let probe = (at % 16_000 == 0).then_some(Probe::Failed);
                    sample(at, probe, &[])
                }),
                end,
                "undecided",
            ),
            (
                "an instance outside V_n while a member is not certified gone",
                "z",
                window(end, T + 2_000, |at| sample(at, None, &[])),
                end,
                "undecided",
            ),
        ];
        for (name, me, w, now, want) in cases {
            let v = lost(me, 3, &voters, &w, now, &cfg());
            assert_eq!(kind(&v), want, "{name}: {v:?}");
        }
    }

    /// Slow passes (a probe every `every` ms) can never starve the
    /// detector: with any pass length, two probes spanning `T` conclude.
    #[test]
    fn slow_passes_cannot_starve_the_detector() {
        let voters: Vec<InstanceId> = vec!["a".into(), "b".into(), "c".into()];
        // (T, one pass every, the chaos matrix's and the defaults' timings)
        for (t, every) in [
            (5_000, 6_000),
            (5_000, 2_300),
            (60_000, 11_000),
            (20_000, 50_000),
        ] {
            let cfg = ProtocolConfig {
                quorum_loss_timeout: t,
                ..ProtocolConfig::default()
            };
            let mut w = Window::new();
            let mut at = 1_000;
            let mut decided = None;
            while at < 10 * t + 10 * every && decided.is_none() {
                w.push(sample(at, Some(Probe::NoLeader), &[]), t);
                if lost("a", 3, &voters, &w, at, &cfg).is_lost() {
                    decided = Some(at);
                }
                at += every;
            }
            let decided = decided.unwrap_or_else(|| panic!("T={t} every={every}: never lost"));
            assert!(
                decided - 1_000 >= t && decided - 1_000 <= t + every,
                "T={t} every={every}: lost after {} ms",
                decided - 1_000
            );
        }
    }
}

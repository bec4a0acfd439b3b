//! Protocol configuration (times in milliseconds), how the daemon derives
//! it from `T` ([`ProtocolConfig::for_timeout`]), the timing rules it must
//! obey ([`ProtocolConfig::validate`]), and the test-only fault switches.

use super::ids::Millis;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolConfig {
    /// `T`: how long the loss must hold (default 60 s).
    pub quorum_loss_timeout: Millis,
    /// Own etcd probes, spanning at least `T`, a loss needs (at least 2:
    /// several, never one; time is the evidence, not their number).
    pub min_probes: usize,
    /// A PeerState older than this is not fresh (~10 s).
    pub peer_fresh: Millis,
    /// A non-lowest coordinator takes over after this long without progress.
    pub takeover_after: Millis,
    /// Upper bound of the random part of the takeover delay (the random
    /// value itself is an input: [`super::Input::Tick`]).
    pub takeover_jitter: Millis,
    /// Unanswered messages are sent again this often.
    pub retransmit_every: Millis,
    /// Cap of the exponential back-off: `takeover_after * 2^k`.
    pub max_backoff_exponent: u32,
    /// Off by default. When set, a coordinator that has seen the loss for
    /// this long (since its detector first said `lost`, in this process's
    /// life; coordinator takeovers do not restart the clock) and holds
    /// promises from a majority of `V_n` may propose without the missing
    /// reports, and says so loudly (data may be lost).
    pub accept_loss_after: Option<Millis>,
    #[doc(hidden)]
    pub faults: Faults,
}

/// `T` when nothing else is configured: one minute.
pub const DEFAULT_QUORUM_LOSS_TIMEOUT: Millis = 60_000;

/// The longest a non-lowest coordinator waits before taking over, and the
/// largest random jitter added to it, whatever `T` is.
pub const MAX_TAKEOVER: Millis = 15_000;

/// `T` must span at least this many etcd election timeouts: a slow election
/// must never look like a lost quorum.
pub const ELECTIONS_PER_TIMEOUT: u64 = 20;

impl Default for ProtocolConfig {
    fn default() -> Self {
        ProtocolConfig {
            quorum_loss_timeout: DEFAULT_QUORUM_LOSS_TIMEOUT,
            min_probes: 2,
            peer_fresh: 10_000,
            takeover_after: 15_000,
            takeover_jitter: 15_000,
            retransmit_every: 1_000,
            max_backoff_exponent: 4,
            accept_loss_after: None,
            faults: Faults::default(),
        }
    }
}

/// The timings of the etcd the protocol watches and of the daemon's probe,
/// which the protocol's own timings must fit ([`ProtocolConfig::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchedTiming {
    /// etcd's election timeout.
    pub election_timeout: Millis,
    /// How often the daemon probes its own etcd (one detector sample each
    /// pass).
    pub probe_interval: Millis,
    /// The timeout of each etcd call; a pass waits on etcd for at most two
    /// of them (its calls run concurrently, in two rounds).
    pub call_timeout: Millis,
}

/// Which setting a timing problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    QuorumLossTimeout,
    AcceptLossAfter,
}

/// A configuration under which the protocol would misbehave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimingProblem {
    pub setting: Setting,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ProtocolConfig {
    /// The daemon's configuration for `T = quorum_loss_timeout`: a
    /// non-lowest coordinator takes over after `min(15 s, T)` plus a random
    /// jitter of up to `min(15 s, T)`; everything else is the default.
    pub fn for_timeout(quorum_loss_timeout: Millis, accept_loss_after: Option<Millis>) -> Self {
        let takeover = quorum_loss_timeout.min(MAX_TAKEOVER);
        ProtocolConfig {
            quorum_loss_timeout,
            takeover_after: takeover,
            takeover_jitter: takeover,
            accept_loss_after,
            ..ProtocolConfig::default()
        }
    }

    /// Every timing problem of this configuration against the etcd it
    /// watches; empty means usable.
    ///
    /// - `T` spans at least [`ELECTIONS_PER_TIMEOUT`] election timeouts;
    /// - a whole pass fits in `T` — `probe_interval + 2 × call_timeout`,
    ///   the longest a pass waits before its next probe — so the detector's
    ///   evidence (probes spanning `T`) has several probes, and a loss is
    ///   decided within `T` plus one pass;
    /// - `accept_loss_after`, when set, is at least `T`.
    pub fn validate(&self, watched: WatchedTiming) -> Vec<TimingProblem> {
        let mut problems = Vec::new();
        let t = self.quorum_loss_timeout;
        let min_loss = watched
            .election_timeout
            .saturating_mul(ELECTIONS_PER_TIMEOUT);
        if t < min_loss {
            problems.push(TimingProblem {
                setting: Setting::QuorumLossTimeout,
                message: format!(
                    "{} is shorter than {ELECTIONS_PER_TIMEOUT} election timeouts ({}); a slow election must never look like a lost quorum; allowed: at least {}",
                    show(t),
                    show(watched.election_timeout),
                    show(min_loss)
                ),
            });
        }
        let pass = watched
            .probe_interval
            .saturating_add(watched.call_timeout.saturating_mul(2));
        if t < pass {
            problems.push(TimingProblem {
                setting: Setting::QuorumLossTimeout,
                message: format!(
                    "{} is shorter than one pass (etcd.probe_interval {} + 2 × etcd.call_timeout {}): the quorum-loss detector needs probes of the own etcd spanning T; allowed: at least {}",
                    show(t),
                    show(watched.probe_interval),
                    show(watched.call_timeout),
                    show(pass)
                ),
            });
        }
        if let Some(a) = self.accept_loss_after
            && a < t
        {
            problems.push(TimingProblem {
                    setting: Setting::AcceptLossAfter,
                    message: format!(
                        "{} is below quorum_loss_timeout = {}; allowed: at least quorum_loss_timeout, or leave it unset (the safe default)",
                        show(a),
                        show(t)
                    ),
                });
        }
        problems
    }
}

/// Milliseconds as a config file writes durations (`5s`, `250ms`, `1m30s`).
fn show(ms: Millis) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let (m, s, rest) = (ms / 60_000, ms / 1000 % 60, ms % 1000);
    let mut out = String::new();
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 {
        out.push_str(&format!("{s}s"));
    }
    if rest > 0 {
        out.push_str(&format!("{rest}ms"));
    }
    out
}

/// Deliberate bugs, for tests that prove the harness catches each one.
/// All false by default; never set outside tests.
#[doc(hidden)]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    /// Send a promise without persisting it first.
    pub skip_persist_promise: bool,
    /// Propose the own ranking even when a promiser already accepted a value.
    pub ignore_accepted_value: bool,
    /// Rank candidates by lowest instance id instead of data position.
    pub rank_by_lowest_id: bool,
    /// Count the group's instances seen in gossip as the acceptors instead
    /// of `V_n` (fresh instances in, unreachable members out), and never
    /// widen the round to the members other views of `V_n` name.
    pub count_fresh_as_acceptors: bool,
    /// Seed as soon as a majority accepted, without the store's
    /// conditional create.
    pub skip_conditional_create: bool,
    /// Read a failed store listing as an empty one.
    pub store_error_as_empty: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const WATCHED: WatchedTiming = WatchedTiming {
        election_timeout: 250,
        probe_interval: 300,
        call_timeout: 1_000,
    };

    #[test]
    fn for_timeout_caps_the_takeover_at_fifteen_seconds() {
        let short = ProtocolConfig::for_timeout(5_000, None);
        assert_eq!(
            (short.takeover_after, short.takeover_jitter),
            (5_000, 5_000)
        );
        let long = ProtocolConfig::for_timeout(120_000, Some(600_000));
        assert_eq!(
            (long.takeover_after, long.takeover_jitter),
            (15_000, 15_000)
        );
        assert_eq!(long.accept_loss_after, Some(600_000));
        assert_eq!(
            ProtocolConfig::default().quorum_loss_timeout,
            DEFAULT_QUORUM_LOSS_TIMEOUT
        );
    }

    #[test]
    fn validate_table() {
        // (T, accept_loss_after, watched timings, expected problems)
        type Case = (
            Millis,
            Option<Millis>,
            WatchedTiming,
            &'static [(Setting, &'static str)],
        );
        let cases: [Case; 5] = [
            (5_000, None, WATCHED, &[]),
            (
                4_000,
                None,
                WATCHED,
                &[(
                    Setting::QuorumLossTimeout,
                    "shorter than 20 election timeouts (250ms); a slow election must never look like a lost quorum; allowed: at least 5s",
                )],
            ),
            (
                60_000,
                None,
                WatchedTiming {
                    election_timeout: 1_000,
                    probe_interval: 30_000,
                    call_timeout: 20_000,
                },
                &[(
                    Setting::QuorumLossTimeout,
                    "1m is shorter than one pass (etcd.probe_interval 30s + 2 × etcd.call_timeout 20s): the quorum-loss detector needs probes of the own etcd spanning T; allowed: at least 1m10s",
                )],
            ),
            (
                5_000,
                Some(4_999),
                WATCHED,
                &[(
                    Setting::AcceptLossAfter,
                    "4s999ms is below quorum_loss_timeout = 5s",
                )],
            ),
            (5_000, Some(5_000), WATCHED, &[]),
        ];
        for (t, accept, watched, want) in cases {
            let got = ProtocolConfig::for_timeout(t, accept).validate(watched);
            assert_eq!(got.len(), want.len(), "T={t} accept={accept:?}: {got:?}");
            for (problem, (setting, text)) in got.iter().zip(want.iter()) {
                assert_eq!(problem.setting, *setting);
                assert!(problem.message.contains(text), "{}", problem.message);
            }
        }
    }
}

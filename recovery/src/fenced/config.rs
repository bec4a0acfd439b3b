//! Protocol configuration (times in milliseconds) and the test-only fault
//! switches.

use super::ids::Millis;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolConfig {
    /// `T`: how long the loss must hold (default 60 s).
    pub quorum_loss_timeout: Millis,
    /// Own etcd probes needed within `T` (several, never one).
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
    /// Whether this protocol seeds incarnation 1 (bootstrap). The daemon
    /// turns it off: it forms clusters with `recovery::formation` and runs
    /// this protocol for quorum loss only (incarnation ≥ 1).
    pub seeds_bootstrap: bool,
    #[doc(hidden)]
    pub faults: Faults,
}

impl Default for ProtocolConfig {
    fn default() -> Self {
        ProtocolConfig {
            quorum_loss_timeout: 60_000,
            min_probes: 3,
            peer_fresh: 10_000,
            takeover_after: 15_000,
            takeover_jitter: 15_000,
            retransmit_every: 1_000,
            max_backoff_exponent: 4,
            accept_loss_after: None,
            seeds_bootstrap: true,
            faults: Faults::default(),
        }
    }
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
    /// of `V_n` (fresh instances in, unreachable members out).
    pub count_fresh_as_acceptors: bool,
    /// Seed as soon as a majority accepted, without the store's
    /// conditional create.
    pub skip_conditional_create: bool,
    /// Read a failed store listing as an empty one.
    pub store_error_as_empty: bool,
}

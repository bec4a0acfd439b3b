//! Whether this instance takes part in quorum-loss recovery at all, from
//! what it was given at start: the protocol needs gossip (its messages
//! and the peers' facts) and a store fit to hold the record of truth
//! (`store_fitness`). Without them a lost quorum waits for a human, and
//! the log says why once, at start.
//!
//! What it does not do: decide whether a quorum is lost (`fenced`'s
//! detector) or check the store (`store_fitness` judges, the daemon asks).

/// What the daemon has at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryMeans {
    /// Gossip runs (keys configured).
    pub gossip: bool,
    /// A snapshot store is configured.
    pub store: bool,
    /// Why the store may not hold the record of truth, when it may not.
    pub store_refused: Option<String>,
    /// The instances of the group at start.
    pub group_size: usize,
}

/// Whether quorum-loss recovery runs, and what to tell the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuorumLossRecovery {
    On,
    /// Off; `said` is what the log says once at start (`None`: nothing
    /// worth saying, a group of one has no quorum to lose to others),
    /// and `error` whether it is said as an error (a store that was
    /// configured for it and refused) rather than a warning.
    Off {
        said: Option<String>,
        error: bool,
    },
}

pub fn quorum_loss_recovery(m: &RecoveryMeans) -> QuorumLossRecovery {
    if let Some(why) = &m.store_refused {
        return QuorumLossRecovery::Off {
            said: Some(format!(
                "quorum-loss recovery is OFF: {why}; snapshots are still written"
            )),
            error: true,
        };
    }
    if m.gossip && m.store {
        return QuorumLossRecovery::On;
    }
    QuorumLossRecovery::Off {
        said: (m.group_size > 1).then(|| {
            "quorum-loss recovery needs gossip keys and a snapshot store; without them a lost quorum waits for a human".to_string()
        }),
        error: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_runs_with_gossip_and_a_fit_store_only() {
        let means = |gossip, store, refused: Option<&str>, group_size| RecoveryMeans {
            gossip,
            store,
            store_refused: refused.map(str::to_string),
            group_size,
        };
        // (means, on, said, as an error, why)
        let table = [
            (
                means(true, true, None, 3),
                true,
                false,
                false,
                "everything it needs",
            ),
            (
                means(true, true, Some("no conditional create"), 3),
                false,
                true,
                true,
                "a store that cannot hold the record",
            ),
            (
                means(false, true, None, 3),
                false,
                true,
                false,
                "no gossip keys",
            ),
            (means(true, false, None, 3), false, true, false, "no store"),
            (
                means(false, false, None, 1),
                false,
                false,
                false,
                "a group of one: nothing to say",
            ),
            (
                means(true, true, None, 1),
                true,
                false,
                false,
                "a group of one that may grow",
            ),
        ];
        for (m, on, said, error, why) in table {
            match quorum_loss_recovery(&m) {
                QuorumLossRecovery::On => assert!(on, "{why}"),
                QuorumLossRecovery::Off { said: s, error: e } => {
                    assert!(!on, "{why}");
                    assert_eq!(s.is_some(), said, "{why}: {s:?}");
                    assert_eq!(e, error, "{why}");
                }
            }
        }
    }
}

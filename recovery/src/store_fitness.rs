//! Whether the snapshot store may hold the record of truth of quorum-loss
//! recovery. The seeding record is created by a conditional create that
//! exactly one instance wins; that holds only when the create
//! is atomic and every instance sees the same object. A store that fails
//! either is still written to (snapshots) but quorum-loss recovery is off,
//! and a lost quorum waits for a human.
//!
//! What this module does not do: probe the store (the daemon proves the
//! conditional create at start and compares filesystems).

/// What the daemon found out about its store at start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreFacts {
    /// The store overwrote an existing object on a conditional create.
    pub ignores_conditional_create: bool,
    /// A directory store on the same filesystem as this pod's data
    /// directory, under the StatefulSet provider: the pod's own volume,
    /// which no other pod sees.
    pub on_own_volume: bool,
}

/// Why quorum-loss recovery may not use the store; `None`: it may.
pub fn refusal(facts: StoreFacts) -> Option<&'static str> {
    if facts.ignores_conditional_create {
        return Some(
            "the snapshot store does not honour conditional creates (If-None-Match: *): two instances could both win a record of truth and reseed twice",
        );
    }
    if facts.on_own_volume {
        return Some(
            "the snapshot directory is on this pod's own volume, which no other pod sees: each pod would win its own record of truth and two could reseed the cluster twice; use S3 or a directory every pod shares (a ReadWriteMany volume)",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_fault_refuses_and_says_which() {
        assert_eq!(refusal(StoreFacts::default()), None);
        let cc = refusal(StoreFacts {
            ignores_conditional_create: true,
            on_own_volume: false,
        })
        .unwrap();
        assert!(cc.contains("conditional creates"));
        let vol = refusal(StoreFacts {
            ignores_conditional_create: false,
            on_own_volume: true,
        })
        .unwrap();
        assert!(vol.contains("own volume") && vol.contains("shares"));
        assert!(
            refusal(StoreFacts {
                ignores_conditional_create: true,
                on_own_volume: true,
            })
            .is_some()
        );
    }
}

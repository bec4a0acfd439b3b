//! `[recovery]` on its own: the learner's time and the snapshot to
//! bootstrap from. Its timings against etcd's (the quorum-loss protocol's
//! rules, the unhealthy-member TTL, self-replacement) are cross-section
//! rules in `super`.

use super::{Checker, Problem};
use crate::config::RecoveryConfig;
use std::time::Duration;

impl RecoveryConfig {
    /// What is wrong with `[recovery]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        let r = self;
        ck.at_least(
            "recovery.learner_timeout",
            r.learner_timeout,
            Duration::from_secs(1),
        );
        if r.bootstrap_from
            .as_ref()
            .is_some_and(|name| name.trim().is_empty())
        {
            ck.fail(
                "recovery.bootstrap_from",
                "is empty; name a snapshot in the store or remove the key",
            );
        }
        ck.problems
    }
}

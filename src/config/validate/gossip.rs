//! `[gossip]` on its own: a fixed port peers can find.

use super::{Checker, Problem};
use crate::config::GossipConfig;

impl GossipConfig {
    /// What is wrong with `[gossip]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        ck.port("gossip.port", self.port);
        if let Some(bind) = self.bind
            && bind.port() == 0
        {
            ck.fail(
                "gossip.bind",
                "port 0 would pick a random port peers cannot find; give a fixed port",
            );
        }
        ck.problems
    }
}

//! `[log]` on its own: a level or a filter `tracing` accepts.

use super::{Checker, Problem};
use crate::config::LogConfig;

const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

impl LogConfig {
    /// What is wrong with `[log]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        if let Err(why) = check_log_level(&self.level) {
            ck.fail(
                "log.level",
                format!("{:?} is not a log level ({why}); allowed: off, error, warn, info, debug, trace, or a filter like \"info,eco=debug\"", self.level),
            );
        }

        ck.problems
    }
}
/// A log filter is a comma-separated list of directives, each a level or
/// `target=level`. `tracing`'s own parser also takes a bare word as a
/// target enabled at every level — so a typo such as `warning` would be
/// read as "only the target named warning" and silence every line, errors
/// included. eco refuses it: every directive must end in a level.
pub(super) fn check_log_level(filter: &str) -> Result<(), String> {
    let directives: Vec<&str> = filter
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.is_empty() {
        return Err("empty".into());
    }
    for d in directives {
        let level = d.rsplit_once('=').map_or(d, |(_, level)| level);
        if !LOG_LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!("{level:?} in {d:?} is not a level"));
        }
    }
    tracing_subscriber::EnvFilter::try_new(filter)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

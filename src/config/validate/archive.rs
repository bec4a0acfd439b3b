//! `[archive]` on its own: the interval, the segment size and the
//! compression level within what the writer handles.

use super::{Checker, Problem};
use crate::config::ArchiveConfig;
use std::time::Duration;

/// The smallest and largest `max_segment_bytes`.
const SEGMENT_BYTES: std::ops::RangeInclusive<u64> = (64 << 10)..=recovery::archive::LARGEST_CUT;

impl ArchiveConfig {
    /// What is wrong with `[archive]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        ck.at_least(
            "archive.interval",
            self.interval,
            Duration::from_millis(100),
        );
        if self.interval.get() > Duration::from_secs(3600) {
            ck.fail(
                "archive.interval",
                format!("{} is above 1h; allowed: 100ms to 1h", self.interval),
            );
        }
        if !SEGMENT_BYTES.contains(&self.max_segment_bytes) {
            ck.fail(
                "archive.max_segment_bytes",
                format!(
                    "{} is outside {} to {} (64 KiB to 64 MiB)",
                    self.max_segment_bytes,
                    SEGMENT_BYTES.start(),
                    SEGMENT_BYTES.end()
                ),
            );
        }
        if !(1..=19).contains(&self.compression_level) {
            ck.fail(
                "archive.compression_level",
                format!(
                    "{} is outside zstd's levels 1 to 19",
                    self.compression_level
                ),
            );
        }
        ck.problems
    }
}

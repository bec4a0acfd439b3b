//! The wall clock, for what eco records rather than decides with: record
//! and snapshot timestamps, gossip's boot id. Decisions take time as an
//! input (the daemon's monotonic milliseconds), never from here.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

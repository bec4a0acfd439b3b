//! The one bounded wait of the gossip crate's tests.

use std::time::Duration;

/// Polls `f` every 50 ms (of tokio's clock, simulated when paused) for at
/// most `limit`.
pub async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    f()
}

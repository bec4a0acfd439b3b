//! The integration tests' write load: unique keys put in a loop through
//! one client of every endpoint, every acknowledged write recorded; and
//! the check that none of them was lost.
//!
//! (The chaos harness has a load of its own, `simulations`'
//! `chaos::load`: paced at a rate, one endpoint at a time, recording the
//! revision and time of every write for its timelines.)

use crate::etcd::{block_on, dump};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Acknowledged `(key, value)` writes and the number of failed writes.
pub type LedgerResult = (Vec<(String, String)>, usize);

/// A writer that puts unique keys in a loop and records every acknowledged
/// write; bounded by `max_writes` and stopped by [`Ledger::finish`].
pub struct Ledger {
    pub stop: Arc<AtomicBool>,
    pub handle: Option<std::thread::JoinHandle<LedgerResult>>,
}

impl Ledger {
    pub fn start(endpoints: Vec<String>, max_writes: usize) -> Self {
        Self::with_prefix(endpoints, max_writes, "ledger")
    }

    /// Keys are `<prefix>/<n>`: two ledgers with different prefixes never
    /// write the same key.
    pub fn with_prefix(endpoints: Vec<String>, max_writes: usize, prefix: &str) -> Self {
        let prefix = prefix.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            block_on(async move {
                let mut acked = Vec::new();
                let mut failed = 0;
                let mut conn = None;
                for n in 0..max_writes {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    if conn.is_none() {
                        // Authenticates when the endpoints have credentials
                        // (crate::etcd::authenticate).
                        let connecting = crate::etcd::connect_all(
                            &endpoints,
                            Duration::from_millis(500),
                            Duration::from_secs(1),
                        );
                        conn = tokio::time::timeout(Duration::from_secs(2), connecting)
                            .await
                            .ok()
                            .and_then(Result::ok);
                    }
                    let key = format!("{prefix}/{n:06}");
                    let value = format!("v{n}");
                    let ok = match conn.as_mut() {
                        Some(c) => matches!(
                            tokio::time::timeout(
                                Duration::from_secs(2),
                                c.put(key.clone(), value.clone(), None)
                            )
                            .await,
                            Ok(Ok(_))
                        ),
                        None => false,
                    };
                    if ok {
                        acked.push((key, value));
                    } else {
                        failed += 1;
                        conn = None;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Some((acked, failed))
            })
            .unwrap_or_default()
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops the writer; returns the acknowledged writes and failures.
    pub fn finish(mut self) -> LedgerResult {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Ledger {
    /// A ledger dropped unfinished (a failed test) stops writing.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Acknowledged writes missing (or with another value) at `endpoint`.
pub fn lost_writes(endpoint: &str, acked: &[(String, String)]) -> Vec<String> {
    let Some((_, kvs)) = dump(endpoint) else {
        return vec!["<cannot read>".into()];
    };
    let present: BTreeMap<String, String> = kvs.into_iter().collect();
    acked
        .iter()
        .filter(|(k, v)| present.get(k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect()
}

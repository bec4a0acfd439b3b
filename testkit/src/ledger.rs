//! The integration tests' write load: unique keys put in a loop through
//! one client of every endpoint, every acknowledged write recorded; and
//! the check that none of them was lost.
//!
//! (The chaos harness has a load of its own, `simulations`'
//! `chaos::load`: paced at a rate, one endpoint at a time, recording the
//! revision and time of every write for its timelines.)

use crate::etcd::{block_on, dump_patiently};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Acknowledged `(key, value)` writes and the number of failed writes.
pub type LedgerResult = (Vec<(String, String)>, usize);

/// A ledger's result with the instant each write was acknowledged.
pub struct TimedLedgerResult {
    pub acked: Vec<(String, String)>,
    /// When each of `acked` was acknowledged (same order).
    pub acked_at: Vec<Instant>,
    pub failed: usize,
}

/// A writer that puts unique keys in a loop and records every acknowledged
/// write; bounded by `max_writes` and stopped by [`Ledger::finish`].
pub struct Ledger {
    pub stop: Arc<AtomicBool>,
    /// How many writes were acknowledged so far ([`Ledger::wait_acked`]).
    acked_so_far: Arc<AtomicUsize>,
    pub handle: Option<std::thread::JoinHandle<TimedLedgerResult>>,
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
        let acked_so_far = Arc::new(AtomicUsize::new(0));
        let counter = acked_so_far.clone();
        let handle = std::thread::spawn(move || {
            block_on(async move {
                let mut acked = Vec::new();
                let mut acked_at = Vec::new();
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
                        acked_at.push(Instant::now());
                        counter.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed += 1;
                        conn = None;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Some(TimedLedgerResult {
                    acked,
                    acked_at,
                    failed,
                })
            })
            .unwrap_or(TimedLedgerResult {
                acked: Vec::new(),
                acked_at: Vec::new(),
                failed: 0,
            })
        });
        Self {
            stop,
            acked_so_far,
            handle: Some(handle),
        }
    }

    /// Waits until the load has `n` acknowledged writes, at most `within`
    /// (a test's fault comes after a load that means something, however
    /// slow the machine); returns how many it has.
    pub fn wait_acked(&self, n: usize, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        loop {
            let acked = self.acked_so_far.load(Ordering::Relaxed);
            if acked >= n || Instant::now() >= deadline {
                return acked;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the writer; returns the acknowledged writes and failures.
    pub fn finish(self) -> LedgerResult {
        let r = self.finish_timed();
        (r.acked, r.failed)
    }

    /// Stops the writer; returns the acknowledged writes with when each
    /// was acknowledged, and the failures.
    pub fn finish_timed(mut self) -> TimedLedgerResult {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or(TimedLedgerResult {
                acked: Vec::new(),
                acked_at: Vec::new(),
                failed: 0,
            })
    }
}

impl Drop for Ledger {
    /// A ledger dropped unfinished (a failed test) stops writing.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Acknowledged writes missing (or with another value) at `endpoint`;
/// `["<cannot read: why>"]` when no read of the member succeeded in 30 s
/// (one failed read on a loaded machine, an authentication that timed
/// out, is not a lost write).
pub fn lost_writes(endpoint: &str, acked: &[(String, String)]) -> Vec<String> {
    let kvs = match read_patiently(endpoint) {
        Ok(kvs) => kvs,
        Err(why) => return vec![format!("<cannot read: {why}>")],
    };
    let present: BTreeMap<String, String> = kvs.into_iter().collect();
    acked
        .iter()
        .filter(|(k, v)| present.get(k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// The writes a seeding from a survivor's WAL may lose by design, for
/// losses at `losses`: the newest write acknowledged before each.
///
/// A follower learns that an entry is committed with the leader's next
/// message, and etcd's `--force-new-cluster` keeps a WAL's entries only up
/// to the commit index it recorded; so a write the leader acknowledged
/// just before it died, with the follower that acknowledged it beside it,
/// is in the survivor's log above its commit index and is not replayed
/// (docs/architecture.md, "the documented residual"). The ledger keeps one
/// write in flight, so that is at most the newest acknowledged write
/// before each loss.
pub fn wal_residual(r: &TimedLedgerResult, losses: &[Instant]) -> BTreeSet<String> {
    losses
        .iter()
        .filter_map(|loss| {
            r.acked
                .iter()
                .zip(&r.acked_at)
                .rev()
                .find(|(_, at)| *at <= loss)
                .map(|((k, _), _)| k.clone())
        })
        .collect()
}

/// Lost writes (of [`lost_writes`]) beyond the `residual`; the residual
/// ones lost are printed (a test reports them and passes).
pub fn lost_beyond_residual(
    label: &str,
    lost: Vec<String>,
    residual: &BTreeSet<String>,
) -> Vec<String> {
    let (within, beyond): (Vec<String>, Vec<String>) =
        lost.into_iter().partition(|k| residual.contains(k));
    if !within.is_empty() {
        eprintln!(
            "{label}: lost {within:?}, the newest write acknowledged before a loss and above the survivor's commit index (the documented residual)"
        );
    }
    beyond
}

/// Every key and value at `endpoint`, asked until a read succeeds, for at
/// most 30 s; the last failure's reason otherwise.
pub fn read_patiently(endpoint: &str) -> Result<Vec<(String, String)>, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut tries = 0;
    loop {
        tries += 1;
        match dump_patiently(endpoint) {
            Ok((_, kvs)) => return Ok(kvs),
            Err(why) if Instant::now() >= deadline || tries >= 20 => {
                return Err(format!("{tries} tries in 30 s, the last: {why}"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

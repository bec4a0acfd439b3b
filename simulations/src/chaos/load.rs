//! The write load: unique keys and values at a steady rate through real
//! etcd clients, every acknowledged write recorded in a ledger with the
//! revision etcd acknowledged it at, plus a linearizable read every 50
//! writes. The rate is shared by `writers` concurrent writers (one write in
//! flight each: a single writer waits for every write's commit, which
//! bounds it at about 1 / the commit latency); writer `w` writes the keys
//! `w`, `w + writers`, `w + 2 writers`, … Each client talks to one endpoint
//! at a time and moves to the next after a failure; the endpoints follow
//! the group (replacements are added).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::etcd::Timeouts;

pub const PREFIX: &str = "chaos/";

/// One acknowledged write.
#[derive(Clone, Debug)]
pub struct Acked {
    pub key: String,
    pub value: String,
    pub revision: i64,
    /// The raft term of the member that answered (a new leader's writes
    /// carry a higher term than the old leader's).
    pub term: u64,
    pub at: Duration,
}

/// What the load shares with the harness while it runs.
#[derive(Default)]
pub struct Ledger {
    pub acked: Vec<Acked>,
    /// Times (since the start) of failed writes.
    pub failed: Vec<Duration>,
    pub failed_reads: usize,
    pub endpoints: Vec<String>,
}

pub struct Load {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    pub ledger: Arc<Mutex<Ledger>>,
    pub started: Instant,
}

impl Load {
    /// Starts writing at about `rate` writes per second, shared by
    /// `writers` concurrent writers (at least one).
    pub fn start(endpoints: Vec<String>, rate: u32, writers: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let ledger = Arc::new(Mutex::new(Ledger {
            endpoints,
            ..Ledger::default()
        }));
        let started = Instant::now();
        let (flag, shared) = (stop.clone(), ledger.clone());
        let writers = writers.max(1);
        // Each writer's own pace: together, `rate` writes per second.
        let pause = Duration::from_micros(1_000_000 * u64::from(writers) / u64::from(rate.max(1)));
        let handle = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let mut set = tokio::task::JoinSet::new();
                for w in 0..writers {
                    set.spawn(write_loop(
                        flag.clone(),
                        shared.clone(),
                        started,
                        pause,
                        (u64::from(w), u64::from(writers)),
                    ));
                }
                while set.join_next().await.is_some() {}
            });
        });
        Self {
            stop,
            handle: Some(handle),
            ledger,
            started,
        }
    }

    pub fn set_endpoints(&self, endpoints: Vec<String>) {
        if let Ok(mut l) = self.ledger.lock() {
            l.endpoints = endpoints;
        }
    }

    /// Stops the load and returns the ledger.
    pub fn finish(mut self) -> Ledger {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        match self.ledger.lock() {
            Ok(mut l) => {
                let mut ledger = std::mem::take(&mut *l);
                // Concurrent writers append in the order their answers
                // came; the checks read the ledger in time order.
                ledger.acked.sort_by_key(|a| a.at);
                ledger.failed.sort();
                ledger
            }
            Err(_) => Ledger::default(),
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

async fn write_loop(
    stop: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
    started: Instant,
    pause: Duration,
    (first, stride): (u64, u64),
) {
    let timeouts = Timeouts {
        connect: Duration::from_millis(500),
        call: Duration::from_secs(1),
        attempt: Duration::from_secs(1),
    };
    let mut client: Option<etcd_client::Client> = None;
    // One endpoint at a time, the next one after a failure: a client
    // balancing over every endpoint keeps sending to dead ones and would
    // make a writable cluster look unwritable. An endpoint dropped from the
    // list is left at once.
    let mut turn: usize = 0;
    let mut current = String::new();
    let mut n: u64 = first;
    let mut written: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let next = Instant::now() + pause;
        let endpoints = ledger
            .lock()
            .map(|l| l.endpoints.clone())
            .unwrap_or_default();
        if !endpoints.contains(&current) {
            client = None;
        }
        if client.is_none() {
            current = endpoints
                .get(turn % endpoints.len().max(1))
                .cloned()
                .unwrap_or_default();
            client = testkit::etcd::connect(&current, timeouts).await;
        }
        let key = format!("{PREFIX}{n:08}");
        let value = format!("value-{n}");
        let answer = match client.as_mut() {
            Some(c) => tokio::time::timeout(
                Duration::from_secs(1),
                c.put(key.clone(), value.clone(), None),
            )
            .await
            .ok()
            .and_then(Result::ok),
            None => None,
        };
        let at = started.elapsed();
        match answer {
            Some(r) => {
                let revision = r.header().map(|h| h.revision()).unwrap_or(0);
                let term = r.header().map(|h| h.raft_term()).unwrap_or(0);
                if let Ok(mut l) = ledger.lock() {
                    l.acked.push(Acked {
                        key,
                        value,
                        revision,
                        term,
                        at,
                    });
                }
            }
            None => {
                client = None;
                turn += 1;
                if let Ok(mut l) = ledger.lock() {
                    l.failed.push(at);
                }
            }
        }
        n += stride;
        written += 1;
        if written.is_multiple_of(50) {
            let read = match client.as_mut() {
                Some(c) => tokio::time::timeout(Duration::from_secs(1), c.get("chaos/", None))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .is_some(),
                None => false,
            };
            if !read && let Ok(mut l) = ledger.lock() {
                l.failed_reads += 1;
            }
        }
        tokio::time::sleep_until(next.into()).await;
    }
}

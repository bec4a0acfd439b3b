//! A write load that records *when* each write was acknowledged: the
//! write gaps of rolling upgrades and rolling restarts (the longest time
//! without an acknowledged write, over the whole run or one step of it).
//! One unique key every 20 ms through whichever endpoint acknowledges it
//! first (the one that answered last is asked first, the next too after
//! each 100 ms without an acknowledgement, round robin, ten asks at most),
//! each ask bounded by one second, the whole load by five minutes: the gap
//! is the cluster's, at a resolution of 100 ms, not one client
//! connection's.
//!
//! (`ledger` is the load that checks nothing acknowledged was lost without
//! timing; the chaos harness has its own paced load with timelines.)

use crate::etcd::{client, rt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Acknowledged keys with the moment each was acknowledged, in order.
pub type Acked = Vec<(String, Instant)>;

/// A running load, stopped by [`TimedLoad::finish`].
pub struct TimedLoad {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Acked>,
}

impl TimedLoad {
    /// Starts writing `<prefix>/<n>` through `endpoints`.
    pub fn start(endpoints: &[String], prefix: &str) -> Self {
        let fixed = endpoints.to_vec();
        Self::following(move || fixed.clone(), prefix)
    }

    /// Starts writing `<prefix>/<n>` through the endpoints `source` gives,
    /// asked again every half second (members recreated on new
    /// addresses).
    pub fn following(source: impl Fn() -> Vec<String> + Send + 'static, prefix: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, p) = (stop.clone(), prefix.to_string());
        let thread = std::thread::spawn(move || write_load(&source, &p, s));
        Self { stop, thread }
    }

    /// Stops the load; the acknowledged writes.
    pub fn finish(self) -> Acked {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// The longest time between two consecutive acknowledged writes whose
/// span overlaps `from..=to` (`None` bounds: the whole run).
pub fn longest_gap(acked: &Acked, from: Option<Instant>, to: Option<Instant>) -> Duration {
    longest_gap_span(acked, from, to)
        .map(|(a, b)| b - a)
        .unwrap_or_default()
}

/// The two acknowledgements around [`longest_gap`]: when it began and
/// when it ended (to set it beside [`crate::machine_stalls::Stalls`]).
pub fn longest_gap_span(
    acked: &Acked,
    from: Option<Instant>,
    to: Option<Instant>,
) -> Option<(Instant, Instant)> {
    acked
        .windows(2)
        .filter(|w| from.is_none_or(|f| w[1].1 > f) && to.is_none_or(|t| w[0].1 <= t))
        .map(|w| (w[0].1, w[1].1))
        .max_by_key(|(a, b)| *b - *a)
}

/// Acknowledged keys missing at `endpoint` (`["<cannot read: why>"]`
/// when no read succeeded in 30 s).
pub fn missing(endpoint: &str, acked: &Acked) -> Vec<String> {
    let kvs = match crate::ledger::read_patiently(endpoint) {
        Ok(kvs) => kvs,
        Err(why) => return vec![format!("<cannot read: {why}>")],
    };
    let present: std::collections::BTreeSet<String> = kvs.into_iter().map(|(k, _)| k).collect();
    acked
        .iter()
        .filter(|(k, _)| !present.contains(k))
        .map(|(k, _)| k.clone())
        .collect()
}

/// The release of the etcd this run uses (`.tools/etcd-<series>` resolved:
/// `3.5.30`), for reports.
pub fn etcd_release() -> String {
    let dir = crate::etcd::bin_dir_of(&crate::etcd::version());
    std::fs::canonicalize(&dir)
        .ok()
        .and_then(|p| p.parent()?.file_name()?.to_str().map(str::to_string))
        .and_then(|n| n.strip_prefix("etcd-").map(str::to_string))
        .unwrap_or_else(crate::etcd::version)
}

/// How long a put may go unanswered before the next endpoint is asked
/// too.
const HEDGE_AFTER: Duration = Duration::from_millis(100);

fn write_load(source: &dyn Fn() -> Vec<String>, prefix: &str, stop: Arc<AtomicBool>) -> Acked {
    rt().block_on(async move {
        let mut acked = Vec::new();
        let mut endpoints = source();
        let mut asked = Instant::now();
        let mut clients: Vec<Option<etcd_client::Client>> = vec![None; endpoints.len()];
        let mut at = 0usize;
        let mut n = 0u64;
        let deadline = Instant::now() + Duration::from_secs(300);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            if asked.elapsed() >= Duration::from_millis(500) {
                let now = source();
                if now != endpoints {
                    clients = vec![None; now.len()];
                    endpoints = now;
                    at = 0;
                }
                asked = Instant::now();
            }
            let key = format!("{prefix}/{n:06}");
            if let Some(i) = hedged_put(&endpoints, &mut clients, at, &key, &n.to_string()).await {
                acked.push((key, Instant::now()));
                at = i;
                n += 1;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        acked
    })
}

/// How many times one write is asked for, [`HEDGE_AFTER`] apart.
const ASKS: u32 = 10;

/// Puts `key` through `endpoints[at]`, and through the next endpoint each
/// time [`HEDGE_AFTER`] passes without an acknowledgement (round robin,
/// [`ASKS`] asks at most, each bounded by one second; the same key and
/// value: a put that lands twice changes nothing the load checks). The
/// endpoint that acknowledged first; `None` when none did. Without it a
/// client's own wait would count as the cluster's write gap: a connection
/// stuck on a member being stopped (tonic waits for it to reconnect until
/// the call's timeout), or a proposal a follower forwarded to a leader
/// that was handing leadership over (raft drops it, the follower waits).
async fn hedged_put(
    endpoints: &[String],
    clients: &mut [Option<etcd_client::Client>],
    at: usize,
    key: &str,
    value: &str,
) -> Option<usize> {
    use futures_util::StreamExt;
    if endpoints.is_empty() {
        return None;
    }
    let mut tries = futures_util::stream::FuturesUnordered::new();
    for k in 0..ASKS {
        let i = (at + k as usize) % endpoints.len();
        let (known, endpoint) = (clients[i].clone(), endpoints[i].clone());
        let (key, value) = (key.to_string(), value.to_string());
        tries.push(async move {
            tokio::time::sleep(HEDGE_AFTER * k).await;
            let mut c = match known {
                Some(c) => c,
                None => match client(&endpoint).await {
                    Some(c) => c,
                    None => return (i, None),
                },
            };
            let put = tokio::time::timeout(Duration::from_secs(1), c.put(key, value, None)).await;
            (i, matches!(put, Ok(Ok(_))).then_some(c))
        });
    }
    while let Some((i, answered)) = tries.next().await {
        let ok = answered.is_some();
        clients[i] = answered;
        if ok {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_gap_of_a_span() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let acked: Acked = [0, 20, 40, 540, 560, 700]
            .iter()
            .enumerate()
            .map(|(i, ms)| (i.to_string(), at(*ms)))
            .collect();
        assert_eq!(longest_gap(&acked, None, None), Duration::from_millis(500));
        assert_eq!(
            longest_gap(&acked, Some(at(545)), None),
            Duration::from_millis(140)
        );
        assert_eq!(
            longest_gap(&acked, None, Some(at(30))),
            Duration::from_millis(20)
        );
        assert_eq!(
            longest_gap(&acked, Some(at(100)), Some(at(200))),
            Duration::from_millis(500)
        );
        assert_eq!(longest_gap(&Vec::new(), None, None), Duration::ZERO);
    }
}

//! `scale-bench`'s view of each member's disk while something runs
//! beside it: every half second each member's etcd `/metrics` (the plain
//! HTTP metrics listener, `etcd.metrics_port`) is read for how many WAL
//! fsyncs and backend commits so far took longer than
//! [`SLOW_BUCKET_S`]; a slow WAL fsync on the leader, or on every other
//! follower, holds the cluster's commits for that long. And etcd's own
//! account of a defragmentation (its "finished defragmenting directory"
//! line: the database's size it reopened with).
//!
//! It is a measurement for the report, not a decision: nothing acts on
//! it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The histogram bucket's upper bound above which a fsync or a commit is
/// counted slow (etcd's buckets double from 1 ms: 0.256 s is the one at
/// the defragmentation goal, one election timeout of 0.25 s).
pub const SLOW_BUCKET_S: &str = "0.256";

/// One member's counters at one instant.
#[derive(Clone, Debug)]
pub struct DiskSample {
    pub at: Instant,
    pub member: String,
    /// WAL fsyncs slower than [`SLOW_BUCKET_S`] so far.
    pub wal_slow: u64,
    /// Backend commits slower than [`SLOW_BUCKET_S`] so far.
    pub commit_slow: u64,
}

/// `(observations above le, all observations)` of histogram `metric` in
/// a Prometheus text exposition.
pub fn above_bucket(text: &str, metric: &str, le: &str) -> Option<(u64, u64)> {
    let bucket = format!("{metric}_bucket{{le=\"{le}\"}} ");
    let count = format!("{metric}_count ");
    let value = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as u64)
    };
    let within = value(&bucket)?;
    let all = value(&count)?;
    Some((all.saturating_sub(within), all))
}

/// Reads every member's counters until stopped.
pub struct DiskSampler {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Vec<DiskSample>>>,
}

impl DiskSampler {
    /// Starts reading `members` (name, etcd metrics address) every
    /// `every`, for at most `limit`.
    pub fn start(members: Vec<(String, SocketAddr)>, every: Duration, limit: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return Vec::new();
            };
            let started = Instant::now();
            let mut samples = Vec::new();
            let mut told = std::collections::BTreeSet::new();
            while !flag.load(Ordering::Relaxed) && started.elapsed() < limit {
                for (name, addr) in &members {
                    let got = rt.block_on(eco::api::status_client::get(
                        *addr,
                        "/metrics",
                        Duration::from_secs(1),
                    ));
                    let body = match got {
                        Ok((200, body)) => body,
                        other => {
                            if told.insert(name.clone()) {
                                let why = other.map_or_else(
                                    |e| format!("{e:#}"),
                                    |(code, _)| format!("HTTP {code}"),
                                );
                                eprintln!(
                                    "scale-bench: cannot read {name}'s etcd metrics at {addr}: {why}"
                                );
                            }
                            continue;
                        }
                    };
                    let text = String::from_utf8_lossy(&body);
                    let wal =
                        above_bucket(&text, "etcd_disk_wal_fsync_duration_seconds", SLOW_BUCKET_S);
                    let commit = above_bucket(
                        &text,
                        "etcd_disk_backend_commit_duration_seconds",
                        SLOW_BUCKET_S,
                    );
                    if let (Some((wal_slow, _)), Some((commit_slow, _))) = (wal, commit) {
                        samples.push(DiskSample {
                            at: Instant::now(),
                            member: name.clone(),
                            wal_slow,
                            commit_slow,
                        });
                    }
                }
                std::thread::sleep(every);
            }
            samples
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops reading; every sample taken.
    pub fn finish(mut self) -> Vec<DiskSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for DiskSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `(slow WAL fsyncs, slow backend commits)` of `member` between `from`
/// and `to`: the rise from its last sample at or before `from` to its
/// first at or after `to` (so a slow fsync that ended inside the window
/// is counted, and possibly one just outside it: samples are half a
/// second apart). `None` without samples on both sides.
pub fn slow_between(
    samples: &[DiskSample],
    member: &str,
    from: Instant,
    to: Instant,
) -> Option<(u64, u64)> {
    let mine = samples.iter().filter(|s| s.member == member);
    let before = mine.clone().filter(|s| s.at <= from).max_by_key(|s| s.at)?;
    let after = mine.filter(|s| s.at >= to).min_by_key(|s| s.at)?;
    Some((
        after.wal_slow.saturating_sub(before.wal_slow),
        after.commit_slow.saturating_sub(before.commit_slow),
    ))
}

/// etcd's own account of a defragmentation, from its relayed lines: the
/// database's size and what of it was in use when it began ("defragmenting")
/// and when it ended ("finished defragmenting directory"), bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EtcdDefrag {
    pub began: Option<(u64, u64)>,
    pub finished: Option<(u64, u64)>,
}

/// The last defragmentation etcd logged in `log` (an eco log with etcd's
/// lines relayed), merged into `into`.
pub fn etcd_defrag_lines(log: &str, into: &mut EtcdDefrag) {
    for l in log.lines() {
        let Some(start) = l.find("{\"level\"") else {
            continue;
        };
        let Some(Ok(value)) = serde_json::Deserializer::from_str(&l[start..])
            .into_iter::<serde_json::Value>()
            .next()
        else {
            continue;
        };
        let sizes = || {
            Some((
                value.get("current-db-size-bytes")?.as_u64()?,
                value.get("current-db-size-in-use-bytes")?.as_u64()?,
            ))
        };
        match value.get("msg").and_then(|m| m.as_str()) {
            Some("defragmenting") => into.began = sizes(),
            Some("finished defragmenting directory") => into.finished = sizes(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_observations_are_those_above_the_bucket() {
        let text = "\
# HELP etcd_disk_wal_fsync_duration_seconds x\n\
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.128\"} 90\n\
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.256\"} 95\n\
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} 100\n\
etcd_disk_wal_fsync_duration_seconds_sum 3.5\n\
etcd_disk_wal_fsync_duration_seconds_count 100\n";
        assert_eq!(
            above_bucket(text, "etcd_disk_wal_fsync_duration_seconds", "0.256"),
            Some((5, 100))
        );
        assert_eq!(
            above_bucket(text, "etcd_disk_backend_commit_duration_seconds", "0.256"),
            None,
            "a metric not exposed"
        );
    }

    #[test]
    fn the_rise_is_taken_across_the_window() {
        let t = Instant::now();
        let s = |ms: u64, member: &str, wal: u64| DiskSample {
            at: t + Duration::from_millis(ms),
            member: member.into(),
            wal_slow: wal,
            commit_slow: wal * 2,
        };
        let samples = [
            s(0, "a", 1),
            s(500, "a", 1),
            s(1000, "a", 3),
            s(1500, "a", 4),
            s(500, "b", 7),
        ];
        let at = |ms| t + Duration::from_millis(ms);
        assert_eq!(slow_between(&samples, "a", at(600), at(900)), Some((2, 4)));
        assert_eq!(slow_between(&samples, "a", at(0), at(1500)), Some((3, 6)));
        assert_eq!(slow_between(&samples, "b", at(600), at(900)), None);
    }

    #[test]
    fn etcds_own_account_of_a_defragmentation_is_read_from_its_relayed_lines() {
        let log = "\
2026-12-07T06:00:00Z  INFO eco{instance=eco-1}: etcd: {\"level\":\"info\",\"msg\":\"defragmenting\",\"current-db-size-bytes\":9,\"current-db-size-in-use-bytes\":4} instance=eco-1 stream=\"stderr\"\n\
2026-12-07T06:00:05Z  INFO eco{instance=eco-1}: etcd: {\"level\":\"info\",\"msg\":\"other\",\"current-db-size-bytes\":7,\"current-db-size-in-use-bytes\":7}\n\
2026-12-07T06:00:09Z  INFO eco{instance=eco-1}: etcd: {\"level\":\"info\",\"msg\":\"finished defragmenting directory\",\"current-db-size-bytes-diff\":-5,\"current-db-size-bytes\":4,\"current-db-size-in-use-bytes\":4,\"took\":\"9s\"} instance=eco-1 stream=\"stderr\"\n";
        let mut got = EtcdDefrag::default();
        etcd_defrag_lines(log, &mut got);
        assert_eq!(
            got,
            EtcdDefrag {
                began: Some((9, 4)),
                finished: Some((4, 4))
            }
        );
    }
}

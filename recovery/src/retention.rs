//! Which snapshots to delete. Pure.
//!
//! Always keep the newest `keep_last` (at least 1), anything protected (a
//! snapshot an `incarnations/` record references), and beyond that the
//! newest snapshot of each of the last `keep_hourly` hours and of each of
//! the last `keep_daily` days. Everything else may go. The caller runs this
//! only right after a newer snapshot was stored successfully, and never on
//! names that do not parse as snapshots (they are not listed here at all).

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotEntry {
    pub name: String,
    pub taken_unix_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    pub keep_last: u32,
    pub keep_hourly: u32,
    pub keep_daily: u32,
}

/// Names to delete, oldest first, each with the reason it may go.
pub fn to_delete(
    snapshots: &[SnapshotEntry],
    protected: &HashSet<String>,
    policy: RetentionPolicy,
    now_unix_ms: u64,
) -> Vec<(String, String)> {
    const HOUR: u64 = 3_600_000;
    const DAY: u64 = 24 * HOUR;
    let mut newest_first: Vec<&SnapshotEntry> = snapshots.iter().collect();
    newest_first.sort_by(|a, b| (b.taken_unix_ms, &b.name).cmp(&(a.taken_unix_ms, &a.name)));
    let mut keep: HashSet<&str> = HashSet::new();
    for s in newest_first.iter().take(policy.keep_last.max(1) as usize) {
        keep.insert(&s.name);
    }
    let mut hours = BTreeSet::new();
    let mut days = BTreeSet::new();
    for s in &newest_first {
        let age = now_unix_ms.saturating_sub(s.taken_unix_ms);
        if age < policy.keep_hourly as u64 * HOUR && hours.insert(s.taken_unix_ms / HOUR) {
            keep.insert(&s.name);
        }
        if age < policy.keep_daily as u64 * DAY && days.insert(s.taken_unix_ms / DAY) {
            keep.insert(&s.name);
        }
    }
    let mut out: Vec<(String, String)> = newest_first
        .iter()
        .rev()
        .filter(|s| !keep.contains(s.name.as_str()) && !protected.contains(&s.name))
        .map(|s| {
            (
                s.name.clone(),
                format!(
                    "older than the newest {} and not the newest of its hour (last {} h) or day (last {} d)",
                    policy.keep_last.max(1),
                    policy.keep_hourly,
                    policy.keep_daily
                ),
            )
        })
        .collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3_600_000;

    fn snaps(times: &[u64]) -> Vec<SnapshotEntry> {
        times
            .iter()
            .map(|t| SnapshotEntry {
                name: format!("s{t:012}"),
                taken_unix_ms: *t,
            })
            .collect()
    }

    fn deleted(
        s: &[SnapshotEntry],
        p: RetentionPolicy,
        now: u64,
        protected: &[&str],
    ) -> Vec<String> {
        let protected = protected.iter().map(|s| s.to_string()).collect();
        to_delete(s, &protected, p, now)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    #[test]
    fn keeps_the_newest_always() {
        let p = RetentionPolicy {
            keep_last: 0,
            keep_hourly: 0,
            keep_daily: 0,
        };
        let s = snaps(&[1, 2, 3]);
        assert_eq!(
            deleted(&s, p, 100 * H, &[]),
            vec!["s000000000001", "s000000000002"]
        );
        let one = snaps(&[5]);
        assert!(
            deleted(&one, p, 1000 * H, &[]).is_empty(),
            "a quiet cluster keeps its only snapshot"
        );
    }

    #[test]
    fn tiers_and_protection() {
        // Every 20 minutes for 3 days.
        let times: Vec<u64> = (0..216).map(|i| i * H / 3).collect();
        let now = 72 * H;
        let s = snaps(&times);
        let p = RetentionPolicy {
            keep_last: 5,
            keep_hourly: 24,
            keep_daily: 7,
        };
        let gone = deleted(&s, p, now, &[]);
        let kept = s.len() - gone.len();
        // newest 5 + one per hour of the last 24h (overlapping) + one per day.
        assert!((24..=5 + 24 + 3).contains(&kept), "kept {kept}");
        assert!(!gone.contains(&s[215].name));
        // The oldest would go, unless a record references it.
        assert!(gone.contains(&s[1].name));
        let protected_gone = deleted(&s, p, now, &[&s[1].name]);
        assert!(!protected_gone.contains(&s[1].name));
        assert_eq!(protected_gone.len(), gone.len() - 1);
    }

    #[test]
    fn nothing_to_delete_within_policy() {
        let s = snaps(&[H, 2 * H, 3 * H]);
        let p = RetentionPolicy {
            keep_last: 5,
            keep_hourly: 0,
            keep_daily: 0,
        };
        assert!(deleted(&s, p, 4 * H, &[]).is_empty());
    }
}

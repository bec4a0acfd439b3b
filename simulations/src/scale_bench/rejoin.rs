//! `scale-bench`'s empty-disk rejoin at size (M2): three real eco and
//! etcd 3.5 instances (127.0.24.x, a directory store, no change archive,
//! no scheduled snapshot during the run) filled through all three with the
//! `kubernetes` mix; then a follower's eco and etcd are killed, its disk
//! wiped, and eco started again on the empty disk. Measured: the time
//! from the kill until that instance is a voter again under a new member
//! id, and — from the leader's log, the same run — how long etcd itself
//! took to send its database to the new learner (its "sending database
//! snapshot" and "sent database snapshot" lines: the second comes once
//! the learner answered that it holds the file, after a "sent database
//! snapshot to writer" line when the leader's side has written the last
//! byte) and how many bytes: the part of a rejoin no operator can avoid,
//! against which eco's total is compared.

use crate::bench_cluster;
use anyhow::Context;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// The goal: back a voter within 1.2 × etcd's own snapshot transfer.
pub const RATIO_GOAL: f64 = 1.2;

#[derive(Clone, Debug, serde::Serialize)]
pub struct RejoinResult {
    pub size_mib: u64,
    pub db_mib: f64,
    pub puts: u64,
    pub fill_s: f64,
    /// The instance wiped (a follower).
    pub wiped: String,
    /// From the kill to a voter again under a new member id.
    pub back_s: f64,
    /// Of it, the harness's own steps before eco runs on the empty disk:
    /// the kill, the data directory removed (a 4 GiB file unlinked), eco
    /// spawned.
    pub harness_s: f64,
    /// From eco's start on the empty disk to a voter again: what the goal
    /// compares with etcd's send (a real disk is replaced before eco
    /// starts, in however long that takes).
    pub back_from_start_s: f64,
    /// etcd's own transfer of its database to the learner (the leader's
    /// log), and its size.
    pub etcd_send_s: f64,
    pub etcd_send_mib: f64,
    /// The kill to etcd starting to send (detection, the member's removal
    /// and the learner's add, etcd's start).
    pub before_send_s: f64,
    /// etcd's send done to a voter (the learner catching up, promotion).
    pub after_send_s: f64,
    pub time_ratio_vs_etcd_send: f64,
    pub time_ratio_goal: f64,
    pub goal_met: bool,
    /// What eco did meanwhile: the wiped instance's and the leader's eco
    /// events after the kill, `+seconds instance: event …` (where the time
    /// before the send goes).
    pub timeline: Vec<String>,
}

/// When a line of eco's log was written (its first field, RFC 3339).
fn logged_at(line: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(line.split_whitespace().next()?).ok()
}

/// The last `(sending, sent, bytes)` of the leader's log lines after
/// `since`.
fn snapshot_send(log: &str, since: SystemTime) -> Option<(SystemTime, SystemTime, u64)> {
    let mut sending: Option<(SystemTime, u64)> = None;
    let mut found = None;
    for line in log.lines() {
        let Some(at) = logged_at(line) else {
            continue;
        };
        if at < since {
            continue;
        }
        let bytes = || {
            let rest = &line[line.find("bytes")? + 5..];
            let digits: String = rest
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u64>().ok()
        };
        if line.contains("\"msg\":\"sending database snapshot\"") {
            sending = Some((at, bytes().unwrap_or(0)));
        } else if line.contains("\"msg\":\"sent database snapshot\"")
            && let Some((start, n)) = sending.take()
        {
            found = Some((start, at, bytes().unwrap_or(n)));
        }
    }
    found
}

pub fn run(eco: &Path, etcd_bin_dir: &Path, size_mib: u64) -> anyhow::Result<RejoinResult> {
    let quota = (size_mib * 3).max(2048) << 20;
    let (mut c, group) = bench_cluster::form(eco, etcd_bin_dir, 24, 5, false, |b| {
        b.archive(false)
            .snapshot_interval(Duration::from_secs(24 * 3600))
            .edit(|cfg| cfg.etcd.quota_backend_bytes = quota)
    })?;
    eprintln!("scale-bench: rejoin at {size_mib} MiB: filling three instances");
    let filled = super::cluster_fill::fill_cluster(&c, &group, size_mib)?;
    let leader = testkit::wait_until(Duration::from_secs(30), || c.leader())
        .context("no leader after the fill")?;
    let wiped = group
        .iter()
        .rev()
        .find(|id| **id != leader)
        .context("no follower")?
        .clone();
    let before = c.member_ids().context("no member list")?;
    let old_id = before
        .iter()
        .find(|(_, name, _)| *name == wiped)
        .map(|(id, _, _)| *id)
        .context("the follower is not a member")?;
    eprintln!("scale-bench: rejoin: killing {wiped} and wiping its disk (the leader is {leader})");
    let since = SystemTime::now();
    let t0 = Instant::now();
    c.stop(&wiped, libc::SIGKILL)?;
    c.wipe(&wiped)?;
    c.start(&wiped)?;
    let harness_s = t0.elapsed().as_secs_f64();
    let limit = Duration::from_secs(120 + size_mib / 8);
    testkit::wait_until(limit, || {
        let members = c.member_ids()?;
        let voter = members
            .iter()
            .any(|(id, name, learner)| *name == wiped && *id != old_id && !*learner);
        (voter && members.len() == group.len()).then_some(())
    })
    .with_context(|| {
        format!(
            "{wiped} was not a voter again within {limit:?}\n{}",
            c.log_tail(&wiped, 30)
        )
    })?;
    let back_s = t0.elapsed().as_secs_f64();
    // The steps first: they tell where the time went even when the send
    // below is not found.
    let mut timeline = Vec::new();
    for (id, every_line) in [(&wiped, true), (&leader, false)] {
        timeline.extend(events_after(&c.nodes[id].log(), since, id, every_line));
    }
    timeline.sort_by(|a, b| a.0.total_cmp(&b.0));
    let timeline: Vec<String> = timeline.into_iter().map(|(_, line)| line).collect();
    for line in &timeline {
        eprintln!("scale-bench: rejoin: {line}");
    }
    let (sending, sent, bytes) = snapshot_send(&c.nodes[&leader].log(), since)
        .with_context(|| {
            format!(
                "the leader's log has no database snapshot sent after the wipe (back a voter in {back_s:.1} s)"
            )
        })?;
    let secs =
        |a: SystemTime, b: SystemTime| b.duration_since(a).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let etcd_send_s = secs(sending, sent);
    let before_send_s = secs(since, sending);
    let back_from_start_s = (back_s - harness_s).max(0.0);
    let ratio = back_from_start_s / etcd_send_s.max(1e-3);
    for id in &group {
        let _ = c.stop(id, libc::SIGTERM);
    }
    Ok(RejoinResult {
        size_mib,
        db_mib: filled.db_bytes as f64 / (1u64 << 20) as f64,
        puts: filled.puts,
        fill_s: filled.seconds,
        wiped,
        back_s,
        harness_s,
        back_from_start_s,
        etcd_send_s,
        etcd_send_mib: bytes as f64 / (1u64 << 20) as f64,
        before_send_s,
        after_send_s: (back_s - before_send_s - etcd_send_s).max(0.0),
        time_ratio_vs_etcd_send: ratio,
        time_ratio_goal: RATIO_GOAL,
        goal_met: ratio <= RATIO_GOAL,
        timeline,
    })
}

/// eco's own events in `log` after `since` (with `every_line`, each of
/// eco's own lines: the wiped instance's whole story, at the level
/// `RUST_LOG` asks for), and etcd's lines about the database snapshot and
/// the member's publication, each as (seconds after `since`, `+seconds
/// instance: what`, cut at 240 characters).
pub(crate) fn events_after(
    log: &str,
    since: SystemTime,
    instance: &str,
    every_line: bool,
) -> Vec<(f64, String)> {
    const ETCD_STEPS: [&str; 4] = [
        "\"msg\":\"sen",
        "\"msg\":\"applied",
        "\"msg\":\"restored",
        "\"msg\":\"published local member",
    ];
    log.lines()
        .filter_map(|line| {
            let what = if line.contains(" etcd: ") {
                let msg = line.find("\"msg\":")?;
                ETCD_STEPS
                    .iter()
                    .any(|s| line[msg..].starts_with(s))
                    .then(|| format!("etcd {}", &line[msg..]))?
            } else if let Some(event) = line.find(" event=") {
                line[event + 1..].to_string()
            } else if every_line {
                line.split_once(": ").map(|(_, what)| what.to_string())?
            } else {
                return None;
            };
            let at = logged_at(line)?.duration_since(since).ok()?.as_secs_f64();
            let what: String = what.chars().take(240).collect();
            Some((at, format!("+{at:.1} s {instance}: {what}")))
        })
        .collect()
}

/// One line.
pub fn render(r: &RejoinResult) -> String {
    format!(
        "rejoin at {} MiB (db {:.0} MiB): {} back a voter {:.1} s after eco started on the empty disk ({:.1} s after the kill: the kill and the wipe took {:.1} s); etcd sent its {:.0} MiB database in {:.1} s; from the kill to the send {:.1} s, after it {:.1} s; ratio {:.2} (goal <= {}: {})\n",
        r.size_mib,
        r.db_mib,
        r.wiped,
        r.back_from_start_s,
        r.back_s,
        r.harness_s,
        r.etcd_send_mib,
        r.etcd_send_s,
        r.before_send_s,
        r.after_send_s,
        r.time_ratio_vs_etcd_send,
        r.time_ratio_goal,
        if r.goal_met { "met" } else { "MISSED" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_send_is_read_from_the_leaders_log() {
        let log = "\
2026-11-28T07:00:00.000000Z  INFO eco: old line\n\
2026-11-28T07:00:10.500000Z  INFO eco{instance=eco-1}: etcd: {\"level\":\"info\",\"msg\":\"sending database snapshot\",\"bytes\":4340000000,\"size\":\"4.3 GB\"}\n\
2026-11-28T07:00:29.000000Z  INFO eco{instance=eco-1}: etcd: {\"level\":\"info\",\"msg\":\"sent database snapshot to writer\",\"bytes\":4340000000,\"size\":\"4.3 GB\"}\n\
2026-11-28T07:00:31.000000Z  INFO eco{instance=eco-1}: etcd: {\"level\":\"info\",\"msg\":\"sent database snapshot\",\"bytes\":4340000000,\"size\":\"4.3 GB\"}\n";
        let since = humantime::parse_rfc3339("2026-11-28T07:00:05Z").unwrap();
        let (a, b, n) = snapshot_send(log, since).unwrap();
        assert_eq!(b.duration_since(a).unwrap(), Duration::from_millis(20_500));
        assert_eq!(n, 4_340_000_000);
        let later = humantime::parse_rfc3339("2026-11-28T07:00:20Z").unwrap();
        assert!(
            snapshot_send(log, later).is_none(),
            "a send that began before"
        );
    }
}

//! `scale-bench`'s defragmentation at size: on a filled cluster of three
//! ([`super::faulted_cluster`]), the fill's 100 KiB values and the
//! objects of a fifth of its namespaces are deleted and the history
//! compacted (physical), so every member's file is more than half free
//! pages; eco's space governor (its defaults: `[etcd.defrag]` ratio 0.5,
//! floor 64 MiB) then defragments each member once, one at a time.
//! Meanwhile one writer per member puts a key every 20 ms through that
//! member alone. Measured: each member's defragmentation (eco's
//! `space.defragmented` events: how long, whether that member led), the
//! longest time each member acknowledged no write (the stall a client of
//! that member sees), the **cluster's write gap** (the longest time no
//! member acknowledged any write: what a client that can reach every
//! member sees), and the whole roll (the first defragmentation's start to
//! the last one's end).

use anyhow::Context;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use testkit::cluster::Cluster;

#[derive(Clone, Debug, serde::Serialize)]
pub struct MemberDefrag {
    pub name: String,
    pub duration_s: f64,
    /// It led while it was defragmented: the instance that defragmented it
    /// was its own (the governor runs beside the leader only).
    pub was_leader: bool,
    /// The longest time its own writer was acknowledged nothing.
    pub member_write_gap_s: f64,
    /// Its database before (after the deletes and the compaction) and
    /// after the roll, MiB, as its own Status reported them (`None`: it
    /// did not answer).
    pub db_before_mib: Option<f64>,
    pub db_after_mib: Option<f64>,
    /// etcd's own account (its log lines): the database's size and what
    /// of it was in use when the defragmentation began, and the size it
    /// reopened the database with, MiB.
    pub etcd_db_began_mib: Option<f64>,
    pub etcd_in_use_began_mib: Option<f64>,
    pub etcd_db_after_mib: Option<f64>,
    /// Why eco's space governor defragmented it (its event's reason).
    pub reason: String,
    /// Its WAL fsyncs and backend commits slower than 0.256 s during the
    /// whole roll (`None`: its metrics were not read on both sides).
    pub slow_wal_fsyncs_in_roll: Option<u64>,
    pub slow_commits_in_roll: Option<u64>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct DefragResult {
    pub size_mib: u64,
    /// One member's database before and after, MiB (the first member of
    /// the group that answered both times; each member's in `members`).
    pub db_before_mib: f64,
    pub in_use_before_mib: f64,
    pub db_after_mib: f64,
    pub members: Vec<MemberDefrag>,
    /// The longest time no member acknowledged a write, during the roll.
    pub cluster_write_gap_s: f64,
    /// When it began, seconds after the roll began, and the members being
    /// defragmented then (none: between two defragmentations).
    pub cluster_write_gap_at_s: f64,
    pub cluster_write_gap_during: Vec<String>,
    /// Each member's WAL fsyncs and backend commits slower than 0.256 s
    /// around the cluster's gap: `(member, fsyncs, commits)`.
    pub slow_around_gap: Vec<(String, u64, u64)>,
    /// How much of the cluster's gap the machine itself stood still (a
    /// probe thread's 20 ms sleep overslept, or its 4 KiB `fdatasync` on
    /// the members' disk waited: `testkit::machine_stalls`).
    pub machine_stalled_in_gap_s: f64,
    /// The probe's steps that stood still across the cluster's gap, whole:
    /// which of its sleep (the scheduler) or its sync (the disk) took the
    /// time.
    pub machine_stalls_in_gap: Vec<MachineStall>,
    /// The first defragmentation's start to the last one's end.
    pub roll_s: f64,
    /// etcd's election timeout in this cluster (the goal).
    pub election_timeout_s: f64,
    pub goal_met: bool,
}

/// One step of the machine-stall probe that stood still.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MachineStall {
    /// When it began, seconds after the roll began.
    pub at_s: f64,
    /// Its 20 ms sleep, in ms (more: the probe was not run).
    pub slept_ms: f64,
    /// Its 4 KiB write and `fdatasync` on the members' disk, in ms.
    pub synced_ms: f64,
}

/// One `space.defragmented` event: when it ended, the member, how long,
/// why.
fn defragmented(log: &str, since: SystemTime) -> Vec<(SystemTime, String, f64, String)> {
    log.lines()
        .filter(|l| {
            l.contains("event=\"space.defragmented\"") || l.contains("event=space.defragmented")
        })
        .filter_map(|l| {
            let at = humantime::parse_rfc3339(l.split_whitespace().next()?).ok()?;
            if at < since {
                return None;
            }
            let field = |name: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .map(|v| v.trim_matches('"').to_string())
            };
            let name = field("name=")?;
            let ms: f64 = field("duration_ms=")?.parse().ok()?;
            // The reason is the event's last field, with spaces.
            let reason = l
                .split_once(" reason=")
                .map_or(String::new(), |(_, r)| r.trim_matches('"').to_string());
            Some((at, name, ms / 1000.0, reason))
        })
        .collect()
}

/// A log file read in the pieces written since the last read.
struct LogTail {
    path: std::path::PathBuf,
    offset: u64,
}

impl LogTail {
    /// From the file's end now: only what comes next is read.
    fn at_end(path: std::path::PathBuf) -> Self {
        let offset = std::fs::metadata(&path).map_or(0, |m| m.len());
        Self { path, offset }
    }

    /// The whole lines written since the last call.
    fn more(&mut self) -> String {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return String::new();
        };
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            return String::new();
        }
        let whole = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        self.offset += whole as u64;
        String::from_utf8_lossy(&buf[..whole]).into_owned()
    }
}

/// Puts `gap/<member>/<n>` through `endpoint` alone every 20 ms until
/// `stop`; the instants of the acknowledgements.
async fn write_through(
    endpoint: String,
    member: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Vec<Instant> {
    let mut acked = Vec::new();
    let mut client = None;
    let mut n = 0u64;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if client.is_none() {
            client = testkit::etcd::client(&endpoint).await;
        }
        if let Some(c) = client.as_mut() {
            n += 1;
            let put = tokio::time::timeout(
                Duration::from_secs(30),
                c.put(format!("gap/{member}/{n}"), "x", None),
            )
            .await;
            match put {
                Ok(Ok(_)) => acked.push(Instant::now()),
                _ => client = None,
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    acked
}

/// The longest gap between consecutive instants of `acks` within
/// `[from, to]` (its ends count as acknowledgements).
fn longest_gap(acks: &[Instant], from: Instant, to: Instant) -> Duration {
    longest_gap_from(acks, from, to).0
}

/// [`longest_gap`] and when it began.
fn longest_gap_from(acks: &[Instant], from: Instant, to: Instant) -> (Duration, Instant) {
    let mut inside: Vec<Instant> = acks
        .iter()
        .copied()
        .filter(|a| *a >= from && *a <= to)
        .collect();
    inside.push(from);
    inside.push(to);
    inside.sort();
    inside
        .windows(2)
        .map(|w| (w[1] - w[0], w[0]))
        .max_by_key(|(gap, _)| *gap)
        .unwrap_or((Duration::ZERO, from))
}

/// The space each member's Status reports: (name, db size, in use).
fn spaces(c: &Cluster, group: &[String]) -> Vec<(String, u64, u64)> {
    group
        .iter()
        .filter_map(|id| {
            testkit::etcd::block_on(async {
                let mut client = testkit::etcd::client(&c.nodes[id].endpoint()).await?;
                let s = tokio::time::timeout(Duration::from_secs(10), client.status())
                    .await
                    .ok()?
                    .ok()?;
                Some((
                    id.clone(),
                    s.db_size().max(0) as u64,
                    s.raft_used_db_size().max(0) as u64,
                ))
            })
        })
        .collect()
}

/// Deletes about 60 % of the fill (every 100 KiB value, the objects of
/// namespaces `ns-1*` and `ns-2*`) and compacts physically.
async fn free_most_of_it(endpoint: &str) -> anyhow::Result<()> {
    let mut c =
        crate::snapshot_bench::connect_bounded(&[endpoint.to_string()], Duration::from_secs(600))
            .await?;
    for prefix in [
        "/registry/secrets/",
        "/registry/configmaps/ns-1",
        "/registry/configmaps/ns-2",
    ] {
        let opts = etcd_client::DeleteOptions::new().with_prefix();
        let r = tokio::time::timeout(Duration::from_secs(300), c.delete(prefix, Some(opts)))
            .await
            .with_context(|| format!("deleting {prefix}: no answer within 300 s"))?
            .with_context(|| format!("deleting {prefix}"))?;
        eprintln!(
            "scale-bench: defrag: deleted {} keys under {prefix}",
            r.deleted()
        );
    }
    let revision = tokio::time::timeout(Duration::from_secs(30), c.get("/", None))
        .await
        .context("reading the revision: no answer")??
        .header()
        .map(|h| h.revision())
        .unwrap_or(0);
    let physical = etcd_client::CompactionOptions::new().with_physical();
    tokio::time::timeout(
        Duration::from_secs(600),
        c.compact(revision, Some(physical)),
    )
    .await
    .context("compacting: no answer within 600 s")?
    .with_context(|| format!("compacting to {revision}"))?;
    Ok(())
}

/// Runs the measure on `c`'s `group` (every member running, the space
/// governor on with its defaults); `election_timeout` is the cluster's.
pub fn run_on(
    c: &Cluster,
    group: &[String],
    size_mib: u64,
    election_timeout: Duration,
) -> anyhow::Result<DefragResult> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = group
        .iter()
        .map(|id| {
            rt.spawn(write_through(
                c.nodes[id].endpoint(),
                id.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let since = SystemTime::now();
    let t0 = Instant::now();
    let stall_probe = testkit::machine_stalls::StallProbe::start(c.root());
    let sampler = super::disk_latency::DiskSampler::start(
        group
            .iter()
            .filter_map(|id| {
                Some((
                    id.clone(),
                    format!("{}:2381", c.nodes[id].address).parse().ok()?,
                ))
            })
            .collect(),
        Duration::from_millis(500),
        Duration::from_secs(600 + size_mib / 2),
    );
    let mut etcd_defrags: std::collections::BTreeMap<String, super::disk_latency::EtcdDefrag> =
        Default::default();
    // The logs are read from here on, where the last look ended.
    let mut tails: Vec<LogTail> = group
        .iter()
        .map(|id| LogTail::at_end(c.nodes[id].dir.join("eco.log")))
        .collect();
    eprintln!("scale-bench: defrag at {size_mib} MiB: deleting most of the fill, compacting");
    rt.block_on(free_most_of_it(&c.nodes[&group[0]].endpoint()))?;
    let freed = spaces(c, group);
    for (id, db, used) in &freed {
        eprintln!(
            "scale-bench: defrag: {id}: {} MiB, {} MiB in use",
            db >> 20,
            used >> 20
        );
    }
    let limit = Duration::from_secs(600 + size_mib / 4);
    let mut events = Vec::new();
    let mut done = None;
    while t0.elapsed() < limit {
        for (t, id) in tails.iter_mut().zip(group) {
            let more = t.more();
            super::disk_latency::etcd_defrag_lines(
                &more,
                etcd_defrags.entry(id.clone()).or_default(),
            );
            events.extend(
                defragmented(&more, since)
                    .into_iter()
                    .map(|(at, name, secs, why)| (at, name, secs, why, id.clone())),
            );
        }
        let names: std::collections::BTreeSet<&String> =
            events.iter().map(|(_, n, _, _, _)| n).collect();
        if names.len() >= group.len() {
            done = Some(events);
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let end = Instant::now();
    // One more round of the disk sampler after the last defragmentation
    // ended (its samples are half a second apart).
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acks: Vec<Vec<Instant>> = writers
        .into_iter()
        .map(|w| rt.block_on(w).unwrap_or_default())
        .collect();
    let disk = sampler.finish();
    let stalls = stall_probe.finish();
    let events = done.with_context(|| format!("not every member defragmented within {limit:?}"))?;
    let after = spaces(c, group);
    // Each event as (start, end) instants on this clock.
    let now_sys = SystemTime::now();
    let to_instant = |at: SystemTime| {
        let ago = now_sys.duration_since(at).unwrap_or_default();
        Instant::now().checked_sub(ago).unwrap_or(t0)
    };
    let mut spans: Vec<(Instant, Instant, String, f64, bool, String)> = Vec::new();
    for (at, name, secs, why, by) in &events {
        if spans.iter().any(|s| &s.2 == name) {
            continue;
        }
        let e = to_instant(*at);
        let s = e.checked_sub(Duration::from_secs_f64(*secs)).unwrap_or(t0);
        spans.push((s, e, name.clone(), *secs, by == name, why.clone()));
    }
    spans.sort_by_key(|s| s.0);
    let roll_from = spans.first().map(|s| s.0).unwrap_or(t0);
    let roll_to = spans.last().map(|s| s.1).unwrap_or(end).min(end);
    let all: Vec<Instant> = acks.iter().flatten().copied().collect();
    let (cluster_gap, gap_from) = longest_gap_from(&all, roll_from, roll_to);
    let gap_during: Vec<String> = spans
        .iter()
        .filter(|(s, e, ..)| *s <= gap_from + cluster_gap && gap_from <= *e)
        .map(|(_, _, name, ..)| name.clone())
        .collect();
    // A sample is half a second apart: the window reaches one beyond.
    let slow_around_gap: Vec<(String, u64, u64)> = group
        .iter()
        .filter_map(|id| {
            let (wal, commit) =
                super::disk_latency::slow_between(&disk, id, gap_from, gap_from + cluster_gap)?;
            Some((id.clone(), wal, commit))
        })
        .collect();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let size_of = |of: &[(String, u64, u64)], name: &str| {
        of.iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, db, used)| (*db, *used))
    };
    let members = spans
        .iter()
        .map(|(s, e, name, secs, was_leader, why)| {
            let i = group.iter().position(|g| g == name);
            let gap = i
                .map(|i| longest_gap(&acks[i], *s, *e + Duration::from_secs(1)))
                .unwrap_or_default();
            let in_roll = super::disk_latency::slow_between(&disk, name, roll_from, roll_to);
            let etcd = etcd_defrags.get(name).copied().unwrap_or_default();
            MemberDefrag {
                etcd_db_began_mib: etcd.began.map(|(db, _)| mib(db)),
                etcd_in_use_began_mib: etcd.began.map(|(_, used)| mib(used)),
                etcd_db_after_mib: etcd.finished.map(|(db, _)| mib(db)),
                reason: why.clone(),
                slow_wal_fsyncs_in_roll: in_roll.map(|(w, _)| w),
                slow_commits_in_roll: in_roll.map(|(_, c)| c),
                name: name.clone(),
                duration_s: *secs,
                was_leader: *was_leader,
                member_write_gap_s: gap.as_secs_f64(),
                db_before_mib: size_of(&freed, name).map(|(db, _)| mib(db)),
                db_after_mib: size_of(&after, name).map(|(db, _)| mib(db)),
            }
        })
        .collect();
    let cluster_write_gap_s = cluster_gap.as_secs_f64();
    // Before and after of one and the same member (the sizes of whichever
    // member answered first, before and after, were once two members').
    let headline = group.iter().find_map(|id| {
        let (db, used) = size_of(&freed, id)?;
        let (after_db, _) = size_of(&after, id)?;
        Some((db, used, after_db))
    });
    Ok(DefragResult {
        size_mib,
        db_before_mib: headline.map_or(0.0, |(b, _, _)| mib(b)),
        in_use_before_mib: headline.map_or(0.0, |(_, u, _)| mib(u)),
        db_after_mib: headline.map_or(0.0, |(_, _, a)| mib(a)),
        members,
        cluster_write_gap_s,
        cluster_write_gap_at_s: gap_from.saturating_duration_since(roll_from).as_secs_f64(),
        cluster_write_gap_during: gap_during,
        slow_around_gap,
        machine_stalled_in_gap_s: stalls
            .within(gap_from, gap_from + cluster_gap)
            .as_secs_f64(),
        machine_stalls_in_gap: stalls
            .overlapping(gap_from, gap_from + cluster_gap)
            .iter()
            .map(|st| MachineStall {
                at_s: st.from.saturating_duration_since(roll_from).as_secs_f64(),
                slept_ms: st.slept.as_secs_f64() * 1000.0,
                synced_ms: st.synced.as_secs_f64() * 1000.0,
            })
            .collect(),
        roll_s: roll_to.saturating_duration_since(roll_from).as_secs_f64(),
        election_timeout_s: election_timeout.as_secs_f64(),
        goal_met: cluster_write_gap_s <= election_timeout.as_secs_f64(),
    })
}

/// Lines.
pub fn render(r: &DefragResult) -> String {
    let mut out = format!(
        "defrag at {} MiB: db {:.0} MiB ({:.0} in use) -> {:.0} MiB; the roll {:.1} s; the cluster's write gap {:.3} s at +{:.1} s, {} (goal <= one election timeout, {:.3} s: {})\n",
        r.size_mib,
        r.db_before_mib,
        r.in_use_before_mib,
        r.db_after_mib,
        r.roll_s,
        r.cluster_write_gap_s,
        r.cluster_write_gap_at_s,
        if r.cluster_write_gap_during.is_empty() {
            "between defragmentations".to_string()
        } else {
            format!(
                "while {} defragmented",
                r.cluster_write_gap_during.join(", ")
            )
        },
        r.election_timeout_s,
        if r.goal_met { "met" } else { "MISSED" }
    );
    let size = |x: Option<f64>| x.map_or("?".to_string(), |m| format!("{m:.0}"));
    let count = |x: Option<u64>| x.map_or("?".to_string(), |n| n.to_string());
    for m in &r.members {
        out.push_str(&format!(
            "  {}: defragmented in {:.1} s{}, {} -> {} MiB (etcd's own lines: {} MiB, {} in use -> {} MiB); its own writes stalled {:.1} s; during the roll {} WAL fsyncs and {} commits over 0.256 s; because {}\n",
            m.name,
            m.duration_s,
            if m.was_leader { " (leading)" } else { "" },
            size(m.db_before_mib),
            size(m.db_after_mib),
            size(m.etcd_db_began_mib),
            size(m.etcd_in_use_began_mib),
            size(m.etcd_db_after_mib),
            m.member_write_gap_s,
            count(m.slow_wal_fsyncs_in_roll),
            count(m.slow_commits_in_roll),
            m.reason,
        ));
    }
    let steps: Vec<String> = r
        .machine_stalls_in_gap
        .iter()
        .map(|st| {
            format!(
                "+{:.1} s: its 20 ms sleep took {:.0} ms, its 4 KiB fdatasync {:.0} ms",
                st.at_s, st.slept_ms, st.synced_ms
            )
        })
        .collect();
    out.push_str(&format!(
        "  the machine itself stood still {:.3} s of the cluster's gap (the stall probe: {}); the gap beyond it {:.3} s\n",
        r.machine_stalled_in_gap_s,
        if steps.is_empty() {
            "no step over 120 ms".to_string()
        } else {
            steps.join("; ")
        },
        // The gap less the machine's stall in it: what the members did
        // themselves (as `testkit::timed_load` bounds gaps).
        (r.cluster_write_gap_s - r.machine_stalled_in_gap_s).max(0.0)
    ));
    if !r.slow_around_gap.is_empty() {
        let each: Vec<String> = r
            .slow_around_gap
            .iter()
            .map(|(m, w, c)| format!("{m} {w} fsyncs, {c} commits"))
            .collect();
        out.push_str(&format!(
            "  around the cluster's gap, over 0.256 s: {}\n",
            each.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_gap_counts_the_window_ends() {
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        let acks = [ms(100), ms(150), ms(900), ms(950)];
        assert_eq!(longest_gap(&acks, t, ms(1000)), Duration::from_millis(750));
        assert_eq!(
            longest_gap_from(&acks, t, ms(1000)).1,
            ms(150),
            "it began there"
        );
        assert_eq!(
            longest_gap(&acks, ms(920), ms(2000)),
            Duration::from_millis(1050)
        );
        assert_eq!(longest_gap(&[], t, ms(10)), Duration::from_millis(10));
    }

    #[test]
    fn defragmentations_are_read_from_eco_events() {
        let log = "\
2026-12-07T06:00:00.000000Z  WARN eco{instance=eco-1}: defragmented a member event=\"space.defragmented\" member_id=\"a1\" name=eco-2 duration_ms=1500 reason=\"x\"\n\
2026-12-07T06:00:03.000000Z  INFO eco{instance=eco-1}: something else\n";
        let since = humantime::parse_rfc3339("2026-12-07T05:59:00Z").unwrap();
        let got = defragmented(log, since);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, "eco-2");
        assert_eq!(got[0].3, "x");
        assert!((got[0].2 - 1.5).abs() < 1e-9);
        let later = humantime::parse_rfc3339("2026-12-07T06:00:01Z").unwrap();
        assert!(defragmented(log, later).is_empty());
    }
}

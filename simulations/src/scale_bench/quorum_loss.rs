//! `scale-bench`'s quorum loss at size (M3 at size): on a filled cluster
//! of three ([`super::faulted_cluster`]), under a write every 20 ms
//! through the members (a ledger of every acknowledged write), two
//! instances are killed with their etcd and their disks are lost; the
//! group names two new empty instances. Measured: from the loss until the
//! survivor answers a write (writable: the quorum-loss timeout T, the
//! survivor's WAL replayed on a copy of its data, its snapshot, the
//! restore that seeds the new incarnation, etcd started on it) and until
//! three voters serve (each new instance's learner sent the whole
//! database); every acknowledged write read back from each member (only
//! the ledger's keys: a whole-keyspace read of 8 GiB is not a check). The
//! goal's "one read of the survivor's database" is measured after, on the
//! file the survivor kept aside, its pages dropped from the page cache
//! first. eco's events after the loss say where the time went.

use super::rejoin::events_after;
use anyhow::Context;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use testkit::cluster::Cluster;
use testkit::ledger::{Ledger, TimedLedgerResult, wal_residual};

/// The quorum-loss timeout T the cluster runs with (the goal is relative
/// to it).
pub const QUORUM_LOSS_TIMEOUT: Duration = Duration::from_secs(5);
/// The goal's margin over T and one read of the survivor's database.
pub const MARGIN_S: f64 = 10.0;

#[derive(Clone, Debug, serde::Serialize)]
pub struct QuorumLossResult {
    pub size_mib: u64,
    pub db_mib: f64,
    pub quorum_loss_timeout_s: f64,
    /// From the loss to the survivor's first acknowledged write.
    pub writable_s: f64,
    /// From the loss to three voters serving.
    pub full_membership_s: f64,
    /// One sequential read of the survivor's database file, cold.
    pub survivor_db_read_s: f64,
    pub survivor_db_mib: f64,
    /// T + the read + the margin.
    pub writable_goal_s: f64,
    pub acknowledged: usize,
    /// Acknowledged writes missing from a member, beyond the documented
    /// residual (the newest write acknowledged before the loss).
    pub lost: usize,
    /// Of the residual, lost (reported, allowed by design).
    pub residual_lost: usize,
    pub goal_met: bool,
    /// eco's events after the loss, `+seconds instance: event …`.
    pub timeline: Vec<String>,
}

/// Runs M3 on `c` (formed by [`super::faulted_cluster`] on
/// `127.0.<net>.x`, group `eco-1..3`); leaves `eco-1`, `eco-4`, `eco-5`
/// running.
pub fn run_on(
    c: &mut Cluster,
    base: &str,
    size_mib: u64,
    db_mib: f64,
) -> anyhow::Result<QuorumLossResult> {
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 1_000_000);
    let acked = ledger.wait_acked(100, Duration::from_secs(60));
    anyhow::ensure!(
        acked >= 100,
        "the write load did not start: {acked} writes acknowledged"
    );
    eprintln!(
        "scale-bench: quorum loss at {size_mib} MiB: killing eco-2 and eco-3, their disks lost"
    );
    let since = SystemTime::now();
    let lost_at = c.lose_two_of_three(base)?;
    // Their disks are lost too (and the space is needed for the new ones).
    c.wipe("eco-2")?;
    c.wipe("eco-3")?;
    let limit = Duration::from_secs(300 + size_mib / 8);
    let writable = c.wait_writable("eco-1", limit).with_context(|| {
        format!(
            "eco-1 not writable within {limit:?}\n{}",
            c.log_tail("eco-1", 30)
        )
    })?;
    let writable_s = (writable - lost_at).as_secs_f64();
    eprintln!("scale-bench: quorum loss: writable after {writable_s:.1} s");
    let limit = Duration::from_secs(600 + size_mib / 4);
    c.wait_voters(&["eco-1", "eco-4", "eco-5"], limit)
        .with_context(|| {
            format!(
                "not three voters within {limit:?}\n{}",
                c.log_tail("eco-4", 30)
            )
        })?;
    let full_membership_s = lost_at.elapsed().as_secs_f64();
    eprintln!("scale-bench: quorum loss: three voters after {full_membership_s:.1} s");
    let timed = ledger.finish_timed();
    let residual = wal_residual(&timed, &[lost_at]);
    let (mut lost, mut residual_lost) = (0, 0);
    for id in ["eco-1", "eco-4", "eco-5"] {
        let missing = missing_writes(&c.nodes[id].endpoint(), &timed)
            .with_context(|| format!("reading the ledger's keys back from {id}"))?;
        for key in missing {
            if residual.contains(&key) {
                residual_lost += 1;
            } else {
                eprintln!("scale-bench: quorum loss: {id} misses the acknowledged {key}");
                lost += 1;
            }
        }
    }
    let mut timeline = Vec::new();
    for id in ["eco-1", "eco-4", "eco-5"] {
        timeline.extend(events_after(&c.nodes[id].log(), since, id, false));
    }
    timeline.sort_by(|a, b| a.0.total_cmp(&b.0));
    let timeline: Vec<String> = timeline.into_iter().map(|(_, line)| line).collect();
    for line in &timeline {
        eprintln!("scale-bench: quorum loss: {line}");
    }
    let aside = kept_aside_db(&c.nodes["eco-1"].data_dir())?;
    let (survivor_db_read_s, bytes) = cold_read(&aside)?;
    let t = QUORUM_LOSS_TIMEOUT.as_secs_f64();
    let writable_goal_s = t + survivor_db_read_s + MARGIN_S;
    Ok(QuorumLossResult {
        size_mib,
        db_mib,
        quorum_loss_timeout_s: t,
        writable_s,
        full_membership_s,
        survivor_db_read_s,
        survivor_db_mib: bytes as f64 / (1u64 << 20) as f64,
        writable_goal_s,
        acknowledged: timed.acked.len(),
        lost,
        residual_lost,
        goal_met: writable_s <= writable_goal_s && lost == 0,
        timeline,
    })
}

/// The acknowledged writes of `ledger` that `endpoint` does not hold with
/// their value (a linearizable read of the ledger's prefix only).
fn missing_writes(endpoint: &str, ledger: &TimedLedgerResult) -> anyhow::Result<Vec<String>> {
    let present = testkit::wait_until(Duration::from_secs(30), || {
        testkit::etcd::block_on(async {
            let mut c = testkit::etcd::client(endpoint).await?;
            let opts = etcd_client::GetOptions::new().with_prefix();
            let r = tokio::time::timeout(Duration::from_secs(20), c.get("ledger/", Some(opts)))
                .await
                .ok()?
                .ok()?;
            Some(
                r.kvs()
                    .iter()
                    .map(|kv| {
                        (
                            String::from_utf8_lossy(kv.key()).into_owned(),
                            String::from_utf8_lossy(kv.value()).into_owned(),
                        )
                    })
                    .collect::<BTreeMap<String, String>>(),
            )
        })
    })
    .context("no read of the ledger's keys succeeded within 30 s")?;
    Ok(ledger
        .acked
        .iter()
        .filter(|(k, v)| present.get(k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect())
}

/// The database file of the data directory the survivor moved aside
/// when it seeded (`…before-incarnation-2…` beside `data_dir`).
fn kept_aside_db(data_dir: &Path) -> anyhow::Result<PathBuf> {
    let parent = data_dir
        .parent()
        .context("the data directory has no parent")?;
    let aside = std::fs::read_dir(parent)
        .with_context(|| format!("reading {}", parent.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("before-incarnation-2"))
        .with_context(|| format!("no data directory kept aside in {}", parent.display()))?;
    let db = aside.join("member/snap/db");
    anyhow::ensure!(db.is_file(), "{} is not a file", db.display());
    Ok(db)
}

/// Reads `path` once from start to end after dropping its pages from the
/// page cache: seconds and bytes.
fn cold_read(path: &Path) -> anyhow::Result<(f64, u64)> {
    use std::os::fd::AsRawFd;
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: a plain syscall on an open descriptor; its failure only
    // leaves pages cached (the read is then faster than cold).
    let dropped = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if dropped != 0 {
        eprintln!(
            "scale-bench: posix_fadvise(DONTNEED) on {} failed ({dropped}): the read may be warm",
            path.display()
        );
    }
    let started = Instant::now();
    let mut buf = vec![0u8; 8 << 20];
    let mut total = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    Ok((started.elapsed().as_secs_f64(), total))
}

/// One line.
pub fn render(r: &QuorumLossResult) -> String {
    format!(
        "quorum loss at {} MiB (db {:.0} MiB): 2 of 3 replaced empty; writable after {:.1} s (goal <= T {:.0} + one read of the survivor's database {:.1} + {:.0} = {:.1} s), three voters after {:.1} s; {} acknowledged writes, {} lost (+{} of the documented residual): {}\n",
        r.size_mib,
        r.db_mib,
        r.writable_s,
        r.quorum_loss_timeout_s,
        r.survivor_db_read_s,
        MARGIN_S,
        r.writable_goal_s,
        r.full_membership_s,
        r.acknowledged,
        r.lost,
        r.residual_lost,
        if r.goal_met { "met" } else { "MISSED" }
    )
}

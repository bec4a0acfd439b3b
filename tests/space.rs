//! etcd's `NOSPACE` alarm on a real three-instance cluster (127.0.97.x)
//! with the smallest quota etcd takes (16 MiB): a filler key rewritten
//! with large values until etcd refuses writes ("database space
//! exceeded"); eco (the instance beside the leader) compacts, defragments
//! every member one at a time, the leader last, and disarms the alarm;
//! the cluster takes writes again and no acknowledged write is lost.
//!
//! And reclaimable space outside `NOSPACE` (127.0.89.x): every member
//! defragmented once, never while it leads — the leader's turn starts
//! with a leadership handover.

use std::time::{Duration, Instant};

use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::etcd::{client, rt};
use testkit::wait_until;

const QUOTA: u64 = 16 << 20;

/// Puts `key` = `value` through `endpoint`; `Err` with etcd's message.
fn put(endpoint: &str, key: &str, value: Vec<u8>) -> Result<(), String> {
    rt().block_on(async {
        let mut c = client(endpoint).await.ok_or("no client")?;
        tokio::time::timeout(Duration::from_secs(5), c.put(key, value, None))
            .await
            .map_err(|_| "timeout".to_string())?
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

fn get(endpoint: &str, key: &str) -> Option<Vec<u8>> {
    rt().block_on(async {
        let mut c = client(endpoint).await?;
        let r = tokio::time::timeout(Duration::from_secs(5), c.get(key, None))
            .await
            .ok()?
            .ok()?;
        r.kvs().first().map(|kv| kv.value().to_vec())
    })
}

#[test]
fn nospace_is_compacted_defragmented_and_disarmed() {
    let base = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        config: base.config.clone().edit(|config| {
            config.etcd.quota_backend_bytes = QUOTA;
        }),
        ..base
    })
    .expect("cluster");
    c.form_three("127.0.97").expect("three voters");
    let ids = ["eco-1", "eco-2", "eco-3"];
    let endpoint = c.nodes["eco-1"].endpoint();

    // Acknowledged small writes, and a filler rewritten until NOSPACE.
    let mut acked = Vec::new();
    let filler = vec![b'x'; 512 << 10];
    let mut refused = None;
    for i in 0..200 {
        let key = format!("/ledger/{i:04}");
        match put(&endpoint, &key, i.to_string().into_bytes()) {
            Ok(()) => acked.push(key),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
        if let Err(e) = put(&endpoint, "/filler", filler.clone()) {
            refused = Some(e);
            break;
        }
    }
    let refused = refused.expect("the quota was never reached");
    assert!(
        refused.contains("database space exceeded"),
        "refused for another reason: {refused}"
    );
    let full_at = Instant::now();
    eprintln!(
        "space: NOSPACE after {} acknowledged writes: {refused}",
        acked.len()
    );

    // eco brings it back.
    wait_until(Duration::from_secs(90), || {
        put(&endpoint, "/after", b"writable".to_vec()).ok()
    })
    .unwrap_or_else(|| {
        panic!(
            "never writable again\n{}",
            ids.iter()
                .map(|id| c.log_tail(id, 20))
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    eprintln!(
        "space: writable again {:.1} s after NOSPACE",
        full_at.elapsed().as_secs_f64()
    );
    for (i, key) in acked.iter().enumerate() {
        assert_eq!(
            get(&endpoint, key),
            Some(i.to_string().into_bytes()),
            "acknowledged write {key} lost"
        );
    }
    // The governor's steps, in the logs of the instance beside the leader:
    // one compaction, each member defragmented once, the leader last, then
    // the alarm disarmed.
    let logs: String = ids.iter().map(|id| c.nodes[*id].log()).collect();
    let count = |event: &str| logs.matches(&format!("event=\"{event}\"")).count();
    assert!(count("space.compacted") >= 1, "no compaction");
    assert!(
        count("space.defragmented") >= 3,
        "not every member defragmented"
    );
    assert!(count("space.disarmed") >= 1, "never disarmed");
    assert_eq!(count("space.failed"), 0, "a step failed");
    // Each governing instance defragments its own member (the leader's)
    // last, and together they covered every member.
    let mut covered = std::collections::BTreeSet::new();
    for id in ids {
        let names: Vec<String> = c.nodes[id]
            .log()
            .lines()
            .filter(|l| l.contains("event=\"space.defragmented\""))
            .filter_map(|l| l.split(" name=").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .collect();
        if let Some(at) = names.iter().position(|n| n == id) {
            assert!(
                names[at + 1..].iter().all(|n| n == id),
                "{id} defragmented others after its own (leader's) member: {names:?}"
            );
        }
        covered.extend(names);
    }
    assert_eq!(
        covered.into_iter().collect::<Vec<_>>(),
        ids,
        "every member defragmented"
    );
}

/// The `name=` of each `space.defragmented` line of `log`.
fn defragmented_names(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("event=\"space.defragmented\""))
        .filter_map(|l| l.split(" name=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn reclaimable_space_is_defragmented_member_by_member_never_on_the_leader() {
    let base = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        config: base.config.clone().edit(|config| {
            config.etcd.defrag.min_bytes = 1 << 20;
        }),
        ..base
    })
    .expect("cluster");
    c.form_three("127.0.89").expect("three voters");
    let ids = ["eco-1", "eco-2", "eco-3"];
    let endpoint = c.nodes["eco-1"].endpoint();
    // 12 MiB written, then deleted and compacted: most of every member's
    // file is free pages.
    for i in 0..48 {
        put(&endpoint, &format!("/big/{i:03}"), vec![b'x'; 256 << 10]).expect("put");
    }
    rt().block_on(async {
        let mut k = client(&endpoint).await.expect("client");
        let del = etcd_client::DeleteOptions::new().with_prefix();
        let r = k.delete("/big/", Some(del)).await.expect("delete");
        let rev = r.header().expect("header").revision();
        let physical = etcd_client::CompactionOptions::new().with_physical();
        k.compact(rev, Some(physical)).await.expect("compact");
    });
    // A member's Status shows its space in use as of its backend's last
    // commit: a trickle of writes (as any live cluster has) lets the
    // followers' show the compaction.
    let mut n = 0;
    let covered = wait_until(Duration::from_secs(90), || {
        n += 1;
        let _ = put(&endpoint, &format!("/trickle/{}", n % 8), vec![b'y'; 64]);
        let mut all: Vec<String> = ids
            .iter()
            .flat_map(|id| defragmented_names(&c.nodes[*id].log()))
            .collect();
        all.sort();
        all.dedup();
        (all.len() == ids.len()).then_some(all)
    })
    .unwrap_or_else(|| {
        panic!(
            "not every member defragmented\n{}",
            ids.iter()
                .map(|id| c.log_tail(id, 20))
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    assert_eq!(covered, ids, "every member defragmented");
    // The governor is the leader's instance: it never defragments its own
    // member, it hands leadership away first (once: the old leader is then
    // a follower the new leader's instance defragments).
    let mut handovers = 0;
    for id in ids {
        let log = c.nodes[id].log();
        assert!(
            !defragmented_names(&log).iter().any(|n| n == id),
            "{id} defragmented its own (leading) member"
        );
        handovers += log
            .lines()
            .filter(|l| l.contains("event=\"leadership.transferred\"") && l.contains("defragment"))
            .count();
    }
    assert!(
        handovers >= 1,
        "no leadership handover before the leader's turn"
    );
    let logs: String = ids.iter().map(|id| c.nodes[*id].log()).collect();
    assert_eq!(
        logs.matches("event=\"space.failed\"").count(),
        0,
        "a step failed"
    );
    put(&endpoint, "/after", b"writable".to_vec()).expect("writable after the roll");
}

//! etcd's `NOSPACE` alarm on a real three-instance cluster (127.0.97.x)
//! with the smallest quota etcd takes (16 MiB): a filler key rewritten
//! with large values until etcd refuses writes ("database space
//! exceeded"); eco (the instance beside the leader) compacts, defragments
//! every member one at a time, the leader last, and disarms the alarm;
//! the cluster takes writes again and no acknowledged write is lost.

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

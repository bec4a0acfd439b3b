//! Reading the store for the protocol: every `incarnations/<n>` record
//! with its current `V_n` (its `.voters` record), and the newest snapshot
//! with its recorded position. A failed listing or read is `Failed`, never
//! an empty listing (records) or "no snapshot" (snapshots).

use super::facts;
use crate::store::ObjectStore;
use crate::store::record;
use recovery::fenced::{RecordListing, SnapshotListing, StoreFacts};

pub async fn read(store: &dyn ObjectStore, cluster: &str) -> StoreFacts {
    let mut learners = std::collections::BTreeMap::new();
    let records = match record::all(store, cluster).await {
        Ok(all) => {
            let mut out = Vec::new();
            let mut failed = None;
            for (n, r) in &all {
                match record::voters(store, cluster, *n).await {
                    Ok(v) => {
                        if let Some(v) = v.as_ref().filter(|v| v.incarnation == *n) {
                            learners.insert(*n, v.learners.clone());
                        }
                        out.push(facts::seed_record(r, v.as_ref()));
                    }
                    Err(e) => failed = Some(e.to_string()),
                }
            }
            match failed {
                Some(e) => RecordListing::Failed(e),
                None => RecordListing::Complete(out),
            }
        }
        Err(e) => RecordListing::Failed(e.to_string()),
    };
    let snapshots = match crate::snapshot::listing::list(store, cluster).await {
        Ok(listing) => SnapshotListing::Complete(facts::newest_snapshot(&listing.snapshots)),
        Err(e) => SnapshotListing::Failed(e.to_string()),
    };
    if !matches!(records, RecordListing::Complete(_)) {
        learners.clear();
    }
    StoreFacts {
        records,
        snapshots,
        learners,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::store::record::{IncarnationRecord, VotersRecord};

    #[tokio::test]
    async fn records_carry_their_voters_and_a_failing_store_is_failed() {
        let s = MemoryStore::with_page_size(1);
        for n in 1..=2 {
            record::create(
                &s,
                &IncarnationRecord {
                    cluster: "c".into(),
                    incarnation: n,
                    seeder: "a".into(),
                    token: format!("c-{n}-0"),
                    source: "empty".into(),
                    created_unix_ms: 1,
                    seed: None,
                },
                1,
            )
            .await
            .unwrap();
        }
        record::write_voters(
            &s,
            "c",
            &VotersRecord {
                incarnation: 2,
                raft_index: 4,
                voters: vec!["a".into(), "b".into()],
                learners: Vec::new(),
            },
            1,
        )
        .await
        .unwrap();
        let facts = read(&s, "c").await;
        let RecordListing::Complete(records) = facts.records else {
            panic!("complete");
        };
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].voters, ["a", "b"]);
        assert_eq!(facts.snapshots, SnapshotListing::Complete(None));
        s.set_failing(true);
        let failing = read(&s, "c").await;
        assert!(matches!(failing.records, RecordListing::Failed(_)));
        assert!(
            matches!(failing.snapshots, SnapshotListing::Failed(_)),
            "a failed snapshot listing is never \"no snapshot\""
        );
    }
}

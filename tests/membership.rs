//! etcd membership calls against real etcd: learners, promotion, removal,
//! and etcd's refusals classified as waits.

use eco::etcd::members::{self, MembershipError};
use std::time::Duration;
use testkit::etcd::{RawEtcd, client, rt, wait_serving};

fn start_learner(dir: &std::path::Path, name: &str, addr: &str, initial_cluster: &str) -> RawEtcd {
    RawEtcd::start_with(
        &dir.join(name),
        name,
        addr,
        &[
            format!("--initial-cluster={initial_cluster}"),
            "--initial-cluster-state=existing".into(),
        ],
    )
}

#[test]
fn learner_add_promote_remove_and_refusals_are_waits() {
    // A raw etcd, not managed by eco (eco would remove a member that belongs
    // to no instance of its group).
    let dir = tempfile::tempdir().unwrap();
    let _seed_etcd = RawEtcd::start_new(&dir.path().join("seed"), "eco-1", "127.0.4.1");
    wait_serving("http://127.0.4.1:2379", Duration::from_secs(20)).expect("seed serving");
    let t = Duration::from_secs(3);
    let rt = rt();
    rt.block_on(async {
        let mut c = client("http://127.0.4.1:2379").await.expect("client");
        let before = members::list(&mut c, t).await.unwrap();
        assert_eq!(before.len(), 1);
        assert_eq!(before[0].name, "eco-1");

        let (learner, all) = members::add_learner(&mut c, "http://127.0.4.2:2380", t)
            .await
            .unwrap();
        assert!(learner.is_learner && learner.never_started());
        assert_eq!(all.len(), 2);

        // One learner at a time.
        let second = members::add_learner(&mut c, "http://127.0.4.3:2380", t)
            .await
            .unwrap_err();
        assert!(
            matches!(second, MembershipError::TooManyLearners),
            "{second:?}"
        );
        assert!(second.is_wait());

        // Not started, so not in sync: promoting is a wait.
        let early = members::promote(&mut c, learner.id, t).await.unwrap_err();
        assert!(
            matches!(early, MembershipError::LearnerNotReady),
            "{early:?}"
        );

        let initial = "eco-1=http://127.0.4.1:2380,learner=http://127.0.4.2:2380";
        let _etcd = start_learner(dir.path(), "learner", "127.0.4.2", initial);
        let mut promoted = false;
        for _ in 0..100 {
            match members::promote(&mut c, learner.id, t).await {
                Ok(()) => {
                    promoted = true;
                    break;
                }
                Err(e) if e.is_wait() => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => panic!("promote: {e}"),
            }
        }
        assert!(promoted, "learner promoted once in sync");
        let now = members::list(&mut c, t).await.unwrap();
        assert_eq!(now.iter().filter(|m| !m.is_learner).count(), 2);
        assert!(now.iter().any(|m| m.name == "learner"));

        // Right after a promotion etcd may call the removal unsafe: a wait.
        let mut removed = false;
        for _ in 0..100 {
            match members::remove(&mut c, learner.id, t).await {
                Ok(()) => {
                    removed = true;
                    break;
                }
                Err(e) if e.is_wait() => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => panic!("remove: {e}"),
            }
        }
        assert!(removed);
        assert_eq!(members::list(&mut c, t).await.unwrap().len(), 1);
        let gone = members::remove(&mut c, learner.id, t).await.unwrap_err();
        assert!(
            matches!(gone, MembershipError::NotFound(id) if id == learner.id),
            "{gone:?}"
        );
    });
}

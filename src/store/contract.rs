//! The contract every [`ObjectStore`] keeps, as one test suite each
//! implementation runs (`the_contract_holds` in its own module): put, get,
//! head and delete with the sha256 computed on the way; complete,
//! paginated listings in name order; conditional create with exactly one
//! winner whose content the losers read; names checked.

use super::{CreateOutcome, ObjectStore, StoreError, check_name, list_all};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// Runs the whole contract: `store` is empty; `paged` is another empty
/// store of the same kind that lists three objects per page.
pub async fn check(store: Arc<dyn ObjectStore>, paged: Arc<dyn ObjectStore>) {
    put_get_head_delete_with_sha256(&*store).await;
    listing_is_paginated_complete_and_ordered(&*paged).await;
    conditional_create_has_exactly_one_winner(store.clone()).await;
    names_are_checked(&*store).await;
}

async fn put_get_head_delete_with_sha256(s: &dyn ObjectStore) {
    let meta = BTreeMap::from([("revision".to_string(), "7".to_string())]);
    let info = s
        .put("snapshots/a.db", &mut &b"hello"[..], meta.clone())
        .await
        .unwrap();
    assert_eq!(info.size, 5);
    assert_eq!(
        info.sha256,
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    assert_eq!(info.metadata, meta);
    let (got, mut r) = s.get("snapshots/a.db").await.unwrap();
    assert_eq!(got, info);
    let mut content = Vec::new();
    r.read_to_end(&mut content).await.unwrap();
    assert_eq!(content, b"hello");
    assert_eq!(s.head("snapshots/a.db").await.unwrap(), Some(info));
    let replaced = s
        .put("snapshots/a.db", &mut &b"hello!"[..], BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(replaced.size, 6, "a put replaces the object");
    s.delete("snapshots/a.db").await.unwrap();
    assert_eq!(s.head("snapshots/a.db").await.unwrap(), None);
    s.delete("snapshots/a.db").await.unwrap();
    assert!(matches!(
        s.get("snapshots/a.db").await,
        Err(StoreError::NotFound(_))
    ));
}

async fn listing_is_paginated_complete_and_ordered(s: &dyn ObjectStore) {
    for i in (0..10).rev() {
        s.put(&format!("p/{i:02}"), &mut &b"x"[..], BTreeMap::new())
            .await
            .unwrap();
    }
    s.put("q/other", &mut &b"x"[..], BTreeMap::new())
        .await
        .unwrap();
    s.create_if_absent("p/incarnations/0000000001", b"r")
        .await
        .unwrap();
    let first = s.list("p/", None).await.unwrap();
    assert_eq!(first.objects.len(), 3);
    assert!(first.next.is_some(), "more pages follow");
    let all = list_all(s, "p/").await.unwrap();
    let names: Vec<&str> = all.iter().map(|o| o.name.as_str()).collect();
    let mut want: Vec<String> = (0..10).map(|i| format!("p/{i:02}")).collect();
    want.push("p/incarnations/0000000001".into());
    assert_eq!(names, want, "every page, in name order, records included");
    assert!(list_all(s, "none/").await.unwrap().is_empty());
}

/// Sixteen concurrent creators (tasks on the test's runtime).
async fn conditional_create_has_exactly_one_winner(s: Arc<dyn ObjectStore>) {
    let mut tasks = Vec::new();
    for i in 0..16u8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            (i, s.create_if_absent("incarnations/2", &[i]).await.unwrap())
        }));
    }
    let mut winners = Vec::new();
    let mut seen = Vec::new();
    for t in tasks {
        let (i, outcome) = t.await.unwrap();
        match outcome {
            CreateOutcome::Created => winners.push(i),
            CreateOutcome::AlreadyExists(content) => seen.push(content),
        }
    }
    assert_eq!(winners.len(), 1);
    assert!(
        seen.iter().all(|c| c == &vec![winners[0]]),
        "losers read the winner's record"
    );
    let listed = list_all(&*s, "incarnations/").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].size, 1);
}

async fn names_are_checked(s: &dyn ObjectStore) {
    for bad in [
        "", "/abs", "a//b", "../x", "a/./b", ".hidden", "a/.b", "sp ace", "a\\b",
    ] {
        assert!(check_name(bad).is_err(), "{bad:?}");
        assert!(
            s.put(bad, &mut &b"x"[..], BTreeMap::new()).await.is_err(),
            "{bad:?} stored"
        );
    }
    for good in [
        "a",
        "incarnations/3",
        "snapshots/main-0000000001-abc-00000000000000000042.db",
    ] {
        assert!(check_name(good).is_ok(), "{good:?}");
    }
}

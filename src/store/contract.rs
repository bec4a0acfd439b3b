//! The contract every [`ObjectStore`] keeps, as one test suite that each
//! implementation runs: the directory and memory stores in their own unit
//! tests (`the_contract_holds`), the S3 store against real S3
//! implementations in `tests/s3_store.rs`. It is public (and hidden from the
//! docs) only so integration tests can reach it: it is a test suite, its
//! checks `assert!` and panic, and nothing in eco calls it.
//!
//! What it checks: put, get, head and delete with the sha256 computed on
//! the way, for small objects and for one of several multipart parts;
//! that a put whose content fails midway leaves nothing visible (and
//! leaves an older object of the name as it was); complete, paginated
//! listings in name order; conditional create with exactly one winner
//! whose content the losers read; names checked; and, for stores where a
//! test can plant objects behind the store's back ([`Foreign`]), that
//! objects the store did not commit are skipped by listings and never
//! deleted.
//!
//! Every name is under [`CLUSTER`]`/`: a store built for one cluster (S3)
//! refuses anything else.

use super::{CreateOutcome, ObjectStore, StoreError, check_name, list_all, list_all_matching};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

/// The cluster every name of the suite belongs to.
pub const CLUSTER: &str = "c";

/// S3's smallest part; the S3 stores under test use it as their part size.
pub const TEST_PART_SIZE: u64 = 5 * 1024 * 1024;

/// The big object of the suite: 3.5 parts of [`TEST_PART_SIZE`].
pub const BIG_OBJECT: u64 = TEST_PART_SIZE * 7 / 2;

/// Runs the whole contract: `store` is empty; `paged` is another empty
/// store of the same kind that lists three objects per page.
pub async fn check(store: Arc<dyn ObjectStore>, paged: Arc<dyn ObjectStore>) {
    check_all_but_concurrent_create(store.clone(), paged).await;
    conditional_create_has_exactly_one_winner(store).await;
}

/// The contract without its check that concurrent creators of one name
/// have exactly one winner — for an endpoint known to fail it, whose test
/// must then prove that [`ObjectStore::check_at_start`] reports it
/// (s3s-fs checks `If-None-Match` and then writes, without atomicity).
/// Sequential conditional creates are still checked.
pub async fn check_all_but_concurrent_create(
    store: Arc<dyn ObjectStore>,
    paged: Arc<dyn ObjectStore>,
) {
    put_get_head_delete_with_sha256(&*store).await;
    a_big_object_streams_through_with_its_sha256(&*store).await;
    a_failed_put_leaves_nothing_visible(&*store).await;
    listing_is_paginated_complete_and_ordered(&*paged).await;
    a_second_create_reads_the_first(&*store).await;
    names_are_checked(&*store).await;
}

fn n(rest: &str) -> String {
    format!("{CLUSTER}/{rest}")
}

/// Deterministic content of any length, generated as it is read (no
/// buffer of the whole), with its sha256 known once read.
pub struct Generated {
    len: u64,
    pos: u64,
    block: Vec<u8>,
    hasher: Sha256,
    /// Fail with an I/O error once this many bytes were read.
    fail_at: Option<u64>,
}

const BLOCK: u64 = 1 << 20;

impl Generated {
    pub fn new(len: u64) -> Self {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let block = (0..BLOCK)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        Self {
            len,
            pos: 0,
            block,
            hasher: Sha256::new(),
            fail_at: None,
        }
    }

    /// Content that fails (an I/O error) after `at` bytes.
    pub fn failing_at(len: u64, at: u64) -> Self {
        Self {
            fail_at: Some(at),
            ..Self::new(len)
        }
    }

    /// The hex sha256 of what was read so far (all of it, once at the end).
    pub fn sha256(&self) -> String {
        hex::encode(self.hasher.clone().finalize())
    }
}

impl AsyncRead for Generated {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        if me.fail_at.is_some_and(|at| me.pos >= at) {
            return Poll::Ready(Err(std::io::Error::other("the content failed midway")));
        }
        let end = me.fail_at.map_or(me.len, |at| at.min(me.len));
        let offset = me.pos % BLOCK;
        let n = (end - me.pos)
            .min(BLOCK - offset)
            .min(buf.remaining() as u64) as usize;
        if n == 0 {
            return Poll::Ready(Ok(()));
        }
        let start = buf.filled().len();
        buf.put_slice(&me.block[offset as usize..offset as usize + n]);
        // Each block starts with its index, so no two blocks are alike.
        let index = (me.pos / BLOCK).to_le_bytes();
        for (i, b) in buf.filled_mut()[start..].iter_mut().enumerate() {
            let at = offset as usize + i;
            if at >= index.len() {
                break;
            }
            *b = index[at];
        }
        me.hasher.update(&buf.filled()[start..]);
        me.pos += n as u64;
        Poll::Ready(Ok(()))
    }
}

/// Reads a whole stored object; returns its size and sha256.
async fn read_back(s: &dyn ObjectStore, name: &str) -> (u64, String) {
    let (_, mut r) = s.get(name).await.unwrap();
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let got = r.read(&mut buf).await.unwrap();
        if got == 0 {
            break;
        }
        hasher.update(&buf[..got]);
        size += got as u64;
    }
    (size, hex::encode(hasher.finalize()))
}

async fn put_get_head_delete_with_sha256(s: &dyn ObjectStore) {
    let a = n("snapshots/a.db");
    let meta = BTreeMap::from([
        ("revision".to_string(), "7".to_string()),
        ("raft_index".to_string(), "12".to_string()),
        (
            "Odd Key.ü".to_string(),
            " 100% ü, \"quoted\" \n".to_string(),
        ),
    ]);
    let info = s.put(&a, &mut &b"hello"[..], meta.clone()).await.unwrap();
    assert_eq!(info.size, 5);
    assert_eq!(
        info.sha256,
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    assert_eq!(info.metadata, meta);
    let (got, mut r) = s.get(&a).await.unwrap();
    assert_eq!(got, info, "metadata round-trips exactly");
    let mut content = Vec::new();
    r.read_to_end(&mut content).await.unwrap();
    assert_eq!(content, b"hello");
    assert_eq!(s.head(&a).await.unwrap(), Some(info));
    let replaced = s
        .put(&a, &mut &b"hello!"[..], BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(replaced.size, 6, "a put replaces the object");
    assert_eq!(s.head(&a).await.unwrap(), Some(replaced));
    let empty = s
        .put(&n("snapshots/empty"), &mut &b""[..], BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(empty.size, 0);
    assert_eq!(read_back(s, &n("snapshots/empty")).await.0, 0);
    s.delete(&n("snapshots/empty")).await.unwrap();
    s.delete(&a).await.unwrap();
    assert_eq!(s.head(&a).await.unwrap(), None);
    s.delete(&a).await.unwrap();
    assert!(matches!(s.get(&a).await, Err(StoreError::NotFound(_))));
}

async fn a_big_object_streams_through_with_its_sha256(s: &dyn ObjectStore) {
    let big = n("snapshots/big.db");
    let mut content = Generated::new(BIG_OBJECT);
    let meta = BTreeMap::from([("revision".to_string(), "9".to_string())]);
    let info = s.put(&big, &mut content, meta.clone()).await.unwrap();
    assert_eq!(info.size, BIG_OBJECT);
    assert_eq!(
        info.sha256,
        content.sha256(),
        "the sha256 computed on the way"
    );
    assert_eq!(info.metadata, meta);
    assert_eq!(s.head(&big).await.unwrap(), Some(info.clone()));
    assert_eq!(read_back(s, &big).await, (BIG_OBJECT, info.sha256.clone()));
    let listed = list_all(s, &n("snapshots/")).await.unwrap();
    assert_eq!(listed, vec![info]);
    s.delete(&big).await.unwrap();
    assert!(list_all(s, &n("snapshots/")).await.unwrap().is_empty());
}

async fn a_failed_put_leaves_nothing_visible(s: &dyn ObjectStore) {
    let small = n("failed/small");
    let mut content = Generated::failing_at(1000, 100);
    assert!(s.put(&small, &mut content, BTreeMap::new()).await.is_err());
    assert_eq!(s.head(&small).await.unwrap(), None);
    assert!(matches!(s.get(&small).await, Err(StoreError::NotFound(_))));
    // Failing after more than one part (a multipart upload under way),
    // over an older object of the name, which stays as it was.
    let kept = n("failed/kept");
    let older = s
        .put(&kept, &mut &b"older"[..], BTreeMap::new())
        .await
        .unwrap();
    let mut content = Generated::failing_at(BIG_OBJECT, TEST_PART_SIZE * 3 / 2);
    assert!(s.put(&kept, &mut content, BTreeMap::new()).await.is_err());
    assert_eq!(s.head(&kept).await.unwrap(), Some(older.clone()));
    assert_eq!(read_back(s, &kept).await, (5, older.sha256.clone()));
    let listed = list_all(s, &n("failed/")).await.unwrap();
    assert_eq!(listed, vec![older], "only the complete object is listed");
    s.delete(&kept).await.unwrap();
}

async fn listing_is_paginated_complete_and_ordered(s: &dyn ObjectStore) {
    for i in (0..10).rev() {
        s.put(&n(&format!("p/{i:02}")), &mut &b"x"[..], BTreeMap::new())
            .await
            .unwrap();
    }
    s.put(&n("q/other"), &mut &b"x"[..], BTreeMap::new())
        .await
        .unwrap();
    s.create_if_absent(&n("p/incarnations/0000000001"), b"r")
        .await
        .unwrap();
    let first = s.list(&n("p/"), None).await.unwrap();
    assert_eq!(first.objects.len(), 3);
    assert!(first.next.is_some(), "more pages follow");
    let all = list_all(s, &n("p/")).await.unwrap();
    let names: Vec<&str> = all.iter().map(|o| o.name.as_str()).collect();
    let mut want: Vec<String> = (0..10).map(|i| n(&format!("p/{i:02}"))).collect();
    want.push(n("p/incarnations/0000000001"));
    assert_eq!(names, want, "every page, in name order, records included");
    let record = &all[10];
    assert_eq!(record.size, 1);
    assert_eq!(record.sha256, hex::encode(Sha256::digest(b"r")));
    assert!(list_all(s, &n("none/")).await.unwrap().is_empty());
    // Filtered by name: only the kept names, over every page.
    let odd = list_all_matching(s, &n("p/"), &|name: &str| name.ends_with(['1', '3', '5']))
        .await
        .unwrap();
    let names: Vec<&str> = odd.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        [
            n("p/01"),
            n("p/03"),
            n("p/05"),
            n("p/incarnations/0000000001")
        ]
    );
}

async fn a_second_create_reads_the_first(s: &dyn ObjectStore) {
    let name = n("incarnations/1");
    assert_eq!(
        s.create_if_absent(&name, b"first").await.unwrap(),
        CreateOutcome::Created
    );
    assert_eq!(
        s.create_if_absent(&name, b"second").await.unwrap(),
        CreateOutcome::AlreadyExists(b"first".to_vec())
    );
    let info = s.head(&name).await.unwrap().unwrap();
    assert_eq!(info.sha256, hex::encode(Sha256::digest(b"first")));
    assert_eq!(info.size, 5);
}

/// Sixteen concurrent creators (tasks on the test's runtime).
async fn conditional_create_has_exactly_one_winner(s: Arc<dyn ObjectStore>) {
    let name = n("incarnations/2");
    let mut tasks = Vec::new();
    for i in 0..16u8 {
        let s = s.clone();
        let name = name.clone();
        tasks.push(tokio::spawn(async move {
            (i, s.create_if_absent(&name, &[i]).await.unwrap())
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
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert!(
        seen.iter().all(|c| c == &vec![winners[0]]),
        "losers read the winner's record"
    );
    let listed = list_all(&*s, &n("incarnations/2")).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].size, 1);
    let (_, mut r) = s.get(&name).await.unwrap();
    let mut content = Vec::new();
    r.read_to_end(&mut content).await.unwrap();
    assert_eq!(content, vec![winners[0]]);
}

async fn names_are_checked(s: &dyn ObjectStore) {
    for bad in [
        "",
        "/abs",
        "a//b",
        "../x",
        "a/./b",
        ".hidden",
        "a/.b",
        "sp ace",
        "a\\b",
        "c/.upload/x",
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

/// Raw access to a store's medium, behind the store's back: plants objects
/// the store did not commit.
#[async_trait::async_trait]
pub trait Foreign: Send + Sync {
    /// Plants objects eco did not write under `c/foreign/`: at least one
    /// whose key is not an object name and one with a valid name but
    /// without the store's metadata. Returns the valid names planted.
    async fn plant(&self) -> Vec<String>;
    /// How many of the planted objects are still there.
    async fn still_there(&self) -> usize;
    /// How many were planted.
    fn planted(&self) -> usize;
}

/// Objects the store did not commit are skipped by listings (which still
/// succeed), are neither readable nor headed as objects, and survive
/// everything the store does around them.
pub async fn check_foreign(s: &dyn ObjectStore, foreign: &dyn Foreign) {
    let ours = s
        .put(&n("foreign/ours.db"), &mut &b"x"[..], BTreeMap::new())
        .await
        .unwrap();
    let valid = foreign.plant().await;
    assert_eq!(foreign.still_there().await, foreign.planted());
    let listed = list_all(s, &n("foreign/")).await.unwrap();
    assert_eq!(listed, vec![ours.clone()], "foreign objects are not listed");
    let everything = list_all(s, &n("")).await.unwrap();
    assert!(everything.contains(&ours));
    assert!(everything.iter().all(|o| !valid.contains(&o.name)));
    for name in &valid {
        assert_eq!(s.head(name).await.unwrap(), None, "{name}");
        assert!(
            matches!(s.get(name).await, Err(StoreError::NotFound(_))),
            "{name}"
        );
    }
    s.delete(&ours.name).await.unwrap();
    assert!(list_all(s, &n("foreign/")).await.unwrap().is_empty());
    assert_eq!(
        foreign.still_there().await,
        foreign.planted(),
        "foreign objects are never deleted"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::dir::DirStore;
    use std::path::PathBuf;

    #[tokio::test]
    async fn generated_content_is_deterministic_and_fails_where_told() {
        let mut a = Vec::new();
        let mut g = Generated::new(3 * BLOCK + 5);
        g.read_to_end(&mut a).await.unwrap();
        assert_eq!(a.len() as u64, 3 * BLOCK + 5);
        assert_eq!(g.sha256(), hex::encode(Sha256::digest(&a)));
        let mut b = Vec::new();
        Generated::new(3 * BLOCK + 5)
            .read_to_end(&mut b)
            .await
            .unwrap();
        assert_eq!(a, b);
        assert_ne!(a[..BLOCK as usize], a[BLOCK as usize..2 * BLOCK as usize]);
        let mut c = Vec::new();
        let err = Generated::failing_at(100, 10).read_to_end(&mut c).await;
        assert!(err.is_err());
        assert_eq!(c.len(), 10);
    }

    /// Files in a directory store that no put wrote.
    struct DirForeign(PathBuf);

    const DIR_FOREIGN: [&str; 4] = [
        "c/foreign/no-info.db",
        "c/foreign/sp ace.db",
        "c/foreign/.hidden/x.db",
        "c/foreign/.tmp-partial.db.1.2",
    ];

    #[async_trait::async_trait]
    impl Foreign for DirForeign {
        async fn plant(&self) -> Vec<String> {
            for f in DIR_FOREIGN {
                let p = self.0.join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, b"not eco's").unwrap();
            }
            vec!["c/foreign/no-info.db".into()]
        }
        async fn still_there(&self) -> usize {
            DIR_FOREIGN
                .iter()
                .filter(|f| self.0.join(f).is_file())
                .count()
        }
        fn planted(&self) -> usize {
            DIR_FOREIGN.len()
        }
    }

    #[tokio::test]
    async fn the_directory_store_skips_and_keeps_foreign_files() {
        let d = tempfile::tempdir().unwrap();
        check_foreign(
            &DirStore::new(d.path().into()),
            &DirForeign(d.path().into()),
        )
        .await;
    }
}

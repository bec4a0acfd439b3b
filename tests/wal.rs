//! Reading a real etcd's write-ahead log after `kill -9`.

use eco::etcd::wal;
use std::path::Path;
use std::time::Duration;
use testkit::etcd::{self, RawEtcd, client, rt, wait_serving};
use testkit::wait_until;

/// A new one-member etcd on `address` with a snapshot every 100 applied
/// entries (so the WAL has snapshot records among the entries and hard
/// states); killed when dropped, whatever happens.
fn start_etcd(data_dir: &Path, address: &str) -> RawEtcd {
    RawEtcd::start_with(
        data_dir,
        "wal-1",
        address,
        &[
            format!("--initial-cluster=wal-1=http://{address}:2380"),
            "--initial-cluster-token=wal-test".into(),
            "--snapshot-count=100".into(),
        ],
    )
}

/// What etcd says about itself after all writes were acknowledged.
#[derive(Debug)]
struct Said {
    member_id: u64,
    cluster_id: u64,
    raft_term: u64,
    raft_index: u64,
    version: String,
}

/// Puts `count` keys of `size` bytes each, asks for Status and the member
/// list, then makes one more write.
///
/// etcd before 3.5.5 (3.4.21) answers a write on a one-member cluster
/// before its WAL record is synced (etcd-io/etcd#14370), so right after
/// the last acknowledged write the WAL may not hold it yet (seen with 3.5.1
/// and 1 MB values: WAL commit 83, Status 84). etcd's raft loop saves one
/// batch before it hands the next to be applied, so the acknowledgement of
/// the write after Status means everything Status counted is in the WAL.
fn write_and_ask(endpoint: &str, count: usize, size: usize) -> Said {
    let t = Duration::from_secs(5);
    rt().block_on(async {
        let mut c = client(endpoint).await.expect("client");
        for n in 0..count {
            let value = format!("value-{n}-").repeat(size / 8 + 1);
            let put = c.put(format!("key/{n:04}"), &value[..size], None);
            tokio::time::timeout(t, put)
                .await
                .expect("put in time")
                .expect("put");
        }
        let status = tokio::time::timeout(t, c.status())
            .await
            .expect("status in time")
            .expect("status");
        let header = status.header().expect("header");
        let members = tokio::time::timeout(t, c.member_list())
            .await
            .expect("member list in time")
            .expect("member list");
        let ids: Vec<u64> = members.members().iter().map(|m| m.id()).collect();
        assert_eq!(ids, vec![header.member_id()]);
        let barrier = c.put("barrier", "", None);
        tokio::time::timeout(t, barrier)
            .await
            .expect("put in time")
            .expect("put");
        Said {
            member_id: header.member_id(),
            cluster_id: header.cluster_id(),
            raft_term: status.raft_term(),
            raft_index: status.raft_index(),
            version: status.version().to_string(),
        }
    })
}

/// `kill -9`, then waits (at most 20 s) for etcd to be gone.
fn kill_9(etcd: &mut RawEtcd, data_dir: &Path) {
    etcd.0.kill().expect("kill -9 etcd");
    wait_until(Duration::from_secs(20), || etcd.0.try_wait().ok().flatten()).expect("etcd exits");
    assert!(etcd::pids_on(data_dir).is_empty());
}

fn count_files(dir: &Path, ext: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == ext))
                .count()
        })
        .unwrap_or(0)
}

/// Writes, kills, reads the WAL and checks it against what etcd said.
fn check(address: &str, count: usize, size: usize) -> wal::WalPosition {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("etcd");
    let mut etcd = start_etcd(&data_dir, address);
    let endpoint = format!("http://{address}:2379");
    wait_serving(&endpoint, Duration::from_secs(20)).expect("etcd serving");
    let said = write_and_ask(&endpoint, count, size);
    kill_9(&mut etcd, &data_dir);

    let position = wal::read_position(&data_dir).expect("read the WAL");
    eprintln!(
        "etcd {}: {said:?}; {} .snap file(s); {position:?}",
        said.version,
        count_files(&data_dir.join("member/snap"), "snap")
    );
    assert_eq!(position.member_id, said.member_id);
    assert_eq!(position.cluster_id, said.cluster_id);
    assert_eq!(position.term, said.raft_term);
    assert!(
        position.commit_index >= said.raft_index,
        "WAL commit {} < status raft index {}",
        position.commit_index,
        said.raft_index
    );
    assert!(position.last_index >= position.commit_index);
    assert!(position.commit_index >= count as u64, "{position:?}");
    assert_eq!(
        position.files,
        count_files(&data_dir.join("member/wal"), "wal")
    );
    position
}

#[test]
fn wal_of_a_killed_etcd_holds_its_ids_and_commit_index() {
    let position = check("127.0.9.1", 300, 20);
    assert_eq!(position.files, 1);
}

/// More than 64 MB of entries: etcd cuts a second file, which starts with
/// the CRC of the first.
#[test]
fn wal_spanning_two_files_reads_through_the_cut() {
    let position = check("127.0.9.2", 80, 1 << 20);
    assert_eq!(position.files, 2);
}

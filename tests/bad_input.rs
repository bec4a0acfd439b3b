//! Bad input ends in one clear error naming the cause, and nothing in the
//! data directory is lost.

use std::time::Duration;
use testkit::etcd::{self, wait_serving, write};
use testkit::instance::Instance;
use testkit::{eco_bin, wait_until};

fn last_error_line(i: &Instance) -> String {
    i.log()
        .lines()
        .rev()
        .find(|l| l.starts_with("eco: error:") || l.starts_with("eco: "))
        .unwrap_or("")
        .to_string()
}

#[test]
fn missing_etcd_binary() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.1");
    let bin = etcd::bin_dir();
    i.configure(|c| {
        assert_eq!(
            c.config().etcd.etcd_bin,
            Some(bin.join("etcd")),
            "{}/etcd not in config",
            bin.display()
        );
        c.etcd_bin("/nonexistent/bin/etcd")
    });
    i.start();
    assert_eq!(i.wait_exit(Duration::from_secs(10)), Some(1));
    let line = last_error_line(&i);
    assert!(
        line.contains("etcd not found") && line.contains("/nonexistent/bin/etcd"),
        "{line}"
    );
}

#[test]
fn unwritable_data_dir() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.2");
    std::fs::write(i.dir.path().join("blocker"), b"a file, not a directory").unwrap();
    i.configure(|c| {
        assert_eq!(
            c.config().etcd.data_dir,
            std::path::Path::new("data/etcd"),
            "data_dir = \"data/etcd\" not in config"
        );
        c.data_dir("blocker/etcd")
    });
    i.start();
    assert_eq!(i.wait_exit(Duration::from_secs(10)), Some(1));
    let line = last_error_line(&i);
    assert!(
        line.contains("data directory") && line.contains("blocker"),
        "{line}"
    );
}

#[test]
fn port_in_use() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.3");
    let _held = std::net::TcpListener::bind("127.0.3.3:2380").unwrap();
    i.start();
    assert_eq!(i.wait_exit(Duration::from_secs(10)), Some(1));
    let line = last_error_line(&i);
    assert!(
        line.contains("127.0.3.3:2380") && line.contains("etcd.peer_port"),
        "{line}"
    );
}

#[test]
fn malformed_state_file_keeps_the_data() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.4");
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(write(&i.endpoint(), "precious", "yes"));
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(15)), Some(0));

    let wal_before: Vec<_> = std::fs::read_dir(i.data_dir().join("member/wal"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    std::fs::write(i.state_file(), b"{\"format\": 1, \"cluster_na").unwrap();
    i.start();
    assert_eq!(i.wait_exit(Duration::from_secs(10)), Some(1));
    let line = last_error_line(&i);
    assert!(
        line.contains("malformed") && line.contains("eco-state.json"),
        "{line}"
    );
    let wal_after: Vec<_> = std::fs::read_dir(i.data_dir().join("member/wal"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(wal_before, wal_after, "data untouched");
}

#[test]
fn malformed_group_file_at_start() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.5");
    std::fs::write(i.dir.path().join("group.toml"), "[[instance]\nid = ").unwrap();
    i.start();
    assert_eq!(i.wait_exit(Duration::from_secs(10)), Some(1));
    let line = last_error_line(&i);
    assert!(
        line.contains("group file") && line.contains("group.toml"),
        "{line}"
    );
}

#[test]
fn malformed_group_file_while_running_keeps_the_last_good_group() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.6");
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    std::fs::write(i.dir.path().join("group.toml"), "[[instance]\nbroken").unwrap();
    let logged = wait_until(Duration::from_secs(5), || {
        i.log()
            .contains("keeping the last good group")
            .then_some(())
    });
    assert!(logged.is_some(), "error logged");
    assert!(
        write(&i.endpoint(), "still", "serving"),
        "etcd keeps serving"
    );
    assert!(
        i.process.as_mut().unwrap().try_wait().unwrap().is_none(),
        "eco still running"
    );
}

#[test]
fn data_without_state_is_refused_not_overwritten() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.7");
    i.start();
    let cluster = wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(15)), Some(0));
    std::fs::rename(i.state_file(), i.dir.path().join("state.bak")).unwrap();
    i.start();
    let refused = wait_until(Duration::from_secs(10), || {
        i.log().contains("not starting etcd").then_some(())
    });
    assert!(refused.is_some(), "refusal logged:\n{}", i.log());
    assert!(i.etcd_pids().is_empty(), "etcd not started");
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(10)), Some(0));
    // Put the state back: the same cluster comes back with its data.
    std::fs::rename(i.dir.path().join("state.bak"), i.state_file()).unwrap();
    i.start();
    assert_eq!(
        wait_serving(&i.endpoint(), Duration::from_secs(20)),
        Some(cluster)
    );
}

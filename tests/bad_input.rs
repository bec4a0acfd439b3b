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

#[test]
fn a_second_eco_on_the_same_data_directory_exits_naming_the_first() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.9");
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    let etcd_before = i.etcd_pids();
    assert_eq!(etcd_before.len(), 1, "one etcd");
    // The same instance and data directory, every port different.
    let second = i.settings.clone().edit(|c| {
        c.etcd.client_port = 12379;
        c.etcd.peer_port = 12380;
        c.api.port = 12390;
        c.gossip.port = 17946;
    });
    let config = i.dir.path().join("second.toml");
    second.write(&config).unwrap();
    let log = i.dir.path().join("second.log");
    let mut child = testkit::process::EcoRun {
        eco: &eco_bin!(),
        config: &config,
        instance_id: "eco-1",
        log: &log,
        netns: None,
        die_with_parent: false,
        env: &[],
    }
    .spawn()
    .unwrap();
    let exited = testkit::process::wait_exit(&mut child, Duration::from_secs(10));
    if !exited {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(exited, "the second eco exits at once");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("another eco already runs")
            && text.contains(&format!("pid {}", i.pid()))
            && text.contains("eco.lock"),
        "{text}"
    );
    // The first never noticed.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(i.etcd_pids(), etcd_before, "the first's etcd untouched");
    assert!(write(&i.endpoint(), "still", "serving"));
}

/// Opens `n` TCP connections to `to` from `from` and sends nothing.
fn idle_connections(from: &str, to: std::net::SocketAddr, n: usize) -> Vec<std::net::TcpStream> {
    let mut held = Vec::new();
    for _ in 0..n {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket
            .bind(&std::net::SocketAddr::new(from.parse().unwrap(), 0).into())
            .unwrap();
        if socket
            .connect_timeout(&to.into(), Duration::from_secs(1))
            .is_ok()
        {
            held.push(socket.into());
        }
    }
    held
}

fn get(from: &str, url_path: &str, to: std::net::SocketAddr) -> Option<String> {
    use std::io::{Read, Write};
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket
        .bind(&std::net::SocketAddr::new(from.parse().ok()?, 0).into())
        .ok()?;
    socket
        .connect_timeout(&to.into(), Duration::from_secs(2))
        .ok()?;
    let mut s: std::net::TcpStream = socket.into();
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    write!(
        s,
        "GET {url_path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn open_descriptors(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn idle_connections_cannot_starve_the_api_or_the_control_loop_and_shutdown_is_bounded() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.10");
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    let api: std::net::SocketAddr = "127.0.3.10:2390".parse().unwrap();
    let before = open_descriptors(i.pid());
    // 300 idle connections from one address, then 300 from another.
    let mut held = idle_connections("127.0.3.11", api, 300);
    held.extend(idle_connections("127.0.3.12", api, 300));
    std::thread::sleep(Duration::from_millis(500));
    let during = open_descriptors(i.pid());
    assert!(
        during <= before + 128 + 8,
        "the API holds its own budget: {before} descriptors before, {during} with 600 idle connections"
    );
    // A client from a third address is served at once.
    let answer = get("127.0.3.13", "/healthz", api).unwrap_or_default();
    assert!(
        answer.contains("200 OK") && answer.contains("ok"),
        "{answer:?}"
    );
    // The control loop is untouched: etcd serves, nothing ran out of files
    // (a write asked for until it lands, 10 s at most: each ask is bounded
    // by 2 s, which a loaded CI machine has exceeded).
    assert!(
        wait_until(Duration::from_secs(10), || write(
            &i.endpoint(),
            "during",
            "flood"
        )
        .then_some(()))
        .is_some(),
        "etcd writable during the flood"
    );
    assert!(!i.log().contains("Too many open files"), "{}", i.log());
    // Idle connections are closed by the header timeout.
    let closed = wait_until(Duration::from_secs(15), || {
        (open_descriptors(i.pid()) <= before + 8).then_some(())
    });
    assert!(
        closed.is_some(),
        "idle connections closed after the header timeout"
    );
    drop(held);

    // SIGTERM with a request half sent: eco exits promptly.
    let mut half = std::net::TcpStream::connect(api).unwrap();
    std::io::Write::write_all(&mut half, b"GET /status HTTP/1.1\r\nHost: x\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let asked = std::time::Instant::now();
    i.signal(libc::SIGTERM);
    let code = i.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "clean exit");
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "exit took {:?} with a half-sent request",
        asked.elapsed()
    );
    drop(half);
}

#[test]
fn idle_connections_from_eight_addresses_leave_room_for_health_checks() {
    let mut i = Instance::new(eco_bin!(), "127.0.3.20");
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    let api: std::net::SocketAddr = "127.0.3.20:2390".parse().unwrap();
    // Every source's share (16) from eight addresses: the whole budget
    // (128), held by connections that send nothing.
    let mut held = Vec::new();
    for n in 21..=28 {
        held.extend(idle_connections(&format!("127.0.3.{n}"), api, 16));
    }
    assert_eq!(held.len(), 128, "the budget is full of idle connections");
    std::thread::sleep(Duration::from_millis(200));
    // A health check from elsewhere, as a probe or a load balancer sends
    // it, is answered every time (ready or not, it gets an answer).
    for attempt in 0..24 {
        let answer = get("127.0.3.29", "/readyz", api).unwrap_or_default();
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 503"),
            "health check {attempt} got {answer:?}"
        );
    }
    assert!(
        i.log().contains("closing the connection idle the longest"),
        "{}",
        i.log()
    );
    drop(held);
}

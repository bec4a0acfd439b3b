//! systemd's readiness protocol on a real eco and etcd: with
//! `NOTIFY_SOCKET` (a datagram socket this test binds, as systemd does for
//! a `Type=notify` unit), `READY=1` arrives only once the member is started
//! and healthy, `STATUS=` lines say what eco does next and why, and
//! `STOPPING=1` comes with SIGTERM. Only eco speaks: etcd, which sends
//! `READY=1` of its own when it finds `NOTIFY_SOCKET`, does not get it.

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};
use testkit::eco_bin;
use testkit::etcd::read;
use testkit::instance::Instance;

#[test]
fn ready_is_sent_once_the_member_serves_and_stopping_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut i = Instance::new(eco_bin!(), "127.0.91.1");
    i.env.push((
        "NOTIFY_SOCKET".into(),
        socket_path.to_string_lossy().into_owned(),
    ));
    i.start();
    let mut statuses = Vec::new();
    let mut ready_at = None;
    let mut readies = 0;
    let until = Instant::now() + Duration::from_secs(60);
    let mut buf = [0u8; 4096];
    while ready_at.is_none() && Instant::now() < until {
        let Ok(n) = socket.recv(&mut buf) else {
            continue;
        };
        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
        for line in text.lines() {
            if let Some(s) = line.strip_prefix("STATUS=") {
                statuses.push(s.to_string());
            }
            if line == "READY=1" {
                readies += 1;
                // The member must serve at the moment READY=1 arrives.
                ready_at = Some(read(&i.endpoint(), "health").is_some());
            }
        }
    }
    assert_eq!(
        ready_at,
        Some(true),
        "READY=1 arrived while the member served; statuses: {statuses:?}\n{}",
        i.log()
    );
    assert!(
        statuses
            .first()
            .is_some_and(|s| s.starts_with("starting: ")),
        "the first status is the start: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| s.contains(" — ")),
        "every status has its reason: {statuses:?}"
    );
    i.signal(libc::SIGTERM);
    let mut stopping = false;
    let until = Instant::now() + Duration::from_secs(30);
    while !stopping && Instant::now() < until {
        if let Ok(n) = socket.recv(&mut buf) {
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            readies += text.lines().filter(|l| *l == "READY=1").count();
            stopping = text.lines().any(|l| l == "STOPPING=1");
        }
    }
    assert!(stopping, "STOPPING=1 on SIGTERM");
    assert_eq!(readies, 1, "READY=1 once, from eco alone (not from etcd)");
    assert_eq!(i.wait_exit(Duration::from_secs(30)), Some(0));
}

//! A join that keeps failing, on real processes: the instance's etcd
//! restarts with a growing back-off (not as often as the planner asks), its
//! leftover data directory is never moved aside, and `/status` (and the
//! `join.failing` event) say why, in etcd's words and eco's:
//!
//! - the peers reject its certificate (generated TLS without `127.0.0.1`
//!   among the names, on loopback where peer connections come from it):
//!   named as such, with the `extra_names` to add (127.0.27.x);
//! - its peer port is unreachable (TCP to port 2380 dropped between
//!   network namespaces; gossip and the client port pass): etcd's
//!   discovery fails, and the status says to check the peer port
//!   (10.28.0.x).

use std::time::Duration;
use testkit::cluster::{Cluster, Network, Options};
use testkit::eco_bin;
use testkit::wait_until;

/// `/status` of `id` as JSON, `None` while it does not answer.
fn status(c: &Cluster, id: &str) -> Option<serde_json::Value> {
    let api: std::net::SocketAddr = c.nodes[id].api().parse().ok()?;
    let (code, body) = testkit::etcd::rt()
        .block_on(eco::api::status_client::get(
            api,
            "/status",
            Duration::from_secs(3),
        ))
        .ok()?;
    (code == 200).then(|| serde_json::from_slice(&body).ok())?
}

/// The directories moved aside beside `id`'s data directory.
fn moved_aside(c: &Cluster, id: &str) -> usize {
    let data = c.nodes[id].data_dir();
    let (Some(parent), Some(name)) = (data.parent(), data.file_name()) else {
        return 0;
    };
    let prefix = format!("{}.moved-", name.to_string_lossy());
    std::fs::read_dir(parent)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .count()
        })
        .unwrap_or(0)
}

/// `id` fails to join for `watch`: its problem says `expect`, its etcd was
/// started at most `max_starts` times, and nothing was moved aside.
fn fails_to_join_and_backs_off(
    c: &Cluster,
    id: &str,
    expect: &[&str],
    watch: Duration,
    max_starts: u64,
) {
    let problem = wait_until(Duration::from_secs(60), || {
        status(c, id)?["join_problem"].as_str().map(str::to_string)
    })
    .unwrap_or_else(|| panic!("{id} never said why its join fails\n{}", c.log_tail(id, 40)));
    for needle in expect {
        assert!(problem.contains(needle), "{needle:?} not in: {problem}");
    }
    std::thread::sleep(watch);
    let s = status(c, id).expect("status");
    let starts = s["process"]["starts"].as_u64().expect("starts");
    eprintln!(
        "failing join: {id}: {starts} etcd starts, {} moved aside; {problem}",
        moved_aside(c, id)
    );
    assert!(
        starts <= max_starts,
        "{id}'s etcd was started {starts} times: the back-off does not hold"
    );
    assert_eq!(
        moved_aside(c, id),
        0,
        "a start that never joined holds nothing to move aside"
    );
    let events = testkit::process::eco_lines(&c.nodes[id].log()).join("\n");
    assert!(events.contains("join.failing"), "no join.failing event");
    assert!(
        events.contains("etcd.exited") && events.contains("reason="),
        "etcd.exited carries etcd's reason"
    );
}

#[test]
fn a_member_whose_certificate_the_peers_reject_backs_off_and_says_why() {
    let mut c = Cluster::new(Options {
        generated_tls: true,
        loopback_source_name: false,
        ..Options::integration(eco_bin!())
    })
    .expect("cluster");
    let ids = ["eco-1", "eco-2"];
    for (i, id) in ids.iter().enumerate() {
        c.add(id, &format!("127.0.27.{}", i + 1)).expect("add");
    }
    c.set_group(&ids).expect("group");
    for id in ids {
        c.start(id).expect("start");
    }
    // eco-1 forms the cluster alone; eco-2's etcd is rejected by it.
    fails_to_join_and_backs_off(
        &c,
        "eco-2",
        &[
            "reject this member's certificate",
            "127.0.0.1",
            "etcd.tls.generated.extra_names",
        ],
        Duration::from_secs(20),
        12,
    );
}

#[test]
fn a_member_whose_peer_port_is_unreachable_backs_off_and_says_why() {
    if let Some(why) = testkit::cluster::partitions_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut c = Cluster::new(Options {
        network: Network::Namespaces,
        net: 28,
        ..Options::integration(eco_bin!())
    })
    .expect("cluster");
    let first = c.add_next(None).expect("add");
    c.set_group(std::slice::from_ref(&first)).expect("group");
    c.start(&first).expect("start");
    c.wait_voters(&[first.as_str()], Duration::from_secs(60))
        .expect("one voter");
    let second = c.add_next(None).expect("add");
    c.drop_port(&[second.as_str()], &[first.as_str()], 2380)
        .expect("drop the peer port");
    c.set_group(&[first.clone(), second.clone()])
        .expect("group");
    c.start(&second).expect("start");
    fails_to_join_and_backs_off(
        &c,
        &second,
        &["etcd exits before it joins", "peer port is reachable"],
        Duration::from_secs(20),
        12,
    );
    c.heal();
    c.wait_voters(&[first.as_str(), second.as_str()], Duration::from_secs(120))
        .expect("it joins once the port is open");
}

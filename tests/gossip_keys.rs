//! Gossip keys rotated on a running cluster, with real eco and etcd
//! processes: three instances under a write load have their key files
//! rewritten (atomically, mode 0600) in the documented three steps — the
//! new key added second everywhere, then moved first everywhere, then the
//! old key removed — each step waited for on every instance
//! (`eco_gossip_keyring_changes`). Throughout, no instance sees another go
//! down in gossip (`times_down` of `/status`), no datagram between them
//! fails to open (`eco_gossip_datagrams_rejected`), the etcd membership
//! does not change and no acknowledged write is lost. Datagrams sealed by
//! the test show which keys open: the new key before step 2, the old key
//! until step 3 and not after. A gossip node holding only a key the group
//! does not have is rejected and never seen.

use gossip::wire::Frame;
use gossip::{Gossip, GossipConfig, Keyring, PeerState};
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};
use testkit::aws::http_request;
use testkit::cluster::{Cluster, key_pattern};
use testkit::eco_bin;
use testkit::ledger::{Ledger, lost_writes};
use testkit::wait_until;

const NET: &str = "127.0.41";
const IDS: [&str; 3] = ["eco-1", "eco-2", "eco-3"];
const GOSSIP_PORT: u16 = 7946;
/// Two of eco's key file re-read periods (2 s), and a little more: a
/// change is looked at by then.
const KEY_FILE_LOOKED_AT: Duration = Duration::from_millis(4_500);
/// A step shows on every instance within the key file's re-read period
/// (2 s) and a scrape; this bounds it generously.
const STEP_LIMIT: Duration = Duration::from_secs(10);

fn old_key() -> String {
    key_pattern(37, 11)
}

fn new_key() -> String {
    key_pattern(53, 7)
}

fn foreign_key() -> String {
    key_pattern(71, 3)
}

fn key_bytes(hex_key: &str) -> [u8; 32] {
    hex::decode(hex_key).unwrap().try_into().unwrap()
}

fn gossip_addr(n: usize) -> SocketAddr {
    format!("{NET}.{n}:{GOSSIP_PORT}").parse().unwrap()
}

/// Replaces the key file of `id` as an operator should: a new file (mode
/// 0600) in the same directory, renamed over the old one.
fn write_keys(c: &Cluster, id: &str, keys: &[String]) {
    let dir = &c.nodes[id].dir;
    let tmp = dir.join(".gossip.keys.tmp");
    std::fs::write(
        &tmp,
        format!("# rotated by the test\n{}\n", keys.join("\n")),
    )
    .unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::rename(&tmp, key_file(dir)).unwrap();
}

fn key_file(dir: &Path) -> std::path::PathBuf {
    dir.join("gossip.keys")
}

fn get(c: &Cluster, id: &str, path: &str) -> Option<String> {
    match http_request(&c.nodes[id].api(), "GET", path, &[], b"") {
        Ok((200, body)) => Some(body),
        _ => None,
    }
}

/// A counter of `/metrics` (its `_total` sample).
fn counter(c: &Cluster, id: &str, name: &str) -> Option<u64> {
    let text = get(c, id, "/metrics")?;
    let sample = format!("eco_{name}_total ");
    text.lines()
        .find_map(|l| l.strip_prefix(&sample))
        .and_then(|v| v.trim().parse().ok())
}

fn counters(c: &Cluster, name: &str) -> Vec<u64> {
    IDS.iter()
        .map(|id| counter(c, id, name).unwrap_or_else(|| panic!("{id}: no {name}")))
        .collect()
}

/// Waits until `name` is at least `want[i]` on instance `i`; the values.
fn wait_counters(c: &Cluster, name: &str, want: &[u64]) -> Vec<u64> {
    wait_until(STEP_LIMIT, || {
        let now: Vec<u64> = IDS
            .iter()
            .map(|id| counter(c, id, name))
            .collect::<Option<_>>()?;
        now.iter().zip(want).all(|(n, w)| n >= w).then_some(now)
    })
    .unwrap_or_else(|| panic!("{name} did not reach {want:?}: {:?}", counters(c, name)))
}

/// Every instance lists exactly the group in gossip.
fn gossip_ids(c: &Cluster, seer: &str) -> Vec<String> {
    let status: serde_json::Value = get(c, seer, "/status")
        .and_then(|b| serde_json::from_str(&b).ok())
        .unwrap_or_else(|| panic!("{seer}: no /status"));
    let mut ids: Vec<String> = status["gossip"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["instance_id"].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// Sends every instance one addressed message sealed with `key`, from an
/// address outside the group: opened, it counts as a message rejected
/// (its sender is not an instance); not opened, as a datagram rejected.
fn probe(probe: &UdpSocket, key: &str) {
    let keys = Keyring::new(&[key_bytes(key)], "it").unwrap();
    for (n, id) in IDS.iter().enumerate() {
        let frame = Frame::Message {
            from: "probe".into(),
            to: id.to_string(),
            bytes: b"which keys open".to_vec(),
        };
        let sealed = keys.seal(&frame.encode().unwrap()).unwrap();
        probe.send_to(&sealed, gossip_addr(n + 1)).unwrap();
    }
}

fn plus(v: &[u64], n: u64) -> Vec<u64> {
    v.iter().map(|x| x + n).collect()
}

#[test]
fn keys_rotate_on_a_running_cluster_without_a_membership_flap() {
    let t = Instant::now();
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    for (n, id) in IDS.iter().enumerate() {
        c.add(id, &format!("{NET}.{}", n + 1)).unwrap();
        c.configure(id, |b| b.gossip_key_file("gossip.keys"))
            .unwrap();
        write_keys(&c, id, &[old_key()]);
    }
    c.set_group(&IDS).unwrap();
    for id in IDS {
        c.start(id).unwrap();
    }
    c.wait_voters(&IDS, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no cluster formed: {:?}", c.members()));
    let all_up = wait_until(STEP_LIMIT, || {
        c.gossip_rows(&IDS).iter().all(|r| r.2).then_some(())
    });
    assert!(all_up.is_some(), "gossip: {:?}", c.gossip_rows(&IDS));
    let members = c.member_ids().expect("member list");
    let downs_before: Vec<Option<u64>> = c.gossip_rows(&IDS).iter().map(|r| r.3).collect();
    let formed = t.elapsed();

    let ledger = Ledger::start(c.endpoints(&IDS), 100_000);
    let probe_socket = UdpSocket::bind(format!("{NET}.9:0")).unwrap();
    let rejected = counters(&c, "gossip_datagrams_rejected");
    let opened = counters(&c, "gossip_messages_rejected");
    assert_eq!(counters(&c, "gossip_keyring_changes"), [0, 0, 0]);
    // After every step: every instance sees every other up, never went
    // down, opened every datagram of the others; the members are the same.
    let steady = |c: &Cluster, step: &str, rejected: &[u64]| {
        let rows = c.gossip_rows(&IDS);
        assert!(rows.iter().all(|r| r.2), "{step}: all up: {rows:?}");
        let downs: Vec<Option<u64>> = rows.iter().map(|r| r.3).collect();
        assert_eq!(downs, downs_before, "{step}: nobody went down: {rows:?}");
        assert_eq!(
            counters(c, "gossip_datagrams_rejected"),
            rejected,
            "{step}: no datagram failed to open"
        );
        assert_eq!(c.member_ids().as_ref(), Some(&members), "{step}: members");
    };

    // Step 1, add the new key second: on two instances first. The third,
    // still holding only the old key, keeps hearing them (they still seal
    // with the old key).
    let step1 = [old_key(), new_key()];
    for id in &IDS[..2] {
        write_keys(&c, id, &step1);
    }
    wait_counters(&c, "gossip_keyring_changes", &[1, 1, 0]);
    std::thread::sleep(Duration::from_secs(2));
    steady(&c, "step 1 on two of three", &rejected);
    write_keys(&c, IDS[2], &step1);
    wait_counters(&c, "gossip_keyring_changes", &[1, 1, 1]);
    // Every instance now opens the new key (as a message from a stranger).
    probe(&probe_socket, &new_key());
    wait_counters(&c, "gossip_messages_rejected", &plus(&opened, 1));
    steady(&c, "step 1", &rejected);

    // A change eco must not use (the next step's keys in a file others may
    // read) keeps the installed keys; the instance goes on as before.
    write_keys(&c, IDS[0], &[new_key(), old_key()]);
    std::fs::set_permissions(
        key_file(&c.nodes[IDS[0]].dir),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::thread::sleep(KEY_FILE_LOOKED_AT);
    assert_eq!(
        counters(&c, "gossip_keyring_changes"),
        [1, 1, 1],
        "a key file open to others is not used"
    );
    steady(&c, "a refused key file", &rejected);

    // Step 2, the new key first: it seals; the old key still opens.
    for id in IDS {
        write_keys(&c, id, &[new_key(), old_key()]);
    }
    wait_counters(&c, "gossip_keyring_changes", &[2, 2, 2]);
    probe(&probe_socket, &old_key());
    wait_counters(&c, "gossip_messages_rejected", &plus(&opened, 2));
    std::thread::sleep(Duration::from_secs(1));
    steady(&c, "step 2", &rejected);

    // Step 3, the old key removed: it opens nothing any more.
    for id in IDS {
        write_keys(&c, id, &[new_key()]);
    }
    wait_counters(&c, "gossip_keyring_changes", &[3, 3, 3]);
    std::thread::sleep(Duration::from_secs(2));
    steady(&c, "step 3", &rejected);
    probe(&probe_socket, &old_key());
    wait_counters(&c, "gossip_datagrams_rejected", &plus(&rejected, 1));
    assert_eq!(
        counters(&c, "gossip_messages_rejected"),
        plus(&opened, 2),
        "the old key opened nothing after step 3"
    );
    let rotated = t.elapsed();

    let (acked, failed) = ledger.finish();
    assert!(acked.len() > 50, "the load ran: {} acked", acked.len());
    let lost = lost_writes(&c.nodes[IDS[0]].endpoint(), &acked);
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");

    // A node holding only a key the group does not have: rejected, never
    // seen, and the group's view unchanged.
    let rejected = counters(&c, "gossip_datagrams_rejected");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let stranger = rt.block_on(async {
        let seeds = (1..=IDS.len()).map(gossip_addr).collect();
        let config = GossipConfig::lan(
            "it",
            "eco-4",
            Keyring::new(&[key_bytes(&foreign_key())], "it").unwrap(),
            seeds,
            1,
        );
        let (node, _events) = Gossip::bind(gossip_addr(8), config, PeerState::default())
            .await
            .expect("the stranger's socket");
        node
    });
    wait_counters(&c, "gossip_datagrams_rejected", &plus(&rejected, 1));
    std::thread::sleep(Duration::from_secs(2));
    for id in IDS {
        assert_eq!(gossip_ids(&c, id), IDS, "{id} never sees the stranger");
    }
    let heard: Vec<String> = stranger.view().into_keys().collect();
    assert_eq!(heard, ["eco-4"], "the stranger hears no one");
    rt.block_on(stranger.shutdown());
    let rows = c.gossip_rows(&IDS);
    assert!(rows.iter().all(|r| r.2), "all up: {rows:?}");
    assert_eq!(rows.iter().map(|r| r.3).collect::<Vec<_>>(), downs_before);
    assert_eq!(c.member_ids(), Some(members), "members unchanged");
    eprintln!(
        "formed in {formed:?}, rotated by {rotated:?} ({} writes acknowledged, {failed} failed), done in {:?}",
        acked.len(),
        t.elapsed()
    );
}

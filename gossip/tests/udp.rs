//! Real UDP on loopback: convergence, leave, crash, restart, sealing, key
//! rotation, addressed messages. Every wait is bounded.

mod wait;
use wait::eventually;

use gossip::{Event, Gossip, GossipConfig, GossipMetrics, Keyring, Liveness, PeerState};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc::UnboundedReceiver;

const A: [u8; 32] = [0xa1; 32];
const B: [u8; 32] = [0xb2; 32];

/// 127.0.210–212.x: nets no integration test uses. These tests run beside
/// them under `make test` (cargo nextest, several binaries at once) and
/// bind gossip's port, 7946, which every eco instance binds too; the
/// integration tests claim their addresses through the test kit, which
/// this crate's tests cannot use (it depends on the daemon).
fn addr(net: u8, n: u8) -> SocketAddr {
    format!("127.0.{net}.{n}:7946").parse().unwrap()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

async fn node(
    net: u8,
    n: u8,
    size: u8,
    keys: &[[u8; 32]],
    phase: &str,
) -> (Gossip, UnboundedReceiver<Event>) {
    let seeds = (1..=size).map(|i| addr(net, i)).collect();
    let mut config = GossipConfig::lan(
        "it",
        &format!("i-{n}"),
        Keyring::new(keys, "it").unwrap(),
        seeds,
        now_ms() + n as u64,
    );
    config.probe_period = Duration::from_millis(200);
    config.republish_every = Duration::from_millis(500);
    let state = PeerState {
        phase: phase.into(),
        ..Default::default()
    };
    // A crashed node's socket is released when its task ends: retry briefly.
    for _ in 0..40 {
        match Gossip::bind(addr(net, n), config.clone(), state.clone()).await {
            Ok(started) => return started,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    Gossip::bind(addr(net, n), config, state)
        .await
        .expect("bind")
}

fn sees(g: &Gossip, id: &str, liveness: Liveness, phase: Option<&str>) -> bool {
    g.view()
        .get(id)
        .is_some_and(|v| v.liveness == liveness && phase.is_none_or(|p| v.state.phase == p))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_converge_then_leave_crash_and_restart() {
    let mut nodes = Vec::new();
    for n in 1..=5 {
        nodes.push(Some(node(210, n, 5, &[A], "start").await));
    }
    let all_converged = eventually(Duration::from_secs(10), || {
        nodes
            .iter()
            .flatten()
            .all(|(g, _)| (1..=5).all(|n| sees(g, &format!("i-{n}"), Liveness::Up, Some("start"))))
    })
    .await;
    assert!(all_converged, "five nodes converge");

    // A state change reaches everyone.
    nodes[0]
        .as_ref()
        .unwrap()
        .0
        .set_state(PeerState {
            phase: "changed".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(
        eventually(Duration::from_secs(5), || nodes
            .iter()
            .flatten()
            .all(|(g, _)| sees(g, "i-1", Liveness::Up, Some("changed"))))
        .await,
        "state change propagates"
    );

    // Graceful leave: everyone else sees i-5 down.
    let (g5, _) = nodes[4].take().unwrap();
    g5.shutdown().await;
    assert!(
        eventually(Duration::from_secs(5), || nodes
            .iter()
            .flatten()
            .all(|(g, _)| sees(g, "i-5", Liveness::Down, None)))
        .await,
        "leave seen"
    );

    // Crash (no leave): dropping the handle stops the node silently.
    drop(nodes[3].take());
    assert!(
        eventually(Duration::from_secs(10), || nodes
            .iter()
            .flatten()
            .all(|(g, _)| sees(g, "i-4", Liveness::Down, None)))
        .await,
        "crash detected"
    );

    // Restart with a new boot: seen up with its new state.
    tokio::time::sleep(Duration::from_millis(20)).await;
    nodes[3] = Some(node(210, 4, 5, &[A], "reborn").await);
    assert!(
        eventually(Duration::from_secs(10), || {
            nodes
                .iter()
                .flatten()
                .all(|(g, _)| sees(g, "i-4", Liveness::Up, Some("reborn")))
        })
        .await,
        "restart seen with its new state"
    );

    // Addressed messages.
    nodes[0]
        .as_ref()
        .unwrap()
        .0
        .send("i-2", b"ping".to_vec())
        .unwrap();
    let rx = &mut nodes[1].as_mut().unwrap().1;
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match rx.recv().await {
                Some(Event::Message { from, bytes }) => return Some((from, bytes)),
                Some(_) => continue,
                None => return None,
            }
        }
    })
    .await
    .ok()
    .flatten();
    assert_eq!(got, Some(("i-1".to_string(), b"ping".to_vec())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_key_is_rejected_and_rotation_keeps_the_group_connected() {
    let mut nodes = Vec::new();
    for n in 1..=3 {
        nodes.push(node(211, n, 3, &[A], "a").await);
    }
    assert!(
        eventually(Duration::from_secs(10), || nodes
            .iter()
            .all(|(g, _)| g.view().len() == 3))
        .await
    );

    // A stranger with another key: its datagrams are rejected and counted,
    // and it never joins.
    let (stranger, _e) = node(211, 9, 3, &[B], "evil").await;
    let before = gossip::GossipMetrics::get(&nodes[0].0.metrics().datagrams_rejected);
    assert!(
        eventually(Duration::from_secs(5), || gossip::GossipMetrics::get(
            &nodes[0].0.metrics().datagrams_rejected
        ) > before)
        .await,
        "foreign datagrams counted as rejected"
    );
    assert!(
        nodes.iter().all(|(g, _)| !g.view().contains_key("i-9")),
        "stranger never seen"
    );
    stranger.shutdown().await;

    // Rotation, as documented: add the new key second everywhere ([A, B]:
    // seal A, open both), then move it first ([B, A]), then drop the old
    // key ([B]). The group stays connected throughout.
    for keys in [&[A, B][..], &[B, A][..], &[B][..]] {
        for n in 1..=3u8 {
            let (old, _) = nodes.remove(0);
            old.shutdown().await;
            nodes.push(node(211, n, 3, keys, "rotated").await);
            let ok = eventually(Duration::from_secs(10), || {
                nodes.iter().all(|(g, _)| {
                    (1..=3).all(|i| {
                        g.view()
                            .get(&format!("i-{i}"))
                            .is_some_and(|v| v.liveness == Liveness::Up)
                    })
                })
            })
            .await;
            assert!(
                ok,
                "connected after restarting i-{n} with {} key(s)",
                keys.len()
            );
        }
    }
}

/// A keyholder cannot speak for another instance: a message claiming to be
/// from `i-1` but sent from another address is dropped and counted; the
/// real `i-1`'s message arrives. (That a forged state cannot pin another's:
/// `broadcast`'s unit tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyholder_cannot_speak_for_another() {
    use gossip::wire::Frame;
    let (g1, _e1) = node(212, 1, 2, &[A], "one").await;
    let (g2, mut e2) = node(212, 2, 2, &[A], "two").await;
    let converged = eventually(Duration::from_secs(10), || {
        sees(&g1, "i-2", Liveness::Up, Some("two")) && sees(&g2, "i-1", Liveness::Up, Some("one"))
    })
    .await;
    assert!(converged, "two nodes converge");
    // The group, as the daemon sets it from its provider.
    g2.set_peers(
        [(1, addr(212, 1)), (2, addr(212, 2))]
            .into_iter()
            .map(|(n, a)| (format!("i-{n}"), std::iter::once(a.ip()).collect()))
            .collect(),
    )
    .unwrap();
    let keys = Keyring::new(&[A], "it").unwrap();
    let forger = tokio::net::UdpSocket::bind("127.0.212.9:7946")
        .await
        .unwrap();
    let send = |frame: Frame| {
        let sealed = keys.seal(&frame.encode().unwrap()).unwrap();
        let forger = &forger;
        async move { forger.send_to(&sealed, addr(212, 2)).await.unwrap() }
    };
    send(Frame::Message {
        from: "i-1".into(),
        to: "i-2".into(),
        bytes: b"forged".to_vec(),
    })
    .await;
    let rejected = eventually(Duration::from_secs(5), || {
        GossipMetrics::get(&g2.metrics().messages_rejected) >= 1
    })
    .await;
    assert!(rejected, "the spoofed message is counted");
    g1.send("i-2", b"real".to_vec()).unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match e2.recv().await {
                Some(Event::Message { from, bytes }) => return (from, bytes),
                Some(_) => continue,
                None => panic!("events closed"),
            }
        }
    })
    .await
    .expect("the real message arrives");
    assert_eq!(
        got,
        ("i-1".to_string(), b"real".to_vec()),
        "only the real one"
    );
}

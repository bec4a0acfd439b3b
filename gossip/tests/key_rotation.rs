//! Keyrings replaced on running nodes (`Gossip::set_keys`), on the
//! in-process network of `memory_net` under tokio's paused clock: the
//! documented order (add the new key second everywhere, then move it
//! first everywhere, then remove the old one) keeps every member up and
//! every datagram readable; promoting a key before every node holds it
//! cuts the node off. Every wait is bounded (in simulated time).

mod wait;
use wait::eventually;

mod memory_net;

use gossip::{Gossip, GossipConfig, GossipError, GossipMetrics, Keyring, Liveness, PeerState};
use memory_net::MemoryNet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const OLD: [u8; 32] = [0xa1; 32];
const NEW: [u8; 32] = [0xb2; 32];
const FOREIGN: [u8; 32] = [0xc3; 32];
/// Members of the group (more nodes join for a moment as probes).
const GROUP: [u8; 3] = [1, 2, 3];

fn addr(n: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, n], 7946))
}

fn id(n: u8) -> String {
    format!("i-{n}")
}

fn keyring(keys: &[[u8; 32]]) -> Keyring {
    Keyring::new(keys, "kr").unwrap()
}

/// Node `n` of the group on `net`, sealing with `keys`.
fn node(net: &Arc<MemoryNet>, n: u8, keys: &[[u8; 32]]) -> Gossip {
    let seeds = GROUP.iter().map(|i| addr(*i)).collect();
    let mut config = GossipConfig::lan("kr", &id(n), keyring(keys), seeds, 1_000 + n as u64);
    config.rng_seed = n as u64;
    let (node, _events) = Gossip::start(net.bind(addr(n)), config, PeerState::default()).unwrap();
    node
}

fn sees_up(g: &Gossip, n: u8) -> bool {
    g.view()
        .get(&id(n))
        .is_some_and(|v| v.liveness == Liveness::Up)
}

fn all_see_all(nodes: &[Gossip]) -> bool {
    nodes.iter().all(|g| GROUP.iter().all(|n| sees_up(g, *n)))
}

fn rejected(g: &Gossip) -> u64 {
    GossipMetrics::get(&g.metrics().datagrams_rejected)
}

/// Every group member seen by every node, and how often it went down.
fn times_down(nodes: &[Gossip]) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    for (g, seer) in nodes.iter().zip(GROUP) {
        let view = g.view();
        for n in GROUP {
            let down = view.get(&id(n)).map_or(u64::MAX, |v| v.times_down);
            out.push((id(seer), id(n), down));
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn a_live_rotation_in_the_documented_order_keeps_every_member_up() {
    let net = MemoryNet::new();
    let nodes: Vec<Gossip> = GROUP.iter().map(|n| node(&net, *n, &[OLD])).collect();
    assert!(
        eventually(Duration::from_secs(10), || all_see_all(&nodes)).await,
        "the group converges"
    );

    let steps: [&[[u8; 32]]; 3] = [&[OLD, NEW], &[NEW, OLD], &[NEW]];
    for (done, keys) in steps.iter().enumerate() {
        // Node by node, a few probe periods apart: the group is mixed for
        // a while at every step.
        for g in &nodes {
            g.set_keys(keyring(keys)).unwrap();
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(all_see_all(&nodes), "everyone up after step {}", done + 1);
        for (g, n) in nodes.iter().zip(GROUP) {
            assert_eq!(
                rejected(g),
                0,
                "i-{n} opened every datagram up to step {}",
                done + 1
            );
            assert_eq!(
                GossipMetrics::get(&g.metrics().keyring_changes),
                done as u64 + 1,
                "i-{n} installed every keyring"
            );
        }
        if done == 0 {
            // Step 1 everywhere still seals with the old key: a node that
            // holds only the old key still joins and is heard.
            let old_only = node(&net, 7, &[OLD]);
            let joined = eventually(Duration::from_secs(10), || {
                GROUP.iter().all(|n| sees_up(&old_only, *n)) && nodes.iter().all(|g| sees_up(g, 7))
            })
            .await;
            assert!(joined, "an old-key-only node works after step 1");
            assert_eq!(rejected(&old_only), 0);
            old_only.shutdown().await;
        }
    }
    // Every group member saw every other up throughout: never down.
    assert!(
        times_down(&nodes).iter().all(|(_, _, down)| *down == 0),
        "{:?}",
        times_down(&nodes)
    );

    // After step 3 the new key alone works...
    let new_only = node(&net, 8, &[NEW]);
    let joined = eventually(Duration::from_secs(10), || {
        GROUP.iter().all(|n| sees_up(&new_only, *n)) && nodes.iter().all(|g| sees_up(g, 8))
    })
    .await;
    assert!(joined, "a new-key-only node joins after step 3");
    assert_eq!(rejected(&new_only), 0);
    new_only.shutdown().await;

    // ...and the old key no longer opens anything.
    let before: Vec<u64> = nodes.iter().map(rejected).collect();
    let old_only = node(&net, 9, &[OLD]);
    let refused = eventually(Duration::from_secs(5), || {
        nodes.iter().zip(&before).all(|(g, b)| rejected(g) > *b)
    })
    .await;
    assert!(refused, "every node rejects the old key's datagrams");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        nodes.iter().all(|g| !g.view().contains_key(&id(9))),
        "an old-key-only node is never seen after step 3"
    );
    assert!(all_see_all(&nodes));
    old_only.shutdown().await;
    for g in nodes {
        g.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn promoting_a_key_before_everyone_holds_it_cuts_the_node_off() {
    let net = MemoryNet::new();
    let nodes: Vec<Gossip> = GROUP.iter().map(|n| node(&net, *n, &[OLD])).collect();
    assert!(eventually(Duration::from_secs(10), || all_see_all(&nodes)).await);
    // Steps 1 and 2 at once on i-1 while the others hold only the old key.
    nodes[0].set_keys(keyring(&[NEW, OLD])).unwrap();
    let cut_off = eventually(Duration::from_secs(20), || {
        rejected(&nodes[1]) > 0
            && rejected(&nodes[2]) > 0
            && nodes[1..].iter().all(|g| !sees_up(g, 1))
    })
    .await;
    assert!(
        cut_off,
        "the others cannot open i-1's datagrams and see it down"
    );
    for g in nodes {
        g.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_foreign_key_never_joins_and_keys_cannot_be_set_on_a_stopped_node() {
    let net = MemoryNet::new();
    let nodes: Vec<Gossip> = GROUP.iter().map(|n| node(&net, *n, &[OLD])).collect();
    assert!(eventually(Duration::from_secs(10), || all_see_all(&nodes)).await);
    let stranger = node(&net, 9, &[FOREIGN]);
    let refused = eventually(Duration::from_secs(5), || {
        nodes.iter().all(|g| rejected(g) > 0)
    })
    .await;
    assert!(refused, "the foreign key's datagrams are rejected");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(nodes.iter().all(|g| !g.view().contains_key(&id(9))));
    assert!(all_see_all(&nodes), "the group's view is unchanged");

    let keys = stranger.keys_handle();
    assert!(!keys.is_stopped());
    stranger.shutdown().await;
    assert!(keys.is_stopped());
    assert!(matches!(
        keys.set_keys(keyring(&[OLD])),
        Err(GossipError::Stopped)
    ));
    for g in nodes {
        g.shutdown().await;
    }
}

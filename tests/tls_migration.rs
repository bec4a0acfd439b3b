//! TLS turned on for a running plaintext cluster by a configuration
//! change, rolling, on real etcd (3.5, and 3.4 in `make test`'s second
//! pass) and real eco processes on loopback, under a write load:
//!
//! 1. three instances form a plaintext cluster; a ledger writes over
//!    `http`;
//! 2. the operator turns `[etcd.tls.generated]` on in each instance's
//!    config and restarts it, one at a time (what an instance refresh or a
//!    rolling update does): each comes back with the TLS material loaded
//!    and both surfaces still `http` (the others dial it so);
//! 3. eco then switches the members one at a time (`recovery::peer_scheme`):
//!    each records its `https` peer URL and restarts its listener, only
//!    while every member is healthy, the `http` ledger writing until the
//!    last member switched; then a second ledger writes over `https`;
//!
//! and at the end every peer and client URL is `https`, the same three
//! voters of the same cluster remain, and no acknowledged write of either
//! ledger is missing on any member. A second test starts a member at the
//! crash point between its two steps (its `https` peer URL recorded, its
//! eco down with the old listener in the state file).

use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::ledger::{Ledger, lost_writes};
use testkit::wait_until;

const IDS: [&str; 3] = ["eco-1", "eco-2", "eco-3"];

fn all_peer_urls(c: &Cluster) -> Vec<String> {
    c.peer_urls()
        .unwrap_or_default()
        .into_iter()
        .flat_map(|(_, urls)| urls)
        .collect()
}

/// The integration cluster, plaintext (`TLS_MIGRATION_DEBUG_ROOT` keeps
/// its files, in `<root>/<name>`).
fn plaintext_cluster(name: &str) -> Cluster {
    let base = Options::integration(eco_bin!());
    Cluster::new(Options {
        root: std::env::var_os("TLS_MIGRATION_DEBUG_ROOT")
            .map(|r| std::path::PathBuf::from(r).join(name)),
        // Longer than a restart: the rolling config change must not look
        // like a dead member (the docs say the same of real deployments).
        config: base
            .config
            .clone()
            .unhealthy_member_ttl(Duration::from_secs(60)),
        ..base
    })
    .expect("cluster")
}

#[test]
fn tls_is_turned_on_for_a_running_cluster_member_by_member_and_nothing_is_lost() {
    let mut c = plaintext_cluster("rollout");
    let cluster_id = c.form_three("127.0.47").expect("three voters");
    let plain = c.endpoints(&IDS);
    assert!(plain.iter().all(|e| e.starts_with("http://")), "{plain:?}");
    let over_http = Ledger::with_prefix(plain, 100_000, "http");
    over_http.wait_acked(100, Duration::from_secs(30));

    // The operator's rolling config change: one instance at a time, each
    // back and healthy before the next.
    let rolled = Instant::now();
    for id in IDS {
        c.stop(id, libc::SIGTERM).unwrap();
        c.turn_on_generated_tls(id).unwrap();
        c.start(id).unwrap();
        let back = c.wait_voters(&IDS, Duration::from_secs(90));
        assert_eq!(
            back,
            Some(cluster_id),
            "{id} is back with TLS material, same cluster\n{}",
            c.log_tail(id, 30)
        );
    }
    eprintln!(
        "TLS migration: config rolled out in {:.1} s",
        rolled.elapsed().as_secs_f64()
    );
    // Test clients go https from now on: eco-1 switches first, and the
    // member list is read from the first node that answers.
    for id in IDS {
        c.nodes.get_mut(id).unwrap().tls = true;
    }
    let switching = Instant::now();
    let switched = wait_until(Duration::from_secs(180), || {
        let urls = all_peer_urls(&c);
        (urls.len() == 3 && urls.iter().all(|u| u.starts_with("https://"))).then_some(())
    });
    assert!(
        switched.is_some(),
        "every member switched its peer URL to https: {:?}\n{}",
        c.peer_urls(),
        IDS.iter()
            .map(|id| c.log_tail(id, 20))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The last member's listener follows its record; then all serve
    // https only.
    assert_eq!(
        c.wait_voters(&IDS, Duration::from_secs(60)),
        Some(cluster_id),
        "the same three voters, all answering over https"
    );
    eprintln!(
        "TLS migration: members switched in {:.1} s",
        switching.elapsed().as_secs_f64()
    );
    let (acked_http, failed_http) = over_http.finish();
    let over_https = Ledger::with_prefix(c.endpoints(&IDS), 100_000, "https");
    over_https.wait_acked(100, Duration::from_secs(30));
    let (acked_https, failed_https) = over_https.finish();
    eprintln!(
        "TLS migration: {} writes acknowledged over http ({failed_http} failed), {} over https ({failed_https} failed)",
        acked_http.len(),
        acked_https.len()
    );
    assert!(
        acked_http.len() > 50 && acked_https.len() > 50,
        "the loads wrote too little: {} over http, {} over https",
        acked_http.len(),
        acked_https.len()
    );
    for id in IDS {
        let endpoint = c.nodes[id].endpoint();
        assert!(endpoint.starts_with("https://"));
        for acked in [&acked_http, &acked_https] {
            let lost = lost_writes(&endpoint, acked);
            assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
        }
        // The switch made the client port https only.
        let http = endpoint.replacen("https://", "http://", 1);
        let answered = testkit::etcd::rt().block_on(async {
            let t = testkit::etcd::Timeouts {
                connect: Duration::from_secs(1),
                call: Duration::from_secs(1),
                attempt: Duration::from_secs(2),
            };
            match testkit::etcd::connect(&http, t).await {
                Some(mut client) => {
                    tokio::time::timeout(Duration::from_secs(2), client.get("health", None))
                        .await
                        .is_ok_and(|r| r.is_ok())
                }
                None => false,
            }
        });
        assert!(!answered, "{id} still answers plain http after its switch");
    }
    let restarts: usize = IDS
        .iter()
        .map(|id| {
            c.nodes[*id]
                .log()
                .matches("restarting etcd with its peer listener")
                .count()
        })
        .sum();
    assert_eq!(restarts, 3, "one listener restart per member");
}

/// The crash point between a member's two steps: its peer URL recorded as
/// `https` in the cluster while its eco (and etcd) were down with the old
/// listener in the state file. At start the listener follows the cluster's
/// record (one restart), and the rollout then finishes as usual.
#[test]
fn a_member_recorded_https_while_its_eco_was_down_follows_the_record() {
    let mut c = plaintext_cluster("crash");
    let cluster_id = c.form_three("127.0.48").expect("three voters");
    let ledger = Ledger::with_prefix(c.endpoints(&IDS), 100_000, "crash");
    for id in ["eco-1", "eco-2"] {
        c.stop(id, libc::SIGTERM).unwrap();
        c.turn_on_generated_tls(id).unwrap();
        c.start(id).unwrap();
        assert_eq!(
            c.wait_voters(&IDS, Duration::from_secs(90)),
            Some(cluster_id)
        );
    }
    // eco-3 "crashes" after its MemberUpdate: down, its record https.
    c.kill_with_etcd("eco-3").unwrap();
    let id3 = c
        .member_ids()
        .and_then(|m| m.into_iter().find(|(_, name, _)| name == "eco-3"))
        .map(|(id, _, _)| id)
        .expect("eco-3's member id");
    let update = || {
        testkit::etcd::rt().block_on(async {
            let t = testkit::etcd::Timeouts {
                connect: Duration::from_secs(2),
                call: Duration::from_secs(5),
                attempt: Duration::from_secs(5),
            };
            let mut client = testkit::etcd::connect(&c.nodes["eco-1"].endpoint(), t).await?;
            client
                .member_update(id3, vec!["https://127.0.48.3:2380".to_string()])
                .await
                .ok()
        })
    };
    let recorded = wait_until(Duration::from_secs(30), update);
    assert!(recorded.is_some(), "MemberUpdate of eco-3's peer URL");
    c.turn_on_generated_tls("eco-3").unwrap();
    c.start("eco-3").unwrap();

    for id in IDS {
        c.nodes.get_mut(id).unwrap().tls = true;
    }
    let switched = wait_until(Duration::from_secs(180), || {
        let urls = all_peer_urls(&c);
        (urls.len() == 3 && urls.iter().all(|u| u.starts_with("https://"))).then_some(())
    });
    assert!(
        switched.is_some(),
        "every member on https: {:?}\n{}",
        c.peer_urls(),
        c.log_tail("eco-3", 30)
    );
    assert_eq!(
        c.wait_voters(&IDS, Duration::from_secs(60)),
        Some(cluster_id),
        "the same three voters, all answering over https"
    );
    assert!(
        c.nodes["eco-3"]
            .log()
            .contains("the listener follows the cluster's record"),
        "eco-3 restarted its listener to follow its record\n{}",
        c.log_tail("eco-3", 30)
    );
    let (acked, _) = ledger.finish();
    for id in IDS {
        let lost = lost_writes(&c.nodes[id].endpoint(), &acked);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

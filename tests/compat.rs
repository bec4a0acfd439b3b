//! eco across its own versions, on real processes: the previous release
//! (the last line of `scripts/releases`, built from the repository's
//! history by `scripts/build-release.sh` into `.tools/releases/`) beside
//! this build.
//!
//! - A 3-instance cluster formed by the previous release is rolled to this
//!   build one instance at a time (SIGTERM, the binary swapped, started
//!   again; the next once every member is a voter with a leader), highest
//!   first as a StatefulSet rolls, under a write load; then rolled back to
//!   the previous release the same way. Writable throughout (no write gap
//!   longer than one election timeout, less the time the machine itself
//!   stood still within it: testkit::machine_stalls), no reseed (the store's records
//!   unchanged), no acknowledged write lost, and gossip between the two
//!   versions never flaps (`/status`'s gossip view: every peer up, each
//!   seen down no more often than it was stopped).
//! - With one instance on the previous release and two on this build, two
//!   are lost with their disks and replaced empty: the cluster recovers
//!   from the survivor with every acknowledged write, whichever version the
//!   survivor runs (`make compat` runs both; `make test` the one where the
//!   survivor runs the previous release, the harder case: it coordinates).
//!
//! Each step's longest write gap is printed (`compat: ...` lines; the
//! figures of docs/benchmarks.md). Election timeout: 250 ms (the
//! integration timings). 127.0.120.x (rolling), 127.0.121.x and
//! 127.0.122.x (quorum loss).

use recovery::cluster_version::NEWEST;
use std::path::Path;
use std::time::{Duration, Instant};

use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::ledger::{Ledger, lost_beyond_residual, lost_writes, wal_residual};
use testkit::machine_stalls::StallProbe;
use testkit::timed_load::{TimedLoad, longest_gap_span, missing};

/// The integration timings' election timeout.
const ELECTION_TIMEOUT: Duration = Duration::from_millis(250);

fn ids() -> Vec<String> {
    (1..=3).map(|i| format!("eco-{i}")).collect()
}

/// What `eco version` says of a binary (its first line).
fn version_of(eco: &Path) -> String {
    let out = std::process::Command::new(eco)
        .arg("version")
        .output()
        .expect("eco version");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().take(2).collect::<Vec<_>>().join(", ")
}

/// How `id`'s gossip sees each other instance: (peer, up, times seen
/// down since `id`'s eco started), from its `/status`.
/// (peer, up, times down) as one instance's gossip sees it.
type GossipView = Vec<(String, bool, u64)>;

fn gossip_view(c: &Cluster, id: &str) -> GossipView {
    c.status_json(id)
        .and_then(|s| {
            s["gossip"].as_array().map(|peers| {
                peers
                    .iter()
                    .map(|p| {
                        (
                            p["instance_id"].as_str().unwrap_or_default().to_string(),
                            p["up"] == true,
                            p["times_down"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Every instance sees every other up in gossip, each seen down at most
/// `planned` times (its own planned stops while the observer ran): a
/// version that cannot read the other's gossip would show as a peer never
/// up, or down again and again.
fn gossip_settled(c: &Cluster, all: &[String], planned: u64) {
    let settled = testkit::wait_until(Duration::from_secs(20), || {
        let views: Vec<(String, GossipView)> = all
            .iter()
            .map(|id| (id.clone(), gossip_view(c, id)))
            .collect();
        views
            .iter()
            .all(|(me, view)| {
                all.iter().filter(|p| *p != me).all(|p| {
                    view.iter()
                        .any(|(id, up, downs)| id == p && *up && *downs <= planned)
                })
            })
            .then_some(views)
    });
    assert!(
        settled.is_some(),
        "gossip did not settle with every peer up and no flap: {:?}",
        all.iter()
            .map(|id| (id.clone(), gossip_view(c, id)))
            .collect::<Vec<_>>()
    );
}

/// `id`'s `/status` cluster version once `ok` holds of it (within 20 s).
fn cluster_version_when(
    c: &Cluster,
    id: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    testkit::wait_until(Duration::from_secs(20), || {
        let cv = c.status_json(id)?["cluster_version"].clone();
        ok(&cv).then_some(cv)
    })
    .unwrap_or_else(|| {
        panic!(
            "{id}'s cluster version: {:?}",
            c.status_json(id).map(|s| s["cluster_version"].clone())
        )
    })
}

/// `eco upgrade finalize` against `id`'s config: (succeeded, what it said).
fn finalize(c: &Cluster, id: &str, wait: &str) -> (bool, String) {
    let out = std::process::Command::new(eco_bin!())
        .args([
            "upgrade", "finalize", "--by", "test", "--wait", wait, "--config",
        ])
        .arg(&c.nodes[id].config)
        .output()
        .expect("eco upgrade finalize");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Stops `id` with SIGTERM, swaps its binary to `eco`, starts it, and
/// waits until every member is a voter with a leader again. Returns when
/// it was stopped and when the cluster was whole again.
fn replace(c: &mut Cluster, all: &[String], id: &str, eco: &Path) -> (Instant, Instant) {
    let stopped = Instant::now();
    c.stop(id, libc::SIGTERM).expect("stop");
    c.use_eco(id, eco.to_path_buf()).expect("swap the binary");
    c.start(id).expect("start");
    let names: Vec<&str> = all.iter().map(String::as_str).collect();
    c.wait_voters(&names, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("{id} did not come back as a voter\n{}", c.log_tail(id, 40)));
    testkit::wait_until(Duration::from_secs(30), || c.leader().map(|_| ()))
        .expect("a leader after the replacement");
    (stopped, Instant::now())
}

#[test]
fn a_rolling_replacement_to_this_build_and_back_keeps_serving_and_loses_nothing() {
    let (previous, old) = testkit::releases::previous_binary();
    let new = eco_bin!();
    eprintln!(
        "compat: previous release {} ({}) beside this build ({})",
        previous.version,
        version_of(&old),
        version_of(&new)
    );
    let mut c = Cluster::integration(old.clone()).expect("cluster");
    let formed = c
        .form_three("127.0.120")
        .expect("three voters on the previous release");
    let all = ids();
    let records = c.records();
    let probe = StallProbe::start(c.root());
    let origin = Instant::now();
    let load = TimedLoad::start(&c.endpoints(&all), "/compat");
    std::thread::sleep(Duration::from_secs(1));

    let mut steps = Vec::new();
    for (direction, eco) in [("forward", &new), ("back", &old)] {
        for id in all.iter().rev() {
            let (stopped, back) = replace(&mut c, &all, id, eco);
            steps.push((direction, id.clone(), stopped, back));
            std::thread::sleep(Duration::from_millis(500));
            if direction == "forward" && id == "eco-3" {
                // Mixed: this build writes the previous release's format
                // and names who it waits for.
                let cv = cluster_version_when(&c, "eco-3", |cv| {
                    cv["behind"].as_array().is_some_and(|b| b.len() == 2)
                });
                assert_eq!(cv["writing"], 1, "{cv}");
                assert!(
                    cv["reason"].as_str().is_some_and(
                        |r| r.contains(&format!("eco-1 (reads format {})", previous.format))
                    ),
                    "{cv}"
                );
            }
        }
        if direction == "forward" {
            // Every instance on this build: still the previous format (the
            // previous release may come back), finalizing later by itself.
            for id in &all {
                let cv = cluster_version_when(&c, id, |cv| {
                    cv["behind"].as_array().is_none_or(|b| b.is_empty())
                });
                assert_eq!(cv["writing"], 1, "{id}: {cv}");
                assert!(
                    cv["next"].as_str().is_some_and(
                        |n| n.starts_with(&format!("finalizes to format {NEWEST} in "))
                    ),
                    "{id}: {cv}"
                );
            }
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let acked = load.finish();
    let stalls = probe.finish();

    // The longest gap of each step, less the time the machine itself
    // stood still within it (testkit::machine_stalls: no cluster on it can
    // acknowledge a write then).
    let mut longest = Duration::ZERO;
    for (direction, id, stopped, back) in &steps {
        let (gap, stalled) = longest_gap_span(&acked, Some(*stopped), Some(*back))
            .map(|(a, b)| (b - a, stalls.within(a, b)))
            .unwrap_or_default();
        longest = longest.max(gap.saturating_sub(stalled));
        eprintln!(
            "compat: {direction} ({} -> {}): {id} replaced, back in {:.1} s, longest write gap {} ms (the machine stood still {} ms of it)",
            if *direction == "forward" {
                previous.version.as_str()
            } else {
                "this build"
            },
            if *direction == "forward" {
                "this build"
            } else {
                previous.version.as_str()
            },
            (*back - *stopped).as_secs_f64(),
            gap.as_millis(),
            stalled.as_millis()
        );
    }
    eprintln!(
        "compat: {} writes, longest write gap beyond the machine's stalls {} ms; the machine's stalls: {}",
        acked.len(),
        longest.as_millis(),
        stalls.describe(origin)
    );
    assert!(
        longest <= ELECTION_TIMEOUT,
        "a write gap of {} ms beyond the machine's own stalls: longer than one election timeout",
        longest.as_millis()
    );
    let lost = missing(&c.nodes["eco-1"].endpoint(), &acked);
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    assert_eq!(
        c.records(),
        records,
        "no reseed: the store's records are unchanged"
    );
    assert_eq!(
        c.members().map(|(id, _)| id),
        Some(formed),
        "the same etcd cluster throughout"
    );
    // Each instance stopped twice (forward and back); an observer that
    // ran through both saw it down at most twice.
    gossip_settled(&c, &all, 2);
    for id in &all {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

/// One instance on the previous release (`survivor_old`: the survivor; else
/// one of the two lost) and two on this build; two lost with their disks
/// and replaced empty (by this build).
fn a_mixed_cluster_recovers_a_quorum_loss(base: &str, survivor_old: bool) {
    let (previous, old) = testkit::releases::previous_binary();
    let new = eco_bin!();
    let mut c = Cluster::integration(new.clone()).expect("cluster");
    let on_old = if survivor_old { "eco-1" } else { "eco-2" };
    for (i, id) in ids().iter().enumerate() {
        c.add(id, &format!("{base}.{}", i + 1)).expect("add");
    }
    c.use_eco(on_old, old.clone())
        .expect("the previous release");
    c.set_group(&ids()).expect("group");
    for id in ids() {
        c.start(&id).expect("start");
    }
    let old_cluster = c
        .wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(90))
        .unwrap_or_else(|| panic!("three voters did not form\n{}", c.log_tail("eco-1", 40)));
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));
    let lost_at = c.lose_two_of_three(base).expect("lose two");
    let writable = c
        .wait_writable("eco-1", Duration::from_secs(90))
        .unwrap_or_else(|| {
            panic!(
                "not writable again within 90 s\n{}",
                c.log_tail("eco-1", 60)
            )
        });
    let new_cluster = c
        .wait_voters(&["eco-1", "eco-4", "eco-5"], Duration::from_secs(120))
        .expect("three voters again");
    let full = Instant::now();
    let timed = ledger.finish_timed();
    let residual = wal_residual(&timed, &[lost_at]);
    let acked = timed.acked.clone();
    eprintln!(
        "compat: quorum loss, {on_old} on {} and the rest on this build, the survivor on {}: writable {:.1} s after the loss, three voters after {:.1} s ({} acknowledged writes)",
        previous.version,
        if survivor_old {
            previous.version.as_str()
        } else {
            "this build"
        },
        (writable - lost_at).as_secs_f64(),
        (full - lost_at).as_secs_f64(),
        acked.len()
    );
    assert!(
        acked.len() > 50,
        "the load wrote too little: {}",
        acked.len()
    );
    assert_ne!(new_cluster, old_cluster, "a reseed makes a new cluster id");
    for id in ["eco-1", "eco-4", "eco-5"] {
        let lost =
            lost_beyond_residual(id, lost_writes(&c.nodes[id].endpoint(), &acked), &residual);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
    for id in ["eco-1", "eco-4", "eco-5"] {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

#[test]
fn a_quorum_loss_with_the_survivor_on_the_previous_release_recovers_every_acknowledged_write() {
    a_mixed_cluster_recovers_a_quorum_loss("127.0.121", true);
}

#[test]
#[ignore = "make compat runs it"]
fn a_quorum_loss_with_the_survivor_on_this_build_recovers_every_acknowledged_write() {
    a_mixed_cluster_recovers_a_quorum_loss("127.0.122", false);
}

/// The cluster version on real processes (127.0.123.x): with one instance
/// on the previous release, `eco upgrade finalize` waits and says for whom;
/// once every instance runs this build it finalizes (one record), every
/// instance writes the newest format (the voters record written after a removal
/// carries it) and says so; an instance of this build started against a
/// cluster finalized at a later format (as a release two ahead would
/// leave it) refuses to start its etcd and says why.
#[test]
fn finalizing_waits_for_every_instance_then_writes_the_new_format_and_a_build_behind_refuses() {
    let (previous, old) = testkit::releases::previous_binary();
    let new = eco_bin!();
    let mut c = Cluster::integration(new.clone()).expect("cluster");
    for (i, id) in ids().iter().enumerate() {
        c.add(id, &format!("127.0.123.{}", i + 1)).expect("add");
    }
    c.use_eco("eco-1", old.clone())
        .expect("the previous release");
    c.set_group(&ids()).expect("group");
    for id in ids() {
        c.start(&id).expect("start");
    }
    let all = ids();
    c.wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(90))
        .unwrap_or_else(|| panic!("three voters did not form\n{}", c.log_tail("eco-2", 40)));

    let (ok, said) = finalize(&c, "eco-2", "3s");
    assert!(!ok, "finalized with eco-1 on the previous release: {said}");
    assert!(said.contains("is not recorded after 3 s"), "{said}");
    let cv = cluster_version_when(&c, "eco-2", |cv| {
        cv["next"]
            .as_str()
            .is_some_and(|n| n.contains("waits for instances"))
    });
    assert!(
        cv["reason"]
            .as_str()
            .is_some_and(|r| r.contains(&format!("eco-1 (reads format {})", previous.format))),
        "{cv}"
    );
    assert_eq!(cv["writing"], 1, "{cv}");

    replace(&mut c, &all, "eco-1", &new);
    let (ok, said) = finalize(&c, "eco-2", "60s");
    assert!(ok, "{said}");
    assert!(
        said.contains(&format!("finalized at format {NEWEST}")),
        "{said}"
    );
    eprintln!("compat: eco upgrade finalize: {}", said.trim());
    let record = c
        .store()
        .join(c.name())
        .join(format!("incarnations/cluster-version-{NEWEST:010}"));
    assert!(record.exists(), "{} missing", record.display());
    for id in &all {
        let cv = cluster_version_when(&c, id, |cv| cv["writing"] == NEWEST);
        assert_eq!(cv["finalized"], NEWEST, "{id}: {cv}");
        assert_eq!(cv["next"], "current", "{id}: {cv}");
    }
    let (ok, said) = finalize(&c, "eco-2", "1s");
    assert!(ok && said.contains("already finalized"), "{said}");

    // A removal rewrites the voters record: in the new format now.
    c.set_group(&["eco-1", "eco-2"]).expect("group of two");
    let voters = c
        .store()
        .join(c.name())
        .join("incarnations/0000000001.voters");
    let written = testkit::wait_until(Duration::from_secs(60), || {
        let text = std::fs::read_to_string(&voters).ok()?;
        (!text.contains("eco-3")).then_some(text)
    })
    .unwrap_or_else(|| {
        panic!(
            "the voters record still names eco-3\n{}",
            c.log_tail("eco-1", 40)
        )
    });
    assert!(
        written.contains(&format!("\"format\": {NEWEST}")),
        "{written}"
    );
    let _ = c.stop("eco-3", libc::SIGTERM);

    // A cluster finalized past this build: it refuses, etcd not started.
    let later = c
        .store()
        .join(c.name())
        .join(format!("incarnations/cluster-version-{:010}", NEWEST + 1));
    std::fs::write(
        &later,
        serde_json::json!({
            "cluster": c.name(),
            "format": NEWEST + 1,
            "by": "a later release",
            "reason": "test",
            "at_unix_ms": 1
        })
        .to_string(),
    )
    .expect("write a later finalization");
    c.stop("eco-2", libc::SIGTERM).expect("stop");
    c.start("eco-2").expect("start");
    let s = testkit::wait_until(Duration::from_secs(30), || {
        let s = c.status_json("eco-2")?;
        (s["phase"] == "refused").then_some(s)
    })
    .unwrap_or_else(|| panic!("eco-2 did not refuse\n{}", c.log_tail("eco-2", 30)));
    assert!(
        s["next"]["reason"].as_str().is_some_and(|r| r
            .contains(&format!("finalized at format {}", NEWEST + 1))
            && r.contains("more than one release behind")),
        "{s}"
    );
    assert_eq!(s["process"]["running"], false, "{s}");
    for id in ["eco-1", "eco-2"] {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

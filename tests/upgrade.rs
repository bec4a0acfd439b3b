//! Rolling etcd upgrades on real binaries: three instances run etcd through
//! one symbolic link (`<root>/etcd-bin`, what a package or a release
//! directory switch looks like), each release from `.tools/etcd-<version>`
//! (scripts/install-etcd.sh). Under a write load, every step of a path is
//! rolled one member at a time, the leader last, a snapshot first; every
//! acknowledged write is kept and each step's write gap is printed
//! (`upgrade: ...` lines, the figures of docs/benchmarks.md).
//!
//! - In `make test` (127.0.98.x): Debian's etcd 3.4.23 → 3.5.16. First the
//!   cluster is paused (`eco pause`), the link moved and eco-1 restarted: its
//!   member comes back on the 3.4 it ran, and nothing moves while paused;
//!   resumed, eco rolls. Then the link is moved to an "etcd 3.7.0" (a
//!   script that only prints that version) and eco refuses the jump with
//!   its reason in `/status`, restarting nothing.
//! - The whole matrix, `make upgrade-matrix` (ignored here; 127.0.101.x and
//!   127.0.102.x): 3.4.23 → 3.5.16 → 3.5.30, and 3.5.16 → 3.5.30.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::etcd::{bin_dir_of, client, rt};
use testkit::timed_load::{Acked, TimedLoad, longest_gap, missing};
use testkit::wait_until;

/// Points `<root>/etcd-bin` at `target` in one rename.
fn switch(root: &Path, target: &Path) {
    let next = root.join("etcd-bin.next");
    let _ = std::fs::remove_file(&next);
    std::os::unix::fs::symlink(target, &next).unwrap();
    std::fs::rename(&next, root.join("etcd-bin")).unwrap();
}

/// `(member name → (version, is leader))` as each member answers.
fn versions(endpoints: &[String]) -> BTreeMap<String, (String, bool)> {
    rt().block_on(async {
        let mut out = BTreeMap::new();
        for e in endpoints {
            let Some(mut c) = client(e).await else {
                continue;
            };
            let Ok(Ok(st)) = tokio::time::timeout(Duration::from_secs(1), c.status()).await else {
                continue;
            };
            let Some(h) = st.header() else { continue };
            out.insert(
                e.clone(),
                (st.version().to_string(), st.leader() == h.member_id()),
            );
        }
        out
    })
}

fn eco(args: &[&str]) -> String {
    let out = Command::new(eco_bin!()).args(args).output().expect("eco");
    assert!(out.status.success(), "eco {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn status_of(c: &Cluster, id: &str) -> serde_json::Value {
    testkit::etcd::block_on(async {
        let addr = c.nodes[id].api().parse().ok()?;
        let (_, body) = eco::api::status_client::get(addr, "/status", Duration::from_secs(2))
            .await
            .ok()?;
        serde_json::from_slice(&body).ok()
    })
    .unwrap_or_default()
}

/// A cluster of three instances on `base`, their etcd through
/// `<root>/etcd-bin` pointing at release `first`, and its client endpoints.
fn cluster_on(root: &Path, base: &str, first: &str) -> (Cluster, Vec<String>) {
    let dir = bin_dir_of(first);
    assert!(
        dir.join("etcd").exists(),
        "{} missing: run scripts/install-deps.sh",
        dir.display()
    );
    switch(root, &dir);
    let options = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        root: Some(root.join("cluster")),
        config: options.config.clone().etcd_bin(root.join("etcd-bin/etcd")),
        ..options
    })
    .expect("cluster");
    c.form_three(base)
        .unwrap_or_else(|e| panic!("three voters on etcd {first}: {e}"));
    let endpoints = IDS.iter().map(|id| c.nodes[*id].endpoint()).collect();
    (c, endpoints)
}

const IDS: [&str; 3] = ["eco-1", "eco-2", "eco-3"];

/// What one step of a path did.
struct Step {
    to: String,
    started: Instant,
    /// When each member answered on the new release, in order.
    moved: Vec<(String, Instant)>,
    /// The first leader of the step (it must go last).
    first_leader: String,
    fewest_answering: usize,
}

/// Moves the link to release `to` (after `pre`, e.g. a resume) and waits
/// until every member answers on it.
fn roll_to(c: &Cluster, root: &Path, endpoints: &[String], to: &str, pre: impl FnOnce()) -> Step {
    let before = versions(endpoints);
    let first_leader = before
        .iter()
        .find(|(_, (_, l))| *l)
        .map(|(e, _)| e.clone())
        .expect("a leader");
    switch(root, &bin_dir_of(to));
    let started = Instant::now();
    pre();
    let mut moved: Vec<(String, Instant)> = Vec::new();
    let mut fewest_answering = 3;
    let rolled = wait_until(Duration::from_secs(180), || {
        let now = versions(endpoints);
        fewest_answering = fewest_answering.min(now.len());
        for (e, (v, _)) in &now {
            if v == to && !moved.iter().any(|(x, _)| x == e) {
                moved.push((e.clone(), Instant::now()));
            }
        }
        (moved.len() == 3).then_some(())
    });
    assert!(
        rolled.is_some(),
        "the cluster was not rolled to {to}: {:?}\n{}",
        versions(endpoints),
        IDS.iter()
            .map(|id| c.log_tail(id, 30))
            .collect::<Vec<_>>()
            .join("\n")
    );
    Step {
        to: to.to_string(),
        started,
        moved,
        first_leader,
        fewest_answering,
    }
}

/// Prints the step's timeline (when each member answered on the new
/// release, the longest write gap before it) and checks its order: one
/// member at a time, the first leader last.
fn report(step: &Step, acked: &Acked, from: &str) {
    let mut previous = step.started;
    let mut longest = Duration::ZERO;
    for (endpoint, at) in &step.moved {
        let gap = longest_gap(acked, Some(previous), Some(*at));
        longest = longest.max(gap);
        eprintln!(
            "upgrade: {from} → {}: {endpoint} on it at +{:.1} s; longest write gap in the step {} ms",
            step.to,
            (*at - step.started).as_secs_f64(),
            gap.as_millis()
        );
        previous = *at;
    }
    eprintln!(
        "upgrade: {from} → {}: longest write gap {} ms",
        step.to,
        longest.as_millis()
    );
    assert!(
        step.fewest_answering >= 2,
        "{} members answered at one point",
        step.fewest_answering
    );
    assert_eq!(
        step.moved.last().map(|(e, _)| e.clone()),
        Some(step.first_leader.clone()),
        "the first leader did not go last: {:?}",
        step.moved
    );
}

/// Every acknowledged write is there, writes never stopped for long, each
/// member restarted once per step with a snapshot before the first, and
/// none failed.
fn check_after(c: &Cluster, endpoints: &[String], acked: &Acked, steps: usize, first_from: &str) {
    let longest = longest_gap(acked, None, None);
    eprintln!(
        "upgrade: {} writes acknowledged, longest gap {} ms",
        acked.len(),
        longest.as_millis()
    );
    assert!(
        longest < Duration::from_secs(15),
        "writes stopped for {longest:?}"
    );
    let lost = missing(&endpoints[0], acked);
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    let logs: String = IDS.iter().map(|id| c.nodes[*id].log()).collect();
    for id in IDS {
        for l in c.nodes[id].log().lines() {
            if let Some(rest) = l
                .contains("event=\"upgrade.restarted\"")
                .then(|| l.split("duration_ms=").nth(1))
                .flatten()
            {
                let ms = rest.split_whitespace().next().unwrap_or("?");
                eprintln!("upgrade: {id}'s member stopped and answered again in {ms} ms");
            }
        }
    }
    let count = |event: &str| logs.matches(&format!("event=\"{event}\"")).count();
    assert_eq!(count("upgrade.restarting"), 3 * steps, "restarts");
    assert_eq!(count("upgrade.restarted"), 3 * steps, "restarts done");
    assert_eq!(count("upgrade.failed"), 0, "a step failed");
    assert!(
        logs.lines().any(|l| l.contains("event=\"snapshot.stored\"")
            && l.contains(&format!("before upgrading etcd {first_from}"))),
        "no snapshot before the first step"
    );
    assert!(
        logs.contains("event=\"leadership.transferred\""),
        "the leader did not hand leadership away"
    );
}

#[test]
fn etcd_3_4_is_rolled_to_3_5_one_member_at_a_time_and_3_7_is_refused() {
    let root = tempfile::Builder::new()
        .prefix("eco-upgrade-")
        .tempdir()
        .unwrap();
    let (mut c, endpoints) = cluster_on(root.path(), "127.0.98", "3.4.23");
    let config = c.nodes["eco-1"].config.to_str().unwrap().to_string();

    // Paused, the new binary in place, eco-1 restarted: its member comes
    // back on the version it ran, and no member moves.
    eco(&["pause", "--config", &config, "--reason", "upgrade test"]);
    let paused = wait_until(Duration::from_secs(20), || {
        IDS.iter()
            .all(|id| status_of(&c, id).get("paused").is_some())
            .then_some(())
    });
    assert!(paused.is_some(), "not every instance saw the pause");
    switch(root.path(), &bin_dir_of("3.5.16"));
    c.stop("eco-1", libc::SIGTERM).unwrap();
    c.start("eco-1").unwrap();
    let back = wait_until(Duration::from_secs(60), || {
        let v = versions(&endpoints);
        (v.len() == 3).then_some(v)
    })
    .unwrap_or_else(|| {
        panic!(
            "eco-1's member did not come back\n{}",
            c.log_tail("eco-1", 30)
        )
    });
    assert_eq!(
        back[&endpoints[0]].0, "3.4.23",
        "eco-1 restarted its member on the new etcd out of turn: {back:?}"
    );
    assert!(
        c.nodes["eco-1"]
            .log()
            .contains("launching the etcd the member last ran"),
        "{}",
        c.log_tail("eco-1", 30)
    );
    std::thread::sleep(Duration::from_secs(4));
    let before = versions(&endpoints);
    assert!(
        before.len() == 3 && before.values().all(|(v, _)| v == "3.4.23"),
        "a member moved while paused: {before:?}"
    );

    let load = TimedLoad::start(&endpoints, "/upgrade");
    std::thread::sleep(Duration::from_secs(2));
    let step = roll_to(&c, root.path(), &endpoints, "3.5.16", || {
        eco(&["resume", "--config", &config]);
    });
    std::thread::sleep(Duration::from_secs(2));
    let acked = load.finish();
    report(&step, &acked, "3.4.23");
    check_after(&c, &endpoints, &acked, 1, "3.4.23");

    // A jump of two minor versions is refused, with its reason.
    let fake = root.path().join("etcd-3.7");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("etcd"), "#!/bin/sh\necho 'etcd Version: 3.7.0'\n").unwrap();
    std::fs::set_permissions(
        fake.join("etcd"),
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    switch(root.path(), &fake);
    let refused = wait_until(Duration::from_secs(30), || {
        let s = status_of(&c, "eco-1");
        let u = s.get("upgrade")?;
        (u["state"] == "refused").then(|| u["reason"].as_str().unwrap_or_default().to_string())
    })
    .expect("the 3.7 jump was not refused in /status");
    assert!(refused.contains("one minor version at a time"), "{refused}");
    eprintln!("upgrade: etcd 3.7.0 refused: {refused}");
    let after = versions(&endpoints);
    assert!(
        after.len() == 3 && after.values().all(|(v, _)| v == "3.5.16"),
        "a member moved or stopped: {after:?}"
    );
    for id in IDS {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

/// Rolls a cluster formed on `path[0]` through every later release of
/// `path`, under one write load.
fn roll_path(base: &str, path: &[&str]) {
    let root = tempfile::Builder::new()
        .prefix("eco-upgrade-")
        .tempdir()
        .unwrap();
    let (mut c, endpoints) = cluster_on(root.path(), base, path[0]);
    let load = TimedLoad::start(&endpoints, "/upgrade");
    std::thread::sleep(Duration::from_secs(2));
    let mut steps = Vec::new();
    for to in &path[1..] {
        steps.push(roll_to(&c, root.path(), &endpoints, to, || {}));
        std::thread::sleep(Duration::from_secs(2));
    }
    let acked = load.finish();
    for (i, step) in steps.iter().enumerate() {
        report(step, &acked, path[i]);
    }
    check_after(&c, &endpoints, &acked, steps.len(), path[0]);
    for id in IDS {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

/// The whole matrix (`make upgrade-matrix`): 3.4.23 → 3.5.16 → 3.5.30.
#[test]
#[ignore = "the whole upgrade matrix: make upgrade-matrix"]
fn matrix_3_4_23_to_3_5_16_to_3_5_30() {
    roll_path("127.0.101", &["3.4.23", "3.5.16", "3.5.30"]);
}

/// The whole matrix (`make upgrade-matrix`): 3.5.16 → 3.5.30 directly.
#[test]
#[ignore = "the whole upgrade matrix: make upgrade-matrix"]
fn matrix_3_5_16_to_3_5_30() {
    roll_path("127.0.102", &["3.5.16", "3.5.30"]);
}

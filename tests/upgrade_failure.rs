//! Rolling upgrades onto an etcd that does not start, on real processes
//! (127.0.24.x): the binary the config names goes through a symbolic link
//! (`<root>/etcd-bin`, as in tests/upgrade.rs) and is moved to an
//! "etcd 3.5.31" — a script that answers `--version` and exits at once
//! otherwise.
//!
//! - Three instances: the first step fails (its etcd exits without
//!   answering), its member goes back to etcd 3.5.30 before the
//!   unhealthy-member TTL could remove it, and the roll stops there: no
//!   other member restarts, never fewer than two answer, the member list
//!   keeps its three members, and `/status` says the step failed.
//! - One instance whose previous binary is gone: the member stays down on
//!   the broken binary; fixing the link brings it back with eco restarted
//!   (the record of a launch that never answered is not preferred) and
//!   with eco running (an etcd that keeps exiting moves to the configured
//!   binary when that is another file).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use testkit::cluster::{Cluster, Options};
use testkit::etcd::{bin_dir_of, client, read, rt, wait_serving, write};
use testkit::instance::Instance;
use testkit::{eco_bin, wait_until};

/// Points `<root>/etcd-bin` at `target` in one rename.
fn switch(root: &Path, target: &Path) {
    let next = root.join("etcd-bin.next");
    let _ = std::fs::remove_file(&next);
    std::os::unix::fs::symlink(target, &next).unwrap();
    std::fs::rename(&next, root.join("etcd-bin")).unwrap();
}

fn executable(path: &Path) {
    std::fs::set_permissions(
        path,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
}

/// `<root>/<name>/etcd`: an "etcd `version`" that, started, runs
/// `started` (a shell command) instead.
fn fake_etcd(root: &Path, name: &str, version: &str, started: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("etcd"),
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'etcd Version: {version}'; exit 0; fi\n{started}\n"
        ),
    )
    .unwrap();
    executable(&dir.join("etcd"));
    dir
}

/// An "etcd 3.5.31" that exits at once when started.
fn broken_etcd(root: &Path, name: &str) -> PathBuf {
    fake_etcd(
        root,
        name,
        "3.5.31",
        "echo 'this etcd does not start' >&2; exit 1",
    )
}

/// `<root>/<name>/etcd`: a copy of this workspace's etcd 3.5.30, a file of
/// its own (a release directory that can be removed).
fn etcd_copy(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(bin_dir_of("3.5.30").join("etcd"), dir.join("etcd")).unwrap();
    executable(&dir.join("etcd"));
    dir
}

/// `endpoint → version` of each member that answers.
fn versions(endpoints: &[String]) -> BTreeMap<String, String> {
    rt().block_on(async {
        let mut out = BTreeMap::new();
        for e in endpoints {
            let Some(mut c) = client(e).await else {
                continue;
            };
            if let Ok(Ok(st)) = tokio::time::timeout(Duration::from_secs(1), c.status()).await {
                out.insert(e.clone(), st.version().to_string());
            }
        }
        out
    })
}

fn status_at(api: &str) -> serde_json::Value {
    testkit::etcd::block_on(async {
        let addr: SocketAddr = api.parse().ok()?;
        let (_, body) = eco::api::status_client::get(addr, "/status", Duration::from_secs(2))
            .await
            .ok()?;
        serde_json::from_slice(&body).ok()
    })
    .unwrap_or_default()
}

fn events(log: &str, event: &str) -> usize {
    log.matches(&format!("event=\"{event}\"")).count()
}

#[test]
fn a_step_onto_an_etcd_that_does_not_start_stops_the_roll() {
    let root = tempfile::Builder::new()
        .prefix("eco-upgrade-failure-")
        .tempdir()
        .unwrap();
    let good = bin_dir_of("3.5");
    assert!(good.join("etcd").exists(), "run scripts/install-deps.sh");
    switch(root.path(), &good);
    let base = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        root: Some(root.path().join("cluster")),
        // An unhealthy-member TTL of 20 s (the tests' is 5 s): the step's
        // deadline is half of it, and its fallback must answer within the
        // other half (recovery::upgrade::step_deadline_ms); 2.5 s for three
        // failed starts and the fallback's start was too little on a
        // loaded CI machine (the member removed by the TTL).
        config: base
            .config
            .clone()
            .etcd_bin(root.path().join("etcd-bin/etcd"))
            .unhealthy_member_ttl(Duration::from_secs(20)),
        ..base
    })
    .expect("cluster");
    c.form_three("127.0.24")
        .expect("three voters on etcd 3.5.30");
    let ids = ["eco-1", "eco-2", "eco-3"];
    let endpoints: Vec<String> = ids.iter().map(|id| c.nodes[*id].endpoint()).collect();
    let before = c.member_ids().expect("the member list");
    assert_eq!(before.len(), 3, "{before:?}");

    switch(root.path(), &broken_etcd(root.path(), "etcd-3.5.31"));
    // Until one instance says its step failed, and for two
    // unhealthy-member TTLs (5 s each) after: never fewer than two members
    // answer, none is removed.
    let mut fewest = 3;
    let mut members_seen = Vec::new();
    let mut watch = |c: &Cluster| {
        fewest = fewest.min(versions(&endpoints).len());
        if let Some(m) = c.member_ids() {
            members_seen.push(m.into_iter().map(|(id, _, _)| id).collect::<Vec<_>>());
        }
    };
    let failed = wait_until(Duration::from_secs(60), || {
        watch(&c);
        ids.iter().find_map(|id| {
            let u = status_at(&c.nodes[*id].api()).get("upgrade").cloned()?;
            (u["state"] == "failed").then(|| (id.to_string(), u))
        })
    });
    let Some((failed_id, upgrade)) = failed else {
        panic!(
            "no instance reported a failed step; fewest answering {fewest}\n{}",
            ids.iter()
                .map(|id| c.log_tail(id, 40))
                .collect::<Vec<_>>()
                .join("\n")
        );
    };
    eprintln!("upgrade-failure: {failed_id}: {upgrade}");
    let _ = wait_until(Duration::from_secs(10), || {
        watch(&c);
        None::<()>
    });
    let after = versions(&endpoints);
    let logs: String = ids.iter().map(|id| c.nodes[*id].log()).collect();
    let tails = || {
        ids.iter()
            .map(|id| c.log_tail(id, 30))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        fewest >= 2,
        "{fewest} members answered at one point\n{}",
        tails()
    );
    let ids_before: Vec<u64> = before.iter().map(|(id, _, _)| *id).collect();
    assert!(
        members_seen.iter().all(|m| *m == ids_before),
        "the member list changed: {members_seen:?}\n{}",
        tails()
    );
    // The failed member is back on the etcd it ran; nobody else moved.
    assert!(
        after.len() == 3 && after.values().all(|v| v == "3.5.30"),
        "{after:?}\n{}",
        tails()
    );
    assert_eq!(events(&logs, "upgrade.restarting"), 1, "one step only");
    assert!(
        c.nodes[&failed_id]
            .log()
            .contains("event=\"etcd.fallback\""),
        "{}",
        c.log_tail(&failed_id, 30)
    );
    let reason = upgrade["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("does not start") && reason.contains("roll stops"),
        "{reason}"
    );
    assert_eq!(status_at(&c.nodes[&failed_id].api())["ready"], true);
    for id in ids.iter().filter(|id| **id != failed_id) {
        let s = status_at(&c.nodes[*id].api());
        assert_eq!(s["upgrade"]["state"], "waiting", "{id}: {s}");
    }

    // The link back on etcd 3.5.30: nothing to do, nothing failed.
    switch(root.path(), &good);
    let settled = || {
        wait_until(Duration::from_secs(30), || {
            ids.iter()
                .all(|id| status_at(&c.nodes[*id].api())["upgrade"].is_null())
                .then_some(())
        })
    };
    assert!(settled().is_some(), "{}", tails());

    // An "etcd 3.5.32" that starts and never answers: the step gives up
    // within half the unhealthy-member TTL and the member is back on
    // 3.5.30 before the TTL could remove it.
    switch(
        root.path(),
        &fake_etcd(root.path(), "etcd-3.5.32", "3.5.32", "exec sleep 600"),
    );
    let mut fewest = 3;
    let mut members_seen = Vec::new();
    let mut down_since: Option<std::time::Instant> = None;
    let mut restarting = Vec::new();
    let gave_up = wait_until(Duration::from_secs(60), || {
        let answering = versions(&endpoints).len();
        fewest = fewest.min(answering);
        if answering < 3 && down_since.is_none() {
            down_since = Some(std::time::Instant::now());
        }
        if let Some(m) = c.member_ids() {
            members_seen.push(m.into_iter().map(|(id, _, _)| id).collect::<Vec<_>>());
        }
        let statuses: Vec<serde_json::Value> = ids
            .iter()
            .map(|id| status_at(&c.nodes[*id].api()))
            .collect();
        restarting.extend(
            statuses
                .iter()
                .filter(|s| s["upgrade"]["state"] == "restarting")
                .map(|s| (s["ready"].clone(), s["process"]["crashes"].clone())),
        );
        statuses
            .into_iter()
            .find_map(|s| (s["upgrade"]["state"] == "failed").then(|| s["upgrade"].clone()))
    })
    .unwrap_or_else(|| panic!("no failed step on the hung etcd\n{}", tails()));
    // While its step waited, the instance said its member was not ready.
    assert!(
        !restarting.is_empty() && restarting.iter().all(|(ready, _)| *ready == false),
        "{restarting:?}"
    );
    eprintln!("upgrade-failure: {gave_up}");
    let back = wait_until(Duration::from_secs(20), || {
        if let Some(m) = c.member_ids() {
            members_seen.push(m.into_iter().map(|(id, _, _)| id).collect::<Vec<_>>());
        }
        (versions(&endpoints).len() == 3).then_some(())
    });
    assert!(back.is_some(), "{}", tails());
    if let Some(since) = down_since {
        eprintln!(
            "upgrade-failure: the hung step's member did not answer for about {} ms (unhealthy_member_ttl 20000 ms)",
            since.elapsed().as_millis()
        );
    }
    let _ = wait_until(Duration::from_secs(8), || {
        if let Some(m) = c.member_ids() {
            members_seen.push(m.into_iter().map(|(id, _, _)| id).collect::<Vec<_>>());
        }
        None::<()>
    });
    assert!(
        fewest >= 2,
        "{fewest} members answered at one point\n{}",
        tails()
    );
    assert!(
        members_seen.iter().all(|m| *m == ids_before),
        "the member list changed: {members_seen:?}\n{}",
        tails()
    );
    assert!(
        gave_up["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer within"),
        "{gave_up}"
    );
    switch(root.path(), &good);
    assert!(settled().is_some(), "{}", tails());
    for id in ids {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

#[test]
fn a_member_stuck_on_an_etcd_that_does_not_start_comes_back_on_the_fixed_binary() {
    let mut i = Instance::new(eco_bin!(), "127.0.24.11");
    let root = i.dir.path().to_path_buf();
    let api = format!("{}:2390", i.address);
    // Release directories of their own, removed later.
    switch(&root, &etcd_copy(&root, "etcd-a"));
    i.configure(|c| c.etcd_bin(root.join("etcd-bin/etcd")));
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(write(&i.endpoint(), "kept", "1"));
    let answers_on_351 = |i: &Instance| {
        versions(&[i.endpoint()])
            .values()
            .any(|v| v == "3.5.30")
            .then_some(())
    };
    let failed_step = |api: &str| {
        wait_until(Duration::from_secs(30), || {
            let u = status_at(api).get("upgrade").cloned()?;
            (u["state"] == "failed").then_some(u)
        })
    };

    // The release it runs removed, the link moved to the broken one: the
    // step fails and nothing it answered on is left.
    std::fs::remove_dir_all(root.join("etcd-a")).unwrap();
    switch(&root, &broken_etcd(&root, "etcd-3.5.31"));
    let u = failed_step(&api).unwrap_or_else(|| panic!("no failed step\n{}", i.log()));
    assert!(
        u["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("stays on it"),
        "{u}"
    );

    // eco restarted after the link was fixed: the member starts on the
    // configured binary, not on the recorded launch that never answered.
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(30)), Some(0));
    let fallbacks = events(&i.log(), "etcd.fallback");
    switch(&root, &etcd_copy(&root, "etcd-c"));
    i.start();
    wait_until(Duration::from_secs(30), || answers_on_351(&i))
        .unwrap_or_else(|| panic!("not back after the restart\n{}", i.log()));
    assert_eq!(
        read(&i.endpoint(), "kept").and_then(|(_, v)| v).as_deref(),
        Some("1")
    );
    // Launched on it at once, not on the broken one first.
    assert_eq!(events(&i.log(), "etcd.fallback"), fallbacks, "{}", i.log());

    // Again, eco running: the member is stuck on the broken binary, the
    // link is fixed, and etcd moves to it by itself.
    std::fs::remove_dir_all(root.join("etcd-c")).unwrap();
    switch(&root, &root.join("etcd-3.5.31"));
    failed_step(&api).unwrap_or_else(|| panic!("no failed step\n{}", i.log()));
    let fallbacks = events(&i.log(), "etcd.fallback");
    switch(&root, &bin_dir_of("3.5"));
    wait_until(Duration::from_secs(30), || answers_on_351(&i))
        .unwrap_or_else(|| panic!("not back with eco running\n{}", i.log()));
    assert_eq!(
        read(&i.endpoint(), "kept").and_then(|(_, v)| v).as_deref(),
        Some("1")
    );
    assert_eq!(
        events(&i.log(), "etcd.fallback"),
        fallbacks + 1,
        "{}",
        i.log()
    );
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(30)), Some(0));
}

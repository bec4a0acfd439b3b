//! The maintenance switch on a real three-instance cluster (127.0.96.x):
//! `eco pause` reaches every instance (phase `paused`, who and why in
//! `/status`, `eco_paused 1`); while paused, an instance removed from the
//! group keeps its member and etcd is still supervised (a killed etcd is
//! restarted); `eco resume` lets the leader remove the departed member.
//! Then the bad inputs: `--by`/`--reason` with control characters or too
//! long are refused; a corrupt or oversized pause object is treated as a
//! pause (said in `/status` and `eco status`), replaced by `eco pause` and
//! removed by `eco resume`; a `pause.json` the directory store did not
//! commit (no info file) is no pause, but `/status` says so.

use std::process::Command;
use std::time::Duration;

use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::wait_until;

fn eco(args: &[&str]) -> (bool, String) {
    let out = Command::new(eco_bin!()).args(args).output().expect("eco");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

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

#[test]
fn paused_instances_take_no_membership_action_until_resumed() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let cluster_id = c.form_three("127.0.96").expect("three voters");
    let ids = ["eco-1", "eco-2", "eco-3"];
    let config = c.nodes["eco-1"].config.to_str().expect("path").to_string();

    let (ok, said) = eco(&["pause", "--config", &config, "--reason", ""]);
    assert!(!ok && said.contains("--reason"), "{said}");
    let (ok, said) = eco(&[
        "pause",
        "--config",
        &config,
        "--by",
        "ann",
        "--reason",
        "replacing a disk",
    ]);
    assert!(ok, "{said}");
    assert!(said.contains("paused by ann at "), "{said}");

    // Every instance sees it: phase, who and why, still ready.
    for id in ids {
        let s = wait_until(Duration::from_secs(20), || {
            let s = status(&c, id)?;
            (s["phase"] == "paused").then_some(s)
        })
        .unwrap_or_else(|| panic!("{id} never paused:\n{}", c.log_tail(id, 30)));
        assert_eq!(s["paused"]["by"], "ann", "{s}");
        assert_eq!(s["paused"]["reason"], "replacing a disk", "{s}");
        assert_eq!(s["ready"], true, "{s}");
        assert!(
            s["next"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("until `eco resume`")),
            "{s}"
        );
    }
    let (ok, said) = eco(&["status", "--config", &config]);
    assert!(
        ok && said.contains("PAUSED") && said.contains("replacing a disk"),
        "{said}"
    );

    // Removed from the group while paused: its member stays, its etcd
    // runs; a killed etcd is still restarted.
    c.set_group(&ids[..2]).expect("shrink the group");
    c.kill_etcd("eco-1").expect("kill eco-1's etcd");
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(
        c.wait_voters(&ids, Duration::from_secs(20)),
        Some(cluster_id),
        "paused: the departed member is kept and eco-1's etcd came back"
    );
    assert!(!c.etcd_pids("eco-3").is_empty(), "eco-3's etcd runs");
    let s = status(&c, "eco-3").expect("eco-3 answers");
    assert_eq!(
        s["phase"], "paused",
        "a paused instance out of the group: {s}"
    );

    // Resumed: the leader's instance removes the departed member.
    let (ok, said) = eco(&["resume", "--config", &config]);
    assert!(ok && said.contains("resumed"), "{said}");
    assert_eq!(
        c.wait_voters(&ids[..2], Duration::from_secs(40)),
        Some(cluster_id),
        "resumed: eco-3's member is removed"
    );
    let (ok, said) = eco(&["resume", "--config", &config]);
    assert!(ok && said.contains("was not paused"), "{said}");
    // Each instance logs the resume when it next reads the pause object:
    // waited for (on a loaded machine the departed eco-3 reads it after
    // its member was already removed).
    for id in ids {
        let logged = wait_until(Duration::from_secs(20), || {
            let log = c.nodes[id].log();
            (log.contains("event=\"maintenance.paused\"")
                && log.contains("event=\"maintenance.resumed\""))
            .then_some(())
        });
        assert!(
            logged.is_some(),
            "{id} logged the pause and the resume:\n{}",
            c.log_tail(id, 20)
        );
    }
    bad_pause_input_and_objects(&c, &config);
}

fn bad_pause_input_and_objects(c: &Cluster, config: &str) {
    // Terminal escapes, line injection, unbounded text: refused.
    for (by, reason, named) in [
        ("ann", "disk\nmaintenance.resumed", "--reason"),
        ("ann\u{1b}[2J", "disk", "--by"),
        (
            "ann",
            &"x".repeat(eco::store::pause::MAX_REASON + 1) as &str,
            "--reason",
        ),
    ] {
        let (ok, said) = eco(&["pause", "--config", config, "--by", by, "--reason", reason]);
        assert!(!ok && said.contains(named), "{said}");
    }
    let (_, said) = eco(&["resume", "--config", config]);
    assert!(
        said.contains("was not paused"),
        "nothing was written: {said}"
    );

    // A corrupt pause object, then one too large: paused, said so.
    let store = eco::store::dir::DirStore::new(c.store());
    let name = eco::store::pause::object_name("it");
    let put = |content: &[u8]| {
        use eco::store::ObjectStore;
        testkit::etcd::rt()
            .block_on(store.put(&name, &mut &content[..], Default::default()))
            .expect("put");
    };
    // Until `id` shows an unreadable object whose reason says `why` (an
    // instance that has not read the newest object yet still shows the
    // previous one).
    let unreadable_seen = |id: &str, why: &str| {
        wait_until(Duration::from_secs(20), || {
            let s = status(c, id)?;
            (s["phase"] == "paused"
                && s["paused_unreadable"]
                    .as_str()
                    .is_some_and(|u| u.contains(why)))
            .then_some(s)
        })
        .unwrap_or_else(|| {
            panic!(
                "{id} not paused by an unreadable object ({why}):\n{}",
                c.log_tail(id, 30)
            )
        })
    };
    put(b"{\"by\": \"ann\", \"reas");
    let s = unreadable_seen("eco-1", "pause.json");
    assert!(
        s["paused_unreadable"]
            .as_str()
            .unwrap()
            .contains("pause.json"),
        "{s}"
    );
    let (ok, said) = eco(&["status", "--config", config]);
    assert!(ok && said.contains("treated as paused"), "{said}");
    let (ok, said) = eco(&[
        "pause",
        "--config",
        config,
        "--by",
        "bob",
        "--reason",
        "fixing it",
    ]);
    assert!(
        ok && said.contains("it replaces") && said.contains("unreadable"),
        "{said}"
    );
    wait_until(Duration::from_secs(20), || {
        let s = status(c, "eco-2")?;
        (s["paused"]["by"] == "bob").then_some(())
    })
    .expect("the replacing pause is read");
    let mut big = vec![b' '; 1 << 20];
    big[..2].copy_from_slice(b"{}");
    put(&big);
    let s = unreadable_seen("eco-3", "more than");
    assert!(
        s["paused_unreadable"]
            .as_str()
            .unwrap()
            .contains("more than"),
        "{s}"
    );
    let (ok, said) = eco(&["resume", "--config", config]);
    assert!(
        ok && said.contains("removed") && said.contains("pause.json"),
        "{said}"
    );
    for id in ["eco-1", "eco-2"] {
        wait_until(Duration::from_secs(20), || {
            let s = status(c, id)?;
            (s["phase"] != "paused" && s["paused_unreadable"].is_null()).then_some(())
        })
        .unwrap_or_else(|| panic!("{id} still paused:\n{}", c.log_tail(id, 30)));
    }

    // A pause.json without its info file: no pause, but said.
    std::fs::write(
        c.store().join(&name),
        br#"{"by":"ann","at_unix_ms":1,"reason":"copied by hand"}"#,
    )
    .unwrap();
    let s = wait_until(Duration::from_secs(20), || {
        let s = status(c, "eco-1")?;
        s["pause_problem"].is_string().then_some(s)
    })
    .unwrap_or_else(|| panic!("not said:\n{}", c.log_tail("eco-1", 30)));
    assert!(
        s["pause_problem"]
            .as_str()
            .unwrap()
            .contains("no info file"),
        "{s}"
    );
    assert_ne!(s["phase"], "paused", "{s}");
    let (ok, said) = eco(&["resume", "--config", config]);
    assert!(ok && said.contains("removed"), "{said}");
    assert!(!c.store().join(&name).exists());
}

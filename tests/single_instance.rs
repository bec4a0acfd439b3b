//! One managed instance, end to end, on real etcd.

use std::time::{Duration, Instant};
use testkit::etcd::{read, rt, wait_serving, write};
use testkit::instance::Instance;
use testkit::process::kill;
use testkit::{eco_bin, wait_until};

#[test]
fn bootstraps_serves_and_survives_an_etcd_crash() {
    let mut i = Instance::new(eco_bin!(), "127.0.2.1");
    i.start();
    let cluster = wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("cluster serving");
    assert!(write(&i.endpoint(), "k1", "v1"));

    let etcd = i.etcd_pids();
    assert_eq!(etcd.len(), 1, "exactly one etcd");
    let killed_at = Instant::now();
    kill(etcd[0], libc::SIGKILL);
    // Back with the data, same cluster.
    let back = wait_until(Duration::from_secs(10), || {
        let pids = i.etcd_pids();
        if pids.is_empty() || pids == etcd {
            return None;
        }
        read(&i.endpoint(), "k1").filter(|(_, v)| v.as_deref() == Some("v1"))
    });
    let took = killed_at.elapsed();
    let (cluster_after, _) = back.expect("etcd restarted and serving the data");
    eprintln!("etcd kill -9 -> serving again in {took:?}");
    assert!(
        took < Duration::from_secs(3),
        "restarted and serving within 3s, took {took:?}"
    );
    assert_eq!(cluster_after, cluster, "same cluster after the restart");
    assert!(i.log().contains("etcd exited unexpectedly"));
}

#[test]
fn sigterm_stops_etcd_and_a_restart_resumes_the_same_cluster() {
    let mut i = Instance::new(eco_bin!(), "127.0.2.2");
    i.start();
    let cluster = wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(write(&i.endpoint(), "k", "kept"));
    // The member id is recorded once etcd answered.
    wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(i.state_file())
            .ok()
            .filter(|s| s.contains("member_id"))
    })
    .expect("member id recorded");

    i.signal(libc::SIGTERM);
    assert_eq!(
        i.wait_exit(Duration::from_secs(15)),
        Some(0),
        "eco exits 0 on SIGTERM"
    );
    assert!(i.etcd_pids().is_empty(), "no etcd left after eco stopped");

    i.start();
    let again = wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving again");
    assert_eq!(again, cluster, "same cluster id after eco restarted");
    assert_eq!(
        read(&i.endpoint(), "k").and_then(|(_, v)| v).as_deref(),
        Some("kept")
    );
    let state = std::fs::read_to_string(i.state_file()).unwrap();
    assert!(state.contains("\"incarnation\": 1"), "{state}");
}

#[test]
fn killing_eco_with_sigkill_leaves_no_etcd_behind() {
    let mut i = Instance::new(eco_bin!(), "127.0.2.3");
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert_eq!(i.etcd_pids().len(), 1);
    i.signal(libc::SIGKILL);
    i.wait_exit(Duration::from_secs(5)).expect("eco gone");
    let gone = wait_until(Duration::from_secs(5), || {
        i.etcd_pids().is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "etcd must die with eco: {:?}",
        i.etcd_pids()
    );

    // And the next eco resumes the data (no orphan holding the ports).
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving after restart");
}

#[test]
fn status_says_what_happens_next_and_why_and_metrics_count_crashes() {
    let mut i = Instance::new(eco_bin!(), "127.0.2.4");
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    let status = |json: bool| {
        let mut cmd = std::process::Command::new(eco_bin!());
        cmd.args(["status", "--config"])
            .arg(&i.config)
            .args(["--instance-id", "eco-1"]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("eco status");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    // Readiness is reached a probe after etcd serves.
    let human = wait_until(Duration::from_secs(10), || {
        Some(status(false)).filter(|s| {
            s.contains("ready          yes")
                && s.contains("next action    keep etcd running")
                && s.contains("because        etcd runs as a member; 1 voter(s)")
        })
    })
    .expect("ready and settled in eco status");
    assert!(
        human.contains("because        etcd runs as a member; 1 voter(s)"),
        "{human}"
    );
    assert!(human.contains("incarnation 1"), "{human}");

    let etcd = i.etcd_pids();
    kill(etcd[0], libc::SIGKILL);
    let crashed = wait_until(Duration::from_secs(10), || {
        let v: serde_json::Value = serde_json::from_str(&status(true)).ok()?;
        (v["process"]["crashes"] == 1 && v["ready"] == true).then_some(v)
    });
    let v = crashed.expect("crash counted and ready again");
    assert_eq!(v["process"]["last_exit"], "killed by SIGKILL");

    let rt = rt();
    let api: std::net::SocketAddr = "127.0.2.4:2390".parse().unwrap();
    let (code, body) = rt
        .block_on(eco::api::status_client::get(
            api,
            "/metrics",
            Duration::from_secs(2),
        ))
        .expect("metrics");
    let text = String::from_utf8_lossy(&body);
    assert_eq!(code, 200);
    assert!(text.contains("eco_etcd_crashes_total 1"), "{text}");
    assert!(text.contains("eco_etcd_ready 1"), "{text}");
    let (code, _) = rt
        .block_on(eco::api::status_client::get(
            api,
            "/readyz",
            Duration::from_secs(2),
        ))
        .expect("readyz");
    assert_eq!(code, 200);
}

#[test]
fn data_of_an_older_incarnation_is_moved_aside_never_started() {
    let mut i = Instance::new(eco_bin!(), "127.0.2.5").with_dir_store();
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(i.store_dir().join("it/incarnations/0000000001").is_file());
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(15)), Some(0));

    // Elsewhere, the cluster was reseeded as incarnation 2.
    std::fs::write(
        i.store_dir().join("it/incarnations/0000000002"),
        r#"{"cluster":"it","incarnation":2,"seeder":"eco-9","token":"it-2-x","source":"data:eco-9","created_unix_ms":1}"#,
    )
    .unwrap();
    i.start();
    let refused = wait_until(Duration::from_secs(15), || {
        i.log().contains("not starting etcd").then_some(())
    });
    assert!(refused.is_some(), "{}", i.log());
    assert!(i.log().contains("never start an older incarnation"));
    assert!(
        i.etcd_pids().is_empty(),
        "the old incarnation's etcd is not started"
    );
    let moved: Vec<_> = std::fs::read_dir(i.dir.path().join("data"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        moved
            .iter()
            .any(|n| n.starts_with("etcd.moved-") && n.ends_with("stale-incarnation")),
        "{moved:?}"
    );
    assert!(
        moved.iter().any(|n| n.starts_with("eco-state.json.moved-")),
        "{moved:?}"
    );
}

#[test]
fn etcd_does_not_inherit_ecos_secrets() {
    // Generated TLS with a store: the gossip key opens the cluster's CA.
    let mut i = Instance::new(eco_bin!(), "127.0.2.6").with_dir_store();
    i.env.push((
        "ECO_GOSSIP_KEYS".into(),
        "5f0b2c4e6a8d1f3b5c7e9a0b2d4f6a8c1e3b5d7f9a0c2e4b6d8f1a3c5e7b9d0f".into(),
    ));
    i.env
        .push(("AWS_SECRET_ACCESS_KEY".into(), "not-for-etcd".into()));
    i.configure(|b| {
        b.etcd_tls(eco::config::EtcdTlsConfig {
            generated: Some(Default::default()),
            ..Default::default()
        })
    });
    i.start();
    let environ = wait_until(Duration::from_secs(30), || {
        let pid = *i.etcd_pids().first()?;
        std::fs::read(format!("/proc/{pid}/environ")).ok()
    })
    .expect("etcd started");
    let names: Vec<String> = environ
        .split(|b| *b == 0)
        .filter_map(|v| std::str::from_utf8(v).ok())
        .filter_map(|v| v.split('=').next())
        .map(String::from)
        .collect();
    assert!(names.iter().any(|n| n == "PATH"), "{names:?}");
    for secret in ["ECO_GOSSIP_KEYS", "AWS_SECRET_ACCESS_KEY"] {
        assert!(
            !names.iter().any(|n| n == secret),
            "{secret} in etcd's environment: {names:?}"
        );
    }
}

#[test]
fn sighup_reloads_and_never_stops_eco_or_etcd() {
    let mut i = Instance::new(eco_bin!(), "127.0.2.7").with_dir_store();
    i.start();
    let cluster = wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(write(&i.endpoint(), "k", "before the hangup"));
    let etcd = i.etcd_pids();
    assert_eq!(etcd.len(), 1, "one etcd");

    i.signal(libc::SIGHUP);
    let logged = wait_until(Duration::from_secs(10), || {
        i.log().contains("SIGHUP received").then_some(())
    });
    assert!(logged.is_some(), "the hangup is logged:\n{}", i.log());
    assert!(
        i.process.as_mut().unwrap().try_wait().unwrap().is_none(),
        "eco still runs after SIGHUP"
    );
    assert_eq!(i.etcd_pids(), etcd, "the same etcd still runs");
    assert!(write(&i.endpoint(), "k", "after the hangup"));

    // A stop afterwards is still the clean one: the final snapshot, exit 0.
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(15)), Some(0));
    assert!(i.etcd_pids().is_empty(), "no etcd left after eco stopped");
    assert!(
        i.log().contains("final snapshot: eco is stopping"),
        "a final snapshot on the clean stop:\n{}",
        i.log()
    );
    i.start();
    assert_eq!(
        wait_serving(&i.endpoint(), Duration::from_secs(20)),
        Some(cluster)
    );
}

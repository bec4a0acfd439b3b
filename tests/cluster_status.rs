//! `eco status --cluster` on a real three-instance cluster: one command
//! on one instance shows every instance's phase, readiness, member and
//! next action with its reason; an instance that died is shown from what
//! the asking instance knows of it (gossip, the member list), with why its
//! own status is missing.

use std::process::Command;
use std::time::Duration;

use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::wait_until;

fn cluster_status(c: &Cluster, json: bool) -> String {
    let node = &c.nodes["eco-1"];
    let mut cmd = Command::new(eco_bin!());
    cmd.args(["status", "--cluster", "--config"])
        .arg(&node.config)
        .args(["--instance-id", "eco-1"]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("eco status --cluster");
    assert!(
        out.status.success(),
        "eco status --cluster: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn one_command_shows_every_instance_and_why_one_is_missing() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    c.form_three("127.0.94").expect("three voters");

    // All three answer, settled.
    let text = wait_until(Duration::from_secs(30), || {
        let text = cluster_status(&c, false);
        (text.matches("keep etcd running").count() == 3).then_some(text)
    })
    .unwrap_or_else(|| panic!("never settled:\n{}", cluster_status(&c, false)));
    eprintln!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("as eco-1 sees it (3 instance(s))"),
        "{text}"
    );
    assert!(lines[1].starts_with("INSTANCE"), "{text}");
    for id in ["eco-1", "eco-2", "eco-3"] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id}:\n{text}"));
        assert!(
            line.contains(" running ") && line.contains(" yes "),
            "{line}"
        );
    }
    assert_eq!(
        lines.iter().filter(|l| l.contains(" leader ")).count(),
        1,
        "one leader:\n{text}"
    );

    // eco-3 dies: its row says why its own status is missing.
    c.kill_with_etcd("eco-3").expect("kill eco-3");
    let text = wait_until(Duration::from_secs(30), || {
        let text = cluster_status(&c, false);
        let row = text.lines().find(|l| l.starts_with("eco-3"))?.to_string();
        (row.contains("down (gossip)") && row.contains("(unhealthy)")).then_some(text)
    })
    .unwrap_or_else(|| panic!("eco-3 not shown as gone:\n{}", cluster_status(&c, false)));
    eprintln!("{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("eco-3"))
        .expect("eco-3's row");
    assert!(
        row.contains("? — cannot connect to 127.0.94.3:2390"),
        "{row}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&cluster_status(&c, true)).expect("--json is JSON");
    let rows = json.as_array().expect("an array of instances");
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["status"]["phase"], "running");
    assert!(
        rows[2]["unreachable"]
            .as_str()
            .is_some_and(|w| w.contains("cannot connect"))
    );
}

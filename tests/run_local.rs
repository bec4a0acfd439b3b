//! `make run`'s supervisor (scripts/run-local.py) on a real cluster, in a
//! directory of its own on 127.0.95.x: the instances of the group file
//! start and form a cluster, the banner prints etcd's log files, eco's
//! events reach the terminal in one line each, an instance added to the
//! group file gets its eco started and joins, an instance removed from it
//! leaves and its eco is stopped, and Ctrl-C stops everything.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use testkit::eco_bin;
use testkit::process::kill;
use testkit::wait_until;

fn instance(id: &str, address: &str) -> String {
    format!("[[instance]]\nid = \"{id}\"\naddress = \"{address}\"\nzone = \"zone-{id}\"\n\n")
}

/// Pids of the eco processes running with `config`.
fn eco_pids(config: &Path) -> Vec<i32> {
    testkit::process::pids_with_arg(config.as_os_str().as_encoded_bytes())
}

/// The supervisor, its output file and run directory; on drop (a failed
/// test) it gets Ctrl-C, and whatever of its instances still runs is
/// killed by pid.
struct Supervisor {
    child: Child,
    out: PathBuf,
    run: PathBuf,
    ids: Vec<&'static str>,
}

impl Supervisor {
    fn output(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Healthy voters in the member list eco-1 shows (`eco status
    /// --cluster --json`, as a person trying eco would look).
    fn voters(&self) -> usize {
        let out = Command::new(eco_bin!())
            .args(["status", "--cluster", "--json", "--config"])
            .arg(self.run.join("eco-1.toml"))
            .output()
            .expect("eco status --cluster");
        let Ok(rows) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
            return 0;
        };
        let eco1 = rows
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["instance_id"] == "eco-1");
        eco1.and_then(|r| r["status"]["members"].as_array())
            .into_iter()
            .flatten()
            .filter(|m| m["learner"] == false && m["healthy"] == true)
            .count()
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        kill(self.child.id() as i32, libc::SIGINT);
        let _ = testkit::process::wait_exit(&mut self.child, Duration::from_secs(60));
        let _ = self.child.kill();
        let _ = self.child.wait();
        for id in &self.ids {
            for pid in eco_pids(&self.run.join(format!("{id}.toml")))
                .into_iter()
                .chain(testkit::etcd::pids_on(&self.run.join(id).join("etcd")))
            {
                kill(pid, libc::SIGKILL);
            }
        }
    }
}

#[test]
fn the_group_file_starts_and_stops_instances() {
    let dir = tempfile::tempdir().expect("tempdir");
    let group_from = dir.path().join("group-template.toml");
    std::fs::write(
        &group_from,
        instance("eco-1", "127.0.95.1") + &instance("eco-2", "127.0.95.2"),
    )
    .expect("group");
    let run = dir.path().join("run");
    let out = dir.path().join("out.txt");
    let child = Command::new("python3")
        .arg(testkit::workspace_root().join("scripts/run-local.py"))
        .arg("--eco")
        .arg(eco_bin!())
        .arg("--etcd-bin")
        .arg(testkit::etcd::bin_dir())
        .arg("--run-dir")
        .arg(&run)
        .arg("--group-from")
        .arg(&group_from)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(Stdio::from(
            std::fs::File::create(dir.path().join("err.txt")).expect("err"),
        ))
        .spawn()
        .expect("python3 scripts/run-local.py");
    let mut sup = Supervisor {
        child,
        out,
        run: run.clone(),
        ids: vec!["eco-1", "eco-2", "eco-3"],
    };

    // Up: the banner, with etcd's log files, which etcd writes.
    wait_until(Duration::from_secs(90), || {
        sup.output()
            .contains("the local cluster is up")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("never up:\n{}", sup.output()));
    let text = sup.output();
    for id in ["eco-1", "eco-2"] {
        let etcd_log = run.join(id).join("etcd.log");
        assert!(
            text.contains(&format!("{id}/etcd.log")),
            "banner without {id}'s etcd log:\n{text}"
        );
        let logged = std::fs::read_to_string(&etcd_log).unwrap_or_default();
        assert!(
            logged.contains("\"msg\""),
            "etcd's JSON log in {etcd_log:?}"
        );
    }
    // eco's events on one line each (time, instance, level, message,
    // [event]), and none of etcd's lines.
    assert!(
        text.lines()
            .any(|l| l.contains(" eco-1  INFO  forming the cluster  [cluster.forming]")),
        "{text}"
    );
    assert!(
        !text.contains("\"msg\""),
        "etcd's lines in the terminal:\n{text}"
    );
    assert!(run.join("operator.env").exists() && run.join("app.env").exists());

    // An instance added to the group file: its eco starts and it joins.
    std::fs::OpenOptions::new()
        .append(true)
        .open(run.join("group.toml"))
        .and_then(|mut f| f.write_all(instance("eco-3", "127.0.95.3").as_bytes()))
        .expect("grow the group");
    wait_until(Duration::from_secs(60), || {
        (sup.voters() == 3).then_some(())
    })
    .unwrap_or_else(|| panic!("eco-3 never became a voter:\n{}", sup.output()));
    let eco3 = run.join("eco-3.toml");
    assert_eq!(eco_pids(&eco3).len(), 1, "one eco for eco-3");

    // Removed again: it leaves, then its eco is stopped.
    std::fs::copy(&group_from, run.join("group.toml")).expect("shrink the group");
    wait_until(Duration::from_secs(60), || {
        (sup.voters() == 2 && eco_pids(&eco3).is_empty()).then_some(())
    })
    .unwrap_or_else(|| panic!("eco-3 never left:\n{}", sup.output()));
    let text = sup.output();
    assert!(
        text.contains("==> eco-3: it has left the cluster; stopping its eco"),
        "{text}"
    );
    assert!(text.contains("[member.removed]"), "{text}");
    assert!(
        run.join("eco-3/etcd").exists(),
        "the departed instance's data is kept"
    );

    // Ctrl-C: every eco stops its etcd and exits; nothing is left.
    kill(sup.child.id() as i32, libc::SIGINT);
    assert!(
        testkit::process::wait_exit(&mut sup.child, Duration::from_secs(60)),
        "the supervisor did not stop:\n{}",
        sup.output()
    );
    for id in ["eco-1", "eco-2"] {
        assert!(
            eco_pids(&run.join(format!("{id}.toml"))).is_empty(),
            "{id}'s eco runs"
        );
        assert!(
            testkit::etcd::pids_on(&run.join(id).join("etcd")).is_empty(),
            "{id}'s etcd runs"
        );
    }
    assert!(
        sup.output().contains("stopped. Data stays in"),
        "{}",
        sup.output()
    );
}

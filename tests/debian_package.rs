//! eco's Debian package and systemd unit on a booted machine
//! (`testkit::machine`: systemd as PID 1 in namespaces, on an overlay of
//! this host's root): the package built by `scripts/build-deb.sh` from the
//! eco under test is installed with `dpkg -i`, its unit verified with
//! `systemd-analyze verify` and scored with `systemd-analyze security`,
//! started by systemd with every hardening setting of the unit in force,
//! and removed and purged with the data kept.
//!
//! The default configuration the package installs (a cluster of one on
//! 127.0.0.1) runs on Debian's etcd 3.4 (`/usr/bin/etcd`, which
//! scripts/install-deps.sh installs): what a user of the package who
//! installed `etcd-server` gets.

use std::time::Duration;

use testkit::machine::{self, Machine};

/// `systemctl show eco -p PROP --value`.
fn show(m: &Machine, prop: &str) -> String {
    m.run(&["systemctl", "show", "eco", "-p", prop, "--value"])
        .expect("systemctl show")
        .trim()
        .to_string()
}

/// What a process of eco.service's cgroup is: `eco`, `etcd` (the member),
/// `etcd-verify` (the throwaway one-member etcd eco starts on a restored
/// copy of a snapshot to verify it, named `eco::snapshot::verify::MEMBER_NAME`;
/// it may be running whenever the unit is looked at), or the process's own
/// name.
fn role(pid: &str, name: String) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let flag = format!("--name={}", eco::snapshot::verify::MEMBER_NAME);
    let verifying = cmdline.split(|b| *b == 0).any(|arg| arg == flag.as_bytes());
    if name == "etcd" && verifying {
        "etcd-verify".to_string()
    } else {
        name
    }
}

/// (host pid, uid, role) of every process in eco.service's cgroup.
fn unit_processes(m: &Machine) -> Vec<(String, u32, String)> {
    let cgroup = show(m, "ControlGroup");
    assert!(!cgroup.is_empty(), "eco.service has no cgroup");
    // The machine's cgroups are a subtree of the host's (testkit::machine),
    // which its systemd names in full or from its own root.
    let subtree = format!("/eco-machine-{}", m.name());
    let path = if cgroup.starts_with(&subtree) {
        format!("/sys/fs/cgroup/systemd{cgroup}/cgroup.procs")
    } else {
        format!("/sys/fs/cgroup/systemd{subtree}{cgroup}/cgroup.procs")
    };
    let procs = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    procs
        .split_whitespace()
        .filter_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let name = status
                .lines()
                .find_map(|l| l.strip_prefix("Name:"))?
                .trim()
                .to_string();
            let uid: u32 = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((pid.to_string(), uid, role(pid, name)))
        })
        .collect()
}

fn etcdctl(m: &Machine, args: &[&str]) -> (i32, String, String) {
    let mut all = vec![
        "etcdctl",
        "--endpoints",
        "http://127.0.0.1:2379",
        "--command-timeout=5s",
    ];
    all.extend_from_slice(args);
    m.exec(&all).expect("etcdctl in the machine")
}

#[test]
fn the_package_installs_a_hardened_notify_service_that_runs_etcd_and_keeps_its_data() {
    if let Some(why) = machine::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let deb = machine::build_debian_package(
        std::path::Path::new(env!("CARGO_BIN_EXE_eco")),
        &machine::files_root().join("deb-build"),
    )
    .expect("build the package");
    let m = Machine::boot("eco-deb").expect("boot the machine");
    std::fs::copy(&deb, m.path("/tmp/eco.deb")).expect("copy the package in");

    // Install.
    let out = m.run(&["dpkg", "-i", "/tmp/eco.deb"]).expect("dpkg -i");
    eprintln!("{out}");
    for file in [
        "/usr/bin/eco",
        "/lib/systemd/system/eco.service",
        "/usr/lib/sysusers.d/eco.conf",
        "/etc/eco/eco.toml",
        "/etc/eco/group.toml",
        "/usr/share/doc/eco/config.example.toml",
    ] {
        assert!(m.path(file).exists(), "{file} is not installed");
    }
    let passwd = m.run(&["getent", "passwd", "eco"]).expect("the eco user");
    assert!(passwd.contains("/var/lib/eco"), "{passwd}");
    assert!(
        passwd.trim_end().ends_with("nologin"),
        "a system user without a shell: {passwd}"
    );
    let stat = m
        .run(&["stat", "-c", "%U:%G %a", "/var/lib/eco", "/etc/eco"])
        .expect("stat");
    assert_eq!(stat, "eco:eco 750\nroot:eco 750\n", "owners and modes");
    // Installed, never started nor enabled: a new machine must not form a
    // cluster of one by accident.
    assert_eq!(show(&m, "UnitFileState"), "disabled");
    assert_eq!(show(&m, "ActiveState"), "inactive");
    let check = m
        .run(&["eco", "config", "check", "/etc/eco/eco.toml"])
        .expect("the default config is valid");
    eprintln!("{check}");

    // The installed unit: systemd's verifier, and its exposure score.
    let (code, out, err) = m
        .exec(&[
            "systemd-analyze",
            "verify",
            "/lib/systemd/system/eco.service",
        ])
        .expect("systemd-analyze verify");
    assert_eq!(code, 0, "systemd-analyze verify: {out}{err}");
    assert!(
        err.trim().is_empty() && out.trim().is_empty(),
        "verify warned: {out}{err}"
    );
    // Loaded by the machine's systemd, and offline from the file (what
    // docs/aws.md records): the same score, at most 2.0.
    let exposure = |args: &[&str]| -> f64 {
        let (_, security, _) = m.exec(args).expect("systemd-analyze security");
        security
            .lines()
            .find_map(|l| l.split("Overall exposure level for eco.service:").nth(1))
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no exposure level in: {security}"))
    };
    let loaded = exposure(&["systemd-analyze", "security", "--no-pager", "eco.service"]);
    let offline = exposure(&[
        "systemd-analyze",
        "security",
        "--no-pager",
        "--offline=true",
        "/lib/systemd/system/eco.service",
    ]);
    eprintln!(
        "debian-package: systemd-analyze security eco.service: {loaded} (offline: {offline})"
    );
    assert_eq!(loaded, offline, "the loaded and offline scores differ");
    assert!(loaded <= 2.0, "the unit's exposure rose to {loaded}");

    // Start: Type=notify, so `systemctl start` returns once eco said
    // READY=1, which it says only once its member serves.
    let (code, out, err) = m
        .exec_for(Duration::from_secs(120), &["systemctl", "start", "eco"])
        .expect("systemctl start eco");
    assert_eq!(
        code,
        0,
        "systemctl start eco: {out}{err}\n{}",
        m.journal("eco")
    );
    let (code, out, err) = etcdctl(&m, &["endpoint", "health"]);
    assert_eq!(
        code,
        0,
        "not healthy when started: {out}{err}\n{}",
        m.journal("eco")
    );
    assert_eq!(show(&m, "ActiveState"), "active");
    let status_text = show(&m, "StatusText");
    eprintln!("debian-package: StatusText={status_text}");
    assert!(!status_text.is_empty(), "eco sent no STATUS=");
    let (code, out, err) = etcdctl(&m, &["put", "/app/kept", "across restarts and removal"]);
    assert_eq!(code, 0, "put: {out}{err}");

    // Both processes run as eco, in the unit's cgroup, under its sandbox;
    // so does a snapshot verification's etcd when one runs (seen in CI:
    // the member's etcd and the verification's, both named etcd).
    let procs = unit_processes(&m);
    let eco_uid: u32 = m
        .run(&["id", "-u", "eco"])
        .expect("id -u eco")
        .trim()
        .parse()
        .expect("a uid");
    for name in ["eco", "etcd"] {
        let found: Vec<_> = procs.iter().filter(|(_, _, n)| n == name).collect();
        assert_eq!(found.len(), 1, "one {name} in the unit: {procs:?}");
        assert_eq!(found[0].1, eco_uid, "{name} runs as eco: {procs:?}");
    }
    for (_, uid, role) in &procs {
        assert_eq!(*uid, eco_uid, "{role} runs as eco: {procs:?}");
    }
    let (_, status, _) = m
        .exec(&["eco", "status", "--config", "/etc/eco/eco.toml"])
        .expect("eco status");
    assert!(status.contains("ready"), "eco status: {status}");

    // Restart=always: eco killed is restarted, and its member serves again
    // with its data.
    let main_pid = show(&m, "MainPID");
    m.run(&["kill", "-KILL", &main_pid]).expect("kill eco");
    let restarted = testkit::wait_until(Duration::from_secs(60), || {
        let pid = show(&m, "MainPID");
        (show(&m, "NRestarts") == "1"
            && pid != "0"
            && pid != main_pid
            && show(&m, "ActiveState") == "active")
            .then_some(())
    });
    assert!(restarted.is_some(), "not restarted: {}", m.journal("eco"));
    let got = testkit::wait_until(Duration::from_secs(60), || {
        let (code, out, _) = etcdctl(&m, &["get", "--print-value-only", "/app/kept"]);
        (code == 0).then_some(out)
    });
    assert_eq!(got.as_deref(), Some("across restarts and removal\n"));

    // Stop: eco's final snapshot, then etcd stopped by eco; nothing left.
    let (code, out, err) = m
        .exec_for(Duration::from_secs(330), &["systemctl", "stop", "eco"])
        .expect("systemctl stop eco");
    assert_eq!(code, 0, "systemctl stop: {out}{err}");
    assert_eq!(show(&m, "ActiveState"), "inactive");
    assert_eq!(show(&m, "Result"), "success", "{}", m.journal("eco"));
    let journal = m.journal("eco");
    assert!(
        !journal.contains("SIGKILL") && !journal.contains("Killing process"),
        "systemd had to kill: {journal}"
    );
    let snapshots = std::fs::read_dir(m.path("/var/lib/eco/snapshots"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(
        snapshots > 0,
        "no snapshot in /var/lib/eco/snapshots: {journal}"
    );

    // Remove: the binary and the unit go; etcd's data and the config stay.
    m.run(&["dpkg", "-r", "eco"]).expect("dpkg -r");
    assert!(!m.path("/usr/bin/eco").exists());
    assert!(!m.path("/lib/systemd/system/eco.service").exists());
    assert!(
        m.path("/etc/eco/eco.toml").exists(),
        "remove keeps conffiles"
    );
    assert!(
        m.path("/var/lib/eco/etcd/member").is_dir(),
        "remove kept etcd's data"
    );
    // Purge: the configuration goes; etcd's data is still never deleted.
    let (code, out, err) = m.exec(&["dpkg", "-P", "eco"]).expect("dpkg -P");
    assert_eq!(code, 0, "dpkg -P: {out}{err}");
    assert!(
        err.contains("kept /var/lib/eco"),
        "purge says what it kept: {out}{err}"
    );
    assert!(
        !m.path("/etc/eco/eco.toml").exists(),
        "purge removes conffiles"
    );
    assert!(
        m.path("/var/lib/eco/etcd/member").is_dir(),
        "purge kept etcd's data"
    );

    // Installed again over the kept data: the same member, the same key.
    m.run(&["dpkg", "-i", "/tmp/eco.deb"])
        .expect("dpkg -i again");
    let (code, out, err) = m
        .exec_for(Duration::from_secs(120), &["systemctl", "start", "eco"])
        .expect("systemctl start eco");
    assert_eq!(
        code,
        0,
        "start over kept data: {out}{err}\n{}",
        m.journal("eco")
    );
    let (code, out, _) = etcdctl(&m, &["get", "--print-value-only", "/app/kept"]);
    assert_eq!((code, out.as_str()), (0, "across restarts and removal\n"));
    m.run(&["systemctl", "stop", "eco"]).expect("stop");
}

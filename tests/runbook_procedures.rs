//! docs/runbook.md's procedures run **as written**: each command is taken
//! from the document's text (its fenced `sh` blocks, with
//! `testkit::doc_commands`), the document's example values (`/etc/eco/…`,
//! `10.0.0.5`, `/var/tmp/…`, the example snapshot name, `127.0.0.1`) are
//! replaced by the test's real ones — each replacement asserting that its
//! example is still in the block — and run by `bash -euo pipefail` with
//! eco's and etcd's directories first on `PATH`, against real eco and etcd
//! processes on loopback (127.0.130.0/24 to 127.0.133.0/24, each test its
//! own block):
//!
//! - "Restoring by hand": a stored snapshot restored by name, a plain etcd
//!   started on it showing the keys written before; a moved-aside data
//!   directory turned into a snapshot file with etcd's
//!   `--force-new-cluster`, that file restored and read; on the same
//!   source, "Restoring to a point in time" (`--at-revision`) and "Cloning
//!   a cluster at a point" (export `--at-time`, import), each point
//!   between two writes of a key; and "Starting a new cluster from a
//!   snapshot": the moved-aside directory's file imported into a new
//!   cluster's store, which starts from it with every key;
//! - "Rotating the gossip keys": the three steps' blocks on each instance
//!   of a group of three, each step waited for on every instance (eco's
//!   log line); no gossip peer went down, the cluster answers;
//! - "TLS: an etcdctl session": `eco certs client` then etcdctl over https
//!   with the certificate, on generated TLS;
//! - "Authentication inside etcd": the check and the root session with the
//!   root password file, on a cluster with authentication enabled.
//!
//! A block that fails as written fails the test with its script and
//! output: the document is wrong (or eco is).

use std::path::Path;
use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Options, key_pattern};
use testkit::doc_commands::{ShBlock, ShRun, Shell, sh_blocks};
use testkit::eco_bin;
use testkit::etcd::{self, dump, read, wait_serving, write};
use testkit::instance::Instance;
use testkit::wait_until;

/// The runbook's `sh` blocks under `heading`.
fn runbook(heading: &str) -> Vec<ShBlock> {
    sh_blocks(&testkit::workspace_root().join("docs/runbook.md"), heading)
        .unwrap_or_else(|e| panic!("docs/runbook.md: {e:#}"))
}

/// The runbook's only `sh` block under `heading`.
fn runbook_one(heading: &str) -> ShBlock {
    let mut blocks = runbook(heading);
    assert_eq!(blocks.len(), 1, "one block under {heading:?}: {blocks:#?}");
    blocks.remove(0)
}

/// The newest revision the change archive's chains reach, from `eco
/// snapshot list`'s table (`INCARNATION FROM TO …`); 0 without one.
fn archive_reaches(listing: &str) -> i64 {
    listing
        .lines()
        .skip_while(|l| !l.starts_with("INCARNATION"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
        .max()
        .unwrap_or(0)
}

/// Blocks run in `dir` (also `HOME`), each given `limit`.
fn shell(dir: &Path, limit: Duration) -> Shell {
    std::fs::create_dir_all(dir).unwrap();
    Shell::new(&eco_bin!(), &etcd::bin_dir(), dir, limit)
}

/// Runs `block`; it must succeed as written.
fn run_ok(block: &ShBlock, shell: &Shell) -> ShRun {
    let run = block.run(shell).expect("bash runs");
    assert!(run.success(), "failed as written: {}", run.report());
    eprintln!(
        "runbook: {} ran in {:.1} s",
        run.origin,
        run.took.as_secs_f64()
    );
    run
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// The value etcdctl's `get` printed for `key` (it prints each key's line,
/// then its value's).
fn printed_value<'a>(stdout: &'a str, key: &str) -> Option<&'a str> {
    let mut lines = stdout.lines();
    lines.find(|l| *l == key)?;
    lines.next()
}

/// The runbook's example stored snapshot name.
const EXAMPLE_SNAPSHOT: &str =
    "mycluster/snapshots/i0000000002-r00000000000000012345-mycluster-2-1a2b3c4d.db";
/// The runbook's example moved-aside directory's parent: `etcd.data_dir`'s.
const EXAMPLE_DATA_PARENT: &str = "/var/lib/eco/";
/// Its name there, as eco names one (a joiner's data of incarnation 1).
const MOVED_ASIDE: &str = "etcd.moved-20261123T160134.123Z-incarnation-1";

/// "Restoring by hand" from start to end, with "Restoring to a point in
/// time" and "Cloning a cluster at a point" on the same source, then
/// "Starting a new cluster from a snapshot" with the snapshot file made
/// from the moved-aside directory.
#[test]
fn the_restore_and_clone_procedures_run_as_written() {
    let t = Instant::now();
    let mut source = Instance::new(eco_bin!(), "127.0.130.1").with_dir_store();
    // The plain etcds the blocks start, each on an address of its own.
    let _claims: Vec<_> = ["127.0.130.2", "127.0.130.3", "127.0.130.4", "127.0.130.6"]
        .iter()
        .map(|a| testkit::address_claim::claim(a).unwrap())
        .collect();
    source.start();
    wait_serving(&source.endpoint(), Duration::from_secs(20)).expect("the source serves");
    let keys: Vec<String> = (0..10).map(|n| format!("runbook/{n:02}")).collect();
    for key in &keys {
        assert!(write(&source.endpoint(), key, "before-the-snapshot"));
    }
    let cfg = path(&source.config).to_string();
    let (code, out, err) = source.eco(&[
        "snapshot",
        "now",
        "--config",
        &cfg,
        "--instance-id",
        "eco-1",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let stored = out
        .split_whitespace()
        .skip_while(|w| *w != "stored")
        .nth(1)
        .expect("the stored snapshot's name")
        .to_string();
    // The archive follows etcd (it receives what comes next as it comes:
    // a point in time is when the archive received a revision).
    let following = wait_until(Duration::from_secs(30), || {
        let log = source.log();
        (log.contains("event=\"archive.resumed\"")
            || log.contains("event=\"archive.chain_started\""))
        .then_some(())
    });
    assert!(following.is_some(), "the archive follows etcd");
    // After the snapshot: in the change archive and the data directory.
    assert!(write(
        &source.endpoint(),
        "runbook/later",
        "after-the-snapshot"
    ));
    let (later_revision, _) = dump(&source.endpoint()).expect("the revision");
    // "`eco snapshot list` shows its chains": once the archive reaches a
    // revision, it was received.
    let wait_archived = |revision: i64| {
        let archived = wait_until(Duration::from_secs(20), || {
            let (code, out, _) = source.eco(&["snapshot", "list", "--config", &cfg]);
            (code == 0 && archive_reaches(&out) >= revision).then_some(())
        });
        assert!(
            archived.is_some(),
            "the archive reaches revision {revision}: {:?}",
            source.eco(&["snapshot", "list", "--config", &cfg])
        );
    };
    wait_archived(later_revision);
    // A point in time between that write and its overwrite.
    let point_in_time = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    std::thread::sleep(Duration::from_millis(50));
    assert!(write(&source.endpoint(), "runbook/later", "at-the-end"));
    let (end_revision, _) = dump(&source.endpoint()).expect("the revision");
    wait_archived(end_revision);

    let work = source.dir.path().join("runbook");
    let sh = shell(&work, Duration::from_secs(60));
    let blocks = runbook("Restoring by hand");
    assert_eq!(
        blocks.len(),
        3,
        "the restore commands, the plain etcd on the result, the moved-aside directory: {blocks:#?}"
    );
    let restores = blocks[0].per_command();
    assert_eq!(
        restores.len(),
        2,
        "a stored snapshot, a file: {:#?}",
        blocks[0]
    );
    // A plain etcd on a restored directory, read by etcdctl.
    let serve = |data_dir: &Path, address: &str| -> ShRun {
        let block = blocks[1]
            .clone()
            .replace_example("/var/tmp/etcd-restored", path(data_dir))
            .replace_example("127.0.0.1", address);
        run_ok(&block, &sh)
    };

    // A snapshot in the store, by the name `eco snapshot now` printed.
    let from_store = work.join("restored-from-store");
    run_ok(
        &restores[0]
            .clone()
            .replace_example(EXAMPLE_SNAPSHOT, &stored)
            .replace_example("/etc/eco/eco.toml", &cfg)
            .replace_example("/var/tmp/etcd-restored", path(&from_store))
            .replace_example("127.0.0.1", "127.0.130.2"),
        &sh,
    );
    let read_back = serve(&from_store, "127.0.130.2");
    for key in &keys {
        assert_eq!(
            printed_value(&read_back.stdout, key),
            Some("before-the-snapshot"),
            "{key} in the restored snapshot: {}",
            read_back.report()
        );
    }
    assert_eq!(printed_value(&read_back.stdout, "runbook/later"), None);

    // "Restoring to a point in time": the revision of the first write of
    // runbook/later, replayed from the archive.
    let at_revision = work.join("restored-at-revision");
    let restored = run_ok(
        &runbook_one("Restoring to a point in time")
            .replace_example("12000", &later_revision.to_string())
            .replace_example("/etc/eco/eco.toml", &cfg)
            .replace_example("/var/tmp/etcd-restored", path(&at_revision))
            .replace_example("127.0.0.1", "127.0.130.6"),
        &sh,
    );
    assert!(
        restored
            .stdout
            .contains(&format!("restored revision {later_revision} of cluster it")),
        "{}",
        restored.report()
    );
    let read_back = serve(&at_revision, "127.0.130.6");
    assert_eq!(
        printed_value(&read_back.stdout, "runbook/later"),
        Some("after-the-snapshot"),
        "runbook/later at revision {later_revision}: {}",
        read_back.report()
    );

    // "Cloning a cluster at a point": the point in time exported with the
    // source's config, imported with a new cluster's.
    let clone_config = work.join("clone.toml");
    testkit::config::ConfigBuilder::new("clone", "group.toml")
        .etcd_bin_dir(&etcd::bin_dir())
        .dir_store(work.join("clone-store"))
        .write(&clone_config)
        .unwrap();
    std::fs::create_dir_all(work.join("clone-store")).unwrap();
    let point_db = work.join("point.db");
    let cloned = run_ok(
        &runbook_one("Cloning a cluster at a point")
            .replace_example("/var/tmp/point.db", path(&point_db))
            .replace_example("2026-11-27T14:05:00Z", &point_in_time)
            .replace_example("/etc/eco/source.toml", &cfg)
            .replace_example("/etc/eco/clone.toml", path(&clone_config)),
        &sh,
    );
    let exported: i64 = cloned
        .stdout
        .split("revision ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the exported revision: {}", cloned.report()));
    assert!(
        (later_revision..end_revision).contains(&exported),
        "the point {point_in_time} is between revisions {later_revision} and {end_revision}: {}",
        cloned.report()
    );
    assert!(
        cloned
            .stdout
            .contains("bootstrap_from = \"clone/snapshots/i0000000000-r"),
        "{}",
        cloned.report()
    );

    // A moved-aside data directory, made for real: the stopped source's
    // etcd data directory copied to the name eco gives one, beside
    // `etcd.data_dir` (eco's own moves are tests/quorum_loss.rs's).
    source.signal(libc::SIGTERM);
    assert!(
        source.wait_exit(Duration::from_secs(30)).is_some(),
        "the source stops"
    );
    assert!(
        wait_until(Duration::from_secs(10), || source
            .etcd_pids()
            .is_empty()
            .then_some(()))
        .is_some(),
        "the source's etcd stops with it"
    );
    let data_parent = source.data_dir().parent().unwrap().to_path_buf();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(source.data_dir())
        .arg(data_parent.join(MOVED_ASIDE))
        .status()
        .unwrap();
    assert!(copied.success());
    let old_copy = work.join("old-copy");
    let old_db = work.join("old.db");
    run_ok(
        &blocks[2]
            .clone()
            .replace_example(
                &format!("{EXAMPLE_DATA_PARENT}{MOVED_ASIDE}"),
                path(&data_parent.join(MOVED_ASIDE)),
            )
            .replace_example("/var/tmp/old-copy", path(&old_copy))
            .replace_example("/var/tmp/old.db", path(&old_db))
            // "--name must be the member's old name, its instance id"
            .replace_example("eco-2", "eco-1")
            .replace_example("127.0.0.1", "127.0.130.3"),
        &sh,
    );
    assert!(old_db.is_file(), "the moved-aside directory's snapshot");

    // "… is then a file `eco restore --from` accepts": the file restore.
    let from_file = work.join("restored-from-file");
    run_ok(
        &restores[1]
            .clone()
            .replace_example("/var/tmp/snap.db", path(&old_db))
            .replace_example("/var/tmp/etcd-restored", path(&from_file))
            .replace_example("127.0.0.1", "127.0.130.4"),
        &sh,
    );
    let read_back = serve(&from_file, "127.0.130.4");
    for key in &keys {
        assert_eq!(
            printed_value(&read_back.stdout, key),
            Some("before-the-snapshot"),
            "{key}: {}",
            read_back.report()
        );
    }
    assert_eq!(
        printed_value(&read_back.stdout, "runbook/later"),
        Some("at-the-end"),
        "the moved-aside directory's newest write: {}",
        read_back.report()
    );
    let restored_by_hand = t.elapsed();

    // "Starting a new cluster from a snapshot", with that file: imported
    // into a new cluster's store, which starts from it.
    let mut fresh = Instance::new(eco_bin!(), "127.0.130.5").with_dir_store();
    fresh.configure(|c| c.cluster_name("copy"));
    let imported = run_ok(
        &runbook_one("Starting a new cluster from a snapshot")
            .replace_example("/var/tmp/old.db", path(&old_db))
            .replace_example("/etc/eco/eco.toml", path(&fresh.config)),
        &sh,
    );
    let name = imported
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("bootstrap_from = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no bootstrap_from line: {}", imported.report()))
        .to_string();
    fresh.configure(|c| c.bootstrap_from(&name));
    fresh.start();
    wait_serving(&fresh.endpoint(), Duration::from_secs(30)).expect("the new cluster serves");
    let (_, got) = dump(&fresh.endpoint()).expect("the new cluster's keys");
    let mut want: Vec<(String, String)> = keys
        .iter()
        .map(|k| (k.clone(), "before-the-snapshot".to_string()))
        .collect();
    want.push(("runbook/later".into(), "at-the-end".into()));
    let got: Vec<(String, String)> = got
        .into_iter()
        .filter(|(k, _)| k.starts_with("runbook/"))
        .collect();
    assert_eq!(got, want, "the new cluster starts with every key");
    eprintln!(
        "runbook: restored by hand in {:.1} s, a new cluster from the file by {:.1} s",
        restored_by_hand.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
}

const GOSSIP_IDS: [&str; 3] = ["eco-1", "eco-2", "eco-3"];
const KEYS_INSTALLED: &str = "gossip keys re-read from gossip.key_file and installed";

/// "Rotating the gossip keys": the three steps' blocks on every instance
/// of a group of three, each step finished everywhere (eco's log line)
/// before the next.
#[test]
fn the_gossip_keys_rotate_as_written() {
    let t = Instant::now();
    let (old, new) = (key_pattern(37, 11), key_pattern(53, 7));
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    for (n, id) in GOSSIP_IDS.iter().enumerate() {
        c.add(id, &format!("127.0.131.{}", n + 1)).unwrap();
        // Each instance's own key file, as on separate machines.
        c.configure(id, |b| b.gossip_key_file("gossip.keys"))
            .unwrap();
        testkit::auth::write_secret(&c.nodes[*id].dir.join("gossip.keys"), &format!("{old}\n"))
            .unwrap();
    }
    c.set_group(&GOSSIP_IDS).unwrap();
    for id in GOSSIP_IDS {
        c.start(id).unwrap();
    }
    c.wait_voters(&GOSSIP_IDS, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no cluster formed: {:?}", c.members()));
    let all_up = wait_until(Duration::from_secs(15), || {
        c.gossip_rows(&GOSSIP_IDS).iter().all(|r| r.2).then_some(())
    });
    assert!(all_up.is_some(), "gossip: {:?}", c.gossip_rows(&GOSSIP_IDS));
    let downs_before: Vec<Option<u64>> = c.gossip_rows(&GOSSIP_IDS).iter().map(|r| r.3).collect();
    let formed = t.elapsed();

    let steps = runbook("Rotating the gossip keys");
    assert_eq!(steps.len(), 3, "one block per step: {steps:#?}");
    for (n, step) in steps.iter().enumerate() {
        for id in GOSSIP_IDS {
            let dir = c.nodes[id].dir.clone();
            let sh = shell(&dir, Duration::from_secs(20))
                .with_env("OLD", &old)
                .with_env("NEW", &new);
            let block = step
                .clone()
                .replace_example("/etc/eco/", &format!("{}/", dir.display()));
            run_ok(&block, &sh);
        }
        // "Before the next step, check that every instance took the step."
        for id in GOSSIP_IDS {
            let took = wait_until(Duration::from_secs(10), || {
                (c.nodes[id].log().matches(KEYS_INSTALLED).count() > n).then_some(())
            });
            assert!(
                took.is_some(),
                "step {}: {id} did not log {KEYS_INSTALLED:?}:\n{}",
                n + 1,
                c.log_tail(id, 20)
            );
        }
    }
    for id in GOSSIP_IDS {
        let file = c.nodes[id].dir.join("gossip.keys");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("{new}\n"),
            "{id}: the new key alone"
        );
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&file).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{id}: the key file's mode");
    }
    // "That nothing flapped": every peer up, not seen down meanwhile.
    let rows = c.gossip_rows(&GOSSIP_IDS);
    assert!(
        rows.iter().all(|(_, _, up, _)| *up),
        "(seer, seen, up, times down): {rows:?}"
    );
    assert_eq!(
        rows.iter().map(|r| r.3).collect::<Vec<_>>(),
        downs_before,
        "times down, before and after the rotation: {rows:?}"
    );
    // The cluster still answers, on every instance.
    assert!(write(&c.nodes["eco-1"].endpoint(), "rotated", "yes"));
    for id in GOSSIP_IDS {
        let answered = wait_until(Duration::from_secs(10), || {
            read(&c.nodes[id].endpoint(), "rotated")
        });
        assert_eq!(
            answered.and_then(|(_, v)| v).as_deref(),
            Some("yes"),
            "{id} answers"
        );
    }
    eprintln!(
        "runbook: gossip keys: formed in {:.1} s, rotated in three steps by {:.1} s",
        formed.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
}

/// "TLS: an etcdctl session": a client certificate from `eco certs client`,
/// then etcdctl over https with it, on generated TLS.
#[test]
fn an_etcdctl_session_over_generated_tls_runs_as_written() {
    let t = Instant::now();
    let mut c = Cluster::new(Options {
        generated_tls: true,
        ..Options::integration(eco_bin!())
    })
    .expect("cluster");
    c.add("eco-1", "127.0.132.1").unwrap();
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1"], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no cluster formed:\n{}", c.log_tail("eco-1", 30)));
    let blocks = runbook("TLS: an etcdctl session, certificates, renewal");
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    // `~` is the shell's HOME: this directory.
    let home = c.root().join("operator");
    let session = run_ok(
        &blocks[0]
            .clone()
            .replace_example("/etc/eco/eco.toml", path(&c.nodes["eco-1"].config))
            .replace_example("10.0.0.5", "127.0.132.1"),
        &shell(&home, Duration::from_secs(30)),
    );
    assert!(
        home.join("etcd-alice/alice.crt").is_file(),
        "{}",
        session.report()
    );
    let listed = session
        .stdout
        .lines()
        .find(|l| l.contains("eco-1"))
        .unwrap_or_else(|| panic!("the member list: {}", session.report()));
    assert!(
        listed.contains("started") && listed.contains("https://127.0.132.1:2379"),
        "{listed}"
    );
    eprintln!(
        "runbook: etcdctl session over generated TLS by {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// "Authentication inside etcd": the check that authentication is on and
/// a root session, with the root password file eco uses.
#[test]
fn a_root_session_under_etcd_authentication_runs_as_written() {
    let t = Instant::now();
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let secrets = c.root().join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    let root_password = secrets.join("etcd-root.password");
    testkit::auth::write_secret(&root_password, "runbook-r00t\n").unwrap();
    etcd::authenticate("127.0.133.1:2379", "root", "runbook-r00t");
    c.add("eco-1", "127.0.133.1").unwrap();
    c.configure("eco-1", |b| {
        b.auth(eco::config::AuthConfig {
            enabled: true,
            root_password_file: Some(root_password.clone()),
            ..Default::default()
        })
    })
    .unwrap();
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1"], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no cluster formed:\n{}", c.log_tail("eco-1", 30)));
    let enabled = wait_until(Duration::from_secs(30), || {
        c.nodes["eco-1"]
            .log()
            .contains("authentication is enabled in etcd")
            .then_some(())
    });
    assert!(
        enabled.is_some(),
        "eco enables authentication:\n{}",
        c.log_tail("eco-1", 30)
    );
    let blocks = runbook("Authentication inside etcd");
    assert_eq!(blocks.len(), 2, "the check, a root session: {blocks:#?}");
    let sh = shell(&c.root().join("operator"), Duration::from_secs(30));
    let check = run_ok(
        &blocks[0]
            .clone()
            .replace_example("10.0.0.5", "127.0.133.1")
            .replace_example("/etc/eco/secrets/etcd-root.password", path(&root_password)),
        &sh,
    );
    assert!(
        check.stdout.contains("Authentication Status: true"),
        "{}",
        check.report()
    );
    let session = run_ok(
        &blocks[1]
            .clone()
            .replace_example("10.0.0.5", "127.0.133.1")
            .replace_example("/etc/eco/secrets/etcd-root.password", path(&root_password)),
        &sh,
    );
    assert!(
        session.stdout.lines().any(|l| l.trim() == "root"),
        "root among the users: {}",
        session.report()
    );
    eprintln!(
        "runbook: root session under authentication by {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

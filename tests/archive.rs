//! The change archive on real etcd: segments stored about every second by
//! the writing instance, a restore to any revision (or time) equal key for
//! key to the source read at that revision, the latest point after eco was
//! killed and restarted in the middle of a load, and a point the archive
//! does not cover refused by name.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use testkit::eco_bin;
use testkit::etcd::{RawEtcd, block_on, client, wait_serving};
use testkit::instance::Instance;

/// A key as a reader sees it: value, create and mod revision, version,
/// whether it has a lease.
type Seen = BTreeMap<String, (String, i64, i64, i64, bool)>;

/// Every key at `revision` (0: now), and the revision read.
fn read_at(endpoint: &str, revision: i64) -> (i64, Seen) {
    block_on(async {
        let mut c = client(endpoint).await?;
        let mut opts = etcd_client::GetOptions::new().with_all_keys();
        if revision > 0 {
            opts = opts.with_revision(revision);
        }
        let r = tokio::time::timeout(Duration::from_secs(5), c.get("", Some(opts)))
            .await
            .ok()?
            .ok()?;
        let seen = r
            .kvs()
            .iter()
            .filter(|kv| !kv.key().starts_with(b"health-probe"))
            .map(|kv| {
                (
                    String::from_utf8_lossy(kv.key()).to_string(),
                    (
                        String::from_utf8_lossy(kv.value()).to_string(),
                        kv.create_revision(),
                        kv.mod_revision(),
                        kv.version(),
                        kv.lease() != 0,
                    ),
                )
            })
            .collect();
        Some((r.header()?.revision(), seen))
    })
    .expect("read")
}

/// Puts, overwrites, deletes (one key and a range), a transaction over
/// several keys and a leased put; `round` keeps keys apart. Calls may
/// take 10 s each (a loaded CI machine stalls a one-member etcd's syncs
/// past the usual 1 s).
fn load(endpoint: &str, round: u32) {
    // A round is asked again whole when a call failed (three rounds at
    // most): its keys and values are the same each time, so a round
    // applied twice leaves the same state (a loaded CI machine failed one
    // call of a round past its 10 s).
    let done = (0..3).any(|attempt| {
        let done = load_once(endpoint, round).is_some();
        if !done {
            eprintln!("archive: load round {round} failed (attempt {attempt}); asking again");
        }
        done
    });
    assert!(done, "load round {round} through {endpoint}");
}

fn load_once(endpoint: &str, round: u32) -> Option<()> {
    block_on(async {
        let mut c = testkit::etcd::connect(
            endpoint,
            testkit::etcd::Timeouts {
                connect: Duration::from_secs(2),
                call: Duration::from_secs(10),
                attempt: Duration::from_secs(20),
            },
        )
        .await?;
        for n in 0..40 {
            c.put(
                format!("r{round}/k{:03}", n % 25),
                format!("v{n}-{}", "x".repeat(n as usize * 7)),
                None,
            )
            .await
            .ok()?;
        }
        c.delete(format!("r{round}/k003"), None).await.ok()?;
        c.delete(
            format!("r{round}/k01"),
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        )
        .await
        .ok()?;
        let txn = etcd_client::Txn::new().and_then(vec![
            etcd_client::TxnOp::put(format!("r{round}/t1"), "a", None),
            etcd_client::TxnOp::put(format!("r{round}/t2"), "b", None),
            etcd_client::TxnOp::delete(format!("r{round}/k020"), None),
        ]);
        c.txn(txn).await.ok()?;
        let lease = c.lease_grant(600, None).await.ok()?;
        c.put(
            format!("r{round}/leased"),
            "l",
            Some(etcd_client::PutOptions::new().with_lease(lease.id())),
        )
        .await
        .ok()?;
        c.put(format!("r{round}/last"), "z", None).await.ok()?;
        Some(())
    })
}

/// The newest revision the store's snapshots and segments reach (0:
/// none).
fn archived_to(store: &Path) -> i64 {
    let names = |folder: &str| -> Vec<String> {
        std::fs::read_dir(store.join("it").join(folder))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect()
    };
    // i<10>-r<20>-r<20>-token.seg; i<10>-r<20>-token.db
    let segments = names("archive")
        .into_iter()
        .filter(|n| n.ends_with(".seg"))
        .filter_map(|n| n.get(35..55)?.parse::<i64>().ok());
    let snapshots = names("snapshots")
        .into_iter()
        .filter(|n| n.ends_with(".db") && !n.starts_with('.'))
        .filter_map(|n| n.get(13..33)?.parse::<i64>().ok());
    segments.chain(snapshots).max().unwrap_or(0)
}

/// Waits until the archive's writer follows etcd (it logged where it
/// continues from, or the chain it started).
fn wait_archiving(i: &Instance, times: usize) {
    let following = testkit::wait_until(Duration::from_secs(30), || {
        let log = i.log();
        let n = log.matches("event=\"archive.resumed\"").count()
            + log.matches("event=\"archive.chain_started\"").count();
        (n >= times).then_some(())
    });
    assert!(
        following.is_some(),
        "the archive follows etcd; log:\n{}",
        i.log()
    );
}

fn wait_archived(i: &Instance, revision: i64) {
    let reached = testkit::wait_until(Duration::from_secs(30), || {
        (archived_to(&i.store_dir()) >= revision).then_some(())
    });
    assert!(
        reached.is_some(),
        "the archive reaches revision {revision} (it reaches {}); log:\n{}",
        archived_to(&i.store_dir()),
        i.log()
    );
}

/// Restores `point` (eco restore's arguments) into a new data directory,
/// serves it on `address` and reads every key; the command's output.
fn restore_and_read(i: &Instance, point: &[&str], name: &str, address: &str) -> (String, Seen) {
    let cfg = i.config.to_str().unwrap().to_string();
    let target = i.dir.path().join(format!("restored-{name}/etcd"));
    let peer = format!("http://{address}:2380");
    let mut args = vec!["restore"];
    args.extend_from_slice(point);
    args.extend_from_slice(&[
        "--config",
        &cfg,
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        name,
        "--peer-url",
        &peer,
    ]);
    let (code, out, err) = i.eco(&args);
    assert_eq!(code, 0, "eco {args:?}: {out}{err}");
    eprintln!("archive: eco {:?}: {}", point, out.trim());
    let _etcd = RawEtcd::start(&target, name, address);
    let endpoint = format!("http://{address}:2379");
    wait_serving(&endpoint, Duration::from_secs(20)).expect("restored etcd serving");
    let (_, seen) = read_at(&endpoint, 0);
    (out, seen)
}

/// The same keys, values, create and mod revisions and versions; a key
/// may lose its lease (the output says how many did).
fn assert_same(restored: &Seen, reference: &Seen, what: &str) {
    let strip = |s: &Seen| -> BTreeMap<String, (String, i64, i64, i64)> {
        s.iter()
            .map(|(k, (v, c, m, ver, _))| (k.clone(), (v.clone(), *c, *m, *ver)))
            .collect()
    };
    assert_eq!(strip(restored), strip(reference), "{what}: key for key");
}

#[test]
fn a_restore_to_any_revision_equals_the_source_read_at_it_and_survives_a_restart() {
    let mut i = Instance::new(eco_bin!(), "127.0.124.1").with_dir_store();
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    wait_archiving(&i, 1);
    let (start, _) = read_at(&i.endpoint(), 0);
    load(&i.endpoint(), 1);
    let (middle, _) = read_at(&i.endpoint(), 0);
    // A time between the two loads (the writer receives each change within
    // milliseconds of its write).
    std::thread::sleep(Duration::from_millis(300));
    let between = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    std::thread::sleep(Duration::from_millis(300));
    load(&i.endpoint(), 2);
    let (end, at_end) = read_at(&i.endpoint(), 0);
    assert!(end > middle && middle > start);

    // eco killed in the middle of a load, restarted: the archive goes on
    // from what the store holds, without a gap.
    wait_archived(&i, end);
    i.signal(libc::SIGKILL);
    i.wait_exit(Duration::from_secs(10));
    for pid in i.etcd_pids() {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(30)).expect("serving again");
    wait_archiving(&i, 2);
    load(&i.endpoint(), 3);
    let (last, at_last) = read_at(&i.endpoint(), 0);
    wait_archived(&i, last);

    // Points the archive covers, each as the source read it.
    let chosen = [middle, middle + 17, end - 3, end];
    for (n, r) in chosen.iter().enumerate() {
        let (_, reference) = read_at(&i.endpoint(), *r);
        let at = r.to_string();
        let (out, restored) = restore_and_read(
            &i,
            &["--at-revision", &at],
            &format!("r{n}"),
            &format!("127.0.124.{}", 10 + n),
        );
        assert!(out.contains(&format!("restored revision {r} ")), "{out}");
        assert_same(&restored, &reference, &format!("revision {r}"));
    }
    let (_, reference) = read_at(&i.endpoint(), end);
    assert_same(&at_end, &reference, "the reference read itself");

    // A time: the last revision received at or before it.
    let (_, reference) = read_at(&i.endpoint(), middle);
    let (out, restored) = restore_and_read(&i, &["--at-time", &between], "time", "127.0.124.19");
    assert!(
        out.contains(&format!("restored revision {middle} ")),
        "{out}"
    );
    assert_same(&restored, &reference, "the time between the loads");

    // The newest point: everything, the leased keys without their lease.
    let (out, restored) = restore_and_read(&i, &["--latest"], "latest", "127.0.124.20");
    assert_same(&restored, &at_last, "the latest point");
    assert!(out.contains(&format!("restored revision {last} ")), "{out}");
    assert!(out.contains("key(s) restored without their lease"), "{out}");

    // The listing shows the chains and how far they reach.
    let cfg = i.config.to_str().unwrap().to_string();
    let (code, table, err) = i.eco(&["snapshot", "list", "--config", &cfg]);
    assert_eq!(code, 0, "{err}");
    assert!(table.contains("change archive:"), "{table}");
    assert!(
        table.contains(&format!(" {last} ")),
        "a chain reaches {last}: {table}"
    );

    // A point past the archive is refused, saying what is covered.
    let beyond = (last + 1000).to_string();
    let target = i.dir.path().join("restored-beyond/etcd");
    let (code, _, err) = i.eco(&[
        "restore",
        "--at-revision",
        &beyond,
        "--config",
        &cfg,
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        "beyond",
        "--peer-url",
        "http://127.0.124.21:2380",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("revision {beyond} is not covered")) && err.contains("chains cover"),
        "{err}"
    );
    assert!(!target.exists(), "nothing restored");

    a_stopped_restore_leaves_nothing_behind(&cfg, &i.dir.path().join("restored-stopped"));
}

/// The pids of `pid`'s children (every thread's).
fn children_of(pid: i32) -> Vec<i32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter();
    tasks
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// Whether process `pid` is gone (or dead and waiting to be reaped).
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// `eco restore --latest` stopped by SIGTERM while its throwaway etcd
/// replays (the member frozen with SIGSTOP so the command cannot finish
/// first): it exits 143 saying so, the throwaway member is killed, and
/// nothing is left in `parent` — no work directory, no staging or data
/// directory.
fn a_stopped_restore_leaves_nothing_behind(cfg: &str, parent: &Path) {
    let target = parent.join("etcd");
    let mut restore = std::process::Command::new(eco_bin!())
        .args([
            "restore",
            "--latest",
            "--config",
            cfg,
            "--data-dir",
            target.to_str().unwrap(),
            "--name",
            "stopped",
            "--peer-url",
            "http://127.0.124.22:2380",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn eco restore");
    let eco = restore.id() as i32;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let throwaway = loop {
        let etcd = children_of(eco).into_iter().find(|c| {
            std::fs::read_to_string(format!("/proc/{c}/comm")).is_ok_and(|n| n.trim() == "etcd")
        });
        if let Some(pid) = etcd {
            break pid;
        }
        if let Ok(Some(status)) = restore.try_wait() {
            panic!("eco restore ended ({status}) before its throwaway etcd was seen");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no throwaway etcd within 60 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    unsafe {
        libc::kill(throwaway, libc::SIGSTOP);
        libc::kill(eco, libc::SIGTERM);
    }
    let exited = testkit::process::wait_exit(&mut restore, Duration::from_secs(30));
    assert!(exited, "eco restore did not stop within 30 s of SIGTERM");
    let output = restore.wait_with_output().expect("eco restore's output");
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{err}");
    assert!(err.contains("stopped by SIGTERM"), "{err}");
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        is_gone(throwaway)
    });
    if !gone {
        unsafe { libc::kill(throwaway, libc::SIGKILL) };
        panic!("the throwaway etcd {throwaway} outlived eco restore");
    }
    let left: Vec<_> = std::fs::read_dir(parent)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        parent.display()
    );
}

/// A clone: a point of one cluster's archive exported to a snapshot file,
/// imported into a new cluster's own store, and the new cluster started
/// from it — equal key for key to the source read at that point; the
/// source's store is only read.
#[test]
fn a_new_cluster_is_cloned_from_a_point_of_another() {
    let mut a = Instance::new(eco_bin!(), "127.0.124.30").with_dir_store();
    a.start();
    wait_serving(&a.endpoint(), Duration::from_secs(20)).expect("serving");
    wait_archiving(&a, 1);
    load(&a.endpoint(), 1);
    let (point, _) = read_at(&a.endpoint(), 0);
    load(&a.endpoint(), 2);
    let (end, _) = read_at(&a.endpoint(), 0);
    wait_archived(&a, end);
    let (_, reference) = read_at(&a.endpoint(), point);
    let source_store = |a: &Instance| {
        let mut files: Vec<(String, u64)> = testkit::files_under(&a.store_dir())
            .into_iter()
            .filter_map(|p| {
                let len = p.metadata().ok()?.len();
                Some((p.to_string_lossy().to_string(), len))
            })
            .collect();
        files.sort();
        files
    };
    // The source stopped: a clone needs only its store.
    a.signal(libc::SIGTERM);
    assert!(
        a.wait_exit(Duration::from_secs(30)).is_some(),
        "the source stops"
    );
    let before = source_store(&a);

    let file = a.dir.path().join("exports/point.db");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let cfg = a.config.to_str().unwrap().to_string();
    let at = point.to_string();
    let export = |file: &Path| {
        a.eco(&[
            "snapshot",
            "export",
            file.to_str().unwrap(),
            "--config",
            &cfg,
            "--at-revision",
            &at,
        ])
    };
    let (code, out, err) = export(&file);
    assert_eq!(code, 0, "{out}{err}");
    eprintln!("archive: {}", out.trim());
    assert!(
        out.contains(&format!("revision {point} of cluster it")),
        "{out}"
    );
    // An existing file is never overwritten.
    let (code, _, err) = export(&file);
    assert_eq!(code, 1);
    assert!(err.contains("exists"), "{err}");

    // The new cluster, its own name and its own store.
    let mut b = Instance::new(eco_bin!(), "127.0.124.31").with_dir_store();
    b.configure(|c| c.cluster_name("clone"));
    let bcfg = b.config.to_str().unwrap().to_string();
    let (code, out, err) = b.eco(&[
        "snapshot",
        "import",
        file.to_str().unwrap(),
        "--config",
        &bcfg,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let name = out
        .lines()
        .find_map(|l| l.strip_prefix("bootstrap_from = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no bootstrap_from line in {out}"))
        .to_string();
    assert!(name.starts_with("clone/snapshots/"), "{name}");
    b.configure(|c| c.bootstrap_from(&name));
    b.start();
    wait_serving(&b.endpoint(), Duration::from_secs(30)).expect("the clone serves");
    let (_, cloned) = read_at(&b.endpoint(), 0);
    let keys = |s: &Seen| -> BTreeMap<String, String> {
        s.iter()
            .map(|(k, (v, ..))| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(
        keys(&cloned),
        keys(&reference),
        "the clone holds the source at revision {point}"
    );
    assert_eq!(source_store(&a), before, "the source's store is only read");
}

/// Compressed and encrypted end to end on a real instance: a key pair made
/// by `eco snapshot keygen`, the cluster finalized at format 3; no stored
/// byte of a snapshot or segment shows a key; the writer's verified
/// restore passes with the identity; `eco restore --latest` gives back
/// every key, and without the identity it is refused, naming the key to
/// set, with nothing written.
#[test]
fn compressed_and_encrypted_snapshots_and_segments_restore_only_with_the_identity() {
    let mut i = Instance::new(eco_bin!(), "127.0.124.40").with_dir_store();
    let identity = i.dir.path().join("identity.txt");
    let (code, out, err) = i.eco(&["snapshot", "keygen", "--out", identity.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let recipient = out
        .lines()
        .find_map(|l| l.strip_prefix("recipients = [\""))
        .and_then(|l| l.strip_suffix("\"]"))
        .unwrap_or_else(|| panic!("a recipient in: {out}"))
        .to_string();
    let (code, _, err) = i.eco(&["snapshot", "keygen", "--out", identity.to_str().unwrap()]);
    assert_ne!(code, 0, "an existing identity file is never overwritten");
    assert!(err.contains("identity.txt"), "{err}");
    i.configure(|c| {
        c.snapshot_encryption(std::slice::from_ref(&recipient), Some(&identity))
            .snapshot_verify_interval(Duration::from_secs(10))
    });
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    wait_archiving(&i, 1);
    let cfg = i.config.to_str().unwrap().to_string();
    // A new cluster of this build is finalized at its newest format at
    // once (nothing older ever ran it): snapshots are compressed from the
    // start.
    let record = i
        .store_dir()
        .join("it/incarnations/cluster-version-0000000003");
    let finalized = testkit::wait_until(Duration::from_secs(30), || {
        std::fs::read_to_string(&record).ok()
    });
    assert!(
        finalized
            .as_deref()
            .is_some_and(|r| r.contains("a new cluster")),
        "{finalized:?}; log:\n{}",
        i.log()
    );
    load(&i.endpoint(), 1);
    let (code, out, err) = i.eco(&["snapshot", "now", "--config", &cfg, "--instance-id", &i.id]);
    assert_eq!(code, 0, "{out}{err}");
    load(&i.endpoint(), 2);
    let (last, at_last) = read_at(&i.endpoint(), 0);
    wait_archived(&i, last);

    let stored: Vec<_> = testkit::files_under(&i.store_dir().join("it"))
        .into_iter()
        .filter(|p| {
            let n = p.to_string_lossy();
            (n.ends_with(".db") || n.ends_with(".seg")) && !n.contains("/.")
        })
        .collect();
    assert!(stored.len() >= 3, "snapshots and segments: {stored:?}");
    for path in &stored {
        let bytes = std::fs::read(path).expect("stored object");
        assert!(
            !bytes.windows(5).any(|w| w == b"r1/k0" || w == b"r2/k0"),
            "{} shows a key in the clear",
            path.display()
        );
    }
    let infos: Vec<String> = testkit::files_under(&i.store_dir().join("it/snapshots"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert!(
        infos.iter().any(|m| m.contains("\"compression\": \"zstd\"")
            && m.contains("\"encryption\": \"age\"")
            && m.contains("\"format\": \"3\"")),
        "a compressed, encrypted format-3 snapshot: {infos:?}"
    );
    // A segment's metadata records its one outer layer, age; its own zstd
    // is its format's, not a `compression` layer to undo.
    let segment_infos: Vec<String> = testkit::files_under(&i.store_dir().join("it/archive"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert!(!segment_infos.is_empty(), "segments' metadata");
    for m in &segment_infos {
        assert!(
            m.contains("\"encryption\": \"age\"") && !m.contains("\"compression\""),
            "a sealed segment's metadata: {m}"
        );
    }

    let (code, table, err) = i.eco(&["snapshot", "list", "--config", &cfg]);
    assert_eq!(code, 0, "{err}");
    assert!(table.contains(" zstd+age\n"), "{table}");

    // The writer's verified restore opens them with the identity.
    let verified = testkit::wait_until(Duration::from_secs(60), || {
        let record = std::fs::read_to_string(i.store_dir().join("it/verification.json")).ok()?;
        record.contains("\"ok\": true").then_some(record)
    });
    assert!(verified.is_some(), "a verified restore; log:\n{}", i.log());

    let (out, restored) = restore_and_read(&i, &["--latest"], "sealed", "127.0.124.41");
    assert!(out.contains(&format!("restored revision {last} ")), "{out}");
    assert_same(&restored, &at_last, "the latest point, encrypted");

    // Without the identity: refused by name, nothing written.
    i.configure(|c| c.snapshot_encryption(std::slice::from_ref(&recipient), None));
    let target = i.dir.path().join("restored-none/etcd");
    let (code, out, err) = i.eco(&[
        "restore",
        "--latest",
        "--config",
        &cfg,
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        "none",
        "--peer-url",
        "http://127.0.124.42:2380",
    ]);
    assert_ne!(code, 0, "restored without the identity: {out}");
    assert!(err.contains("snapshot.encryption.identity_file"), "{err}");
    assert!(!target.exists(), "nothing written without the identity");
}

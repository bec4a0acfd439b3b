//! Snapshots and restore on real etcd.

use std::time::Duration;
use testkit::eco_bin;
use testkit::etcd::{self, RawEtcd, dump, rt, wait_serving, write};
use testkit::instance::Instance;

fn hash(kvs: &[(String, String)]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for (k, v) in kvs {
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

fn snapshot_objects(store: &std::path::Path) -> Vec<std::path::PathBuf> {
    let dir = store.join("it/snapshots");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "db")
                && !p.file_name().unwrap().to_string_lossy().starts_with('.')
        })
        .collect();
    v.sort();
    v
}

#[test]
fn snapshot_now_list_and_restore_gives_equal_data() {
    let mut i = Instance::new(eco_bin!(), "127.0.5.1").with_dir_store();
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    for n in 0..200 {
        assert!(write(
            &i.endpoint(),
            &format!("key/{n:04}"),
            &format!("value-{n}")
        ));
    }
    let (rev_before, kvs_before) = dump(&i.endpoint()).expect("dump");
    let cfg = i.config.to_str().unwrap().to_string();

    let (code, out, err) = i.eco(&[
        "snapshot",
        "now",
        "--config",
        &cfg,
        "--instance-id",
        "eco-1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stored it/snapshots/i0000000001-r"), "{out}");
    // The daemon's writer may have stored its first snapshot too (the store
    // held none): the one this command stored is the one it names.
    let name = out
        .split_whitespace()
        .skip_while(|w| *w != "stored")
        .nth(1)
        .expect("the stored snapshot's name")
        .to_string();
    // A snapshot is the whole database: every file of the store is eco's
    // user's alone (as `etcdctl snapshot save` writes it).
    let mut files = 0;
    for entry in testkit::files_under(&i.store_dir()) {
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&entry.metadata().unwrap().permissions());
        assert_eq!(
            mode & 0o777,
            0o600,
            "{} has mode {:o}",
            entry.display(),
            mode & 0o777
        );
        files += 1;
    }
    assert!(files >= 2, "a snapshot and its info at least");

    let (code, out, err) = i.eco(&["snapshot", "list", "--config", &cfg, "--json"]);
    assert_eq!(code, 0, "{err}");
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name.as_str())
        .unwrap_or_else(|| panic!("{name} is listed: {list}"));
    let snap_rev: i64 = listed["metadata"]["revision"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        snap_rev >= rev_before,
        "snapshot revision {snap_rev} >= {rev_before}"
    );
    let (code, table, _) = i.eco(&["snapshot", "list", "--config", &cfg]);
    assert_eq!(code, 0);
    assert!(
        table.contains(&name)
            && table.contains(&format!("{} snapshot(s)", list.as_array().unwrap().len())),
        "{table}"
    );

    // Restore by name from the store into a new data dir, start etcd on it.
    let restore_into = |data_dir: &std::path::Path| {
        i.eco(&[
            "restore",
            "--from",
            &name,
            "--config",
            &cfg,
            "--data-dir",
            data_dir.to_str().unwrap(),
            "--name",
            "restored",
            "--peer-url",
            "http://127.0.5.2:2380",
        ])
    };
    let target = i.dir.path().join("restored/etcd");
    let (code, out, err) = restore_into(&target);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sha256 verified"), "{out}");
    let _etcd = RawEtcd::start(&target, "restored", "127.0.5.2");
    wait_serving("http://127.0.5.2:2379", Duration::from_secs(20)).expect("restored etcd serving");
    let (rev_after, kvs_after) = dump("http://127.0.5.2:2379").expect("dump restored");
    let user = |kvs: &[(String, String)]| {
        kvs.iter()
            .filter(|(k, _)| k.starts_with("key/"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(user(&kvs_after).len(), 200);
    assert_eq!(
        hash(&user(&kvs_after)),
        hash(&user(&kvs_before)),
        "same keys and values"
    );
    assert!(
        rev_after >= rev_before,
        "revision not lower after restore: {rev_after} < {rev_before}"
    );

    // Refuses to restore over existing data.
    let (code, _, err) = restore_into(&target);
    assert_eq!(code, 1);
    assert!(err.contains("not empty"), "{err}");

    // Refuses a path that is a file, and leaves no restored copy behind.
    let file = i.dir.path().join("restored/a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let (code, _, err) = restore_into(&file);
    assert_eq!(code, 1);
    assert!(
        err.contains("not a directory") && err.contains("a-file"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(i.dir.path().join("restored"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(
        left,
        ["a-file", "etcd"],
        "nothing else left beside the target"
    );
}

#[test]
fn corrupted_snapshots_are_refused() {
    let mut i = Instance::new(eco_bin!(), "127.0.5.3").with_dir_store();
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(write(&i.endpoint(), "k", "v"));
    let cfg = i.config.to_str().unwrap().to_string();
    let (code, _, err) = i.eco(&[
        "snapshot",
        "now",
        "--config",
        &cfg,
        "--instance-id",
        "eco-1",
    ]);
    assert_eq!(code, 0, "{err}");
    let object = snapshot_objects(&i.store_dir())
        .pop()
        .expect("a snapshot object");
    let name = format!(
        "it/snapshots/{}",
        object.file_name().unwrap().to_string_lossy()
    );

    // A pristine copy restores from a file (etcd's trailing checksum checked).
    let copy = i.dir.path().join("copy.db");
    std::fs::copy(&object, &copy).unwrap();
    let target = i.dir.path().join("from-file/etcd");
    let (code, _, err) = i.eco(&[
        "restore",
        "--from",
        copy.to_str().unwrap(),
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        "r",
        "--peer-url",
        "http://127.0.5.4:2380",
        "--etcd-bin-dir",
        etcd::bin_dir().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(target.join("member/wal").is_dir());

    // Relative paths, a bare name for the data directory (its parent is
    // the working directory): restored and reported as such.
    let out = std::process::Command::new(eco_bin!())
        .current_dir(i.dir.path())
        .args([
            "restore",
            "--from",
            "copy.db",
            "--data-dir",
            "relative",
            "--name",
            "r",
            "--peer-url",
            "http://127.0.5.4:2380",
            "--etcd-bin-dir",
            etcd::bin_dir().to_str().unwrap(),
        ])
        .output()
        .expect("eco restore");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(i.dir.path().join("relative/member/wal").is_dir());

    // One flipped byte in the stored object: refused by the store's sha256.
    let mut bytes = std::fs::read(&object).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&object, &bytes).unwrap();
    let target = i.dir.path().join("flipped/etcd");
    let (code, _, err) = i.eco(&[
        "restore",
        "--from",
        &name,
        "--config",
        &cfg,
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        "r",
        "--peer-url",
        "http://127.0.5.4:2380",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("corrupt") && err.contains("sha256"), "{err}");
    assert!(!target.exists(), "nothing restored");

    // The same damage in a file: refused by etcd's trailing checksum.
    std::fs::write(&copy, &bytes).unwrap();
    let (code, _, err) = i.eco(&[
        "restore",
        "--from",
        copy.to_str().unwrap(),
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        "r",
        "--peer-url",
        "http://127.0.5.4:2380",
        "--etcd-bin-dir",
        etcd::bin_dir().to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("corrupt") && err.contains("trailing sha256"),
        "{err}"
    );
    assert!(!target.exists(), "nothing restored");
    let beside: Vec<_> = std::fs::read_dir(target.parent().unwrap())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(beside.is_empty(), "no staging directory left: {beside:?}");
    // A truncated file too.
    std::fs::write(&copy, &bytes[..bytes.len() - 100]).unwrap();
    let (code, _, err) = i.eco(&[
        "restore",
        "--from",
        copy.to_str().unwrap(),
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        "r",
        "--peer-url",
        "http://127.0.5.4:2380",
        "--etcd-bin-dir",
        etcd::bin_dir().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
}

/// `recovery.bootstrap_from`: a brand-new cluster (no record, no state, no
/// data) seeds from the named snapshot — here the older of two, so the
/// setting wins over "newest" — and the record says so.
#[test]
fn bootstrap_from_seeds_a_new_cluster_from_the_named_snapshot() {
    let mut i = Instance::new(eco_bin!(), "127.0.5.5").with_dir_store();
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    let cfg = i.config.to_str().unwrap().to_string();
    let snapshot = |i: &Instance| {
        let (code, out, err) = i.eco(&[
            "snapshot",
            "now",
            "--config",
            &cfg,
            "--instance-id",
            "eco-1",
        ]);
        assert_eq!(code, 0, "{err}");
        out.split_whitespace()
            .find(|w| w.starts_with("it/snapshots/"))
            .unwrap_or_else(|| panic!("no snapshot name in {out}"))
            .trim_end_matches([',', ':', ';'])
            .to_string()
    };
    for n in 0..50 {
        assert!(write(&i.endpoint(), &format!("key/{n:04}"), "first"));
    }
    let first = snapshot(&i);
    for n in 50..100 {
        assert!(write(&i.endpoint(), &format!("key/{n:04}"), "second"));
    }
    let _second = snapshot(&i);
    i.signal(libc::SIGTERM);
    i.wait_exit(Duration::from_secs(20)).expect("eco exits");

    // A new cluster of the same name: its data, state and records are gone;
    // the snapshots stay.
    std::fs::remove_dir_all(i.data_dir()).expect("wipe data");
    std::fs::remove_file(i.state_file()).expect("wipe state");
    let _ = std::fs::remove_file(i.data_dir().with_file_name("eco-recovery.state"));
    std::fs::remove_dir_all(i.store_dir().join("it/incarnations")).expect("wipe records");
    i.configure(|c| c.bootstrap_from(&first));
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(30)).expect("serving again");
    let (_, kvs) = dump(&i.endpoint()).expect("dump");
    let keys: Vec<&(String, String)> = kvs.iter().filter(|(k, _)| k.starts_with("key/")).collect();
    assert_eq!(keys.len(), 50, "exactly the first snapshot's keys");
    assert!(keys.iter().all(|(_, v)| v == "first"));
    let record = std::fs::read_to_string(i.store_dir().join("it/incarnations/0000000001"))
        .expect("record 1");
    assert!(
        record.contains(&format!("\"source\": \"snapshot:{first}\"")),
        "{record}"
    );
}

/// A store that fails before it has read the whole snapshot (here: at
/// once) makes the snapshot fail, promptly — it never leaves the stream
/// from etcd waiting on a channel nobody reads (the soak found the writer
/// stalled for good after a store outage).
#[test]
fn a_store_failing_mid_upload_fails_the_snapshot_and_never_hangs() {
    use eco::codec::{Identities, Recipients};
    use eco::etcd::access::EtcdAccess;
    use eco::snapshot::codec_choice::SnapshotCodec;
    use eco::snapshot::restore;
    use eco::snapshot::take::{self, SnapshotRequest};
    use eco::store::memory::MemoryStore;

    let dir = tempfile::tempdir().expect("temp dir");
    let endpoint = "http://127.0.6.2:2379";
    let _etcd = RawEtcd::start_new(&dir.path().join("etcd"), "s", "127.0.6.2");
    wait_serving(endpoint, Duration::from_secs(20)).expect("etcd serving");
    // Far more than the channel holds (etcd streams 32 KiB chunks).
    let value = "x".repeat(64 * 1024);
    for k in 0..40 {
        assert!(write(endpoint, &format!("k{k}"), &value));
    }
    let store = MemoryStore::new();
    store.set_failing(true);
    let req = SnapshotRequest {
        endpoint: endpoint.into(),
        cluster: "it".into(),
        incarnation: 1,
        token: "it-1-00000000".into(),
        instance: "s".into(),
        format: 1,
        codec: Default::default(),
    };
    let access = EtcdAccess::new(Duration::from_secs(2));
    let taken = rt().block_on(async {
        tokio::time::timeout(Duration::from_secs(20), take::take(&store, &access, &req)).await
    });
    let Ok(result) = taken else {
        panic!("the snapshot hung on a failed store");
    };
    let err = result.expect_err("a failed store fails the snapshot");
    assert!(
        err.to_string().contains("set to fail"),
        "the store's error is the one reported: {err}"
    );
    // The store recovers: the next snapshot is stored.
    store.set_failing(false);
    let taken = rt()
        .block_on(take::take(&store, &access, &req))
        .expect("a snapshot once the store is back");
    assert!(taken.object.size > 40 * 64 * 1024);
    let plain_size = taken.object.size;

    // Compressed and encrypted (format 3): the same, through the encoding
    // thread — a failing store fails it promptly, then it is stored,
    // smaller, opaque, and opens only with the identity.
    let key = age::x25519::Identity::generate();
    let codec = SnapshotCodec {
        level: Some(3),
        recipients: Recipients::parse(&[key.to_public().to_string()]).expect("recipient"),
        identity_file: None,
    };
    let req = SnapshotRequest {
        format: 3,
        codec,
        token: "it-1-00000001".into(),
        ..req
    };
    store.set_failing(true);
    let taken = rt().block_on(async {
        tokio::time::timeout(Duration::from_secs(20), take::take(&store, &access, &req)).await
    });
    let Ok(result) = taken else {
        panic!("the encoded snapshot hung on a failed store");
    };
    let err = result.expect_err("a failed store fails the encoded snapshot");
    assert!(err.to_string().contains("set to fail"), "{err}");
    store.set_failing(false);
    let taken = rt()
        .block_on(take::take(&store, &access, &req))
        .expect("an encoded snapshot");
    assert!(
        taken.object.size < plain_size / 4,
        "compressed: {} of {plain_size} bytes",
        taken.object.size
    );
    let md = &taken.object.metadata;
    assert_eq!(md.get("compression").map(String::as_str), Some("zstd"));
    assert_eq!(md.get("encryption").map(String::as_str), Some("age"));
    assert_eq!(md.get("format").map(String::as_str), Some("3"));
    let name = taken.name.to_string();
    let out = dir.path().join("fetched.db");
    let e = rt()
        .block_on(restore::fetch_verified(&store, &name, &out, None))
        .expect_err("no identity");
    assert!(e.to_string().contains("identity_file"), "{e}");
    assert!(!out.exists(), "nothing is written without the identity");
    let ids = Identities::from_keys(vec![key], "test".into());
    rt().block_on(restore::fetch_verified(&store, &name, &out, Some(&ids)))
        .expect("opens with the identity");
    assert!(
        std::fs::metadata(&out).expect("fetched").len() > 40 * 64 * 1024,
        "the decoded snapshot is etcd's, whole"
    );
    rt().block_on(restore::verify_file(&out))
        .expect("etcd's trailing checksum holds after decoding");
}

/// Another instance's clock is a day ahead: the snapshot it took is dated
/// in the future. The schedule ages it on this writer's own clock and
/// takes the next one when due (it used to wait for the date to pass).
#[test]
fn a_snapshot_dated_in_the_future_does_not_stop_the_schedule() {
    let mut i = Instance::new(eco_bin!(), "127.0.6.3").with_dir_store();
    i.configure(|c| c.snapshot_interval(Duration::from_secs(10)));
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(write(&i.endpoint(), "a", "1"));
    let first = testkit::wait_until(Duration::from_secs(30), || {
        snapshot_objects(&i.store_dir()).first().cloned()
    })
    .expect("a first snapshot");
    let file = first.file_name().unwrap().to_string_lossy().to_string();
    let meta_path = first.with_file_name(format!(".{file}.meta.json"));
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    let a_day_ahead = eco::base::wall_clock::unix_ms() + 86_400_000;
    meta["metadata"]["created_unix_ms"] = a_day_ahead.to_string().into();
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    for n in 0..20 {
        assert!(write(&i.endpoint(), &format!("b/{n}"), "2"));
    }
    let second = testkit::wait_until(Duration::from_secs(40), || {
        (snapshot_objects(&i.store_dir()).len() >= 2).then_some(())
    });
    assert!(
        second.is_some(),
        "no snapshot after the future-dated one: {:?}",
        snapshot_objects(&i.store_dir())
    );
}

/// A stray record under this cluster's name that describes another cluster
/// is never acted on: eco restarts etcd on its data (nothing moved aside)
/// and names the object.
#[test]
fn a_record_of_another_cluster_is_never_acted_on() {
    let mut i = Instance::new(eco_bin!(), "127.0.6.4").with_dir_store();
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    assert!(write(&i.endpoint(), "kept", "yes"));
    i.signal(libc::SIGTERM);
    i.wait_exit(Duration::from_secs(20)).expect("eco exits");
    let stray = serde_json::json!({
        "cluster": "other",
        "incarnation": 99,
        "seeder": "x",
        "token": "other-99-0",
        "source": "empty",
        "created_unix_ms": 1
    });
    std::fs::write(
        i.store_dir().join("it/incarnations/0000000099"),
        serde_json::to_vec(&stray).unwrap(),
    )
    .unwrap();
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving again");
    let (_, kvs) = dump(&i.endpoint()).expect("dump");
    assert!(
        kvs.iter().any(|(k, v)| k == "kept" && v == "yes"),
        "data kept"
    );
    let moved = eco::local::data_dir::moved_aside(&i.data_dir());
    assert!(moved.is_empty(), "nothing moved aside: {moved:?}");
    let log = i.log();
    assert!(
        log.contains("0000000099") && log.contains("\"other\""),
        "{log}"
    );
}

/// The store as an operator may leave it: the cluster's directory is a
/// symlink to another volume, a crash left a 1 GiB snapshot without its
/// info, another's info file is junk. eco lists through the link, skips
/// what commits nothing without reading it, keeps taking snapshots and
/// applies retention; a listing that fails (a symlink loop) is an error,
/// never an empty store.
#[test]
fn an_odd_store_is_read_as_it_is_and_a_failing_listing_is_never_empty() {
    let mut i = Instance::new(eco_bin!(), "127.0.6.5").with_dir_store();
    let elsewhere = i.dir.path().join("other-volume/it");
    std::fs::create_dir_all(elsewhere.join("snapshots")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, i.store_dir().join("it")).unwrap();
    let leftover =
        std::fs::File::create(elsewhere.join("snapshots/i0000000001-r00000000000000000001-x.db"))
            .unwrap();
    leftover.set_len(1 << 30).unwrap();
    std::fs::write(elsewhere.join("snapshots/junk.db"), b"x").unwrap();
    std::fs::write(elsewhere.join("snapshots/.junk.db.meta.json"), b"{junk").unwrap();
    // Named as a snapshot, with junk info: skipped, and named in the log
    // (junk.db is not even read: a snapshot listing reads snapshot names).
    let junk = "i0000000001-r00000000000000000000-junk.db";
    std::fs::write(elsewhere.join("snapshots").join(junk), b"x").unwrap();
    std::fs::write(
        elsewhere
            .join("snapshots")
            .join(format!(".{junk}.meta.json")),
        b"{junk",
    )
    .unwrap();
    // Another cluster's snapshot renamed in, its info naming its cluster:
    // never listed, used or deleted by retention; named by the listing.
    let foreign = "i0000000009-r00000000000000000001-prod-7-ff.db";
    std::fs::write(elsewhere.join("snapshots").join(foreign), b"x").unwrap();
    std::fs::write(
        elsewhere
            .join("snapshots")
            .join(format!(".{foreign}.meta.json")),
        serde_json::json!({
            "name": format!("it/snapshots/{foreign}"),
            "size": 1,
            "sha256": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
            "metadata": {"cluster": "prod", "incarnation": "7", "token": "prod-7-ff"},
        })
        .to_string(),
    )
    .unwrap();
    i.configure(|c| {
        c.snapshot_interval(Duration::from_secs(10))
            .retention(1, 0, 0)
    });
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    let cfg = i.config.to_str().unwrap().to_string();
    let listed = |i: &Instance| -> Option<Vec<String>> {
        let (code, out, _) = i.eco(&["snapshot", "list", "--config", &cfg, "--json"]);
        (code == 0).then(|| {
            serde_json::from_str::<serde_json::Value>(&out)
                .unwrap()
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["name"].as_str().unwrap().to_string())
                .collect()
        })
    };
    // Snapshots land through the link, and retention keeps one.
    let mut names = Vec::new();
    for n in 0..3 {
        assert!(write(&i.endpoint(), &format!("k{n}"), "v"));
        let next = testkit::wait_until(Duration::from_secs(40), || {
            let now = listed(&i)?;
            (now.len() == 1 && !names.contains(&now[0])).then(|| now[0].clone())
        });
        names.push(next.unwrap_or_else(|| panic!("snapshot {n}: {:?}", listed(&i))));
    }
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("it/snapshots/i0000000001-r"))
    );
    assert!(
        std::fs::read_dir(elsewhere.join("snapshots"))
            .unwrap()
            .flatten()
            .any(
                |e| e.file_name().to_string_lossy() == names[2].trim_start_matches("it/snapshots/")
            ),
        "the snapshot is on the other volume"
    );
    assert!(i.log().contains(junk), "the junk info is named once");
    assert!(
        elsewhere.join("snapshots").join(foreign).exists(),
        "another cluster's snapshot is not deleted by retention"
    );
    let (code, out, _) = i.eco(&["snapshot", "list", "--config", &cfg]);
    assert!(
        code == 0 && out.contains("not this cluster's") && out.contains(foreign),
        "{out}"
    );
    assert!(i.log().contains(foreign), "the daemon names it");
    // A symlink loop: the listing fails, naming why — never "no snapshot".
    std::os::unix::fs::symlink(&elsewhere, elsewhere.join("snapshots/loop")).unwrap();
    let (code, out, err) = i.eco(&["snapshot", "list", "--config", &cfg]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("symlink loop"), "{err}");
}

/// The runbook's "start a new cluster from a snapshot", as written: a
/// snapshot file made by another tool (`etcdctl snapshot save` of a plain
/// etcd) is put into the store by `eco snapshot import`, and a brand-new
/// eco cluster with `recovery.bootstrap_from` set to the printed name
/// starts with exactly its keys (puts, an overwrite, a delete). A file that
/// is not an etcd snapshot is refused before anything is stored.
#[test]
fn a_snapshot_file_from_another_tool_is_imported_and_a_new_cluster_starts_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let source = RawEtcd::start_new(&dir.path().join("source"), "source", "127.0.5.7");
    let endpoint = "http://127.0.5.7:2379";
    wait_serving(endpoint, Duration::from_secs(20)).expect("the source etcd serves");
    for n in 0..30 {
        assert!(write(endpoint, &format!("key/{n:04}"), "v1"));
    }
    assert!(write(endpoint, "key/0000", "v2"), "an overwrite");
    let deleted = rt().block_on(async {
        let mut c = etcd_client::Client::connect([endpoint], None).await.ok()?;
        c.delete("key/0001", None).await.ok()
    });
    assert!(deleted.is_some(), "a delete");
    let (_, want) = dump(endpoint).expect("the source's keys");
    let file = dir.path().join("from-etcdctl.db");
    let saved = std::process::Command::new(etcd::bin_dir().join("etcdctl"))
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoint, "snapshot", "save"])
        .arg(&file)
        .output()
        .expect("etcdctl snapshot save");
    assert!(saved.status.success(), "{saved:?}");
    drop(source);

    let mut i = Instance::new(eco_bin!(), "127.0.5.8").with_dir_store();
    let cfg = i.config.to_str().unwrap().to_string();
    // Not a snapshot: refused, nothing stored.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    let (code, _, err) = i.eco(&[
        "snapshot",
        "import",
        junk.to_str().unwrap(),
        "--config",
        &cfg,
    ]);
    assert_ne!(code, 0, "junk imported");
    assert!(
        err.contains("junk.db") && err.contains("nothing was stored"),
        "{err}"
    );
    eprintln!("import: junk refused: {}", err.trim());
    assert!(
        snapshot_objects(&i.store_dir()).is_empty(),
        "nothing stored"
    );

    let (code, out, err) = i.eco(&[
        "snapshot",
        "import",
        file.to_str().unwrap(),
        "--config",
        &cfg,
        "--by",
        "test",
    ]);
    assert_eq!(code, 0, "{err}");
    eprintln!("import: {}", out.trim());
    let name = out
        .lines()
        .find_map(|l| l.strip_prefix("bootstrap_from = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no bootstrap_from line in {out}"))
        .to_string();
    assert!(name.starts_with("it/snapshots/i0000000000-r"), "{name}");
    let (code, listed, err) = i.eco(&["snapshot", "list", "--config", &cfg]);
    assert_eq!(code, 0, "{err}");
    assert!(listed.contains(&name), "{listed}");

    i.configure(|c| c.bootstrap_from(&name));
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(30)).expect("the new cluster serves");
    let (_, got) = dump(&i.endpoint()).expect("the new cluster's keys");
    let keys = |kvs: &[(String, String)]| -> Vec<(String, String)> {
        kvs.iter()
            .filter(|(k, _)| k.starts_with("key/"))
            .cloned()
            .collect()
    };
    assert_eq!(keys(&got), keys(&want), "exactly the imported keys");
    let record = std::fs::read_to_string(i.store_dir().join("it/incarnations/0000000001"))
        .expect("record 1");
    assert!(
        record.contains(&format!("\"source\": \"snapshot:{name}\"")),
        "{record}"
    );
}

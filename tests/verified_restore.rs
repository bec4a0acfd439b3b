//! Continuously verified restores on a real one-instance cluster
//! (127.0.99.1, a directory store, verification every 2 s): the newest
//! snapshot is restored into a throwaway etcd and its HashKV matches its
//! record; then its record's hash is altered (a key space that differs
//! from what was recorded) and the verification fails; then its bytes are
//! damaged and the verification fails as corrupt. Each result is in the
//! store's record, `/status` and the metrics.

use std::path::{Path, PathBuf};
use std::time::Duration;

use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::wait_until;

fn get(api: &str, path: &str) -> Option<String> {
    testkit::etcd::block_on(async {
        let addr = api.parse().ok()?;
        let (_, body) = eco::api::status_client::get(addr, path, Duration::from_secs(2))
            .await
            .ok()?;
        Some(String::from_utf8_lossy(&body).to_string())
    })
}

fn record(store: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(store.join("it/verification.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Waits for a verification of `snapshot` after `after_ms` and returns its
/// record.
fn next_verification(c: &Cluster, after_ms: u64) -> serde_json::Value {
    wait_until(Duration::from_secs(60), || {
        let r = record(&c.store())?;
        (r["at_unix_ms"].as_u64()? > after_ms).then_some(r)
    })
    .unwrap_or_else(|| panic!("no verification\n{}", c.log_tail("eco-1", 40)))
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.split([' ', '{']).next() == Some(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn newest_snapshot(store: &Path) -> PathBuf {
    let mut all: Vec<PathBuf> = std::fs::read_dir(store.join("it/snapshots"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    all.sort();
    all.pop().expect("a snapshot")
}

#[test]
fn the_newest_snapshot_is_restored_and_checked_and_a_bad_one_is_reported() {
    let base = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        config: base
            .config
            .clone()
            .snapshot_verify_interval(Duration::from_secs(2)),
        ..base
    })
    .expect("cluster");
    c.add("eco-1", "127.0.99.1").unwrap();
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1"], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no cluster\n{}", c.log_tail("eco-1", 40)));
    let endpoint = c.nodes["eco-1"].endpoint();
    for i in 0..50 {
        assert!(testkit::etcd::write(&endpoint, &format!("/k/{i}"), "v"));
    }
    // A snapshot taken after the writes (the first one may be older).
    c.snapshot_now("eco-1").expect("eco snapshot now");
    let snapshot = newest_snapshot(&c.store());
    let name = snapshot.file_name().unwrap().to_string_lossy().to_string();

    // Good: restored, and the hash matches.
    let good = wait_until(Duration::from_secs(60), || {
        let r = record(&c.store())?;
        (r["snapshot"].as_str()?.ends_with(&name)).then_some(r)
    })
    .unwrap_or_else(|| panic!("{name} never verified\n{}", c.log_tail("eco-1", 40)));
    assert_eq!(good["ok"], true, "{good}");
    let detail = good["detail"].as_str().unwrap();
    assert!(
        detail.contains("matches"),
        "the hash was not compared: {detail}"
    );
    eprintln!("verified-restore: good snapshot: {detail}");
    let api = c.nodes["eco-1"].api();
    let scrape = wait_until(Duration::from_secs(10), || {
        let m = get(&api, "/metrics")?;
        (metric(&m, "eco_snapshot_last_verified_timestamp_seconds")? > 0.0).then_some(m)
    })
    .expect("eco_snapshot_last_verified_timestamp_seconds stays 0");
    assert_eq!(
        metric(&scrape, "eco_snapshot_verification_failed"),
        Some(0.0)
    );

    // A record that does not match the key space: the restore's HashKV
    // differs from the recorded one.
    let meta = snapshot.with_file_name(format!(".{name}.meta.json"));
    let mut sidecar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    let recorded = sidecar["metadata"]["hash_kv"]
        .as_str()
        .unwrap_or_else(|| panic!("no hash_kv in {sidecar}"))
        .to_string();
    let altered = (recorded.parse::<u32>().unwrap() ^ 1).to_string();
    sidecar["metadata"]["hash_kv"] = serde_json::Value::String(altered);
    std::fs::write(&meta, serde_json::to_vec(&sidecar).unwrap()).unwrap();
    let mismatch = next_verification(&c, good["at_unix_ms"].as_u64().unwrap());
    assert_eq!(mismatch["ok"], false, "{mismatch}");
    let why = mismatch["detail"].as_str().unwrap();
    assert!(why.contains("key space differs"), "{why}");
    eprintln!("verified-restore: altered record: {why}");

    // Damaged bytes: the store's checksum refuses it before any restore.
    let mut bytes = std::fs::read(&snapshot).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&snapshot, bytes).unwrap();
    let corrupt = next_verification(&c, mismatch["at_unix_ms"].as_u64().unwrap());
    assert_eq!(corrupt["ok"], false, "{corrupt}");
    let why = corrupt["detail"].as_str().unwrap();
    assert!(why.contains("corrupt"), "{why}");
    eprintln!("verified-restore: damaged snapshot: {why}");
    assert_eq!(
        corrupt["last_ok_unix_ms"], good["at_unix_ms"],
        "the last success is kept"
    );
    let scrape = wait_until(Duration::from_secs(70), || {
        let m = get(&api, "/metrics")?;
        (metric(&m, "eco_snapshot_verification_failed")? == 1.0).then_some(m)
    })
    .expect("eco_snapshot_verification_failed never 1");
    assert!(metric(&scrape, "eco_snapshot_verifications_total").is_some());
    let status = get(&api, "/status").unwrap();
    assert!(status.contains("\"verification\""), "{status}");
    // No throwaway directory or etcd left behind.
    let parent = c.nodes["eco-1"].data_dir().parent().unwrap().to_path_buf();
    let left: Vec<_> = std::fs::read_dir(&parent)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".eco-verify-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = c.stop("eco-1", libc::SIGTERM);
}

/// A verification record dated in the future (a wrong clock, or written
/// by hand) counts as no recent verification: the newest snapshot is
/// verified anyway and the record replaced, and its future success is not
/// reported as the last one.
#[test]
fn a_record_dated_in_the_future_does_not_stop_verification() {
    let base = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        config: base
            .config
            .clone()
            .snapshot_verify_interval(Duration::from_secs(3600)),
        ..base
    })
    .expect("cluster");
    // 2100-01-01: "verified restore ok at 2100-01-01", a day's interval.
    let future_ms: u64 = 4_102_444_800_000;
    let store = eco::store::dir::DirStore::new(c.store());
    testkit::etcd::rt()
        .block_on(eco::snapshot::verify::write_record(
            &store,
            "it",
            &eco::snapshot::verify::VerificationRecord {
                snapshot: "it/snapshots/i0000000001-r00000000000000000001-it-1-0.db".into(),
                at_unix_ms: future_ms,
                ok: true,
                detail: "written by hand".into(),
                instance: "elsewhere".into(),
                last_ok_unix_ms: Some(future_ms),
                format: 1,
            },
        ))
        .expect("a record in the store");
    c.add("eco-1", "127.0.99.2").unwrap();
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1"], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no cluster\n{}", c.log_tail("eco-1", 40)));
    let verified = wait_until(Duration::from_secs(60), || {
        let r = record(&c.store())?;
        (r["at_unix_ms"].as_u64()? < future_ms).then_some(r)
    })
    .unwrap_or_else(|| {
        panic!(
            "the future record stopped verification\n{}",
            c.log_tail("eco-1", 40)
        )
    });
    assert_eq!(verified["ok"], true, "{verified}");
    let log = c.nodes["eco-1"].log();
    assert!(
        log.contains("ahead of this clock"),
        "the reason names the future record:\n{}",
        c.log_tail("eco-1", 40)
    );
    let api = c.nodes["eco-1"].api();
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as f64;
    let last = wait_until(Duration::from_secs(70), || {
        let m = get(&api, "/metrics")?;
        let v = metric(&m, "eco_snapshot_last_verified_timestamp_seconds")?;
        (v > 0.0).then_some(v)
    })
    .expect("eco_snapshot_last_verified_timestamp_seconds stays 0");
    assert!(last <= now_s + 600.0, "a future success reported: {last}");
    let _ = c.stop("eco-1", libc::SIGTERM);
}

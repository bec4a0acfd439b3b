//! One end-to-end check every store kind runs on real processes: `eco run`
//! on the store the instance's config names (its start check passes and
//! its conditional create is honoured), keys written, `eco snapshot now`,
//! `eco snapshot list` naming the snapshot, `eco restore --from <name>`
//! into a new data directory, and the restored etcd serving the same keys.

use crate::etcd::{RawEtcd, dump, wait_serving, write};
use crate::instance::Instance;
use std::time::Duration;

/// The keys the check writes and compares.
fn written(kvs: &[(String, String)]) -> Vec<(String, String)> {
    kvs.iter()
        .filter(|(k, _)| k.starts_with("key/"))
        .cloned()
        .collect()
}

/// Runs the check on `i` (configured with its store, not started); the
/// restored member serves on `restore_address`; `store` names the store
/// in messages.
pub fn snapshot_list_restore(i: &mut Instance, restore_address: &str, store: &str) {
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(30))
        .unwrap_or_else(|| panic!("serving:\n{}", i.log()));
    for n in 0..50 {
        assert!(write(
            &i.endpoint(),
            &format!("key/{n:03}"),
            &format!("v{n}")
        ));
    }
    let (_, before) = dump(&i.endpoint()).expect("dump");
    let cfg = i.config.to_str().unwrap().to_string();
    let (code, out, err) = i.eco(&["snapshot", "now", "--config", &cfg, "--instance-id", &i.id]);
    assert_eq!(code, 0, "{err}\n{}", i.log());
    let name = out
        .split_whitespace()
        .skip_while(|w| *w != "stored")
        .nth(1)
        .unwrap_or_else(|| panic!("the stored snapshot's name: {out}"))
        .to_string();
    let (code, listed, err) = i.eco(&["snapshot", "list", "--config", &cfg]);
    assert_eq!(code, 0, "{err}");
    assert!(listed.contains(&name), "{listed}");
    let target = i.dir.path().join("restored/etcd");
    let peer = format!("http://{restore_address}:2380");
    let (code, out, err) = i.eco(&[
        "restore",
        "--from",
        &name,
        "--config",
        &cfg,
        "--data-dir",
        target.to_str().unwrap(),
        "--name",
        "restored",
        "--peer-url",
        &peer,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sha256 verified"), "{out}");
    let _etcd = RawEtcd::start(&target, "restored", restore_address);
    let endpoint = format!("http://{restore_address}:2379");
    wait_serving(&endpoint, Duration::from_secs(20)).expect("restored serving");
    let (_, after) = dump(&endpoint).expect("dump restored");
    assert_eq!(written(&after), written(&before));
    assert!(
        !i.log().contains("quorum-loss recovery is OFF"),
        "{store}'s conditional create is honoured:\n{}",
        i.log()
    );
}

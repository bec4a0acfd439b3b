//! The command line: config check and version.

use std::process::Command;
use std::time::Duration;
use testkit::config::ConfigBuilder;
use testkit::eco_bin;
use testkit::process::run_eco;

fn eco(args: &[&str]) -> (i32, String, String) {
    run_eco(&eco_bin!(), args)
}

#[test]
fn example_config_passes_check_and_prints_defaults() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml");
    let (code, out, err) = eco(&["config", "check", example]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("quorum_loss_timeout = \"1m\""), "{out}");
    assert!(out.contains("client_port = 2379"), "{out}");
    let local = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/local/eco-1.toml");
    assert_eq!(eco(&["config", "check", local]).0, 0);
}

#[test]
fn unknown_key_exits_2_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("eco.toml");
    // A valid config plus one key eco does not know (the broken part).
    let mut table = ConfigBuilder::eco_defaults("c", "g").to_table().unwrap();
    table["etcd"]
        .as_table_mut()
        .unwrap()
        .insert("client_prot".into(), 1.into());
    std::fs::write(&path, toml::to_string(&table).unwrap()).unwrap();
    let (code, _, err) = eco(&["config", "check", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("client_prot") && err.contains(path.to_str().unwrap()),
        "{err}"
    );
}

#[test]
fn invalid_values_exit_2_with_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("eco.toml");
    ConfigBuilder::eco_defaults("c", "g")
        .election_timeout(Duration::from_millis(100))
        .edit(|c| c.etcd.client_port = 0)
        .write(&path)
        .unwrap();
    let (code, _, err) = eco(&["config", "check", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("etcd.client_port") && err.contains("etcd.election_timeout"),
        "{err}"
    );
}

#[test]
fn version_names_commit_and_supported_etcd() {
    let (code, out, _) = eco(&["version"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("eco 0.") && out.contains("commit:") && out.contains("3.4, 3.5"),
        "{out}"
    );
}

#[test]
fn run_without_instance_id_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("eco.toml");
    ConfigBuilder::eco_defaults("c", "g").write(&path).unwrap();
    let out = Command::new(eco_bin!())
        .args(["run", "--config", path.to_str().unwrap()])
        .env_remove("ECO_INSTANCE_ID")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--instance-id"));
}

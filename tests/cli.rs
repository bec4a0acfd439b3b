//! The command line: config check and version.

use std::process::Command;
use std::time::Duration;
use testkit::config::ConfigBuilder;
use testkit::eco_bin;
use testkit::process::run_eco;

fn eco(args: &[&str]) -> (i32, String, String) {
    run_eco(&eco_bin!(), args)
}

/// A 0600 file holding `text`.
fn private_file(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";

#[test]
fn example_config_passes_check_and_prints_defaults() {
    // The example as shipped, beside the files it names.
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("eco.toml");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml"),
        &example,
    )
    .unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/local/group.toml"),
        dir.path().join("group.toml"),
    )
    .unwrap();
    let (code, out, err) = eco(&["config", "check", example.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("quorum_loss_timeout = \"1m\""), "{out}");
    assert!(out.contains("client_port = 2379"), "{out}");
    // The local example as `make run` writes it for an instance
    // (scripts/run-local.py), with what it writes beside it.
    let run = dir.path().join(".run/local");
    std::fs::create_dir_all(run.join("store")).unwrap();
    let template = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/local/instance.toml"
    ))
    .unwrap();
    let local = run.join("eco-4.toml");
    std::fs::write(&local, template.replace("@ID@", "eco-4")).unwrap();
    std::fs::copy(dir.path().join("group.toml"), run.join("group.toml")).unwrap();
    private_file(&run.join("gossip.keys"), KEY);
    let (code, out, err) = eco(&["config", "check", local.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("instance_id = \"eco-4\""), "{out}");
    assert!(out.contains(".run/local/eco-4/etcd.log"), "{out}");
}

#[test]
fn check_opens_the_files_the_config_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("eco.toml");
    ConfigBuilder::eco_defaults("c", "group.toml")
        .gossip_key_file("gossip.keys")
        .dir_store("store")
        .write(&path)
        .unwrap();
    let check = || eco(&["config", "check", path.to_str().unwrap()]);
    // None of them exists: each is named.
    let (code, _, err) = check();
    assert_eq!(code, 2);
    assert!(
        err.contains("provider.static.group_file")
            && err.contains("group.toml")
            && err.contains("gossip.key_file")
            && err.contains("gossip.keys")
            && err.contains("snapshot.dir.path"),
        "{err}"
    );
    // Present but wrong: a malformed group file, a world-readable key
    // file, a key that is not hex.
    std::fs::create_dir(dir.path().join("store")).unwrap();
    std::fs::write(
        dir.path().join("group.toml"),
        "[[instance]]\nid = \"a=b\"\naddress = \"127.0.0.1\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("gossip.keys"), KEY).unwrap();
    std::fs::set_permissions(
        dir.path().join("gossip.keys"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let (code, _, err) = check();
    assert_eq!(code, 2);
    assert!(err.contains("\"a=b\" is not an instance id"), "{err}");
    assert!(err.contains("gossip.keys") && err.contains("0644"), "{err}");
    private_file(&dir.path().join("gossip.keys"), "not hex\n");
    let (code, _, err) = check();
    assert_eq!(code, 2);
    assert!(err.contains("gossip.key_file: the keys in"), "{err}");
    // A group file that lists nobody, as `eco run` refuses it.
    private_file(&dir.path().join("gossip.keys"), KEY);
    std::fs::write(dir.path().join("group.toml"), "desired_size = 3\n").unwrap();
    let (code, _, err) = check();
    assert_eq!(code, 2);
    assert!(
        err.contains("provider.static.group_file") && err.contains("lists no instance"),
        "{err}"
    );
    // All good.
    std::fs::write(
        dir.path().join("group.toml"),
        "[[instance]]\nid = \"a\"\naddress = \"127.0.0.1\"\n",
    )
    .unwrap();
    private_file(&dir.path().join("gossip.keys"), KEY);
    let (code, _, err) = check();
    assert_eq!(code, 0, "{err}");
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
    assert!(
        out.contains(&format!(
            "formats read: {} to {}",
            recovery::cluster_version::OLDEST,
            recovery::cluster_version::NEWEST
        )),
        "{out}"
    );
}

/// The version is in one place (the workspace's Cargo.toml): the chart
/// carries it, the changelog has its section, and the previous release
/// the mixed-version tests run beside it is an older one.
#[test]
fn the_version_is_in_one_place_and_the_changelog_and_the_chart_follow_it() {
    let version = env!("CARGO_PKG_VERSION");
    let root = testkit::workspace_root();
    let chart = std::fs::read_to_string(root.join("chart/Chart.yaml")).unwrap();
    assert!(
        chart
            .lines()
            .any(|l| l == format!("appVersion: \"{version}\""))
            && chart.lines().any(|l| l == format!("version: {version}")),
        "chart/Chart.yaml's version and appVersion must be {version}"
    );
    let changelog = std::fs::read_to_string(root.join("CHANGELOG.md")).unwrap();
    assert!(
        changelog
            .lines()
            .any(|l| l.starts_with("## ") && l.contains(version)),
        "CHANGELOG.md has no section for {version}"
    );
    let previous = testkit::releases::previous().unwrap();
    assert!(
        changelog
            .lines()
            .any(|l| l.starts_with(&format!("## {} ", previous.version))),
        "CHANGELOG.md has no section for the previous release {}",
        previous.version
    );
    let key = testkit::releases::version_key;
    assert!(
        key(&previous.version) < key(version),
        "the previous release {} is not older than {version}",
        previous.version
    );
    let (code, out, _) = eco(&["version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("eco {version}\n")), "{out}");
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

/// A config in `dir` for a group of one instance `a` at `address` (its
/// data directory in `dir` too: eco's default, /var/lib/eco, is the host's).
fn one_instance(dir: &std::path::Path, address: &str) -> std::path::PathBuf {
    let path = dir.join("eco.toml");
    ConfigBuilder::eco_defaults("c", "group.toml")
        .data_dir(dir.join("etcd"))
        .write(&path)
        .unwrap();
    std::fs::write(
        dir.join("group.toml"),
        format!("[[instance]]\nid = \"a\"\naddress = \"{address}\"\n"),
    )
    .unwrap();
    path
}

#[test]
fn an_instance_id_that_etcd_cannot_take_is_refused_wherever_it_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = one_instance(dir.path(), "127.0.3.40");
    for (flag, env) in [(Some("e=x,y"), None), (None, Some("a b"))] {
        let mut command = Command::new(eco_bin!());
        command.args(["run", "--config", path.to_str().unwrap()]);
        command.env_remove("ECO_INSTANCE_ID");
        if let Some(id) = flag {
            command.args(["--instance-id", id]);
        }
        if let Some(id) = env {
            command.env("ECO_INSTANCE_ID", id);
        }
        let out = command.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        let id = flag.or(env).unwrap();
        assert!(
            err.contains(&format!("{id:?} is not an instance id")),
            "{err}"
        );
    }
}

#[test]
fn gossip_keys_that_do_not_parse_name_where_they_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = one_instance(dir.path(), "127.0.3.41");
    let out = Command::new(eco_bin!())
        .args([
            "run",
            "--config",
            path.to_str().unwrap(),
            "--instance-id",
            "a",
        ])
        .env("ECO_GOSSIP_KEYS", "not-hex")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("ECO_GOSSIP_KEYS"), "{err}");
}

/// TLS is on by default: a config with a store and no TLS of its own is
/// checked (and run) as `[etcd.tls.generated]`; without a store, or with
/// an `http` scheme written out, etcd stays in the clear with a warning;
/// `plaintext = true` says it is on purpose.
#[test]
fn config_check_shows_tls_on_by_default_with_a_store() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("group.toml"),
        "[[instance]]\nid = \"eco-1\"\naddress = \"127.0.0.1\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("store")).unwrap();
    private_file(&dir.path().join("gossip.keys"), KEY);
    let check = |name: &str, b: ConfigBuilder| {
        let path = dir.path().join(name);
        b.gossip_key_file("gossip.keys").write(&path).unwrap();
        let (code, out, err) = eco(&["config", "check", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        out
    };
    let with_store = check(
        "default.toml",
        ConfigBuilder::eco_defaults("c", "group.toml").dir_store("store"),
    );
    assert!(
        with_store.contains("[etcd.tls.generated]")
            && with_store.contains("# etcd's surfaces: TLS with certificates eco issues")
            && !with_store.contains("in the clear"),
        "{with_store}"
    );
    let no_store = check(
        "nostore.toml",
        ConfigBuilder::eco_defaults("c", "group.toml"),
    );
    assert!(
        !no_store.contains("[etcd.tls.generated]")
            && no_store.contains("# warning: etcd's client and peer traffic is in the clear"),
        "{no_store}"
    );
    let on_purpose = check(
        "plain.toml",
        ConfigBuilder::eco_defaults("c", "group.toml")
            .dir_store("store")
            .plaintext(),
    );
    assert!(
        !on_purpose.contains("[etcd.tls.generated]")
            && !on_purpose.contains("in the clear")
            && on_purpose.contains("plaintext = true"),
        "{on_purpose}"
    );
}

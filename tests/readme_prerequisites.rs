//! The README's prerequisites are what the install script installs: every
//! Debian package `scripts/install-deps.sh` installs (for `make run` and
//! for `make test`) is named in the README, in backticks, and the script's
//! `--run` mode installs only what a local cluster needs.

fn root_file(path: &str) -> String {
    std::fs::read_to_string(testkit::workspace_root().join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The words of a bash array assignment `name=(a b c)` in `script`.
fn bash_array(script: &str, name: &str) -> Vec<String> {
    let line = script
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name}=(")))
        .unwrap_or_else(|| panic!("install-deps.sh has no {name}=(…)"));
    line.split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(inside, _)| inside.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn every_package_the_install_script_installs_is_named_in_the_readme() {
    let script = root_file("scripts/install-deps.sh");
    let readme = root_file("README.md");
    let run = bash_array(&script, "run_debs");
    let test = bash_array(&script, "test_debs");
    assert!(run.contains(&"protobuf-compiler".to_string()), "{run:?}");
    assert!(!test.is_empty());
    for pkg in run.iter().chain(&test) {
        assert!(
            readme.contains(&format!("`{pkg}`")),
            "README.md does not name `{pkg}`, which scripts/install-deps.sh installs"
        );
    }
}

#[test]
fn make_run_installs_only_what_a_local_cluster_needs() {
    let makefile = root_file("Makefile");
    let run_rule = makefile
        .lines()
        .find(|l| l.starts_with("run:"))
        .expect("a run: rule");
    assert!(
        !run_rule.contains("deps"),
        "`make run` must not install the test toolchain: {run_rule}"
    );
    let run_local = root_file("scripts/run-local.sh");
    assert!(
        run_local.contains("install-deps.sh --run"),
        "run-local.sh installs with --run"
    );
    let script = root_file("scripts/install-deps.sh");
    let exit_at = script
        .find("if [ $only_run = 1 ]; then\n  exit 0")
        .expect("--run stops after etcd");
    for later in [
        "nextest",
        "moto",
        "s3rver",
        "install-chart-tools",
        "install-terraform-tools",
        "install-store-emulators",
    ] {
        let at = script
            .rfind(later)
            .unwrap_or_else(|| panic!("{later} not in the script"));
        assert!(at > exit_at, "{later} is installed before --run stops");
    }
}

/// The oldest Rust the README asks for is the workspace's `rust-version`.
#[test]
fn the_readmes_rust_is_the_workspaces_rust_version() {
    let manifest: toml::Table = root_file("Cargo.toml").parse().expect("Cargo.toml");
    let version = manifest["workspace"]["package"]["rust-version"]
        .as_str()
        .expect("workspace.package.rust-version");
    let readme = root_file("README.md");
    let row = readme
        .lines()
        .find(|l| l.starts_with("| Rust with `cargo`"))
        .expect("README.md's prerequisites name Rust");
    assert!(
        row.contains(&format!("{version} or later")),
        "README.md asks for another Rust than rust-version {version}: {row}"
    );
}

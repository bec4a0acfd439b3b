//! The Helm chart's rendered `eco.toml`, one per value set in `chart/ci/`,
//! read by eco's own loader: every key known, every value valid (the
//! files they name are the pod's and are not looked at here). The chart
//! step of `make test` (scripts/check-chart.sh) renders them into
//! `target/chart/<value set>/eco.toml`; run alone, this test renders them
//! itself. Beside each, the `NOTES.txt` an install prints: every command
//! it runs in a pod (`kubectl … exec POD -- …`) must be a program the
//! image has (eco's image has no shell, no `cat`), and every `eco`
//! command a subcommand of this eco with the flags it takes.

use std::path::PathBuf;

fn rendered() -> Vec<PathBuf> {
    let root = testkit::workspace_root();
    let dir = root.join("target/chart");
    let list = |dir: &std::path::Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("eco.toml"))
            .filter(|p| p.is_file())
            .collect();
        v.sort();
        v
    };
    if list(&dir).is_empty() {
        let status = std::process::Command::new("bash")
            .arg(root.join("scripts/check-chart.sh"))
            .status()
            .expect("run scripts/check-chart.sh");
        assert!(status.success(), "scripts/check-chart.sh failed");
    }
    list(&dir)
}

#[test]
fn every_rendered_config_is_one_eco_accepts() {
    let files = rendered();
    let sets = std::fs::read_dir(testkit::workspace_root().join("chart/ci"))
        .unwrap()
        .count();
    assert_eq!(files.len(), sets, "one eco.toml per value set: {files:?}");
    for f in &files {
        let c = eco::config::load_file(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(
            c.provider.kind,
            eco::config::ProviderKind::Statefulset,
            "{}",
            f.display()
        );
        let s = c.provider.statefulset.expect("[provider.statefulset]");
        assert!(
            s.replicas_file.is_some(),
            "{}: the desired size follows the chart",
            f.display()
        );
    }
}

/// The cloud stores' value sets: GCS with workload identity names no key
/// file and mounts no Secret; Azure with a key Secret names the mounted
/// file, and the Secret is a volume of the pod, never a ConfigMap value;
/// its snapshots are encrypted, the identity another mounted Secret.
#[test]
fn the_cloud_stores_render_their_tables_and_credentials_as_files() {
    let files = rendered();
    let set = |name: &str| {
        files
            .iter()
            .find(|f| f.parent().is_some_and(|d| d.ends_with(name)))
            .unwrap_or_else(|| panic!("{name} rendered: {files:?}"))
            .clone()
    };
    let gcs = eco::config::load_file(&set("gcs-workload-identity")).unwrap();
    assert_eq!(gcs.snapshot.store, eco::config::SnapshotStoreKind::Gcs);
    let table = gcs.snapshot.gcs.expect("[snapshot.gcs]");
    assert_eq!(table.bucket, "acme-etcd-snapshots");
    assert_eq!(table.credentials_file, None, "workload identity");

    let azure_toml = set("azure-key-secret");
    let azure = eco::config::load_file(&azure_toml).unwrap();
    assert_eq!(azure.snapshot.store, eco::config::SnapshotStoreKind::Azure);
    let table = azure.snapshot.azure.expect("[snapshot.azure]");
    assert_eq!(
        (table.account.as_str(), table.container.as_str()),
        ("acmeetcd", "etcd-snapshots")
    );
    assert_eq!(
        table.access_key_file.as_deref(),
        Some(std::path::Path::new(
            "/etc/eco/store-credentials/access-key"
        ))
    );
    let manifests =
        std::fs::read_to_string(azure_toml.parent().unwrap().join("manifests.yaml")).unwrap();
    assert!(
        manifests.contains("secretName: eco-azure-key")
            && manifests.contains("mountPath: /etc/eco/store-credentials"),
        "the key Secret is mounted as a file"
    );
    // Snapshots encrypted: the recipients in the config, the identity a
    // mounted Secret named by identity_file.
    let enc = azure.snapshot.encryption.expect("[snapshot.encryption]");
    assert_eq!(enc.recipients.len(), 1);
    assert_eq!(
        enc.identity_file.as_deref(),
        Some(std::path::Path::new(
            "/etc/eco/snapshot-identity/identity.txt"
        ))
    );
    assert!(
        manifests.contains("secretName: eco-snapshot-identity")
            && manifests.contains("mountPath: /etc/eco/snapshot-identity"),
        "the identity Secret is mounted as a file"
    );
}

/// The rendered NOTES beside each `eco.toml`.
fn rendered_notes() -> Vec<(PathBuf, String)> {
    rendered()
        .into_iter()
        .map(|toml| {
            let path = toml.with_file_name("NOTES.txt");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, text)
        })
        .collect()
}

/// The programs eco's image has on its `PATH` (scripts/build-image.sh).
const IMAGE_PROGRAMS: [&str; 3] = ["eco", "etcdctl", "etcdutl"];

#[test]
fn every_command_notes_runs_in_a_pod_exists_there_with_its_flags() {
    let mut checked = 0;
    for (path, text) in rendered_notes() {
        assert!(text.starts_with("NOTES:"), "{}: no NOTES", path.display());
        for line in text.lines().filter(|l| l.contains(" exec ")) {
            let Some((_, inside)) = line.split_once(" -- ") else {
                panic!("{}: an exec without `--`: {line}", path.display());
            };
            // Up to a pipe: what runs in the pod.
            let inside = inside.split(" | ").next().unwrap_or(inside);
            let words: Vec<&str> = inside.split_whitespace().collect();
            let program = words.first().copied().unwrap_or_default();
            assert!(
                IMAGE_PROGRAMS.contains(&program),
                "{}: runs {program:?} in a pod, which the image does not have: {line}",
                path.display()
            );
            if program != "eco" {
                continue;
            }
            let subcommand: Vec<&str> = words[1..]
                .iter()
                .take_while(|w| !w.starts_with('-'))
                .copied()
                .collect();
            let help = std::process::Command::new(testkit::eco_bin!())
                .args(&subcommand)
                .arg("--help")
                .output()
                .expect("eco --help");
            let help_text = String::from_utf8_lossy(&help.stdout).into_owned();
            assert!(
                help.status.success(),
                "{}: `eco {}` is no command of eco: {line}",
                path.display(),
                subcommand.join(" ")
            );
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                assert!(
                    help_text.contains(&format!("{flag} "))
                        || help_text.contains(&format!("{flag}=")),
                    "{}: `eco {}` takes no {flag}: {line}",
                    path.display(),
                    subcommand.join(" ")
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 3,
        "too few eco commands found in the NOTES: {checked}"
    );
}

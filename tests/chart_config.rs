//! The Helm chart's rendered `eco.toml`, one per value set in `chart/ci/`,
//! read by eco's own loader: every key known, every value valid (the
//! files they name are the pod's and are not looked at here). The chart
//! step of `make test` (scripts/check-chart.sh) renders them into
//! `target/chart/<value set>/eco.toml`; run alone, this test renders them
//! itself.

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

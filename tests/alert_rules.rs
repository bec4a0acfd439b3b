//! eco's alert rules (`docs/prometheus/eco.rules.yaml`) checked by
//! Prometheus's own tool (`promtool`, Debian's `prometheus` package, which
//! scripts/install-deps.sh installs): the file is valid (`promtool check
//! rules`), every alert fires when it must and not before (`promtool test
//! rules` on `eco.rules.test.yaml`), every alert has a case there, every
//! `runbook_url` is a section of docs/operations.md, and every eco metric an
//! expression reads is one docs/operations.md lists (which tests/metrics.rs
//! holds to a real scrape), and the chart ships this file itself.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn dir() -> PathBuf {
    testkit::workspace_root().join("docs/prometheus")
}

fn promtool(args: &[&str]) -> (i32, String) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dir())
        .output()
        .expect("promtool (Debian's prometheus package: run make deps)");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// `key: value` of every line whose first word is `key:` (after an
/// optional list dash).
fn values_of(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().trim_start_matches("- ");
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
        .collect()
}

#[test]
fn every_alert_is_valid_tested_and_has_its_runbook_section() {
    let (code, said) = promtool(&["check", "rules", "eco.rules.yaml"]);
    assert_eq!(code, 0, "promtool check rules:\n{said}");
    let (code, said) = promtool(&["test", "rules", "eco.rules.test.yaml"]);
    assert_eq!(code, 0, "promtool test rules:\n{said}");
    eprintln!("{said}");

    // The chart ships this very file (a symbolic link, never a copy that
    // could drift).
    let chart = testkit::workspace_root().join("chart/files/eco.rules.yaml");
    assert_eq!(
        std::fs::read_link(&chart).ok(),
        Some(PathBuf::from("../../docs/prometheus/eco.rules.yaml")),
        "{} must be a symbolic link to docs/prometheus/eco.rules.yaml",
        chart.display()
    );
    let rules = std::fs::read_to_string(dir().join("eco.rules.yaml")).expect("the rule file");
    let tests = std::fs::read_to_string(dir().join("eco.rules.test.yaml")).expect("the tests");
    let ops = std::fs::read_to_string(testkit::workspace_root().join("docs/operations.md"))
        .expect("docs/operations.md");

    let alerts: BTreeSet<String> = values_of(&rules, "alert").into_iter().collect();
    assert!(alerts.len() >= 13, "{alerts:?}");

    // Every alert has a case in which it fires (a non-empty exp_alerts).
    let mut fired = BTreeSet::new();
    let mut current = None;
    for line in tests.lines() {
        let t = line.trim_start();
        if let Some(name) = t.strip_prefix("alertname:") {
            current = Some(name.trim().to_string());
        } else if t.starts_with("- exp_labels:")
            && let Some(name) = &current
        {
            fired.insert(name.clone());
        }
    }
    let untested: Vec<_> = alerts.difference(&fired).collect();
    assert!(untested.is_empty(), "alerts no case fires: {untested:?}");

    // Every runbook_url is a section of docs/operations.md.
    let anchors: BTreeSet<String> = ops
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(|h| h.trim().to_lowercase())
        .collect();
    let urls = values_of(&rules, "runbook_url");
    assert_eq!(urls.len(), alerts.len(), "one runbook_url per alert");
    for url in urls {
        let anchor = url
            .strip_prefix("docs/operations.md#")
            .unwrap_or_else(|| panic!("{url}: not a section of docs/operations.md"));
        assert!(anchors.contains(anchor), "{url}: no section `### {anchor}`");
    }
    for alert in &alerts {
        assert!(
            anchors.contains(&alert.to_lowercase()),
            "docs/operations.md has no section for {alert}"
        );
    }

    // Every eco_ metric an expression reads is documented (and so exported).
    let documented: BTreeSet<String> = ops
        .lines()
        .filter_map(|l| l.strip_prefix("| `eco_"))
        .filter_map(|l| l.split('`').next())
        .map(|n| format!("eco_{n}"))
        .collect();
    for expr in values_of(&rules, "expr") {
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("eco_") {
                assert!(
                    documented.contains(word),
                    "{word} (in `{expr}`) is not a metric of docs/operations.md"
                );
            }
        }
    }
}

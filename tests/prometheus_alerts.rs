//! End to end: a real Prometheus server (Debian's `prometheus`, which
//! scripts/install-deps.sh installs; its service is never started) scrapes
//! a real three-instance eco cluster every second with eco's alert rules
//! (`docs/prometheus/eco.rules.yaml`); one instance is killed with its etcd,
//! `EcoMemberUnhealthy` fires on the survivors, the instance comes back,
//! and the alert resolves.
//!
//! The Grafana dashboard (`docs/grafana/eco-dashboard.json`) is checked
//! against the same server: every panel's query is valid PromQL and,
//! but for the families a plaintext cluster without snapshots yet does not
//! have, returns series.
//!
//! The one adaptation, labelled: every rule's `for:` is shortened to 5 s
//! (the file's 5 minutes for this alert would make a five-minute test);
//! the expressions, labels and annotations are the file's own.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::etcd::rt;
use testkit::wait_until;

const BASE: &str = "127.0.93";
const PROMETHEUS: &str = "127.0.93.10:9090";

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        testkit::process::kill(self.0.id() as i32, libc::SIGKILL);
        let _ = self.0.wait();
    }
}

fn start_prometheus(dir: &Path) -> Prometheus {
    let rules =
        std::fs::read_to_string(testkit::workspace_root().join("docs/prometheus/eco.rules.yaml"))
            .expect("the rule file");
    // (the adaptation: every `for:` becomes 5 s)
    let rules: String = rules
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("for: ") {
                let indent = &l[..l.len() - l.trim_start().len()];
                format!("{indent}for: 5s\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(dir.join("eco.rules.yaml"), rules).expect("write the rules");
    let targets: Vec<String> = (1..=3).map(|i| format!("'{BASE}.{i}:2390'")).collect();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - eco.rules.yaml\nscrape_configs:\n  - job_name: eco\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    )
    .expect("write prometheus.yml");
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("log");
    let mut command = Command::new("prometheus");
    command
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={PROMETHEUS}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log);
    testkit::process::die_with_parent(&mut command);
    Prometheus(
        command
            .spawn()
            .expect("prometheus (Debian's prometheus package: run make deps)"),
    )
}

/// GET `path` of the Prometheus API, as JSON.
fn api(path: &str) -> Option<serde_json::Value> {
    let (code, body) = rt()
        .block_on(eco::api::status_client::get(
            PROMETHEUS.parse().expect("address"),
            path,
            Duration::from_secs(5),
        ))
        .ok()?;
    (code == 200).then(|| serde_json::from_slice(&body).ok())?
}

/// The instances on which `alert` is in `state` (`pending`, `firing`).
fn alert_instances(alert: &str, state: &str) -> Vec<String> {
    let Some(v) = api("/api/v1/alerts") else {
        return Vec::new();
    };
    let mut found: Vec<String> = v["data"]["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["labels"]["alertname"] == alert && a["state"] == state)
        .filter_map(|a| a["labels"]["instance"].as_str().map(str::to_string))
        .collect();
    found.sort();
    found
}

#[test]
fn member_unhealthy_fires_when_an_instance_dies_and_resolves_when_it_returns() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    c.form_three(BASE).expect("three voters");
    let dir = tempfile::tempdir().expect("tempdir");
    let _prometheus = start_prometheus(dir.path());
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();

    // Every target scraped and the rules loaded.
    let up = wait_until(Duration::from_secs(60), || {
        let v = api("/api/v1/query?query=sum(up)")?;
        (v["data"]["result"][0]["value"][1] == "3").then_some(())
    });
    assert!(
        up.is_some(),
        "prometheus never scraped the three instances:\n{}",
        log()
    );
    let rules = api("/api/v1/rules").expect("rules");
    let loaded = rules["data"]["groups"][0]["rules"]
        .as_array()
        .map_or(0, |r| r.len());
    assert!(loaded >= 13, "rules not loaded: {rules}");
    assert!(alert_instances("EcoMemberUnhealthy", "firing").is_empty());

    // eco-3 dies with its etcd: the survivors see an unhealthy member.
    let killed = Instant::now();
    c.kill_with_etcd("eco-3").expect("kill eco-3");
    let firing = wait_until(Duration::from_secs(90), || {
        let on = alert_instances("EcoMemberUnhealthy", "firing");
        (on.len() == 2).then_some(on)
    });
    let fired_after = killed.elapsed();
    assert_eq!(
        firing,
        Some(vec![format!("{BASE}.1:2390"), format!("{BASE}.2:2390")]),
        "EcoMemberUnhealthy did not fire on the two survivors:\n{}",
        api("/api/v1/alerts")
            .map(|v| v.to_string())
            .unwrap_or_default()
    );
    assert!(
        alert_instances("EcoNoLeader", "firing").is_empty(),
        "two of three keep a leader"
    );

    // eco-3 comes back with its data: the alert resolves.
    let back = Instant::now();
    c.start("eco-3").expect("start eco-3");
    let resolved = wait_until(Duration::from_secs(90), || {
        (alert_instances("EcoMemberUnhealthy", "firing").is_empty()
            && alert_instances("EcoMemberUnhealthy", "pending").is_empty())
        .then_some(())
    });
    assert!(
        resolved.is_some(),
        "EcoMemberUnhealthy did not resolve:\n{}",
        api("/api/v1/alerts")
            .map(|v| v.to_string())
            .unwrap_or_default()
    );
    // Every query of the dashboard, as Grafana would send it (its variables
    // set: job = eco, the rate interval 1m).
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(testkit::workspace_root().join("docs/grafana/eco-dashboard.json"))
            .expect("the dashboard"),
    )
    .expect("the dashboard is JSON");
    let mut queries = 0;
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("an expr");
            let promql = expr
                .replace("$job", "eco")
                .replace("$__rate_interval", "1m");
            let answer = api(&format!("/api/v1/query?query={}", percent_encoded(&promql)))
                .unwrap_or_else(|| panic!("panel {}: {promql} was refused", panel["title"]));
            assert_eq!(answer["status"], "success", "{promql}: {answer}");
            // (TLS is off, the first snapshot may not be listed yet, and
            // no store call failed)
            let may_be_empty = [
                "eco_certificate_expiry_timestamp_seconds",
                "eco_snapshot_newest_timestamp_seconds",
                "eco_store_operation_errors_total",
            ]
            .iter()
            .any(|m| promql.contains(m));
            let series = answer["data"]["result"].as_array().map_or(0, |r| r.len());
            assert!(
                series > 0 || may_be_empty,
                "panel {}: {promql} returned no series",
                panel["title"]
            );
            queries += 1;
        }
    }
    assert!(queries >= 20, "{queries} queries");
    eprintln!(
        "prometheus-alerts: EcoMemberUnhealthy firing {:.1} s after the kill (for: 5s), resolved {:.1} s after the restart",
        fired_after.as_secs_f64(),
        back.elapsed().as_secs_f64()
    );
}

/// `s` with every byte but ASCII letters and digits percent-encoded (a
/// query parameter).
fn percent_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

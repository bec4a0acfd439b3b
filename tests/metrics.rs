//! eco's `/metrics` on a real eco and etcd: the scrape passes Prometheus's
//! own linter (`promtool check metrics`, Debian's `prometheus` package,
//! which scripts/install-deps.sh installs), and it carries the families an
//! operator's alerts and dashboard read: membership and role, the voters'
//! zone spread, the phase and next action, the incarnation, snapshots,
//! gossip and the etcd process.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::eco_bin;
use testkit::etcd::rt;
use testkit::instance::Instance;
use testkit::wait_until;

/// A scrape of `/metrics` in the classic text format (no `Accept`), or
/// `None` while the API does not answer 200.
fn scrape(api: std::net::SocketAddr) -> Option<String> {
    let (code, body) = rt()
        .block_on(eco::api::status_client::get(
            api,
            "/metrics",
            Duration::from_secs(2),
        ))
        .ok()?;
    (code == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// `promtool check metrics` on `text`: its exit code and what it said.
fn promtool_check(text: &str) -> (i32, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package: run make deps)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed promtool");
    let out = child.wait_with_output().expect("promtool");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn a_scrape_passes_promtool_and_carries_the_operators_families() {
    let mut i = Instance::new(eco_bin!(), "127.0.92.1").with_dir_store();
    // gossip runs with keys (its counters are exported once it runs)
    i.env.push((
        "ECO_GOSSIP_KEYS".into(),
        "5f0b2c4e6a8d1f3b5c7e9a0b2d4f6a8c1e3b5d7f9a0c2e4b6d8f1a3c5e7b9d0f".into(),
    ));
    // generated TLS, so that the certificates' expiry is exported too
    i.configure(|b| {
        b.etcd_tls(eco::config::EtcdTlsConfig {
            generated: Some(Default::default()),
            ..Default::default()
        })
    });
    i.start();
    let api: std::net::SocketAddr = "127.0.92.1:2390".parse().expect("address");
    // Settled: ready, a member, nothing left to do, the store listed.
    let text = wait_until(Duration::from_secs(40), || {
        let text = scrape(api)?;
        (text.contains("eco_etcd_ready 1")
            && text.contains("eco_cluster_voters 1")
            && text.contains("eco_incarnation 1")
            && text.contains("action=\"keep etcd running\"")
            && text.contains("eco_snapshots_stored "))
        .then_some(text)
    })
    .unwrap_or_else(|| panic!("never settled:\n{:?}\n{}", scrape(api), i.log()));

    let (code, said) = promtool_check(&text);
    assert_eq!(
        code, 0,
        "promtool check metrics:\n{said}\n--- scrape ---\n{text}"
    );
    assert!(said.trim().is_empty(), "promtool's lint warnings:\n{said}");

    for family in [
        "eco_build_info{",
        "eco_etcd_running 1",
        "eco_etcd_starts_total 1",
        "eco_etcd_uptime_seconds ",
        "eco_etcd_crashes_total 0",
        "eco_cluster_learners 0",
        "eco_cluster_unhealthy_members 0",
        "eco_cluster_leader_changes_total 0",
        "eco_member_role{role=\"leader\"} 1",
        "eco_member_role{role=\"follower\"} 0",
        // the static group of the instance kit names no zone
        "eco_zone_voters{zone=\"unknown\"} 1",
        "eco_zones 0",
        "eco_zone_loss_survivable 0",
        "eco_phase_info{phase=\"running\",action=\"keep etcd running\"} 1",
        "eco_snapshots_taken_total",
        "eco_snapshot_failures_total{reason=\"store\"} 0",
        "eco_snapshot_duration_seconds_bucket{",
        // decisions: incarnation 1 was seeded from nothing, and every
        // series exists at 0 before anything happened
        "eco_seedings_total{source=\"empty\",outcome=\"done\"} 1",
        "eco_actions_total{action=\"remove_member\",outcome=\"done\"} 0",
        "eco_waits_total{reason=\"too_few_healthy_voters\"} 0",
        "eco_wait_seconds 0",
        "eco_cluster_without_quorum_seconds 0",
        "eco_quorum_loss_rounds_total{outcome=\"seeded\"} 0",
        "eco_recovery_messages_sent_total{kind=\"promise\"} 0",
        // the store's calls: the record of incarnation 1 was created
        "eco_store_operation_seconds_count{operation=\"list\"}",
        "eco_store_operation_errors_total",
        "eco_snapshot_store_alert 0",
        "eco_certificate_expiry_timestamp_seconds{key=\"etcd.tls.client.cert_file\"}",
        "eco_gossip_datagrams_sent_total",
        "eco_gossip_members_up 0", // a group of one: no other instance
        "eco_gossip_members{state=\"up\"} 0",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    // A Prometheus server asks for OpenMetrics, and gets it.
    let openmetrics = {
        use std::io::Read;
        let mut conn = std::net::TcpStream::connect(api).expect("connect to the API");
        conn.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout");
        conn.write_all(
            b"GET /metrics HTTP/1.1\r\nHost: eco\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\nConnection: close\r\n\r\n",
        )
        .expect("request");
        let mut response = String::new();
        conn.read_to_string(&mut response).expect("response");
        response
    };
    assert!(
        openmetrics
            .to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text")
            && openmetrics.contains("# TYPE eco_etcd_starts counter")
            && openmetrics.trim_end().ends_with("# EOF"),
        "{openmetrics}"
    );

    // docs/operations.md lists exactly the families of the scrape.
    let families: std::collections::BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    let doc = std::fs::read_to_string(testkit::workspace_root().join("docs/operations.md"))
        .expect("docs/operations.md");
    let documented: std::collections::BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `eco_"))
        .filter_map(|l| l.split('`').next())
        .map(|name| format!("eco_{name}"))
        .collect();
    assert_eq!(
        families, documented,
        "docs/operations.md and the scrape list different families"
    );
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(30)), Some(0));
}

//! eco's own HTTP API over TLS (`[api.tls]`) on a real instance with
//! generated TLS (`[etcd.tls.generated]`, real etcd) on loopback, with
//! `/status` kept on a second listener (`api.status_bind`):
//!
//! - `/healthz` and `/metrics` answer over HTTPS to a client that trusts
//!   the cluster's CA and presents no certificate; the certificate served
//!   is etcd's client certificate (`member.crt`), verified as the
//!   instance's address;
//! - plain HTTP to the API port fails; a client trusting another CA, or
//!   verifying another name, is refused;
//! - `/status` is 404 on the main listener (saying where it is) and 200
//!   on `status_bind`; `eco status --config` finds it there over HTTPS,
//!   with and without the instance id; `eco config check` says so;
//! - eco's renewal of the certificate in place is served by the API
//!   without a restart;
//! - on an instance with its own `[api.tls]` files, a renewal in place to
//!   an expired pair is not served: the previous one is, and `/status`
//!   says why (`api_tls_problem`).

use eco::api::status_client::{ApiTarget, get, get_from};
use eco::api::tls::ApiClientTls;
use eco::config::{ApiTlsConfig, KeyedPath};
use rustls_pki_types::pem::PemObject;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use testkit::cluster::{Cluster, Options};
use testkit::tls_probe::served_certificate;
use testkit::{eco_bin, wait_until};

/// The instance's address (the main listener: `<MAIN>:2390`).
const MAIN: &str = "127.0.61.1";
/// `api.status_bind`, on another loopback address.
const STATUS_BIND: &str = "127.0.61.2:2391";

fn https(addr: SocketAddr, ca: &Path, name: &str) -> ApiTarget {
    ApiTarget {
        addr,
        tls: Some(ApiClientTls {
            trusted_ca: KeyedPath {
                key: "test CA",
                path: ca.to_path_buf(),
            },
            server_name: name.to_string(),
        }),
    }
}

/// GET `path` (3 s at most): the code and the body.
fn fetch(target: &ApiTarget, path: &str) -> anyhow::Result<(u16, String)> {
    testkit::etcd::rt()
        .block_on(get_from(target, path, Duration::from_secs(3)))
        .map(|(code, body)| (code, String::from_utf8_lossy(&body).to_string()))
}

/// `eco status` with `args`: success, and what it printed.
fn eco_status(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(eco_bin!())
        .arg("status")
        .args(args)
        .env_remove("ECO_INSTANCE_ID")
        .output()
        .expect("eco status runs");
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

fn member_certificate(tls_dir: &Path) -> Vec<u8> {
    rustls_pki_types::CertificateDer::from_pem_file(tls_dir.join("member.crt"))
        .expect("member.crt")
        .to_vec()
}

#[test]
fn the_api_serves_https_with_etcds_certificate_and_status_on_its_own_listener() {
    let base = Options::integration(eco_bin!());
    let mut c = Cluster::new(Options {
        generated_tls: true,
        config: base.config.clone().api_tls(ApiTlsConfig {
            enabled: true,
            ..Default::default()
        }),
        ..base
    })
    .expect("cluster");
    let status_bind: SocketAddr = STATUS_BIND.parse().unwrap();
    c.add("eco-1", MAIN).unwrap();
    c.configure("eco-1", |b| {
        b.api_status_bind(status_bind).edit(|config| {
            // Renewed about every 10 s (valid an hour, renewed 59m50s
            // before it ends), to see the API serve a renewal.
            if let Some(g) = config.etcd.tls.generated.as_mut() {
                g.validity = eco::config::ConfigDuration::from_secs(3600);
                g.renew_before = eco::config::ConfigDuration::from_secs(3590);
            }
        })
    })
    .unwrap();
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    let endpoint = c.nodes["eco-1"].endpoint();
    testkit::etcd::wait_serving(&endpoint, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("etcd serving\n{}", c.log_tail("eco-1", 40)));

    let tls_dir: PathBuf = eco::config::generated_dir(&c.nodes["eco-1"].data_dir());
    let ca = tls_dir.join("ca.crt");
    let main: SocketAddr = c.nodes["eco-1"].api().parse().unwrap();
    let verified = https(main, &ca, MAIN);

    // (a) Over HTTPS, verified by the cluster's CA as the instance's
    // address, without a client certificate.
    let healthz = wait_until(Duration::from_secs(20), || {
        fetch(&verified, "/healthz").ok()
    })
    .unwrap_or_else(|| panic!("/healthz over https\n{}", c.log_tail("eco-1", 40)));
    assert_eq!(healthz, (200, "ok\n".to_string()));
    let (code, metrics) = fetch(&verified, "/metrics").expect("/metrics over https");
    assert_eq!(code, 200, "{metrics}");
    assert!(metrics.contains("eco_"), "{metrics}");
    let served_now = || served_certificate(main, MAIN, &ca, None);
    let first = wait_until(Duration::from_secs(15), || {
        let served = served_now().ok()?;
        (served == member_certificate(&tls_dir)).then_some(served)
    })
    .expect("the API serves etcd's client certificate (member.crt), no client certificate asked");

    // (b) Plain HTTP to the TLS ports fails.
    let plain = testkit::etcd::rt().block_on(get(main, "/healthz", Duration::from_secs(3)));
    assert!(plain.is_err(), "plain http answered: {plain:?}");
    let plain = testkit::etcd::rt().block_on(get(status_bind, "/status", Duration::from_secs(3)));
    assert!(plain.is_err(), "plain http answered: {plain:?}");

    // (c) A client trusting another CA is refused, and so is one that
    // verifies another name.
    let other = testkit::pki::Pki::new(&c.root().join("other-pki"), "other").expect("other CA");
    let refused = fetch(&https(main, &other.ca_file(), MAIN), "/healthz");
    assert!(refused.is_err(), "another CA accepted: {refused:?}");
    assert!(served_certificate(main, MAIN, &other.ca_file(), None).is_err());
    let refused = fetch(&https(main, &ca, "eco.invalid"), "/healthz");
    assert!(refused.is_err(), "another name accepted: {refused:?}");
    // The API still serves after the failed handshakes.
    assert_eq!(fetch(&verified, "/healthz").expect("after").0, 200);

    // (e) /status only on status_bind.
    let (code, body) = fetch(&verified, "/status").expect("/status on the main listener");
    assert_eq!(code, 404, "{body}");
    assert!(body.contains(STATUS_BIND), "{body}");
    let (code, body) = fetch(&https(status_bind, &ca, MAIN), "/status").expect("/status");
    assert_eq!(code, 200, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(status["instance_id"], "eco-1", "{body}");

    // (d) `eco status` over HTTPS, on status_bind: with the instance id
    // (its name from the provider), without (the name its daemon
    // recorded), and with --api and the CA.
    let config = c.nodes["eco-1"].config.to_str().unwrap().to_string();
    for args in [
        vec!["--config", &config, "--instance-id", "eco-1"],
        vec!["--config", &config],
        vec![
            "--api",
            STATUS_BIND,
            "--tls-ca",
            ca.to_str().unwrap(),
            "--tls-server-name",
            MAIN,
        ],
    ] {
        let (ok, said) = eco_status(&args);
        assert!(ok, "eco status {args:?}:\n{said}");
        assert!(said.contains("eco-1 (cluster it)"), "{args:?}:\n{said}");
    }
    let (ok, said) = eco_status(&["--api", STATUS_BIND]);
    assert!(!ok, "plain eco status against TLS succeeded:\n{said}");
    // `eco status --cluster` finds this instance's /status the same way
    // (HTTPS, on status_bind) and shows its row from it, once eco's first
    // passes have made it ready (etcd serves before that).
    let (ok, said) = eco_status(&["--cluster", "--config", &config]);
    assert!(ok, "eco status --cluster:\n{said}");
    assert!(
        said.lines().any(|l| l.starts_with("eco-1")),
        "no row for eco-1:\n{said}"
    );
    wait_until(Duration::from_secs(30), || {
        let (ok, said) = eco_status(&["--cluster", "--config", &config]);
        let row = said.lines().find(|l| l.starts_with("eco-1"))?.to_string();
        (ok && row.contains(" running ") && row.contains(" yes ")).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "eco status --cluster never showed eco-1 running and ready:\n{}",
            eco_status(&["--cluster", "--config", &config]).1
        )
    });
    // `eco config check` says how the API serves.
    let check = std::process::Command::new(eco_bin!())
        .args(["config", "check", &config])
        .output()
        .expect("eco config check runs");
    let said = String::from_utf8_lossy(&check.stdout).to_string();
    assert!(check.status.success(), "{said}");
    for line in [
        "# eco's HTTP API: https on <instance address>:2390, serving etcd.tls.client.cert_file",
        "# /status only on 127.0.61.2:2391 (api.status_bind)",
        "status_bind = \"127.0.61.2:2391\"",
        "[api.tls]\nenabled = true",
    ] {
        assert!(said.contains(line), "{line:?} in:\n{said}");
    }

    // eco renews the certificate in place: the API serves the new one on
    // its next handshake, without a restart.
    let renewed = wait_until(Duration::from_secs(40), || {
        let served = served_now().ok()?;
        (served != first && served == member_certificate(&tls_dir)).then_some(())
    });
    assert!(
        renewed.is_some(),
        "the API serves the renewed certificate\n{}",
        c.log_tail("eco-1", 30)
    );
    assert_eq!(c.running(), vec!["eco-1".to_string()], "eco still runs");
    assert_eq!(fetch(&verified, "/healthz").expect("after renewal").0, 200);
    let log = c.nodes["eco-1"].log();
    for said in [
        "/status only on api.status_bind",
        "a TLS handshake with the HTTP API failed",
        "the HTTP API serves the certificate as renewed",
    ] {
        assert!(log.contains(said), "{said:?} in the log");
    }
    for line in log.lines().filter(|l| l.contains("HTTP API")).take(6) {
        eprintln!("{line}");
    }
}

#[test]
fn an_api_certificate_renewed_in_place_to_an_expired_pair_is_not_served_and_status_says_so() {
    use testkit::pki::{Pki, Usage, Validity};
    const ADDRESS: &str = "127.0.61.3";
    let mut i = testkit::instance::Instance::new(eco_bin!(), ADDRESS);
    let pki = Pki::new(&i.dir.path().join("pki"), "api").expect("CA");
    let good = pki
        .issue(
            "api",
            "api",
            &[ADDRESS],
            Usage::ServerAndClient,
            Validity::Current,
        )
        .expect("certificate");
    let (cert, key) = (good.cert.clone(), good.key.clone());
    i.configure(|b| {
        b.api_tls(ApiTlsConfig {
            enabled: true,
            cert_file: Some(cert.clone()),
            key_file: Some(key.clone()),
            trusted_ca_file: Some(pki.ca_file()),
        })
    });
    i.start();
    let api: SocketAddr = format!("{ADDRESS}:2390").parse().unwrap();
    let verified = https(api, &pki.ca_file(), ADDRESS);
    wait_until(Duration::from_secs(20), || {
        fetch(&verified, "/healthz").ok()
    })
    .unwrap_or_else(|| panic!("/healthz over https\n{}", i.log()));
    let first = served_certificate(api, ADDRESS, &pki.ca_file(), None).expect("served");

    // Renewed in place (renamed over, key first) to a pair that expired.
    let expired = pki
        .issue(
            "expired",
            "api",
            &[ADDRESS],
            Usage::ServerAndClient,
            Validity::Expired,
        )
        .expect("expired certificate");
    std::fs::rename(&expired.key, &key).unwrap();
    std::fs::rename(&expired.cert, &cert).unwrap();
    // Every handshake after it still gets the previous pair, and /status
    // says why the files on disk are not served.
    let said = wait_until(Duration::from_secs(20), || {
        let (code, body) = fetch(&verified, "/status").ok()?;
        let status: serde_json::Value = serde_json::from_str(&body).ok()?;
        let problem = status["api_tls_problem"].as_str()?.to_string();
        (code == 200).then_some(problem)
    })
    .unwrap_or_else(|| panic!("never said in /status\n{}", i.log()));
    assert!(
        said.contains("api.tls.cert_file") && said.contains("expired"),
        "{said}"
    );
    assert_eq!(
        served_certificate(api, ADDRESS, &pki.ca_file(), None).expect("served"),
        first,
        "the previous certificate is still served"
    );
    assert!(
        i.log()
            .contains("the HTTP API cannot use its TLS certificate as it is now"),
        "{}",
        i.log()
    );
}

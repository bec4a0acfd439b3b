//! TLS on etcd's client and peer surfaces with certificates of the test's
//! own CA (`testkit::pki`), client certificates required on both, on real
//! etcd (3.5, and 3.4 in `make test`'s second pass) and real eco processes
//! on loopback:
//!
//! - a cluster forms (etcd's HTTP endpoints answer over TLS apart from
//!   gRPC, on `etcd.client_http_port`, from etcd 3.5.8 on), takes a write
//!   load and rebuilds a wiped member as a learner with every acknowledged
//!   write (the loss of quorum over TLS,
//!   the WAL replayed by a temporary etcd serving TLS on 127.0.0.1, is in
//!   tests/quorum_loss.rs);
//! - what TLS must refuse: plain `http` against the TLS port, a client
//!   without a certificate, one from another CA, an expired one, a server
//!   whose certificate names another address; and what eco refuses at
//!   start: an expired certificate, a key that is not its certificate's, a
//!   private key others can read, a certificate of another CA, one that
//!   does not name the instance's address; what it says of a key its
//!   group may read (the same at start and in `eco config check`), and of
//!   a certificate rotated in place to one of another CA while it runs.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::etcd::rt;
use testkit::ledger::{Ledger, lost_writes};
use testkit::pki::{Pki, Usage, Validity};
use testkit::wait_until;

fn tls_cluster() -> Cluster {
    Cluster::new(Options {
        tls: true,
        root: std::env::var_os("TLS_DEBUG_ROOT").map(Into::into),
        ..Options::integration(eco_bin!())
    })
    .expect("cluster")
}

/// The end of every instance's log, for a failure's message.
fn tails(c: &Cluster) -> String {
    c.nodes
        .iter()
        .map(|(id, n)| {
            let log = n.log();
            let errors: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("\"level\":\"fatal\"") || l.contains("\"level\":\"error\""))
                .take(5)
                .collect();
            format!("--- {id}\n{}\n{}", errors.join("\n"), c.log_tail(id, 25))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_tls_cluster_forms_and_rebuilds_a_wiped_member_under_load() {
    let mut c = tls_cluster();
    let formed = Instant::now();
    let old_cluster = c
        .form_three("127.0.31")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", tails(&c)));
    eprintln!("TLS: formed in {:.1} s", formed.elapsed().as_secs_f64());
    // etcd's HTTP endpoints of the client surface, over TLS, apart from
    // gRPC on `etcd.client_http_port` (etcd 3.5.8 and later; 3.4 keeps
    // them on the client port).
    let files = testkit::etcd::trusted_files("127.0.31.1:2379").expect("the test's client files");
    let port = if testkit::etcd::version() == "3.4" {
        2379
    } else {
        2382
    };
    let mut answer = String::new();
    let healthy = wait_until(Duration::from_secs(10), || {
        answer = https_get(&files, &format!("https://127.0.31.1:{port}/health"));
        answer.contains("\"health\":\"true\"").then_some(())
    });
    assert!(healthy.is_some(), "etcd's /health on port {port}: {answer}");
    let endpoints = c.endpoints(&["eco-1", "eco-2", "eco-3"]);
    assert!(endpoints.iter().all(|e| e.starts_with("https://")));
    let ledger = Ledger::start(endpoints, 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));

    // A member wiped: rebuilt as a learner, promoted, over TLS.
    c.stop("eco-3", libc::SIGTERM).unwrap();
    c.wipe("eco-3").unwrap();
    c.start("eco-3").unwrap();
    let wiped = Instant::now();
    let same = c
        .wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(90))
        .expect("the wiped member is a voter again");
    assert_eq!(same, old_cluster, "a wiped member rejoins the same cluster");
    eprintln!(
        "TLS: wiped member a voter again in {:.1} s",
        wiped.elapsed().as_secs_f64()
    );

    let (acked, failed) = ledger.finish();
    assert!(
        acked.len() > 50,
        "the load wrote too little: {} ({failed} failed)",
        acked.len()
    );
    for id in ["eco-1", "eco-2", "eco-3"] {
        let lost = lost_writes(&c.nodes[id].endpoint(), &acked);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

/// The body of `url` fetched over TLS with the test client's files (by
/// Python's standard library: the tests' Rust clients speak gRPC), or
/// what went wrong.
fn https_get(files: &testkit::etcd::ClientTlsFiles, url: &str) -> String {
    let Some(id) = &files.identity else {
        return "no client identity".into();
    };
    let script = "import ssl, sys, urllib.request\n\
        ctx = ssl.create_default_context(cafile=sys.argv[1])\n\
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])\n\
        print(urllib.request.urlopen(sys.argv[4], context=ctx, timeout=5).read().decode())";
    match std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&files.ca)
        .arg(&id.cert)
        .arg(&id.key)
        .arg(url)
        .output()
    {
        Ok(out) => format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => format!("python3: {e}"),
    }
}

/// Whether a client with `tls` (and a plain one when `None`) reads from
/// `endpoint` within a few seconds.
fn reads(endpoint: &str, tls: Option<etcd_client::TlsOptions>) -> Result<(), String> {
    rt().block_on(async {
        let mut opts = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(Duration::from_secs(2));
        if let Some(tls) = tls {
            opts = opts.with_tls(tls);
        }
        let attempt = async {
            let mut c = etcd_client::Client::connect([endpoint], Some(opts))
                .await
                .map_err(|e| e.to_string())?;
            c.get("probe", None).await.map_err(|e| e.to_string())?;
            Ok::<(), String>(())
        };
        tokio::time::timeout(Duration::from_secs(5), attempt)
            .await
            .map_err(|_| "timed out".to_string())?
    })
}

fn tls_with(
    ca: &std::path::Path,
    identity: Option<&testkit::pki::CertFiles>,
) -> etcd_client::TlsOptions {
    let mut tls = etcd_client::TlsOptions::new().ca_certificate(
        etcd_client::Certificate::from_pem(std::fs::read_to_string(ca).unwrap()),
    );
    if let Some(id) = identity {
        tls = tls.identity(etcd_client::Identity::from_pem(
            std::fs::read_to_string(&id.cert).unwrap(),
            std::fs::read_to_string(&id.key).unwrap(),
        ));
    }
    tls
}

#[test]
fn tls_refuses_what_it_must() {
    let mut c = tls_cluster();
    c.add("eco-1", "127.0.32.1").unwrap();
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1"], Duration::from_secs(60))
        .expect("one voter over TLS");
    let https = c.nodes["eco-1"].endpoint();
    let plain = https.replacen("https://", "http://", 1);
    let pki = c.pki.as_ref().expect("the cluster's CA");
    let ca = pki.ca_file();
    let good = pki
        .issue("good-client", "good", &[], Usage::Client, Validity::Current)
        .unwrap();
    assert_eq!(reads(&https, Some(tls_with(&ca, Some(&good)))), Ok(()));

    // Plain http against the TLS port.
    assert!(reads(&plain, None).is_err(), "plain http is refused");
    // No client certificate under client-certificate authentication.
    assert!(
        reads(&https, Some(tls_with(&ca, None))).is_err(),
        "a client without a certificate is refused"
    );
    // A certificate of another CA.
    let dir = tempfile::tempdir().unwrap();
    let other = Pki::new(dir.path(), "other").unwrap();
    let stranger = other
        .issue(
            "stranger",
            "stranger",
            &[],
            Usage::Client,
            Validity::Current,
        )
        .unwrap();
    assert!(
        reads(&https, Some(tls_with(&ca, Some(&stranger)))).is_err(),
        "a certificate of another CA is refused"
    );
    // An expired certificate of the right CA.
    let expired = pki
        .issue(
            "expired-client",
            "expired",
            &[],
            Usage::Client,
            Validity::Expired,
        )
        .unwrap();
    assert!(
        reads(&https, Some(tls_with(&ca, Some(&expired)))).is_err(),
        "an expired certificate is refused"
    );
    // The client verifies the server: a server trusted under another CA,
    // or verified under a name its certificate does not carry, is refused.
    assert!(
        reads(&https, Some(tls_with(&other.ca_file(), Some(&good)))).is_err(),
        "a server whose certificate another CA signed is refused"
    );
    assert!(
        reads(
            &https,
            Some(tls_with(&ca, Some(&good)).domain_name("127.0.32.99"))
        )
        .is_err(),
        "a server whose certificate names another address is refused"
    );
}

/// `eco config check` on `config` fails naming `key` and saying `what`.
fn config_check_fails(config: &std::path::Path, key: &str, what: &str) {
    let out = std::process::Command::new(eco_bin!())
        .args(["config", "check"])
        .arg(config)
        .output()
        .expect("eco config check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "accepted:\n{text}");
    assert!(
        text.contains(key) && text.contains(what),
        "{key} / {what}:\n{text}"
    );
}

#[test]
fn eco_refuses_tls_files_it_cannot_use_naming_them() {
    let mut c = tls_cluster();
    c.add("eco-1", "127.0.33.1").unwrap();
    c.set_group(&["eco-1"]).unwrap();
    let node = &c.nodes["eco-1"];
    let config = node.config.clone();
    let settings = node.settings.clone();
    let tls = settings.config().etcd.tls.clone();
    let client = tls.client.clone().expect("client TLS");
    let eco = tls.eco.clone().expect("eco's certificate");
    // The good files pass.
    let out = std::process::Command::new(eco_bin!())
        .args(["config", "check"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A private key its group may read: accepted, with a warning; the
    // names are said not checked (only `eco run` knows the address).
    std::fs::set_permissions(&client.key_file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let group_readable = format!(
        "etcd.tls.client.key_file {} is readable by its group; 0600 keeps it to eco's user",
        client.key_file.display()
    );
    let (ok, checked) = config_check(&config);
    assert!(ok, "{checked}");
    assert!(
        checked.contains(&format!("# warning: {group_readable}")),
        "{checked}"
    );
    assert!(
        checked.contains(
            "# not checked here: that etcd.tls.client.cert_file names this instance's address"
        ),
        "{checked}"
    );
    std::fs::set_permissions(&client.key_file, std::fs::Permissions::from_mode(0o600)).unwrap();

    // A certificate of another CA than the one that verifies it.
    let pki = c.pki.as_ref().unwrap();
    let own_cert = std::fs::read(&client.cert_file).unwrap();
    let own_key = std::fs::read(&client.key_file).unwrap();
    let stranger = testkit::pki::Pki::new(&c.root().join("stranger"), "stranger").unwrap();
    let foreign = stranger
        .issue(
            "foreign",
            "eco-1",
            &["127.0.33.1", "127.0.0.1"],
            Usage::ServerAndClient,
            Validity::Current,
        )
        .unwrap();
    std::fs::copy(&foreign.cert, &client.cert_file).unwrap();
    std::fs::copy(&foreign.key, &client.key_file).unwrap();
    config_check_fails(
        &config,
        "etcd.tls.client.cert_file",
        "eco cluster CA stranger",
    );
    config_check_fails(&config, "etcd.tls.client.trusted_ca_file", "UnknownIssuer");
    std::fs::write(&client.cert_file, &own_cert).unwrap();
    std::fs::write(&client.key_file, &own_key).unwrap();

    // A private key others can read.
    std::fs::set_permissions(&client.key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    config_check_fails(&config, "etcd.tls.client.key_file", "chmod 600");
    std::fs::set_permissions(&client.key_file, std::fs::Permissions::from_mode(0o600)).unwrap();

    // An expired certificate.
    let expired = pki
        .issue("expired-eco", "eco", &[], Usage::Client, Validity::Expired)
        .unwrap();
    std::fs::copy(&expired.cert, &eco.cert_file).unwrap();
    std::fs::copy(&expired.key, &eco.key_file).unwrap();
    config_check_fails(&config, "etcd.tls.eco.cert_file", "expired");

    // A key that is not its certificate's.
    let fresh = pki
        .issue("fresh-eco", "eco", &[], Usage::Client, Validity::Current)
        .unwrap();
    std::fs::copy(&fresh.cert, &eco.cert_file).unwrap();
    config_check_fails(&config, "etcd.tls.eco.key_file", "does not match");
    let elsewhere = pki
        .issue(
            "elsewhere",
            "eco-1",
            &["127.0.33.99"],
            Usage::ServerAndClient,
            Validity::Current,
        )
        .unwrap();

    // And `eco run` refuses to start with it, naming the file.
    c.start("eco-1").unwrap();
    let refused = wait_until(Duration::from_secs(20), || {
        let log = c.nodes["eco-1"].log();
        log.contains("etcd.tls.eco.key_file").then_some(log)
    })
    .expect("eco run names the file it cannot use");
    assert!(refused.contains("does not match"), "{refused}");
    assert!(c.etcd_pids("eco-1").is_empty(), "etcd was not started");
    assert!(exited(&mut c, "eco-1"), "eco exits");

    // A certificate of the right CA that does not name this instance's
    // address: `eco config check` cannot know it, `eco run` refuses.
    std::fs::copy(&fresh.key, &eco.key_file).unwrap();
    std::fs::copy(&elsewhere.cert, &client.cert_file).unwrap();
    std::fs::copy(&elsewhere.key, &client.key_file).unwrap();
    let (ok, checked) = config_check(&config);
    assert!(ok, "{checked}");
    c.start("eco-1").unwrap();
    let refused = wait_until(Duration::from_secs(20), || {
        let log = c.nodes["eco-1"].log();
        log.contains("does not name this instance's address")
            .then_some(log)
    })
    .expect("eco run names the certificate without its address");
    assert!(
        refused.contains("etcd.tls.client.cert_file") && refused.contains("127.0.33.99"),
        "{refused}"
    );
    assert!(c.etcd_pids("eco-1").is_empty(), "etcd was not started");
    assert!(exited(&mut c, "eco-1"), "eco exits");

    // The good certificate with its key group-readable: `eco run` starts
    // and logs the warning `eco config check` printed, in the same words.
    std::fs::write(&client.cert_file, &own_cert).unwrap();
    std::fs::write(&client.key_file, &own_key).unwrap();
    std::fs::set_permissions(&client.key_file, std::fs::Permissions::from_mode(0o640)).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1"], Duration::from_secs(30))
        .unwrap_or_else(|| panic!("not a voter:\n{}", tails(&c)));
    assert!(
        c.nodes["eco-1"].log().contains(&group_readable),
        "{}",
        tails(&c)
    );

    // eco's certificate rotated in place to one of another CA: etcd will
    // refuse eco's new connections; `eco status` says which file and why.
    let foreign_eco = stranger
        .issue("foreign-eco", "eco", &[], Usage::Client, Validity::Current)
        .unwrap();
    let good_eco = (
        std::fs::read(&eco.cert_file).unwrap(),
        std::fs::read(&eco.key_file).unwrap(),
    );
    std::fs::copy(&foreign_eco.cert, &eco.cert_file).unwrap();
    std::fs::copy(&foreign_eco.key, &eco.key_file).unwrap();
    let status = || {
        let out = std::process::Command::new(eco_bin!())
            .args(["status", "--config"])
            .arg(&config)
            .args(["--instance-id", "eco-1"])
            .output()
            .expect("eco status");
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    let broken = wait_until(Duration::from_secs(20), || {
        Some(status()).filter(|s| s.contains("etcd tls"))
    })
    .unwrap_or_else(|| panic!("never said:\n{}\n{}", status(), tails(&c)));
    assert!(
        broken.contains("BROKEN")
            && broken.contains("etcd.tls.eco.cert_file")
            && broken.contains("eco cluster CA stranger"),
        "{broken}"
    );
    // Put back: the problem goes.
    std::fs::write(&eco.cert_file, &good_eco.0).unwrap();
    std::fs::write(&eco.key_file, &good_eco.1).unwrap();
    let fixed = wait_until(Duration::from_secs(20), || {
        Some(status()).filter(|s| !s.contains("etcd tls") && s.contains("ready          yes"))
    });
    assert!(fixed.is_some(), "{}", status());
}

/// Whether the eco of `id` exits (bounded).
fn exited(c: &mut Cluster, id: &str) -> bool {
    match c.nodes.get_mut(id).and_then(|n| n.process.as_mut()) {
        Some(p) => testkit::process::wait_exit(p, Duration::from_secs(10)),
        None => true,
    }
}

/// `eco config check` on `config`: whether it passed, and what it printed.
fn config_check(config: &std::path::Path) -> (bool, String) {
    let out = std::process::Command::new(eco_bin!())
        .args(["config", "check"])
        .arg(config)
        .output()
        .expect("eco config check");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

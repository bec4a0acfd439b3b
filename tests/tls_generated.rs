//! Generated TLS (`[etcd.tls.generated]`) on real etcd (3.5, and 3.4 in
//! `make test`'s second pass) and real eco processes on loopback:
//!
//! - the first instance makes the cluster's CA and stores it with its key
//!   sealed (no private key in the store), every instance issues its own
//!   certificate with its address, the cluster forms over TLS with client
//!   certificates required, `eco certs client` gives an operator a working
//!   client certificate, and a wiped member comes back with new
//!   certificates, nothing lost;
//! - certificates renewed in place under a write load: etcd serves the new
//!   certificate on the next handshake without a restart, no acknowledged
//!   write is lost and the cluster never loses its members;
//! - the CA object deleted from the store of a running cluster: no instance
//!   makes a new CA (not at its checks, not when restarted); each keeps its
//!   certificates and its member, and says what is missing and what to do;
//! - a key set that no longer holds the key the CA was sealed under: each
//!   instance says which key id is missing, keeps its certificates (a
//!   restarted one too) and never reseals the CA, until the key is back.
//!
//! (The loss of quorum over generated TLS is in tests/quorum_loss.rs.)

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::ledger::{Ledger, lost_writes};
use testkit::pki::CertFiles;
use testkit::tls_probe::served_certificate;
use testkit::wait_until;

fn generated_cluster() -> Cluster {
    Cluster::new(Options {
        generated_tls: true,
        ..Options::integration(eco_bin!())
    })
    .expect("cluster")
}

fn three(c: &mut Cluster, base: &str) -> u64 {
    c.form_three(base).expect("three voters over generated TLS")
}

fn tls_dir(c: &Cluster, id: &str) -> std::path::PathBuf {
    eco::config::generated_dir(&c.nodes[id].data_dir())
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_cluster_makes_its_ca_issues_its_certificates_and_serves_an_operator() {
    let mut c = generated_cluster();
    let formed = Instant::now();
    let cluster_id = three(&mut c, "127.0.34");
    eprintln!(
        "generated TLS: formed in {:.1} s",
        formed.elapsed().as_secs_f64()
    );

    // One CA in the store, its key sealed.
    let object = std::fs::read_to_string(c.store().join("it/pki/ca.json")).expect("the CA object");
    assert!(object.contains("BEGIN CERTIFICATE"), "{object}");
    assert!(
        !object.contains("PRIVATE KEY"),
        "the CA key is never in the store in the clear"
    );
    let ca = std::fs::read_to_string(tls_dir(&c, "eco-1").join("ca.crt")).unwrap();
    for id in ["eco-1", "eco-2", "eco-3"] {
        let dir = tls_dir(&c, id);
        assert_eq!(
            std::fs::read_to_string(dir.join("ca.crt")).unwrap(),
            ca,
            "{id}: one CA"
        );
        let member =
            eco::etcd::tls::describe_pem(&std::fs::read_to_string(dir.join("member.crt")).unwrap())
                .unwrap();
        assert!(
            member.names.contains(&c.nodes[id].address),
            "{id}: {member:?}"
        );
        assert_eq!(mode(&dir), 0o700, "{id}: the directory");
        assert_eq!(mode(&dir.join("member.key")), 0o600, "{id}: the key");
        assert_eq!(mode(&dir.join("eco.key")), 0o600, "{id}: eco's key");
    }

    // `eco status` shows each certificate's expiry.
    let status = std::process::Command::new(eco_bin!())
        .args(["status", "--api", &c.nodes["eco-1"].api()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&status.stdout).to_string();
    for key in [
        "etcd.tls.client.cert_file",
        "etcd.tls.peer.cert_file",
        "etcd.tls.eco.cert_file",
    ] {
        assert!(
            shown
                .lines()
                .any(|l| l.contains(key) && l.contains("89 days left")),
            "{key} in:\n{shown}"
        );
    }

    // An operator's client certificate.
    let out = c.root().join("alice");
    let issued = std::process::Command::new(eco_bin!())
        .args([
            "certs",
            "client",
            "--user",
            "alice",
            "--validity",
            "1h",
            "--config",
        ])
        .arg(&c.nodes["eco-2"].config)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&issued.stdout).to_string()
        + &String::from_utf8_lossy(&issued.stderr);
    assert!(issued.status.success(), "{said}");
    assert!(said.contains("etcdctl --endpoints https://"), "{said}");
    assert_eq!(mode(&out.join("alice.key")), 0o600);
    let endpoint = c.nodes["eco-3"].endpoint();
    let alice = client_over_tls(&endpoint, &out, "alice", |mut client| async move {
        client
            .put("alice/hello", "world", None)
            .await
            .map_err(|e| e.to_string())?;
        Ok(client)
    });
    assert_eq!(alice, Ok(1), "alice writes and reads over TLS");

    // `--out -`: the files as a tar archive on standard output (a pod's
    // image has no shell to `cat` them out), unpacked by tar(1).
    let issued = std::process::Command::new(eco_bin!())
        .args(["certs", "client", "--user", "carol", "--validity", "1h"])
        .args(["--out", "-", "--config"])
        .arg(&c.nodes["eco-1"].config)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&issued.stderr).to_string();
    assert!(issued.status.success(), "{said}");
    assert!(said.contains("tar -xf"), "{said}");
    let unpacked = c.root().join("carol");
    testkit::process::untar(&issued.stdout, &unpacked, "the archive");
    let mut names: Vec<String> = std::fs::read_dir(&unpacked)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["ca.crt", "carol.crt", "carol.key"]);
    assert_eq!(mode(&unpacked.join("carol.key")), 0o600);
    let carol = client_over_tls(&endpoint, &unpacked, "carol", |client| async { Ok(client) });
    assert_eq!(carol, Ok(1), "carol's archived certificate reads over TLS");

    // A validity of zero, or past the CA's own expiry, is refused, saying
    // the longest one possible; nothing is written.
    for (validity, why) in [
        ("0s", "the validity must be positive"),
        ("1000years", "longer than the CA has left"),
    ] {
        let out = c.root().join(format!("bob-{validity}"));
        let refused = std::process::Command::new(eco_bin!())
            .args(["certs", "client", "--user", "bob", "--validity", validity])
            .arg("--config")
            .arg(&c.nodes["eco-2"].config)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&refused.stderr).to_string();
        assert!(!refused.status.success(), "--validity {validity} accepted");
        assert!(
            said.contains(&format!("--validity {validity}"))
                && said.contains(why)
                && said.contains("at most 9years"),
            "--validity {validity}: {said}"
        );
        assert!(!out.join("bob.crt").exists(), "--validity {validity}");
    }

    // A wiped member comes back with new certificates, nothing lost.
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));
    let old_key = std::fs::read(tls_dir(&c, "eco-3").join("member.key")).unwrap();
    c.stop("eco-3", libc::SIGTERM).unwrap();
    c.wipe("eco-3").unwrap();
    c.start("eco-3").unwrap();
    let same = c
        .wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(90))
        .expect("the wiped member is a voter again");
    assert_eq!(same, cluster_id);
    assert_ne!(
        std::fs::read(tls_dir(&c, "eco-3").join("member.key")).unwrap(),
        old_key,
        "a new key for the rebuilt member"
    );
    let (acked, failed) = ledger.finish();
    assert!(
        acked.len() > 20,
        "the load wrote too little: {} ({failed} failed)",
        acked.len()
    );
    for id in ["eco-1", "eco-2", "eco-3"] {
        let lost = lost_writes(&c.nodes[id].endpoint(), &acked);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

/// The certificate eco-N's client port serves now, and the one in its file,
/// once a handshake and the file agree (within 10 s). A renewal replaces
/// the certificate and its key by two renames; a handshake between them
/// fails, and a file read between them is the new certificate while etcd
/// still serves the old: both are a renewal's middle, not its result.
fn served_and_file(c: &Cluster, id: &str) -> (Vec<u8>, Vec<u8>) {
    let mut last = String::new();
    wait_until(Duration::from_secs(10), || {
        match served_and_file_once(c, id) {
            Ok(both) => Some(both),
            Err(e) => {
                last = e;
                None
            }
        }
    })
    .unwrap_or_else(|| panic!("{id}: {last}"))
}

fn served_and_file_once(c: &Cluster, id: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let dir = tls_dir(c, id);
    let address = &c.nodes[id].address;
    let served = served_certificate(
        SocketAddr::new(address.parse().unwrap(), 2379),
        address,
        &dir.join("ca.crt"),
        Some(&CertFiles {
            cert: dir.join("eco.crt"),
            key: dir.join("eco.key"),
        }),
    )
    .map_err(|e| format!("a TLS handshake: {e}"))?;
    let file = rustls_pki_types::CertificateDer::from_pem_file(dir.join("member.crt"))
        .map_err(|e| format!("member.crt: {e}"))?
        .to_vec();
    Ok((served, file))
}

use rustls_pki_types::pem::PemObject;

#[test]
fn certificates_renewed_in_place_are_served_without_a_restart_and_lose_nothing() {
    let mut c = generated_cluster();
    for (i, id) in ["eco-1", "eco-2", "eco-3"].iter().enumerate() {
        c.add(id, &format!("127.0.35.{}", i + 1)).unwrap();
        // Renewed about every 10 s: valid an hour, renewed 59m50s before
        // it ends (looked at every second).
        c.configure(id, |b| {
            b.edit(|config| {
                if let Some(g) = config.etcd.tls.generated.as_mut() {
                    g.validity = eco::config::ConfigDuration::from_secs(3600);
                    g.renew_before = eco::config::ConfigDuration::from_secs(3590);
                }
            })
        })
        .unwrap();
    }
    c.set_group(&["eco-1", "eco-2", "eco-3"]).unwrap();
    for id in ["eco-1", "eco-2", "eco-3"] {
        c.start(id).unwrap();
    }
    let cluster_id = c
        .wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(90))
        .expect("three voters");
    let etcd_pids: Vec<Vec<i32>> = ["eco-1", "eco-2", "eco-3"]
        .iter()
        .map(|id| c.etcd_pids(id))
        .collect();
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 50_000);
    let (first, file) = served_and_file(&c, "eco-1");
    assert_eq!(first, file, "etcd serves the certificate of its file");

    // Renewed in place: the file changes, and the next handshake gets it.
    let renewed = wait_until(Duration::from_secs(40), || {
        let (served, file) = served_and_file(&c, "eco-1");
        (file != first && served == file).then_some(())
    });
    assert!(
        renewed.is_some(),
        "etcd serves the renewed certificate\n{}",
        c.log_tail("eco-1", 30)
    );
    // Two more renewal rounds under the load.
    std::thread::sleep(Duration::from_secs(20));
    let (acked, failed) = ledger.finish();
    eprintln!(
        "generated TLS renewal: {} acknowledged writes, {failed} failed",
        acked.len()
    );
    for id in ["eco-1", "eco-2", "eco-3"] {
        let lost = lost_writes(&c.nodes[id].endpoint(), &acked);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
        let agree = wait_until(Duration::from_secs(10), || {
            let (served, file) = served_and_file(&c, id);
            (served == file).then_some(())
        });
        assert!(agree.is_some(), "{id} serves its current file");
    }
    assert!(
        acked.len() > 100,
        "the load wrote too little: {}",
        acked.len()
    );
    assert_eq!(
        c.wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(5)),
        Some(cluster_id),
        "the same three voters throughout"
    );
    let now: Vec<Vec<i32>> = ["eco-1", "eco-2", "eco-3"]
        .iter()
        .map(|id| c.etcd_pids(id))
        .collect();
    assert_eq!(now, etcd_pids, "no etcd was restarted to renew");
    let renewals: usize = ["eco-1", "eco-2", "eco-3"]
        .iter()
        .map(|id| c.nodes[*id].log().matches("issued a certificate").count())
        .sum();
    assert!(
        renewals >= 3 * 2 * 3,
        "each instance issued its two certificates at start and renewed them at least twice: {renewals}"
    );
}

/// `put key` as the client whose files are in `dir` (`<user>.crt`, `.key`,
/// `ca.crt`): `Ok` when etcd accepted it.
fn put_as(endpoint: &str, dir: &std::path::Path, user: &str, key: &str) -> Result<(), String> {
    testkit::etcd::rt().block_on(async {
        let read = |f: String| std::fs::read_to_string(dir.join(f)).map_err(|e| e.to_string());
        let tls = etcd_client::TlsOptions::new()
            .ca_certificate(etcd_client::Certificate::from_pem(read("ca.crt".into())?))
            .identity(etcd_client::Identity::from_pem(
                read(format!("{user}.crt"))?,
                read(format!("{user}.key"))?,
            ));
        let opts = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(2))
            .with_tls(tls);
        let attempt = async {
            let mut c = etcd_client::Client::connect([endpoint], Some(opts))
                .await
                .map_err(|e| e.to_string())?;
            c.put(key, "v", None).await.map_err(|e| e.to_string())?;
            Ok(())
        };
        tokio::time::timeout(Duration::from_secs(5), attempt)
            .await
            .map_err(|_| "timed out".to_string())?
    })
}

/// Generated TLS with etcd's authentication by certificate names: eco's
/// identity is its generated client certificate (CN `eco`, given the root
/// role by eco itself), and an operator's `eco certs client` certificate
/// is the user of its CN, limited by the ACL; eco keeps snapshotting.
#[test]
fn generated_certificates_are_etcd_identities_under_authentication() {
    use eco::config::{
        AuthConfig, PermissionAccess, PermissionConfig, RoleConfig, TokenConfig, UserConfig,
    };
    let mut c = generated_cluster();
    let auth = AuthConfig {
        enabled: true,
        root_password_file: None,
        roles: vec![RoleConfig {
            name: "app-rw".into(),
            permissions: vec![PermissionConfig {
                key: "app/".into(),
                range_end: None,
                prefix: true,
                access: PermissionAccess::Readwrite,
            }],
        }],
        users: vec![UserConfig {
            name: "app".into(),
            password_file: None,
            roles: vec!["app-rw".into()],
        }],
        token: TokenConfig::default(),
    };
    c.add("eco-1", "127.0.36.1").unwrap();
    c.configure("eco-1", |b| b.auth(auth)).unwrap();
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1"], Duration::from_secs(60))
        .expect("one voter over generated TLS");
    let out = c.root().join("app-client");
    let issued = std::process::Command::new(eco_bin!())
        .args(["certs", "client", "--user", "app", "--config"])
        .arg(&c.nodes["eco-1"].config)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(issued.status.success(), "{issued:?}");
    let endpoint = c.nodes["eco-1"].endpoint();
    // Once authentication is on, `app` writes inside `app/` only.
    let enforced = wait_until(Duration::from_secs(30), || {
        (put_as(&endpoint, &out, "app", "elsewhere/x").is_err()).then_some(())
    });
    assert!(
        enforced.is_some(),
        "authentication is enabled\n{}",
        c.log_tail("eco-1", 30)
    );
    assert_eq!(put_as(&endpoint, &out, "app", "app/x"), Ok(()));
    // eco, as the CN of its own generated certificate, still snapshots.
    c.snapshot_now("eco-1").unwrap();
}

/// Three voters over generated TLS whose instances look at their
/// certificates every second (valid an hour, renewed 59m50s before the
/// end), formed on `127.0.<net>.1-3`.
fn three_checking_every_second(net: u8) -> (Cluster, u64) {
    let mut c = generated_cluster();
    for (i, id) in ["eco-1", "eco-2", "eco-3"].iter().enumerate() {
        c.add(id, &format!("127.0.{net}.{}", i + 1)).unwrap();
        c.configure(id, |b| {
            b.edit(|config| {
                if let Some(g) = config.etcd.tls.generated.as_mut() {
                    g.validity = eco::config::ConfigDuration::from_secs(3600);
                    g.renew_before = eco::config::ConfigDuration::from_secs(3590);
                }
            })
        })
        .unwrap();
    }
    c.set_group(&["eco-1", "eco-2", "eco-3"]).unwrap();
    for id in ["eco-1", "eco-2", "eco-3"] {
        c.start(id).unwrap();
    }
    let cluster_id = c
        .wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(90))
        .expect("three voters");
    (c, cluster_id)
}

/// The generated files of `id`: (ca.crt, member.crt, eco.crt).
fn generated_files(c: &Cluster, id: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let dir = tls_dir(c, id);
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    (read("ca.crt"), read("member.crt"), read("eco.crt"))
}

/// Waits until the log of `id` after its first `from` bytes holds `phrase`
/// at least `times` times.
fn wait_logged(c: &Cluster, id: &str, from: usize, phrase: &str, times: usize) -> bool {
    wait_until(Duration::from_secs(30), || {
        let log = c.nodes[id].log();
        (log.get(from..).unwrap_or("").matches(phrase).count() >= times).then_some(())
    })
    .is_some()
}

fn made_cas(c: &Cluster) -> usize {
    ["eco-1", "eco-2", "eco-3"]
        .iter()
        .map(|id| c.nodes[*id].log().matches("made the cluster's CA").count())
        .sum()
}

#[test]
fn a_ca_object_deleted_under_a_running_cluster_is_never_made_again() {
    let (mut c, cluster_id) = three_checking_every_second(37);
    assert_eq!(made_cas(&c), 1, "one CA, made while forming");
    let members = c.member_ids().expect("the member list");
    let object = c.store().join("it/pki/ca.json");
    std::fs::remove_file(&object).expect("the CA object");

    // Every instance's next check refuses to make a CA, saying why.
    let refused = "No new CA is made";
    for id in ["eco-1", "eco-2", "eco-3"] {
        assert!(
            wait_logged(&c, id, 0, refused, 2),
            "{id} refuses to make a CA\n{}",
            c.log_tail(id, 30)
        );
    }
    let log = c.nodes["eco-1"].log();
    for phrase in [
        "the store holds no CA for cluster it (it/pki/ca.json)",
        "the cluster exists (it/incarnations/0000000001)",
        "keeps using its certificates",
        "its copy of the CA certificate",
        "Restore it/pki/ca.json from a backup of the store",
    ] {
        assert!(
            log.contains(phrase),
            "{phrase:?} in:\n{}",
            c.log_tail("eco-1", 10)
        );
    }
    let held: Vec<_> = ["eco-1", "eco-2", "eco-3"]
        .iter()
        .map(|id| generated_files(&c, id))
        .collect();

    // Restarted, eco-2 makes no CA either: it goes on with what it holds.
    c.stop("eco-2", libc::SIGTERM).unwrap();
    let from = c.nodes["eco-2"].log().len();
    c.start("eco-2").unwrap();
    assert!(
        wait_logged(
            &c,
            "eco-2",
            from,
            "it goes on with the certificates it holds",
            1
        ),
        "eco-2 starts on its certificates\n{}",
        c.log_tail("eco-2", 30)
    );
    assert_eq!(
        c.wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(60)),
        Some(cluster_id),
        "eco-2 serves again\n{}",
        c.log_tail("eco-2", 30)
    );
    // Past the unhealthy-member TTL (5 s) of its checks, one a second.
    assert!(
        wait_logged(&c, "eco-2", from, refused, 8),
        "{}",
        c.log_tail("eco-2", 30)
    );
    assert_eq!(
        c.member_ids(),
        Some(members),
        "the same members: eco-2 keeps its member"
    );
    assert!(!object.exists(), "no CA object was made again");
    assert_eq!(made_cas(&c), 1, "no instance made a CA");
    for (i, id) in ["eco-1", "eco-2", "eco-3"].iter().enumerate() {
        assert!(
            generated_files(&c, id) == held[i],
            "{id}: the same certificates and CA copy"
        );
    }
}

#[test]
fn a_key_set_without_the_key_the_ca_was_sealed_under_keeps_the_certificates_and_says_which() {
    let (mut c, cluster_id) = three_checking_every_second(38);
    let members = c.member_ids().expect("the member list");
    let object = c.store().join("it/pki/ca.json");
    let sealed = std::fs::read(&object).unwrap();
    let hex_key = |k: &str| -> [u8; 32] { hex::decode(k).unwrap().try_into().unwrap() };
    let old = testkit::cluster::key_pattern(37, 11);
    let new = testkit::cluster::key_pattern(53, 7);
    let ids = eco::pki::sealed::key_ids(&[hex_key(&old), hex_key(&new)], "it");
    let root = c.root().to_path_buf();
    let write_keys = |lines: &[&str]| {
        let (keys, tmp) = (root.join("gossip.keys"), root.join(".gossip.keys.new"));
        std::fs::write(&tmp, lines.join("\n") + "\n").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::rename(&tmp, &keys).unwrap();
    };

    // The old key dropped before the CA was sealed for the new one.
    let marks: Vec<usize> = ["eco-1", "eco-2", "eco-3"]
        .iter()
        .map(|id| c.nodes[*id].log().len())
        .collect();
    write_keys(&[&new]);
    let missing = format!(
        "sealed under key id(s) {}, and this instance's keys are id(s) {}",
        ids[0], ids[1]
    );
    for (i, id) in ["eco-1", "eco-2", "eco-3"].iter().enumerate() {
        assert!(
            wait_logged(&c, id, marks[i], &missing, 2),
            "{id} names the missing key id\n{}",
            c.log_tail(id, 30)
        );
    }
    let log = c.nodes["eco-1"].log();
    assert!(
        log.contains("put that key back in the key set, after the current one")
            && log.contains("it goes on with the certificates it holds"),
        "{}",
        c.log_tail("eco-1", 10)
    );
    let held = generated_files(&c, "eco-2");

    // Restarted on that key set, eco-2 starts on its certificates.
    c.stop("eco-2", libc::SIGTERM).unwrap();
    let from = c.nodes["eco-2"].log().len();
    c.start("eco-2").unwrap();
    assert!(
        wait_logged(&c, "eco-2", from, &missing, 1),
        "{}",
        c.log_tail("eco-2", 30)
    );
    assert_eq!(
        c.wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(60)),
        Some(cluster_id),
        "eco-2 serves again on the certificates it holds\n{}",
        c.log_tail("eco-2", 30)
    );
    assert!(
        wait_logged(&c, "eco-2", from, &missing, 8),
        "{}",
        c.log_tail("eco-2", 30)
    );
    assert_eq!(c.member_ids(), Some(members), "eco-2 keeps its member");
    assert!(
        generated_files(&c, "eco-2") == held,
        "eco-2's files are untouched"
    );
    assert_eq!(
        std::fs::read(&object).unwrap(),
        sealed,
        "a CA no instance can open is neither made again nor resealed"
    );
    assert_eq!(made_cas(&c), 1);

    // The old key back, second: the CA opens and is sealed for the new key.
    write_keys(&[&new, &old]);
    assert!(
        wait_until(Duration::from_secs(30), || {
            let object = std::fs::read(&object).ok()?;
            let ca = eco::pki::sealed::SealedCa::from_json(&object).ok()?;
            ca.open(&[hex_key(&new)], "it").ok()
        })
        .is_some(),
        "the CA sealed again for the new key\n{}",
        c.log_tail("eco-1", 20)
    );
    assert_eq!(made_cas(&c), 1);
}

/// Connects to `endpoint` with `user`'s files in `dir` (ca.crt,
/// USER.crt, USER.key), runs `first`, then reads `alice/hello`: how many
/// keys it found, or the error.
fn client_over_tls<F, Fut>(
    endpoint: &str,
    dir: &std::path::Path,
    user: &str,
    first: F,
) -> Result<usize, String>
where
    F: FnOnce(etcd_client::Client) -> Fut,
    Fut: std::future::Future<Output = Result<etcd_client::Client, String>>,
{
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    testkit::etcd::rt().block_on(async {
        let tls = etcd_client::TlsOptions::new()
            .ca_certificate(etcd_client::Certificate::from_pem(read("ca.crt")))
            .identity(etcd_client::Identity::from_pem(
                read(&format!("{user}.crt")),
                read(&format!("{user}.key")),
            ));
        let opts = etcd_client::ConnectOptions::new()
            .with_timeout(Duration::from_secs(3))
            .with_tls(tls);
        let client = etcd_client::Client::connect([endpoint], Some(opts))
            .await
            .map_err(|e| e.to_string())?;
        let mut client = first(client).await?;
        let got = client
            .get("alice/hello", None)
            .await
            .map_err(|e| e.to_string())?;
        Ok(got.kvs().len())
    })
}

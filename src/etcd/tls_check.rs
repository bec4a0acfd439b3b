//! The check of `[etcd.tls]`'s files ([`check_files`]), the one `eco run`
//! makes before anything starts (and at every pass, for `/status`) and
//! `eco config check` makes: each file readable, private keys not open to
//! others (a group-readable key is a warning), PEM that parses, each key
//! matching its certificate, no certificate expired or not yet valid,
//! each certificate chaining to the CA that verifies it, for the use it
//! is put to, and — where this instance's advertised host is known —
//! etcd's certificates naming it.
//!
//! Which CA verifies what:
//!
//! | certificate | presented to | verified with | use |
//! |---|---|---|---|
//! | `etcd.tls.client.cert_file` | eco and etcd's clients | `etcd.tls.eco.trusted_ca_file`, else `etcd.tls.client.trusted_ca_file` (what eco trusts) | server, names the host |
//! | `etcd.tls.peer.cert_file` | the other members | `etcd.tls.peer.trusted_ca_file` | server, and client with `client_cert_auth`; names the host |
//! | `etcd.tls.eco.cert_file` | etcd's client surface | `etcd.tls.client.trusted_ca_file` (when it asks for client certificates) | client |

use super::tls::{CertificateInfo, TlsFileError, certificates, certified_key, describe, valid_now};
use crate::base::secret_file::GroupReadable;
use crate::config::EtcdTlsConfig;
use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// What the check found usable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFilesChecked {
    /// Every certificate of the files (CAs and leaves).
    pub certificates: Vec<CertificateInfo>,
    /// Group-readable private keys: accepted, and said.
    pub warnings: Vec<GroupReadable>,
    /// What could not be checked, and why.
    pub not_checked: Vec<String>,
}

/// The use a certificate is put to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Usage {
    /// etcd's client surface: a TLS server, verified under the host.
    Server,
    /// etcd's peer surface: server and client to the other members,
    /// verified under the host.
    Peer,
    /// eco's client certificate.
    Client,
}

struct Pair<'a> {
    cert: (&'static str, &'a Path),
    key: (&'static str, &'a Path),
    /// The CA file it must chain to, when one verifies it.
    ca: Option<(&'static str, &'a Path)>,
    usage: Usage,
}

/// Checks every file of `tls` now (see the module docs). `advertised` is
/// this instance's host as its URLs name it (an IP address or a DNS name):
/// `None` where it is not known (`eco config check`), and then the names
/// are not checked (said in [`TlsFilesChecked::not_checked`]).
pub fn check_files(
    tls: &EtcdTlsConfig,
    now: SystemTime,
    advertised: Option<&str>,
) -> Result<TlsFilesChecked, TlsFileError> {
    let mut pairs: Vec<Pair<'_>> = Vec::new();
    let mut cas: Vec<(&'static str, &Path)> = Vec::new();
    let eco_ca = tls
        .eco
        .as_ref()
        .and_then(|e| e.trusted_ca_file.as_deref())
        .map(|p| ("etcd.tls.eco.trusted_ca_file", p));
    if let Some(c) = &tls.client {
        let own_ca = (
            "etcd.tls.client.trusted_ca_file",
            c.trusted_ca_file.as_path(),
        );
        pairs.push(Pair {
            cert: ("etcd.tls.client.cert_file", &c.cert_file),
            key: ("etcd.tls.client.key_file", &c.key_file),
            ca: Some(eco_ca.unwrap_or(own_ca)),
            usage: Usage::Server,
        });
        cas.push(own_ca);
    }
    if let Some(p) = &tls.peer {
        let ca = ("etcd.tls.peer.trusted_ca_file", p.trusted_ca_file.as_path());
        pairs.push(Pair {
            cert: ("etcd.tls.peer.cert_file", &p.cert_file),
            key: ("etcd.tls.peer.key_file", &p.key_file),
            ca: Some(ca),
            // Presented as a client to the other members too, where they
            // ask for client certificates.
            usage: if p.client_cert_auth {
                Usage::Peer
            } else {
                Usage::Server
            },
        });
        cas.push(ca);
    }
    if let Some(e) = &tls.eco {
        let ca = tls.client.as_ref().filter(|c| c.client_cert_auth).map(|c| {
            (
                "etcd.tls.client.trusted_ca_file",
                c.trusted_ca_file.as_path(),
            )
        });
        pairs.push(Pair {
            cert: ("etcd.tls.eco.cert_file", &e.cert_file),
            key: ("etcd.tls.eco.key_file", &e.key_file),
            ca,
            usage: Usage::Client,
        });
        cas.extend(eco_ca);
    }
    let mut checked = TlsFilesChecked::default();
    for (key, path) in cas {
        for der in certificates(key, path)? {
            checked.certificates.push(valid_now(key, path, &der, now)?);
        }
    }
    for pair in pairs {
        let (cert_key, cert_path) = pair.cert;
        let chain = certificates(cert_key, cert_path)?;
        let leaf = valid_now(cert_key, cert_path, &chain[0], now)?;
        let (_, verdict) = certified_key(chain.clone(), pair.cert, pair.key)?;
        checked
            .warnings
            .extend(GroupReadable::of(verdict, pair.key.0, pair.key.1));
        if let Some(ca) = pair.ca {
            chains_to(pair.cert, &chain, ca, pair.usage, now)?;
        }
        if pair.usage != Usage::Client {
            match advertised {
                Some(host) => names(pair.cert, &chain[0], host, &leaf.names)?,
                None => checked.not_checked.push(format!(
                    "that {cert_key} names this instance's address (known to `eco run` only, from its provider)"
                )),
            }
        }
        checked.certificates.push(leaf);
    }
    Ok(checked)
}

/// `chain` (its leaf first) chains to a certificate of the CA file `ca`,
/// for `usage`.
fn chains_to(
    cert: (&'static str, &Path),
    chain: &[CertificateDer<'static>],
    ca: (&'static str, &Path),
    usage: Usage,
    now: SystemTime,
) -> Result<(), TlsFileError> {
    let (cert_key, cert_path) = cert;
    let (ca_key, ca_path) = ca;
    let invalid = |message: String| TlsFileError::Invalid {
        key: cert_key,
        path: cert_path.to_path_buf(),
        message,
    };
    let mut roots = RootCertStore::empty();
    for der in certificates(ca_key, ca_path)? {
        roots.add(der).map_err(|e| TlsFileError::Invalid {
            key: ca_key,
            path: ca_path.to_path_buf(),
            message: format!("not a CA certificate: {e}"),
        })?;
    }
    let roots = Arc::new(roots);
    let now = UnixTime::since_unix_epoch(
        now.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default(),
    );
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let algorithms = provider.signature_verification_algorithms;
    let leaf = rustls::server::ParsedCertificate::try_from(&chain[0])
        .map_err(|e| invalid(format!("cannot be parsed: {e}")))?;
    let issuer = describe(&chain[0]).map(|d| d.issuer).unwrap_or_default();
    let why = |error: rustls::Error, role: &str| {
        let cause = match &error {
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer) => {
                format!("it is issued by {issuer}, which is not a certificate of that file")
            }
            rustls::Error::InvalidCertificate(rustls::CertificateError::InvalidPurpose)
            | rustls::Error::InvalidCertificate(
                rustls::CertificateError::InvalidPurposeContext { .. },
            ) => format!("its extended key usage does not allow it as a TLS {role}"),
            _ => error.to_string(),
        };
        invalid(format!(
            "does not verify against {ca_key} {} as a TLS {role}: {cause} ({error})",
            ca_path.display()
        ))
    };
    if matches!(usage, Usage::Server | Usage::Peer) {
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &leaf,
            &roots,
            &chain[1..],
            now,
            algorithms.all,
        )
        .map_err(|e| why(e, "server"))?;
    }
    if matches!(usage, Usage::Client | Usage::Peer) {
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots, Arc::new(provider))
                .build()
                .map_err(|e| TlsFileError::Invalid {
                    key: ca_key,
                    path: ca_path.to_path_buf(),
                    message: format!("cannot verify client certificates with it: {e}"),
                })?;
        verifier
            .verify_client_cert(&chain[0], &chain[1..], now)
            .map_err(|e| why(e, "client"))?;
    }
    Ok(())
}

/// The leaf `der` is valid for `host` (an IP address SAN, or a DNS name).
fn names(
    cert: (&'static str, &Path),
    der: &CertificateDer<'_>,
    host: &str,
    present: &[String],
) -> Result<(), TlsFileError> {
    let (cert_key, cert_path) = cert;
    let invalid = |message: String| TlsFileError::Invalid {
        key: cert_key,
        path: cert_path.to_path_buf(),
        message,
    };
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| invalid(format!("{host:?} cannot be checked as a TLS name: {e}")))?;
    let leaf = rustls::server::ParsedCertificate::try_from(der)
        .map_err(|e| invalid(format!("cannot be parsed: {e}")))?;
    rustls::client::verify_server_name(&leaf, &name).map_err(|_| {
        invalid(format!(
            "does not name this instance's address {host} (its peers and clients verify it under that name); it names {present:?}"
        ))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::{EcoClientTls, SurfaceTls};
    use crate::pki::ca::{ClusterCa, Purpose};
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;
    use std::time::Duration;

    pub(crate) fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    /// Given mode: one CA, a member certificate for `names` on both
    /// surfaces, eco's client certificate.
    pub(crate) fn given(
        dir: &Path,
        ca: &ClusterCa,
        names: &[&str],
        now: SystemTime,
    ) -> EtcdTlsConfig {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let day = Duration::from_secs(86_400);
        let member = ca.issue(Purpose::Member, "m", &names, day, now).unwrap();
        let eco = ca.issue(Purpose::Client, "root", &[], day, now).unwrap();
        let ca_file = write(dir, "ca.crt", &ca.cert_pem, 0o644);
        let surface = SurfaceTls {
            cert_file: write(dir, "member.crt", &member.cert_pem, 0o644),
            key_file: write(dir, "member.key", &member.key_pem, 0o600),
            trusted_ca_file: ca_file,
            client_cert_auth: true,
        };
        EtcdTlsConfig {
            client: Some(surface.clone()),
            peer: Some(surface),
            eco: Some(EcoClientTls {
                cert_file: write(dir, "eco.crt", &eco.cert_pem, 0o644),
                key_file: write(dir, "eco.key", &eco.key_pem, 0o600),
                trusted_ca_file: None,
            }),
            generated: None,
            plaintext: false,
        }
    }

    #[test]
    fn good_material_passes_and_says_what_it_could_not_check() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let ca = ClusterCa::generate("c", now).unwrap();
        let tls = given(d.path(), &ca, &["10.1.2.3", "etcd-1.example"], now);
        let checked = check_files(&tls, now, Some("10.1.2.3")).unwrap();
        assert!(checked.not_checked.is_empty());
        assert!(checked.warnings.is_empty());
        check_files(&tls, now, Some("etcd-1.example")).unwrap();
        let unknown = check_files(&tls, now, None).unwrap();
        assert_eq!(unknown.not_checked.len(), 2, "{unknown:?}");
        assert!(unknown.not_checked[0].contains("etcd.tls.client.cert_file"));
    }

    #[test]
    fn a_certificate_of_another_ca_is_named_with_its_issuer() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let ca = ClusterCa::generate("ours", now).unwrap();
        let tls = given(d.path(), &ca, &["10.1.2.3"], now);
        // The CA file replaced by another CA's: nothing chains any more.
        let other = ClusterCa::generate("theirs", now).unwrap();
        write(d.path(), "ca.crt", &other.cert_pem, 0o644);
        let e = check_files(&tls, now, None).unwrap_err().to_string();
        assert!(
            e.contains("etcd.tls.client.cert_file")
                && e.contains("member.crt")
                && e.contains("etcd.tls.client.trusted_ca_file")
                && e.contains("not a certificate of that file")
                && e.contains("UnknownIssuer"),
            "{e}"
        );
    }

    #[test]
    fn a_certificate_without_this_instances_address_is_refused_naming_both() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let ca = ClusterCa::generate("c", now).unwrap();
        let tls = given(d.path(), &ca, &["10.1.2.3"], now);
        let e = check_files(&tls, now, Some("10.9.9.9"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("etcd.tls.client.cert_file")
                && e.contains("10.9.9.9")
                && e.contains("10.1.2.3"),
            "{e}"
        );
        let e = check_files(&tls, now, Some("etcd-1.example"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("etcd-1.example"), "{e}");
    }

    #[test]
    fn a_server_certificate_used_as_a_peer_needs_the_client_use_too() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let ca = ClusterCa::generate("c", now).unwrap();
        let mut tls = given(d.path(), &ca, &["10.1.2.3"], now);
        // eco's client certificate as the peer certificate: no server use.
        let peer = tls.peer.as_mut().unwrap();
        peer.client_cert_auth = false;
        peer.cert_file = d.path().join("eco.crt");
        peer.key_file = d.path().join("eco.key");
        let e = check_files(&tls, now, None).unwrap_err().to_string();
        assert!(
            e.contains("etcd.tls.peer.cert_file") && e.contains("as a TLS server"),
            "{e}"
        );
    }

    #[test]
    fn expired_mismatched_and_group_readable_keys_are_said() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let ca = ClusterCa::generate("c", now).unwrap();
        let tls = given(d.path(), &ca, &["10.1.2.3"], now);
        std::fs::set_permissions(
            d.path().join("eco.key"),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        let checked = check_files(&tls, now, None).unwrap();
        assert_eq!(checked.warnings.len(), 1, "{checked:?}");
        assert_eq!(checked.warnings[0].what, "etcd.tls.eco.key_file");
        let later = now + Duration::from_secs(2 * 86_400);
        let e = check_files(&tls, later, None).unwrap_err().to_string();
        assert!(e.contains("expired"), "{e}");
        // The member's key replaced by eco's: the pair does not match.
        let eco_key = std::fs::read_to_string(d.path().join("eco.key")).unwrap();
        write(d.path(), "member.key", &eco_key, 0o600);
        let e = check_files(&tls, now, None).unwrap_err().to_string();
        assert!(
            e.contains("etcd.tls.client.key_file") && e.contains("does not match"),
            "{e}"
        );
    }
}

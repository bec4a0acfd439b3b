//! TLS of eco's own HTTP API (`[api.tls]`, `crate::config::ApiTlsConfig`):
//! the server side ([`ReloadingCertificate`], [`server_config`]) and what
//! `eco status` verifies the server with ([`ApiClientTls`]).
//!
//! The certificate and key are read again on a handshake after either
//! file's [`FileStamp`] changed, so a certificate renewed in place (eco's
//! own renewals in `[etcd.tls.generated]` mode, or an operator's atomic
//! rename) is served from the next connection on, without a restart. A
//! pair that cannot be used (a key renamed in before its certificate, a
//! file half-written, a certificate expired or not yet valid, or one that
//! no longer names the instance's host when the pair in force did) is not
//! served: the last good pair stays in force, the problem is logged (at
//! most once a minute) and shown in `/status` (`api_tls_problem`) until a
//! good pair is in place.
//!
//! No client certificate is asked for. Clients always verify the server:
//! there is no way to skip it.

use crate::base::file_stamp::FileStamp;
use crate::base::secret_file::GroupReadable;
use crate::config::{ApiTlsFiles, KeyedPath};
use crate::etcd::tls::{CertificateInfo, TlsFileError};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

/// Why the API's TLS material cannot be used, naming the config key and
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum ApiTlsError {
    /// A file, as for etcd's surfaces (`crate::etcd::tls`).
    #[error(transparent)]
    File(#[from] TlsFileError),
    #[error("{name:?} cannot be verified as a TLS server name: {message}")]
    ServerName { name: String, message: String },
    #[error("the API's TLS settings: {0}")]
    Rustls(#[from] rustls::Error),
}

fn invalid(file: &KeyedPath, message: String) -> ApiTlsError {
    ApiTlsError::File(TlsFileError::Invalid {
        key: file.key,
        path: file.path.clone(),
        message,
    })
}

/// Every certificate of a PEM file (at least one).
fn certificates(file: &KeyedPath) -> Result<Vec<CertificateDer<'static>>, ApiTlsError> {
    Ok(crate::etcd::tls::certificates(file.key, &file.path)?)
}

/// A pair of `files` that can be served at `now`: the certificate and key
/// matching, the certificate valid.
struct Pair {
    certified: CertifiedKey,
    leaf: CertificateInfo,
    /// The key file's group may read it.
    warning: Option<GroupReadable>,
}

impl Pair {
    fn load(files: &ApiTlsFiles, now: SystemTime) -> Result<Self, ApiTlsError> {
        let chain = certificates(&files.cert)?;
        let (certified, verdict) = crate::etcd::tls::certified_key(
            chain,
            (files.cert.key, &files.cert.path),
            (files.key.key, &files.key.path),
        )?;
        let der = certified
            .end_entity_cert()
            .map_err(|e| invalid(&files.cert, e.to_string()))?;
        let leaf = crate::etcd::tls::valid_now(files.cert.key, &files.cert.path, der, now)?;
        Ok(Self {
            certified,
            leaf,
            warning: GroupReadable::of(verdict, files.key.key, &files.key.path),
        })
    }

    /// Whether its certificate is valid for `host` (an IP address or a DNS
    /// name).
    fn names(&self, host: &str) -> bool {
        let (Ok(name), Ok(der)) = (
            ServerName::try_from(host.to_string()),
            self.certified.end_entity_cert(),
        ) else {
            return false;
        };
        rustls::server::ParsedCertificate::try_from(der)
            .and_then(|leaf| rustls::client::verify_server_name(&leaf, &name))
            .is_ok()
    }
}

/// What the check of the API's files found.
#[derive(Clone, Debug)]
pub struct ApiTlsChecked {
    /// The certificate served.
    pub leaf: CertificateInfo,
    /// Said, not refused: a group-readable key; a certificate that does not
    /// name the instance's host (clients that verify it under that name,
    /// `eco status --cluster` among them, fail).
    pub warnings: Vec<String>,
}

/// Checks the API's files now, as `eco run` does at start and `eco config
/// check` does: the certificate and key readable, the key not open to
/// others and matching the certificate, the certificate valid now, the CA
/// file PEM certificates; with `host` (this instance's, known to `eco
/// run`), whether the certificate names it.
pub fn check_files(
    files: &ApiTlsFiles,
    now: SystemTime,
    host: Option<&str>,
) -> Result<ApiTlsChecked, ApiTlsError> {
    certificates(&files.trusted_ca)?;
    let pair = Pair::load(files, now)?;
    let mut warnings: Vec<String> = pair.warning.iter().map(|w| w.to_string()).collect();
    if let Some(host) = host.filter(|h| !pair.names(h)) {
        warnings.push(format!(
            "{} {} does not name this instance's host {host} (it names {:?}): clients that verify the API under that name, `eco status --cluster` among them, will refuse it",
            files.cert.key,
            files.cert.path.display(),
            pair.leaf.names
        ));
    }
    Ok(ApiTlsChecked {
        leaf: pair.leaf,
        warnings,
    })
}

/// How often a pair that failed to load is tried again while its files'
/// stamps stay the same (a transient error, such as no descriptor left).
const RETRY_FAILED: Duration = Duration::from_secs(1);
/// At most one warning about an unusable pair per this long.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The certificate the API serves: read again on a handshake after its
/// files changed (see the module docs).
#[derive(Debug)]
pub struct ReloadingCertificate {
    files: ApiTlsFiles,
    /// The instance's host, which a renewed certificate must keep naming
    /// when the one in force does.
    host: Option<String>,
    state: Mutex<Loaded>,
    /// Why the files on disk are not the pair served (`None`: they are).
    problem: watch::Sender<Option<String>>,
}

#[derive(Debug, Default)]
struct Loaded {
    /// The stamps of the certificate and key files when last read.
    stamps: Option<(FileStamp, FileStamp)>,
    /// The pair in force (the last one that loaded).
    served: Option<Arc<CertifiedKey>>,
    /// What the pair in force is, for messages.
    served_leaf: Option<CertificateInfo>,
    /// Whether the pair in force names `host`.
    served_names_host: bool,
    /// When the last read failed.
    failed_at: Option<Instant>,
    warned_at: Option<Instant>,
}

impl ReloadingCertificate {
    /// Reads the pair once: an error when it cannot be used now. `host`:
    /// the instance's host (see [`ReloadingCertificate::host`]).
    pub fn new(files: ApiTlsFiles, host: Option<String>) -> Result<Self, ApiTlsError> {
        let stamps = (
            FileStamp::of(&files.cert.path),
            FileStamp::of(&files.key.path),
        );
        let pair = Pair::load(&files, SystemTime::now())?;
        let names_host = host.as_deref().is_some_and(|h| pair.names(h));
        Ok(Self {
            files,
            host,
            state: Mutex::new(Loaded {
                stamps: Some(stamps),
                served: Some(Arc::new(pair.certified)),
                served_leaf: Some(pair.leaf),
                served_names_host: names_host,
                failed_at: None,
                warned_at: None,
            }),
            problem: watch::channel(None).0,
        })
    }

    /// Why the files on disk are not served, as it changes (for `/status`).
    pub fn problem(&self) -> watch::Receiver<Option<String>> {
        self.problem.subscribe()
    }

    /// A renewed pair, if it can replace the one in force.
    fn renewed(&self, state: &Loaded) -> Result<(Pair, bool), ApiTlsError> {
        let pair = Pair::load(&self.files, SystemTime::now())?;
        let names_host = match &self.host {
            Some(host) => {
                let names = pair.names(host);
                if !names && state.served_names_host {
                    return Err(invalid(
                        &self.files.cert,
                        format!(
                            "does not name this instance's host {host} (it names {:?}), which the certificate in force does",
                            pair.leaf.names
                        ),
                    ));
                }
                names
            }
            None => false,
        };
        Ok((pair, names_host))
    }

    /// The pair to serve now, read again when its files changed.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        // Stamped before reading: a change during the read is seen next
        // time.
        let stamps = (
            FileStamp::of(&self.files.cert.path),
            FileStamp::of(&self.files.key.path),
        );
        let mut state = match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = Instant::now();
        let changed = state.stamps.as_ref() != Some(&stamps);
        let retry = state
            .failed_at
            .is_some_and(|t| now.duration_since(t) >= RETRY_FAILED);
        if changed || retry {
            state.stamps = Some(stamps);
            match self.renewed(&state) {
                Ok((pair, names_host)) => {
                    if changed || state.failed_at.is_some() {
                        tracing::info!(
                            file = %self.files.cert.path.display(),
                            names = ?pair.leaf.names,
                            "the HTTP API serves the certificate as renewed"
                        );
                    }
                    state.served = Some(Arc::new(pair.certified));
                    state.served_leaf = Some(pair.leaf);
                    state.served_names_host = names_host;
                    state.failed_at = None;
                    self.problem.send_if_modified(|p| p.take().is_some());
                }
                Err(e) => {
                    state.failed_at = Some(now);
                    let served = state
                        .served_leaf
                        .as_ref()
                        .map(|l| {
                            format!(
                                "{} (names {:?}, expires {} s after the epoch)",
                                l.subject, l.names, l.not_after_unix
                            )
                        })
                        .unwrap_or_default();
                    let problem = format!(
                        "{e}: the HTTP API keeps serving the certificate that loaded last, {served}"
                    );
                    if state
                        .warned_at
                        .is_none_or(|t| now.duration_since(t) >= WARN_EVERY)
                    {
                        state.warned_at = Some(now);
                        tracing::warn!(error = %e, served, "the HTTP API cannot use its TLS certificate as it is now; it keeps serving the last one that loaded");
                    }
                    self.problem.send_if_modified(|p| {
                        let new = Some(problem.clone());
                        let changed = *p != new;
                        *p = new;
                        changed
                    });
                }
            }
        }
        state.served.clone()
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

/// The server side of the API's TLS: TLS 1.2 and 1.3, no client
/// certificate, the certificate of `certificate`.
pub fn server_config(
    certificate: Arc<ReloadingCertificate>,
) -> Result<Arc<ServerConfig>, ApiTlsError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(certificate);
    Ok(Arc::new(config))
}

/// How a client of the API verifies it: the CA its certificate must chain
/// to, and the name it must carry (the instance's address or DNS name,
/// whatever address the client connects to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiClientTls {
    pub trusted_ca: KeyedPath,
    pub server_name: String,
}

impl ApiClientTls {
    /// The client side of one connection, from the CA file as it is now.
    pub fn connector(
        &self,
    ) -> Result<(tokio_rustls::TlsConnector, ServerName<'static>), ApiTlsError> {
        let mut roots = RootCertStore::empty();
        for cert in certificates(&self.trusted_ca)? {
            roots
                .add(cert)
                .map_err(|e| invalid(&self.trusted_ca, format!("not a CA certificate: {e}")))?;
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from(self.server_name.clone()).map_err(|e| {
            ApiTlsError::ServerName {
                name: self.server_name.clone(),
                message: e.to_string(),
            }
        })?;
        Ok((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    pub(crate) struct Issued {
        pub ca: String,
        pub cert: String,
        pub key: String,
    }

    /// A new CA and a server certificate for `name` from it (the
    /// cluster CA's own issuing).
    pub(crate) fn issue(name: &str) -> Issued {
        issue_at(name, std::time::SystemTime::now())
    }

    /// [`issue`], valid for an hour from `at` (and an hour before).
    pub(crate) fn issue_at(name: &str, at: SystemTime) -> Issued {
        use crate::pki::ca::{ClusterCa, Purpose};
        let ca = ClusterCa::generate("test", at).unwrap();
        let issued = ca
            .issue(
                Purpose::Member,
                name,
                &[name.to_string()],
                std::time::Duration::from_secs(3600),
                at,
            )
            .unwrap();
        Issued {
            ca: ca.cert_pem,
            cert: issued.cert_pem,
            key: issued.key_pem,
        }
    }

    fn write(dir: &std::path::Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        let tmp = dir.join(format!("{name}.tmp"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        path
    }

    use crate::config::api_tls::files_in as files;

    fn served_leaf(c: &ReloadingCertificate) -> Vec<u8> {
        c.current().unwrap().end_entity_cert().unwrap().to_vec()
    }

    #[test]
    fn a_renewal_in_place_is_served_and_a_half_renewal_is_not() {
        let d = tempfile::tempdir().unwrap();
        let first = issue("127.0.0.1");
        write(d.path(), "ca.crt", &first.ca, 0o644);
        write(d.path(), "api.crt", &first.cert, 0o644);
        write(d.path(), "api.key", &first.key, 0o600);
        let files = files(d.path());
        let described = check_files(&files, SystemTime::now(), None).unwrap();
        assert_eq!(described.leaf.names, vec!["127.0.0.1".to_string()]);
        let c = ReloadingCertificate::new(files.clone(), None).unwrap();
        let leaf_one = served_leaf(&c);
        assert_eq!(served_leaf(&c), leaf_one, "unchanged files");

        // The certificate renamed in before its key: the pair does not
        // match, the old one stays in force.
        let second = issue("127.0.0.1");
        write(d.path(), "api.crt", &second.cert, 0o644);
        assert_eq!(served_leaf(&c), leaf_one);
        assert!(check_files(&files, SystemTime::now(), None).is_err());
        // Then the key: the new pair is served.
        write(d.path(), "api.key", &second.key, 0o600);
        let leaf_two = served_leaf(&c);
        assert_ne!(leaf_two, leaf_one);
        assert_eq!(served_leaf(&c), leaf_two);
    }

    #[test]
    fn a_renewal_to_an_expired_or_unnamed_pair_is_refused_and_said_until_a_good_one() {
        let d = tempfile::tempdir().unwrap();
        let first = issue("127.0.0.1");
        write(d.path(), "ca.crt", &first.ca, 0o644);
        write(d.path(), "api.crt", &first.cert, 0o644);
        write(d.path(), "api.key", &first.key, 0o600);
        let files = files(d.path());
        let c = ReloadingCertificate::new(files.clone(), Some("127.0.0.1".into())).unwrap();
        let problem = c.problem();
        let leaf_one = served_leaf(&c);

        // Renewed in place to a pair that expired a day ago.
        let day = Duration::from_secs(86_400);
        let expired = issue_at("127.0.0.1", SystemTime::now() - day);
        write(d.path(), "api.crt", &expired.cert, 0o644);
        write(d.path(), "api.key", &expired.key, 0o600);
        assert_eq!(served_leaf(&c), leaf_one, "the expired pair is not served");
        let said = problem.borrow().clone().expect("said in /status");
        assert!(
            said.contains("api.tls.cert_file")
                && said.contains("expired")
                && said.contains("keeps serving"),
            "{said}"
        );
        // Not yet valid: the same.
        let early = issue_at("127.0.0.1", SystemTime::now() + 2 * day);
        write(d.path(), "api.crt", &early.cert, 0o644);
        write(d.path(), "api.key", &early.key, 0o600);
        assert_eq!(served_leaf(&c), leaf_one);
        assert!(
            problem
                .borrow()
                .as_deref()
                .unwrap_or_default()
                .contains("not valid yet")
        );
        // A pair that no longer names the instance's host.
        let elsewhere = issue("10.9.9.9");
        write(d.path(), "api.crt", &elsewhere.cert, 0o644);
        write(d.path(), "api.key", &elsewhere.key, 0o600);
        assert_eq!(served_leaf(&c), leaf_one);
        let said = problem.borrow().clone().unwrap_or_default();
        assert!(
            said.contains("does not name") && said.contains("127.0.0.1"),
            "{said}"
        );

        // A good pair: served, and the problem is gone.
        let good = issue("127.0.0.1");
        write(d.path(), "api.crt", &good.cert, 0o644);
        write(d.path(), "api.key", &good.key, 0o600);
        assert_ne!(served_leaf(&c), leaf_one);
        assert_eq!(*problem.borrow(), None);
    }

    #[test]
    fn unusable_files_are_refused_naming_the_key() {
        let d = tempfile::tempdir().unwrap();
        let files = files(d.path());
        let missing = ReloadingCertificate::new(files.clone(), None).unwrap_err();
        assert!(
            missing.to_string().contains("api.tls.cert_file"),
            "{missing}"
        );
        let one = issue("localhost");
        write(d.path(), "ca.crt", &one.ca, 0o644);
        write(d.path(), "api.crt", &one.cert, 0o644);
        write(d.path(), "api.key", &one.key, 0o644);
        let open = ReloadingCertificate::new(files.clone(), None).unwrap_err();
        assert!(open.to_string().contains("api.tls.key_file"), "{open}");
        assert!(open.to_string().contains("open to other users"), "{open}");
        write(d.path(), "api.key", "not a key", 0o600);
        let garbage = check_files(&files, SystemTime::now(), None).unwrap_err();
        assert!(
            garbage.to_string().contains("api.tls.key_file"),
            "{garbage}"
        );
    }

    #[test]
    fn the_client_needs_a_ca_and_a_valid_name() {
        let d = tempfile::tempdir().unwrap();
        let client = ApiClientTls {
            trusted_ca: KeyedPath {
                key: "api.tls.trusted_ca_file",
                path: d.path().join("ca.crt"),
            },
            server_name: "10.0.0.1".into(),
        };
        assert!(client.connector().is_err(), "no CA file");
        write(d.path(), "ca.crt", &issue("x").ca, 0o644);
        assert!(client.connector().is_ok());
        let bad = ApiClientTls {
            server_name: "not a name!".into(),
            ..client
        };
        assert!(matches!(
            bad.connector(),
            Err(ApiTlsError::ServerName { .. })
        ));
    }
}

//! TLS toward etcd: what eco's clients trust and present ([`ClientTls`],
//! read from the files on every connection, so a certificate renewed in
//! place is used from the next connection on), and reading and describing
//! its files (the check of them all is `super::tls_check`).
//!
//! eco always verifies the server: there is no way to skip it. The name it
//! verifies is the host of the URL it connects to, except for the WAL
//! replay's temporary member, which serves the instance's certificate on
//! 127.0.0.1 and is verified under the instance's own name
//! ([`ClientTls::verifying_as`]).
//!
//! What it does not do: generate certificates, reload etcd (etcd reads its
//! files on every handshake), or check revocation (no CRL or OCSP: keep
//! certificates short-lived instead).

use crate::base::secret_file::{self, SecretFileError};
use crate::config::EtcdTlsConfig;
use etcd_client::{Certificate, Identity, TlsOptions};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A TLS file that cannot be used, naming the config key and the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsFileError {
    #[error("{key} {path}: {source}")]
    Read {
        key: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Secret(#[from] SecretFileError),
    #[error("{key} {path}: {message}")]
    Invalid {
        key: &'static str,
        path: PathBuf,
        message: String,
    },
}

/// How eco's etcd clients do TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientTls {
    /// The CA etcd's certificate must chain to.
    ca: (&'static str, PathBuf),
    /// eco's certificate and key, when it has one.
    identity: Option<(PathBuf, PathBuf)>,
    /// The name etcd's certificate is verified under, when not the host of
    /// the URL.
    server_name: Option<String>,
}

impl ClientTls {
    /// The client TLS of `[etcd.tls]`: `None` when the client surface is
    /// plain.
    pub fn from_config(tls: &EtcdTlsConfig) -> Option<Self> {
        let client = tls.client.as_ref()?;
        let ca = match tls.eco.as_ref().and_then(|e| e.trusted_ca_file.clone()) {
            Some(ca) => ("etcd.tls.eco.trusted_ca_file", ca),
            None => (
                "etcd.tls.client.trusted_ca_file",
                client.trusted_ca_file.clone(),
            ),
        };
        Some(Self {
            ca,
            identity: tls
                .eco
                .as_ref()
                .map(|e| (e.cert_file.clone(), e.key_file.clone())),
            server_name: None,
        })
    }

    /// The same, verifying etcd's certificate as `name`'s (an IP address or
    /// a DNS name) whatever address it is reached at.
    pub fn verifying_as(&self, name: &str) -> Self {
        Self {
            server_name: Some(name.to_string()),
            ..self.clone()
        }
    }

    /// The TLS options of one connection, from the files as they are now.
    pub fn options(&self) -> Result<TlsOptions, TlsFileError> {
        let (ca_key, ca_path) = &self.ca;
        let mut options =
            TlsOptions::new().ca_certificate(Certificate::from_pem(read(ca_key, ca_path)?));
        if let Some((cert, key)) = &self.identity {
            let cert = read("etcd.tls.eco.cert_file", cert)?;
            let (key, _) = secret_file::read_checked(key, "etcd.tls.eco.key_file")?;
            options = options.identity(Identity::from_pem(cert, key));
        }
        if let Some(name) = &self.server_name {
            options = options.domain_name(name.clone());
        }
        Ok(options)
    }
}

fn read(key: &'static str, path: &Path) -> Result<String, TlsFileError> {
    std::fs::read_to_string(path).map_err(|source| TlsFileError::Read {
        key,
        path: path.to_path_buf(),
        source,
    })
}

/// What a certificate file holds, for `eco config check` and `eco status`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CertificateInfo {
    /// The config key of the file.
    pub key: &'static str,
    pub path: PathBuf,
    /// The leaf's subject.
    pub subject: String,
    /// The leaf's subject alternative names (DNS names and addresses).
    pub names: Vec<String>,
    /// When the leaf expires, in seconds since the Unix epoch.
    pub not_after_unix: i64,
}

impl CertificateInfo {
    /// Time left before it expires (`None`: expired).
    pub fn remaining(&self, now: SystemTime) -> Option<Duration> {
        let now = now.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs() as i64;
        u64::try_from(self.not_after_unix - now)
            .ok()
            .map(Duration::from_secs)
    }
}

/// Certificates expiring within this are reported (a warning, not a
/// refusal).
pub const EXPIRY_WARNING: Duration = Duration::from_secs(30 * 24 * 3600);

/// `chain` (read from the file named by `cert`, a config key and a path)
/// with the private key of `key`, checked to match; and how open the key
/// file is (a secret file: refused when others can read it).
pub fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    cert: (&'static str, &Path),
    key: (&'static str, &Path),
) -> Result<(rustls::sign::CertifiedKey, secret_file::ModeVerdict), TlsFileError> {
    let (cert_key, cert_path) = cert;
    let (key_key, key_path) = key;
    let (pem, verdict) = secret_file::read_checked(key_path, key_key)?;
    let invalid = |message: String| TlsFileError::Invalid {
        key: key_key,
        path: key_path.to_path_buf(),
        message,
    };
    let private = PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| invalid(format!("no PEM private key: {e}")))?;
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let certified =
        rustls::sign::CertifiedKey::from_der(chain, private, &provider).map_err(|e| {
            invalid(format!(
                "does not match {cert_key} {} or cannot be used: {e}",
                cert_path.display()
            ))
        })?;
    Ok((certified, verdict))
}

/// Every certificate of a PEM file (at least one).
pub fn certificates(
    key: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsFileError> {
    let pem = read(key, path)?;
    let invalid = |message: String| TlsFileError::Invalid {
        key,
        path: path.to_path_buf(),
        message,
    };
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(invalid("holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// The info of a certificate valid at `now`.
pub fn valid_now(
    key: &'static str,
    path: &Path,
    der: &CertificateDer<'_>,
    now: SystemTime,
) -> Result<CertificateInfo, TlsFileError> {
    let invalid = |message: String| TlsFileError::Invalid {
        key,
        path: path.to_path_buf(),
        message,
    };
    let leaf = describe(der).map_err(invalid)?;
    let now_unix = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    if now_unix < leaf.not_before_unix {
        return Err(invalid(format!(
            "{} is not valid yet (from {} s after the epoch)",
            leaf.subject, leaf.not_before_unix
        )));
    }
    if now_unix > leaf.not_after_unix {
        return Err(invalid(format!(
            "{} expired {} s ago",
            leaf.subject,
            now_unix - leaf.not_after_unix
        )));
    }
    Ok(CertificateInfo {
        key,
        path: path.to_path_buf(),
        subject: leaf.subject,
        names: leaf.names,
        not_after_unix: leaf.not_after_unix,
    })
}

/// What a certificate says of itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    pub subject: String,
    /// The subject of the certificate that issued it.
    pub issuer: String,
    /// Its SANs: DNS names as written, IP addresses in their usual text.
    pub names: Vec<String>,
    pub not_before_unix: i64,
    pub not_after_unix: i64,
}

/// Reads a DER certificate.
pub fn describe(der: &[u8]) -> Result<Described, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let validity = cert.validity();
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                x509_parser::extensions::GeneralName::DNSName(d) => names.push(d.to_string()),
                x509_parser::extensions::GeneralName::IPAddress(ip) => {
                    let addr = match ip.len() {
                        4 => <[u8; 4]>::try_from(*ip).ok().map(std::net::IpAddr::from),
                        16 => <[u8; 16]>::try_from(*ip).ok().map(std::net::IpAddr::from),
                        _ => None,
                    };
                    names.extend(addr.map(|a| a.to_string()));
                }
                _ => {}
            }
        }
    }
    Ok(Described {
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        names,
        not_before_unix: validity.not_before.timestamp(),
        not_after_unix: validity.not_after.timestamp(),
    })
}

/// The first certificate of a PEM text, described.
pub fn describe_pem(pem: &str) -> Result<Described, String> {
    let der = CertificateDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| format!("not a PEM certificate: {e}"))?;
    describe(&der)
}

//! A throwaway certificate authority for tests (`rcgen`): a CA, and
//! certificates it signs for servers and clients, written as PEM files
//! (keys `0600`) in a directory. Validity and names are the caller's, so
//! tests can make expired certificates and certificates whose names do not
//! match.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use time::{Duration, OffsetDateTime};

/// A CA and where its files go.
pub struct Pki {
    dir: PathBuf,
    name: String,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, as files.
#[derive(Clone, Debug)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What a certificate is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// Serves TLS (and may also authenticate as a client: etcd's peer
    /// certificates are both).
    ServerAndClient,
    /// Authenticates a client only.
    Client,
}

/// When a certificate is valid.
#[derive(Clone, Copy, Debug)]
pub enum Validity {
    /// From an hour ago for a year.
    Current,
    /// Expired a day ago.
    Expired,
}

impl Pki {
    /// A new CA named `name`, its certificate at `<dir>/<name>-ca.crt`.
    pub fn new(dir: &Path, name: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::days(2);
        params.not_after = now + Duration::days(365);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        let pki = Self {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            issuer,
        };
        std::fs::write(pki.ca_file(), pki.issuer.pem())?;
        Ok(pki)
    }

    /// The CA's certificate (PEM).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join(format!("{}-ca.crt", self.name))
    }

    /// A certificate for `common_name` with the subject alternative names
    /// `names` (IP addresses or DNS names), signed by this CA, written as
    /// `<dir>/<file>.crt` and `<dir>/<file>.key`.
    pub fn issue(
        &self,
        file: &str,
        common_name: &str,
        names: &[&str],
        usage: Usage,
        validity: Validity,
    ) -> anyhow::Result<CertFiles> {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = match usage {
            Usage::ServerAndClient => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        let now = OffsetDateTime::now_utc();
        (params.not_before, params.not_after) = match validity {
            Validity::Current => (now - Duration::hours(1), now + Duration::days(365)),
            Validity::Expired => (now - Duration::days(2), now - Duration::days(1)),
        };
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        let files = CertFiles {
            cert: self.dir.join(format!("{file}.crt")),
            key: self.dir.join(format!("{file}.key")),
        };
        std::fs::write(&files.cert, cert.pem())?;
        std::fs::write(&files.key, key.serialize_pem())?;
        std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o600))?;
        Ok(files)
    }
}

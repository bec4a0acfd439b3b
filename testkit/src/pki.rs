//! A throwaway certificate authority for tests: eco's own CA code
//! (`eco::pki::ca`), with certificates written as PEM files (keys `0600`)
//! in a directory. Validity and names are the caller's, so tests can make
//! expired certificates and certificates whose names do not match.

use eco::pki::ca::{ClusterCa, Purpose};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A CA and where its files go.
pub struct Pki {
    dir: PathBuf,
    name: String,
    ca: ClusterCa,
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

const DAY: Duration = Duration::from_secs(24 * 3600);

impl Pki {
    /// A new CA named `name`, its certificate at `<dir>/<name>-ca.crt`.
    pub fn new(dir: &Path, name: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        // Made two days ago, so that an expired certificate is still
        // within the CA's own validity.
        let made = SystemTime::now() - 2 * DAY;
        let pki = Self {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            ca: ClusterCa::generate(name, made)?,
        };
        std::fs::write(pki.ca_file(), &pki.ca.cert_pem)?;
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
        let purpose = match usage {
            Usage::ServerAndClient => Purpose::Member,
            Usage::Client => Purpose::Client,
        };
        // Issued certificates start an hour before `from`.
        let (from, lasting) = match validity {
            Validity::Current => (SystemTime::now(), 365 * DAY),
            Validity::Expired => (SystemTime::now() - 2 * DAY, DAY),
        };
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let issued = self.ca.issue(purpose, common_name, &names, lasting, from)?;
        let files = CertFiles {
            cert: self.dir.join(format!("{file}.crt")),
            key: self.dir.join(format!("{file}.key")),
        };
        std::fs::write(&files.cert, issued.cert_pem)?;
        std::fs::write(&files.key, issued.key_pem)?;
        std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o600))?;
        Ok(files)
    }
}

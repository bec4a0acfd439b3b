//! The cluster's CA: made once (an ECDSA P-256 key, valid ten years), and
//! the certificates it issues — each member's (server and client, for
//! both surfaces, with the member's names) and client certificates (eco's
//! own, and operators' through `eco certs client`). Pure crypto on values:
//! no file, no store.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use std::time::Duration;
use time::OffsetDateTime;

/// How long the CA is valid.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Issued certificates start this long before they are issued (clocks of
/// the machines differ a little).
const BACKDATE: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("cannot make or use a certificate: {0}")]
    Crypto(#[from] rcgen::Error),
    #[error("{0}")]
    Name(String),
}

/// The CA: its certificate and its private key (PEM). The key is a
/// secret: it leaves memory only sealed (`sealed.rs`).
#[derive(Clone)]
pub struct ClusterCa {
    pub cert_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for ClusterCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterCa")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<secret>")
            .finish()
    }
}

/// A certificate and its private key (PEM).
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

/// What an issued certificate is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A member: serves both surfaces and is a client of its peers.
    Member,
    /// A client of the client surface (eco, an operator).
    Client,
}

fn offset(now: std::time::SystemTime, by: Duration, forward: bool) -> OffsetDateTime {
    let now = OffsetDateTime::from(now);
    let by = time::Duration::try_from(by).unwrap_or(time::Duration::ZERO);
    if forward { now + by } else { now - by }
}

impl ClusterCa {
    /// A new CA for `cluster`.
    pub fn generate(cluster: &str, now: std::time::SystemTime) -> Result<Self, CaError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, format!("eco cluster CA {cluster}"));
        params
            .distinguished_name
            .push(DnType::OrganizationName, "eco");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = offset(now, BACKDATE, false);
        params.not_after = offset(now, CA_VALIDITY, true);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Self {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The CA from its certificate and key (PEM), as opened from the store.
    pub fn from_pem(cert_pem: String, key_pem: String) -> Result<Self, CaError> {
        // Both must parse, and the key must be the certificate's.
        let key = KeyPair::from_pem(&key_pem)?;
        let der = rustls::pki_types::CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| CaError::Name(format!("the CA certificate is not PEM: {e}")))?;
        let (_, cert) = x509_parser::parse_x509_certificate(&der)
            .map_err(|e| CaError::Name(format!("the CA certificate does not parse: {e}")))?;
        if cert.public_key().subject_public_key.data.as_ref() != key.public_key_raw() {
            return Err(CaError::Name(
                "the CA key is not the CA certificate's".into(),
            ));
        }
        Issuer::from_ca_cert_pem(&cert_pem, &key)?;
        Ok(Self { cert_pem, key_pem })
    }

    /// The private key's PEM, for sealing only.
    pub(super) fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// A certificate for `common_name` with `names` (IP addresses or DNS
    /// names) as SANs, valid `validity` from `now` (an hour earlier, for
    /// clocks that differ).
    pub fn issue(
        &self,
        purpose: Purpose,
        common_name: &str,
        names: &[String],
        validity: Duration,
        now: std::time::SystemTime,
    ) -> Result<Issued, CaError> {
        let mut params = CertificateParams::new(names.to_vec())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = match purpose {
            Purpose::Member => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            Purpose::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        params.not_before = offset(now, BACKDATE, false);
        params.not_after = offset(now, validity, true);
        let ca_key = KeyPair::from_pem(&self.key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&self.cert_pem, ca_key)?;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn a_ca_issues_member_and_client_certificates_that_verify() {
        let now = SystemTime::now();
        let ca = ClusterCa::generate("main", now).unwrap();
        assert!(
            !format!("{ca:?}").contains("PRIVATE"),
            "the key is never printed"
        );
        let member = ca
            .issue(
                Purpose::Member,
                "eco-1",
                &["10.0.0.5".into(), "etcd.example.com".into()],
                Duration::from_secs(3600),
                now,
            )
            .unwrap();
        let again = ClusterCa::from_pem(ca.cert_pem.clone(), ca.key_pem().to_string()).unwrap();
        let client = again
            .issue(
                Purpose::Client,
                "alice",
                &[],
                Duration::from_secs(3600),
                now,
            )
            .unwrap();
        for issued in [&member, &client] {
            let der = rustls::pki_types::CertificateDer::from_pem_slice(issued.cert_pem.as_bytes())
                .unwrap();
            let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
            assert!(cert.issuer().to_string().contains("eco cluster CA main"));
        }
        let other = ClusterCa::generate("main", now).unwrap();
        assert!(
            ClusterCa::from_pem(ca.cert_pem.clone(), other.key_pem().to_string()).is_err(),
            "another CA's key is refused"
        );
    }
}

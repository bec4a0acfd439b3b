//! The keys of `[auth.token] type = "jwt"`: both files must hold PEM keys
//! of the family the sign method needs — RSA for RS*/PS*, EC on P-256,
//! P-384, P-521 for ES256, ES384, ES512 — in forms etcd reads (private:
//! PKCS#8 `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY`, SEC1 `EC PRIVATE KEY`;
//! public: `PUBLIC KEY` or a certificate). The private key is a secret:
//! refused when open to others. Whether the two keys are one pair is not
//! checked (etcd says so at its start).

use crate::config::{KeyFamily, SignMethod, TokenConfig, TokenKind};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, SubjectPublicKeyInfoDer};
use std::path::{Path, PathBuf};
use x509_parser::asn1_rs::{FromDer, Integer, OctetString, Oid, Sequence};
use x509_parser::x509::{AlgorithmIdentifier, SubjectPublicKeyInfo};

/// Reads a key file and says what family its key is.
type KeyReader = fn(&Path) -> Result<Found, String>;

const RSA: &str = "1.2.840.113549.1.1.1";
const EC: &str = "1.2.840.10045.2.1";

/// The key family found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Found {
    Rsa,
    /// An EC key on this curve (a NIST name, or the curve's OID).
    Ec(String),
    /// Another algorithm (its OID).
    Other(String),
}

impl Found {
    fn describe(&self) -> String {
        match self {
            Found::Rsa => "an RSA key".into(),
            Found::Ec(curve) => format!("an EC key on {curve}"),
            Found::Other(oid) => format!("a key of algorithm {oid}"),
        }
    }

    fn fits(&self, family: KeyFamily) -> bool {
        match (self, family) {
            (Found::Rsa, KeyFamily::Rsa) => true,
            (Found::Ec(curve), KeyFamily::Ec(want)) => curve == want,
            _ => false,
        }
    }
}

fn curve_name(oid: &str) -> String {
    match oid {
        "1.2.840.10045.3.1.7" => "P-256".into(),
        "1.3.132.0.34" => "P-384".into(),
        "1.3.132.0.35" => "P-521".into(),
        other => format!("curve {other}"),
    }
}

fn of_algorithm(alg: &AlgorithmIdentifier) -> Found {
    match alg.algorithm.to_id_string().as_str() {
        RSA => Found::Rsa,
        EC => Found::Ec(
            alg.parameters
                .as_ref()
                .and_then(|p| Oid::try_from(p).ok())
                .map(|o| curve_name(&o.to_id_string()))
                .unwrap_or_else(|| "an unnamed curve".into()),
        ),
        other => Found::Other(other.into()),
    }
}

fn of_public(spki: &[u8]) -> Result<Found, String> {
    let (_, spki) = SubjectPublicKeyInfo::from_der(spki)
        .map_err(|e| format!("not a public key (SubjectPublicKeyInfo): {e}"))?;
    Ok(of_algorithm(&spki.algorithm))
}

/// PKCS#8: `SEQUENCE { version, AlgorithmIdentifier, OCTET STRING, … }`.
fn of_pkcs8(der: &[u8]) -> Result<Found, String> {
    let bad = |e: String| format!("not a PKCS#8 private key: {e}");
    let (_, seq) = Sequence::from_der(der).map_err(|e| bad(e.to_string()))?;
    let (rest, _version) = Integer::from_der(&seq.content).map_err(|e| bad(e.to_string()))?;
    let (_, alg) = AlgorithmIdentifier::from_der(rest).map_err(|e| bad(e.to_string()))?;
    Ok(of_algorithm(&alg))
}

/// SEC1: `SEQUENCE { 1, OCTET STRING key, … }`; the curve by the key's
/// length.
fn of_sec1(der: &[u8]) -> Result<Found, String> {
    let bad = |e: String| format!("not an EC private key: {e}");
    let (_, seq) = Sequence::from_der(der).map_err(|e| bad(e.to_string()))?;
    let (rest, _version) = Integer::from_der(&seq.content).map_err(|e| bad(e.to_string()))?;
    let (_, key) = OctetString::from_der(rest).map_err(|e| bad(e.to_string()))?;
    Ok(Found::Ec(match key.as_ref().len() {
        32 => "P-256".into(),
        48 => "P-384".into(),
        65 | 66 => "P-521".into(),
        n => format!("a curve with {n}-byte keys"),
    }))
}

fn private_key(path: &Path) -> Result<Found, String> {
    let (text, _) = crate::base::secret_file::read_checked(path, "auth.token.private_key_file")
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| {
        format!(
            "{} holds no PEM private key ({e}); allowed: PRIVATE KEY, RSA PRIVATE KEY, EC PRIVATE KEY",
            path.display()
        )
    })?;
    match &key {
        PrivateKeyDer::Pkcs1(_) => Ok(Found::Rsa),
        PrivateKeyDer::Sec1(k) => of_sec1(k.secret_sec1_der()),
        PrivateKeyDer::Pkcs8(k) => of_pkcs8(k.secret_pkcs8_der()),
        _ => Err("an unknown kind of private key".into()),
    }
}

fn public_key(path: &Path) -> Result<Found, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if let Ok(spki) = SubjectPublicKeyInfoDer::from_pem_slice(&bytes) {
        return of_public(spki.as_ref());
    }
    if let Ok(cert) = CertificateDer::from_pem_slice(&bytes) {
        let (_, cert) = x509_parser::parse_x509_certificate(&cert)
            .map_err(|e| format!("{} is not an X.509 certificate: {e}", path.display()))?;
        return Ok(of_algorithm(&cert.tbs_certificate.subject_pki.algorithm));
    }
    Err(format!(
        "{} holds no PEM public key; allowed: PUBLIC KEY, or a CERTIFICATE",
        path.display()
    ))
}

/// Every problem with the JWT key files of `token` (none for `simple`),
/// each naming the key and the file.
pub fn check(token: &TokenConfig) -> Vec<String> {
    let (TokenKind::Jwt, Some(method)) = (token.kind, token.sign_method) else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let files: [(&str, &Option<PathBuf>, KeyReader); 2] = [
        ("public_key_file", &token.public_key_file, public_key),
        ("private_key_file", &token.private_key_file, private_key),
    ];
    for (name, path, read) in files {
        let Some(path) = path else { continue };
        match read(path) {
            Err(e) => problems.push(format!("auth.token.{name}: {e}")),
            Ok(found) if !found.fits(method.family()) => problems.push(format!(
                "auth.token.{name}: {} holds {}, but sign_method {} needs {}",
                path.display(),
                found.describe(),
                method.as_str(),
                wanted(method)
            )),
            Ok(_) => {}
        }
    }
    problems
}

fn wanted(method: SignMethod) -> String {
    match method.family() {
        KeyFamily::Rsa => "an RSA key".into(),
        KeyFamily::Ec(curve) => format!("an EC key on {curve}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    fn pair(
        dir: &Path,
        name: &str,
        alg: &'static rcgen::SignatureAlgorithm,
    ) -> (std::path::PathBuf, std::path::PathBuf) {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        (
            write(dir, &format!("{name}.pub"), &key.public_key_pem(), 0o644),
            write(dir, &format!("{name}.key"), &key.serialize_pem(), 0o600),
        )
    }

    fn token(method: SignMethod, keys: &(std::path::PathBuf, std::path::PathBuf)) -> TokenConfig {
        TokenConfig {
            kind: TokenKind::Jwt,
            sign_method: Some(method),
            public_key_file: Some(keys.0.clone()),
            private_key_file: Some(keys.1.clone()),
            ttl: None,
        }
    }

    #[test]
    fn key_families_must_match_the_sign_method() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let p256 = pair(d, "p256", &rcgen::PKCS_ECDSA_P256_SHA256);
        let p384 = pair(d, "p384", &rcgen::PKCS_ECDSA_P384_SHA384);
        let rsa = pair(d, "rsa", &rcgen::PKCS_RSA_SHA256);
        let ed = pair(d, "ed", &rcgen::PKCS_ED25519);
        for (method, keys) in [
            (SignMethod::ES256, &p256),
            (SignMethod::ES384, &p384),
            (SignMethod::RS256, &rsa),
            (SignMethod::PS512, &rsa),
        ] {
            assert_eq!(
                check(&token(method, keys)),
                Vec::<String>::new(),
                "{method:?}"
            );
        }
        for (method, keys, says) in [
            (
                SignMethod::ES256,
                &p384,
                "an EC key on P-384, but sign_method ES256 needs an EC key on P-256",
            ),
            (SignMethod::RS256, &p256, "needs an RSA key"),
            (SignMethod::ES512, &rsa, "holds an RSA key"),
            (SignMethod::ES256, &ed, "a key of algorithm 1.3.101.112"),
        ] {
            let problems = check(&token(method, keys));
            assert_eq!(problems.len(), 2, "{problems:?}");
            assert!(problems.iter().all(|p| p.contains(says)), "{problems:?}");
        }
        // Open to others, missing, not a key; simple tokens check nothing.
        let open = (
            p256.0.clone(),
            write(
                d,
                "open.key",
                &std::fs::read_to_string(&p256.1).unwrap(),
                0o644,
            ),
        );
        let problems = check(&token(SignMethod::ES256, &open));
        assert!(
            problems[0].contains("private_key_file") && problems[0].contains("0644"),
            "{problems:?}"
        );
        let junk = (write(d, "junk.pub", "hello", 0o644), d.join("missing.key"));
        let problems = check(&token(SignMethod::ES256, &junk));
        assert!(problems[0].contains("no PEM public key"), "{problems:?}");
        assert!(problems[1].contains("missing.key"), "{problems:?}");
        assert!(check(&TokenConfig::default()).is_empty());
    }

    #[test]
    fn a_certificate_serves_as_the_public_key_and_sec1_keys_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["jwt".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let public = write(d, "jwt.crt", &cert.pem(), 0o644);
        // SEC1 ("EC PRIVATE KEY") form of a P-256 key: 32-byte scalar.
        let sec1 = sec1_pem(&key);
        let private = write(d, "jwt.key", &sec1, 0o600);
        assert!(check(&token(SignMethod::ES256, &(public, private))).is_empty());
    }

    /// A minimal SEC1 encoding of `key` (only the scalar), as PEM.
    fn sec1_pem(key: &rcgen::KeyPair) -> String {
        let pkcs8 = key.serialize_der();
        // The scalar is the OCTET STRING of 32 bytes inside the PKCS#8
        // body's ECPrivateKey: find "04 20" followed by 32 bytes.
        let at = pkcs8
            .windows(2)
            .position(|w| w == [0x04, 0x20])
            .expect("a P-256 scalar");
        let scalar = &pkcs8[at + 2..at + 34];
        let mut der = vec![0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20];
        der.extend_from_slice(scalar);
        use base64::Engine;
        format!(
            "-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(der)
        )
    }
}

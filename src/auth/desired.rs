//! The ACL `[auth]` describes, as the pure planner reads it
//! (`recovery::acl::DesiredAcl`): roles with their key ranges, users with
//! their roles and the *fingerprints* of their passwords, and eco's own
//! identity — `root` with `root_password_file`, or the CN of eco's client
//! certificate. The passwords themselves stay beside it in [`Secrets`],
//! for the calls that set them, and are never printed.

use crate::base::secret_file::{SecretFileError, read_password};
use crate::config::{AuthConfig, EtcdTlsConfig, permission_range};
use recovery::acl::{DesiredAcl, DesiredUser, Fingerprint, Identity, Permissions, ROOT};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The passwords of the desired ACL, by user. `Debug` shows the users
/// only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(BTreeMap<String, String>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Secrets {
    pub fn password(&self, user: &str) -> Option<&str> {
        self.0.get(user).map(String::as_str)
    }
}

/// The desired ACL and the passwords it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    pub acl: DesiredAcl,
    pub secrets: Secrets,
}

/// Why the desired ACL cannot be built; names the key and the file,
/// never a password.
#[derive(Debug, thiserror::Error)]
pub enum DesiredError {
    #[error("{0}")]
    Password(#[from] SecretFileError),
    #[error("user {user}: {source}")]
    UserPassword {
        user: String,
        #[source]
        source: SecretFileError,
    },
    #[error("eco's identity: {0}")]
    Identity(String),
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

/// A salted SHA-256 of `(user, password)`, hex: what eco records of a
/// password it set (never the password).
pub fn fingerprint(salt: &[u8], user: &str, password: &str) -> Fingerprint {
    let mut h = Sha256::new();
    h.update(salt);
    h.update((user.len() as u64).to_be_bytes());
    h.update(user.as_bytes());
    h.update(password.as_bytes());
    hex::encode(h.finalize())
}

/// The subject CN of the first certificate in a PEM file.
pub fn certificate_cn(path: &Path) -> Result<String, String> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let der = CertificateDer::from_pem_file(path)
        .map_err(|e| format!("cannot read a PEM certificate from {}: {e}", path.display()))?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| format!("{} is not an X.509 certificate: {e}", path.display()))?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_string);
    cn.filter(|cn| !cn.is_empty())
        .ok_or_else(|| format!("the certificate {} has no subject CN", path.display()))
}

/// eco's identity: `root` with the password file, else the CN of its
/// client certificate (`tls` is the effective `[etcd.tls]`).
fn identity(
    auth: &AuthConfig,
    tls: &EtcdTlsConfig,
    salt: &[u8],
    secrets: &mut BTreeMap<String, String>,
) -> Result<Identity, DesiredError> {
    if let Some(file) = &auth.root_password_file {
        let (password, _) = read_password(file, "auth.root_password_file")?;
        let fp = fingerprint(salt, ROOT, &password);
        secrets.insert(ROOT.into(), password);
        return Ok(Identity {
            user: ROOT.into(),
            password: Some(fp),
        });
    }
    let eco = tls
        .eco
        .as_ref()
        .filter(|_| crate::config::certificate_identity_possible(tls));
    let Some(eco) = eco else {
        return Err(DesiredError::Identity(
            "no auth.root_password_file, and no client certificate etcd maps to a user ([etcd.tls.eco] with [etcd.tls.client] client_cert_auth = true)".into(),
        ));
    };
    let user = certificate_cn(&eco.cert_file).map_err(DesiredError::Identity)?;
    Ok(Identity {
        user,
        password: None,
    })
}

/// The desired ACL of `auth`; passwords read now (the files are read on
/// every look, so a changed file shows as a changed fingerprint).
pub fn build(auth: &AuthConfig, tls: &EtcdTlsConfig, salt: &[u8]) -> Result<Desired, DesiredError> {
    let mut secrets = BTreeMap::new();
    let identity = identity(auth, tls, salt, &mut secrets)?;
    let mut roles = BTreeMap::new();
    for (i, role) in auth.roles.iter().enumerate() {
        let mut perms = Permissions::new();
        for (j, p) in role.permissions.iter().enumerate() {
            let range = permission_range(p).map_err(|message| DesiredError::Invalid {
                key: format!("auth.roles[{i}].permissions[{j}]"),
                message,
            })?;
            perms.insert(range, p.access.into());
        }
        roles.insert(role.name.clone(), perms);
    }
    let mut users = BTreeMap::new();
    for u in &auth.users {
        let password = match &u.password_file {
            None => None,
            Some(file) => {
                let (password, _) =
                    read_password(file, "auth.users password_file").map_err(|source| {
                        DesiredError::UserPassword {
                            user: u.name.clone(),
                            source,
                        }
                    })?;
                let fp = fingerprint(salt, &u.name, &password);
                secrets.insert(u.name.clone(), password);
                Some(fp)
            }
        };
        users.insert(
            u.name.clone(),
            DesiredUser {
                roles: u.roles.iter().cloned().collect(),
                password,
            },
        );
    }
    Ok(Desired {
        acl: DesiredAcl {
            identity,
            roles,
            users,
        },
        secrets: Secrets(secrets),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PermissionAccess, PermissionConfig, RoleConfig, UserConfig};
    use recovery::acl::{Access, KeyRange};
    use std::os::unix::fs::PermissionsExt;

    fn secret(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    }

    #[test]
    fn the_config_becomes_the_planners_acl_with_fingerprints_not_passwords() {
        let dir = tempfile::tempdir().unwrap();
        let auth = AuthConfig {
            enabled: true,
            root_password_file: Some(secret(dir.path(), "root", "r00t\n")),
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
                password_file: Some(secret(dir.path(), "app", "app-s3cret")),
                roles: vec!["app-rw".into()],
            }],
            token: Default::default(),
        };
        let d = build(&auth, &EtcdTlsConfig::default(), b"salt").unwrap();
        assert_eq!(d.acl.identity.user, "root");
        assert_eq!(
            d.acl.identity.password.as_deref(),
            Some(fingerprint(b"salt", "root", "r00t").as_str())
        );
        assert_eq!(
            d.acl.roles["app-rw"],
            Permissions::from([(KeyRange::prefix("app/"), Access::ReadWrite)])
        );
        assert_eq!(d.secrets.password("app"), Some("app-s3cret"));
        let shown = format!("{d:?}");
        assert!(
            !shown.contains("app-s3cret") && !shown.contains("r00t"),
            "{shown}"
        );
        // Another salt, another fingerprint; another password too.
        assert_ne!(
            fingerprint(b"salt", "app", "a"),
            fingerprint(b"other", "app", "a")
        );
        assert_ne!(
            fingerprint(b"salt", "app", "a"),
            fingerprint(b"salt", "app", "b")
        );
        assert_ne!(fingerprint(b"s", "ab", "c"), fingerprint(b"s", "a", "bc"));

        let mut bad = auth.clone();
        bad.users[0].password_file = Some(dir.path().join("missing"));
        let err = build(&bad, &EtcdTlsConfig::default(), b"salt")
            .unwrap_err()
            .to_string();
        assert!(err.contains("user app") && err.contains("missing"), "{err}");
        let mut none = auth;
        none.root_password_file = None;
        let err = build(&none, &EtcdTlsConfig::default(), b"salt")
            .unwrap_err()
            .to_string();
        assert!(err.contains("eco's identity"), "{err}");
    }
}

//! `[api.tls]`: eco's own HTTP API (`/healthz`, `/readyz`, `/metrics`,
//! `/status`) served over TLS.
//!
//! By default it uses the material of etcd's client surface
//! ([`EtcdConfig::tls_files`]): the certificate and key etcd serves its
//! clients with, and the CA eco verifies that surface against. In
//! `[etcd.tls.generated]` mode those are the files eco issues and renews
//! in place; the API picks a renewal up on its next handshake. `cert_file`,
//! `key_file` and `trusted_ca_file` name other material instead.
//!
//! No client certificate is asked for: monitoring scrapes `/metrics` and
//! `/healthz` with only the CA. `/status` can be kept off the main listener
//! with `api.status_bind` (see [`super::ApiConfig`]).

use super::{EtcdConfig, Problem};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[api.tls]`
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ApiTlsConfig {
    /// Serve the API over `https` instead of plain `http`.
    #[serde(default)]
    pub enabled: bool,
    /// The certificate the API serves (PEM, leaf first, then
    /// intermediates); default: etcd's client surface's. Its SANs must name
    /// how the API is reached (this instance's address or DNS name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<PathBuf>,
    /// Its private key (PEM). A secret: refused when open to others. Given
    /// exactly when `cert_file` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// The CA certificates (PEM) `eco status` verifies the API's
    /// certificate against; default: the CA eco verifies etcd's client
    /// surface against (`etcd.tls.eco.trusted_ca_file`, else
    /// `etcd.tls.client.trusted_ca_file`; in generated mode the cluster's
    /// CA). Required when etcd's client surface has no TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_ca_file: Option<PathBuf>,
}

/// A file of the API's TLS and the config key it comes from (for
/// messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyedPath {
    pub key: &'static str,
    pub path: PathBuf,
}

/// The files the API serves and is verified with, as they are in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiTlsFiles {
    pub cert: KeyedPath,
    pub key: KeyedPath,
    pub trusted_ca: KeyedPath,
}

impl ApiTlsConfig {
    /// The files in force: `None` when the API is plain (or the table is
    /// invalid, which [`super::validate`] refuses before this is used).
    pub fn files(&self, etcd: &EtcdConfig) -> Option<ApiTlsFiles> {
        self.resolve(etcd).ok().flatten()
    }

    /// What is wrong with the table against `[etcd]`.
    pub fn problems(&self, etcd: &EtcdConfig) -> Vec<Problem> {
        self.resolve(etcd).err().unwrap_or_default()
    }

    /// Every path, mutably (relative paths are resolved against the config
    /// file's directory).
    pub fn paths_mut(&mut self) -> Vec<&mut PathBuf> {
        [
            self.cert_file.as_mut(),
            self.key_file.as_mut(),
            self.trusted_ca_file.as_mut(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    fn resolve(&self, etcd: &EtcdConfig) -> Result<Option<ApiTlsFiles>, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut fail = |key: &str, message: String| {
            problems.push(Problem {
                key: key.to_string(),
                message,
            })
        };
        let own = [
            ("api.tls.cert_file", &self.cert_file),
            ("api.tls.key_file", &self.key_file),
            ("api.tls.trusted_ca_file", &self.trusted_ca_file),
        ];
        for (key, path) in own {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                fail(key, "an empty path; allowed: the path of a PEM file".into());
            }
        }
        if !self.enabled {
            for (key, path) in own {
                if path.is_some() {
                    fail(
                        key,
                        "is set but api.tls.enabled is not true; set enabled = true to serve the API over TLS, or remove the key".into(),
                    );
                }
            }
            return match problems.is_empty() {
                true => Ok(None),
                false => Err(problems),
            };
        }
        let etcd_tls = etcd.tls_files();
        let client = etcd_tls.client.as_ref();
        let pair = match (&self.cert_file, &self.key_file, client) {
            (Some(cert), Some(key), _) => Some((
                KeyedPath {
                    key: "api.tls.cert_file",
                    path: cert.clone(),
                },
                KeyedPath {
                    key: "api.tls.key_file",
                    path: key.clone(),
                },
            )),
            (Some(_), None, _) | (None, Some(_), _) => {
                fail(
                    if self.cert_file.is_none() {
                        "api.tls.cert_file"
                    } else {
                        "api.tls.key_file"
                    },
                    "api.tls.cert_file and api.tls.key_file go together: give both, or neither to serve etcd's client certificate".into(),
                );
                None
            }
            (None, None, Some(c)) => Some((
                KeyedPath {
                    key: "etcd.tls.client.cert_file",
                    path: c.cert_file.clone(),
                },
                KeyedPath {
                    key: "etcd.tls.client.key_file",
                    path: c.key_file.clone(),
                },
            )),
            (None, None, None) => {
                fail(
                    "api.tls",
                    "enabled = true without cert_file and key_file serves the certificate of etcd's client surface, but that surface has no TLS: add [etcd.tls.client] or [etcd.tls.generated], or give api.tls.cert_file, key_file and trusted_ca_file".into(),
                );
                None
            }
        };
        let etcd_ca = client.map(|c| {
            match etcd_tls
                .eco
                .as_ref()
                .and_then(|e| e.trusted_ca_file.clone())
            {
                Some(ca) => KeyedPath {
                    key: "etcd.tls.eco.trusted_ca_file",
                    path: ca,
                },
                None => KeyedPath {
                    key: "etcd.tls.client.trusted_ca_file",
                    path: c.trusted_ca_file.clone(),
                },
            }
        });
        let trusted_ca = match (&self.trusted_ca_file, etcd_ca) {
            (Some(ca), _) => Some(KeyedPath {
                key: "api.tls.trusted_ca_file",
                path: ca.clone(),
            }),
            (None, Some(ca)) => Some(ca),
            (None, None) => {
                // Only reported when the certificate itself is given: else
                // the refusal above already says what is missing.
                if pair.is_some() {
                    fail(
                        "api.tls.trusted_ca_file",
                        "etcd's client surface has no TLS, so there is no CA to verify the API's certificate against (eco status always verifies): give the CA that signed api.tls.cert_file".into(),
                    );
                }
                None
            }
        };
        match (pair, trusted_ca) {
            (Some((cert, key)), Some(trusted_ca)) if problems.is_empty() => Ok(Some(ApiTlsFiles {
                cert,
                key,
                trusted_ca,
            })),
            _ => Err(problems),
        }
    }
}

/// `api.crt`, `api.key` and `ca.crt` in `dir`, named by their keys (the
/// tests' material).
#[cfg(test)]
pub(crate) fn files_in(dir: &std::path::Path) -> ApiTlsFiles {
    let k = |key, name: &str| KeyedPath {
        key,
        path: dir.join(name),
    };
    ApiTlsFiles {
        cert: k("api.tls.cert_file", "api.crt"),
        key: k("api.tls.key_file", "api.key"),
        trusted_ca: k("api.tls.trusted_ca_file", "ca.crt"),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_str;
    use std::path::Path;

    const BASE: &str = "[cluster]\nname = \"c1\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"g.toml\"\n[etcd]\ndata_dir = \"/var/lib/eco/etcd\"\n";
    const STORE: &str = "[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"/s\"\n";
    const GENERATED: &str = "[etcd.tls.generated]\n";
    const OPERATOR: &str = "[etcd.tls.client]\ncert_file = \"tls/etcd.crt\"\nkey_file = \"tls/etcd.key\"\ntrusted_ca_file = \"tls/ca.crt\"\nclient_cert_auth = false\n";

    fn parse(extra: &str) -> Result<crate::config::Config, String> {
        parse_str(
            &format!("{BASE}{extra}"),
            Path::new("/x/eco.toml"),
            Path::new("/x"),
        )
        .map_err(|e| e.to_string())
    }

    fn refused(extra: &str, key: &str, says: &str) {
        match parse(extra) {
            Ok(_) => panic!("accepted:\n{extra}"),
            Err(e) => {
                assert!(e.contains(&format!("`{key}`")), "{key} in: {e}");
                assert!(e.contains(says), "{says:?} in: {e}");
            }
        }
    }

    #[test]
    fn off_by_default_and_plain() {
        let c = parse("").unwrap();
        assert!(!c.api.tls.enabled);
        assert_eq!(c.api.tls.files(&c.etcd), None);
        assert_eq!(c.api.status_bind, None);
    }

    #[test]
    fn enabled_without_files_serves_etcds_client_material() {
        let c = parse(&format!("{STORE}{GENERATED}[api.tls]\nenabled = true\n")).unwrap();
        let f = c.api.tls.files(&c.etcd).expect("TLS on");
        assert_eq!(f.cert.path, Path::new("/var/lib/eco/tls/member.crt"));
        assert_eq!(f.cert.key, "etcd.tls.client.cert_file");
        assert_eq!(f.key.path, Path::new("/var/lib/eco/tls/member.key"));
        assert_eq!(f.trusted_ca.path, Path::new("/var/lib/eco/tls/ca.crt"));

        let c = parse(&format!("{OPERATOR}[api.tls]\nenabled = true\n")).unwrap();
        let f = c.api.tls.files(&c.etcd).expect("TLS on");
        assert_eq!(f.cert.path, Path::new("/x/tls/etcd.crt"));
        assert_eq!(f.trusted_ca.path, Path::new("/x/tls/ca.crt"));
        assert_eq!(f.trusted_ca.key, "etcd.tls.client.trusted_ca_file");

        // eco's own CA toward etcd, when it names one, is what verifies
        // the same certificate.
        let c = parse(&format!(
            "{}[etcd.tls.eco]\ncert_file = \"e.crt\"\nkey_file = \"e.key\"\ntrusted_ca_file = \"other-ca.crt\"\n[api.tls]\nenabled = true\n",
            OPERATOR.replace("client_cert_auth = false\n", "")
        ))
        .unwrap();
        let f = c.api.tls.files(&c.etcd).expect("TLS on");
        assert_eq!(f.trusted_ca.path, Path::new("/x/other-ca.crt"));
        assert_eq!(f.trusted_ca.key, "etcd.tls.eco.trusted_ca_file");
    }

    #[test]
    fn own_files_resolved_against_the_config_directory() {
        let c = parse(
            "[api.tls]\nenabled = true\ncert_file = \"api.crt\"\nkey_file = \"/k/api.key\"\ntrusted_ca_file = \"ca.crt\"\n",
        )
        .unwrap();
        let f = c.api.tls.files(&c.etcd).expect("TLS on");
        assert_eq!(f.cert.path, Path::new("/x/api.crt"));
        assert_eq!(f.cert.key, "api.tls.cert_file");
        assert_eq!(f.key.path, Path::new("/k/api.key"));
        assert_eq!(f.trusted_ca.path, Path::new("/x/ca.crt"));
        // Own certificate, etcd's CA by default.
        let c = parse(&format!(
            "{STORE}{GENERATED}[api.tls]\nenabled = true\ncert_file = \"api.crt\"\nkey_file = \"api.key\"\n"
        ))
        .unwrap();
        let f = c.api.tls.files(&c.etcd).expect("TLS on");
        assert_eq!(f.cert.path, Path::new("/x/api.crt"));
        assert_eq!(f.trusted_ca.path, Path::new("/var/lib/eco/tls/ca.crt"));
    }

    #[test]
    fn refused_when_etcds_client_surface_has_no_tls_and_no_files_are_given() {
        refused(
            "[api.tls]\nenabled = true\n",
            "api.tls",
            "that surface has no TLS",
        );
        refused(
            "[api.tls]\nenabled = true\ncert_file = \"a.crt\"\nkey_file = \"a.key\"\n",
            "api.tls.trusted_ca_file",
            "no CA to verify",
        );
    }

    #[test]
    fn other_refusals() {
        refused(
            "[api.tls]\nenabled = true\ncert_file = \"a.crt\"\ntrusted_ca_file = \"ca.crt\"\n",
            "api.tls.key_file",
            "go together",
        );
        refused(
            "[api.tls]\ncert_file = \"a.crt\"\n",
            "api.tls.cert_file",
            "enabled is not true",
        );
        refused(
            &format!("{OPERATOR}[api.tls]\nenabled = true\ntrusted_ca_file = \"\"\n"),
            "api.tls.trusted_ca_file",
            "an empty path",
        );
        let typo = parse("[api.tls]\nenabled = true\nclient_cert_auth = true\n").unwrap_err();
        assert!(typo.contains("unknown field `client_cert_auth`"), "{typo}");
    }

    #[test]
    fn status_bind_rules() {
        let c = parse("[api]\nstatus_bind = \"127.0.0.1:2391\"\n").unwrap();
        assert_eq!(c.api.status_bind, Some("127.0.0.1:2391".parse().unwrap()));
        // Another port of the main listener's address is fine.
        parse("[api]\nbind = \"10.0.0.1:2390\"\nstatus_bind = \"10.0.0.1:2391\"\n").unwrap();
        refused(
            "[api]\nstatus_bind = \"127.0.0.1:0\"\n",
            "api.status_bind",
            "port 0",
        );
        for clash in [
            "[api]\nbind = \"10.0.0.1:2390\"\nstatus_bind = \"10.0.0.1:2390\"\n",
            "[api]\nbind = \"0.0.0.0:2390\"\nstatus_bind = \"127.0.0.1:2390\"\n",
            "[api]\nstatus_bind = \"0.0.0.0:2390\"\n",
        ] {
            refused(clash, "api.status_bind", "overlaps the main listener");
        }
    }
}

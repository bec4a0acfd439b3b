//! `[etcd.tls]`: TLS on etcd's two surfaces — the client surface (the
//! client port: applications, `etcdctl`, eco itself) and the peer surface
//! (the peer port: members among themselves) — from certificate files the
//! operator provides, and eco's own client certificate.
//!
//! Each surface maps to etcd's flags one to one: `[etcd.tls.client]` to
//! `--cert-file`, `--key-file`, `--trusted-ca-file`, `--client-cert-auth`;
//! `[etcd.tls.peer]` to their `--peer-…` twins. A surface with TLS is
//! served over `https`, one without over `http`: its scheme follows, and
//! no key sets it.
//!
//! eco always verifies the certificate etcd presents against a trusted CA
//! (there is no option to skip it), and presents `[etcd.tls.eco]` when the
//! client surface asks clients for a certificate.
//!
//! The files are read when used, not once at start, so certificates
//! renewed in place are picked up (etcd re-reads its own files on every
//! handshake too).
//!
//! `[etcd.tls.generated]` instead has eco make the files itself from the
//! cluster's own CA (`crate::pki`): the same surfaces, with files eco
//! writes beside the data directory ([`EtcdConfig::tls_files`] says
//! where), so everything downstream treats both modes alike.

use super::{ConfigDuration, EtcdConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `[etcd.tls]`
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EtcdTlsConfig {
    /// `[etcd.tls.client]`: etcd's client surface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<SurfaceTls>,
    /// `[etcd.tls.peer]`: etcd's peer surface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<SurfaceTls>,
    /// `[etcd.tls.eco]`: eco's own client certificate toward the client
    /// surface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eco: Option<EcoClientTls>,
    /// `[etcd.tls.generated]`: both surfaces with certificates eco issues
    /// from the cluster's own CA (instead of the three tables above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<GeneratedTls>,
    /// `plaintext = true`: no TLS on etcd's surfaces, on purpose (see
    /// [`apply_default`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plaintext: bool,
}

/// TLS by default: a config that names no TLS at all (no table of
/// `[etcd.tls]`, no `plaintext = true`) gets
/// `[etcd.tls.generated]` with its defaults — when it has a snapshot store,
/// where the cluster's CA lives. Without a store it stays plaintext (and
/// `eco config check` and the log say so): generated mode cannot run
/// without one.
///
/// A plaintext cluster whose instances get a config without `[etcd.tls]`
/// is turned to TLS, rolling, once every instance has it
/// (`recovery::peer_scheme`); `plaintext = true` keeps it plaintext.
pub fn apply_default(etcd: &mut EtcdConfig, has_store: bool) {
    let t = &etcd.tls;
    let named = t.plaintext
        || t.client.is_some()
        || t.peer.is_some()
        || t.eco.is_some()
        || t.generated.is_some();
    if !named && has_store {
        etcd.tls.generated = Some(GeneratedTls::default());
    }
}

/// Why etcd's traffic is in the clear, when it is and the config did not
/// say `plaintext = true`: a warning for the log and `eco config check`.
pub fn plaintext_warning(etcd: &EtcdConfig) -> Option<String> {
    let t = &etcd.tls;
    if t.plaintext || t.client.is_some() || t.peer.is_some() || t.generated.is_some() {
        return None;
    }
    Some(
        "etcd's client and peer traffic is in the clear: TLS is on by default only with a snapshot store (where the generated CA lives); configure snapshot.store, give [etcd.tls] files, or set [etcd.tls] plaintext = true to say it is on purpose".into(),
    )
}

impl Default for GeneratedTls {
    fn default() -> Self {
        Self {
            extra_names: Vec::new(),
            validity: validity(),
            renew_before: renew_before(),
        }
    }
}

/// `[etcd.tls.generated]`: TLS on both surfaces, client certificates
/// required on both, from the cluster's CA (`crate::pki`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GeneratedTls {
    /// Names added to this instance's certificate besides its own address
    /// or DNS name: a load balancer's DNS name or address, a service name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_names: Vec<String>,
    /// How long an issued certificate is valid.
    #[serde(default = "validity")]
    pub validity: ConfigDuration,
    /// A certificate is issued again once it has less than this left (or
    /// when its names or the CA changed).
    #[serde(default = "renew_before")]
    pub renew_before: ConfigDuration,
}

fn validity() -> ConfigDuration {
    ConfigDuration::from_secs(90 * 24 * 3600)
}

fn renew_before() -> ConfigDuration {
    ConfigDuration::from_secs(30 * 24 * 3600)
}

/// Where generated mode keeps this instance's TLS files: `tls/` beside the
/// data directory (eco's state lives there too).
pub fn generated_dir(data_dir: &Path) -> PathBuf {
    data_dir
        .parent()
        .map(|p| p.join("tls"))
        .unwrap_or_else(|| PathBuf::from("tls"))
}

impl EtcdConfig {
    /// The TLS files in force: `[etcd.tls]` as given, or in generated mode
    /// the files eco writes in [`generated_dir`] (`ca.crt`; `member.crt`
    /// and `member.key`, the member's certificate for both surfaces;
    /// `eco.crt` and `eco.key`, eco's client certificate).
    pub fn tls_files(&self) -> EtcdTlsConfig {
        if self.tls.generated.is_none() {
            return self.tls.clone();
        }
        let dir = generated_dir(&self.data_dir);
        let surface = SurfaceTls {
            cert_file: dir.join("member.crt"),
            key_file: dir.join("member.key"),
            trusted_ca_file: dir.join("ca.crt"),
            client_cert_auth: true,
        };
        EtcdTlsConfig {
            client: Some(surface.clone()),
            peer: Some(surface),
            eco: Some(EcoClientTls {
                cert_file: dir.join("eco.crt"),
                key_file: dir.join("eco.key"),
                trusted_ca_file: None,
            }),
            generated: None,
            plaintext: false,
        }
    }
}

impl GeneratedTls {
    pub fn validity(&self) -> Duration {
        self.validity.get()
    }

    pub fn renew_before(&self) -> Duration {
        self.renew_before.get()
    }
}

/// The TLS of one etcd surface.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SurfaceTls {
    /// The certificate etcd serves (PEM, leaf first, then intermediates).
    /// Its SANs must name how the surface is reached: this instance's
    /// address or DNS name (and, on the client surface, any name in
    /// `etcd.advertise_client_urls`).
    pub cert_file: PathBuf,
    /// Its private key (PEM). A secret: refused when open to others.
    pub key_file: PathBuf,
    /// The CA certificates (PEM) that certificates presented *to* this
    /// surface must chain to; on the client surface, also what eco verifies
    /// etcd's certificate against (unless `[etcd.tls.eco]` names another).
    pub trusted_ca_file: PathBuf,
    /// Whether a client (on the peer surface: a peer) must present a
    /// certificate that chains to `trusted_ca_file`.
    #[serde(default = "client_cert_auth")]
    pub client_cert_auth: bool,
}

fn client_cert_auth() -> bool {
    true
}

/// eco's own client certificate.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EcoClientTls {
    /// The certificate eco presents to etcd's client surface (PEM).
    pub cert_file: PathBuf,
    /// Its private key (PEM). A secret: refused when open to others.
    pub key_file: PathBuf,
    /// What eco verifies etcd's certificate against; default: the client
    /// surface's `trusted_ca_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_ca_file: Option<PathBuf>,
}

impl EtcdTlsConfig {
    /// Every file named, with its key (for messages) and whether it holds
    /// a secret.
    pub fn files(&self) -> Vec<(String, &PathBuf, bool)> {
        let mut out = Vec::new();
        for (surface, tls) in [("client", &self.client), ("peer", &self.peer)] {
            if let Some(t) = tls {
                let key = |k: &str| format!("etcd.tls.{surface}.{k}");
                out.push((key("cert_file"), &t.cert_file, false));
                out.push((key("key_file"), &t.key_file, true));
                out.push((key("trusted_ca_file"), &t.trusted_ca_file, false));
            }
        }
        if let Some(e) = &self.eco {
            out.push(("etcd.tls.eco.cert_file".into(), &e.cert_file, false));
            out.push(("etcd.tls.eco.key_file".into(), &e.key_file, true));
            if let Some(ca) = &e.trusted_ca_file {
                out.push(("etcd.tls.eco.trusted_ca_file".into(), ca, false));
            }
        }
        out
    }

    /// Every path, mutably (relative paths are resolved against the
    /// config file's directory).
    pub fn paths_mut(&mut self) -> Vec<&mut PathBuf> {
        let mut out = Vec::new();
        for t in [self.client.as_mut(), self.peer.as_mut()]
            .into_iter()
            .flatten()
        {
            out.push(&mut t.cert_file);
            out.push(&mut t.key_file);
            out.push(&mut t.trusted_ca_file);
        }
        if let Some(e) = self.eco.as_mut() {
            out.push(&mut e.cert_file);
            out.push(&mut e.key_file);
            if let Some(ca) = e.trusted_ca_file.as_mut() {
                out.push(ca);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn etcd() -> EtcdConfig {
        EtcdConfig::default()
    }

    #[test]
    fn tls_is_generated_by_default_with_a_store_and_only_then() {
        let mut e = etcd();
        apply_default(&mut e, true);
        assert_eq!(e.tls.generated, Some(GeneratedTls::default()));
        assert!(plaintext_warning(&e).is_none());

        let mut no_store = etcd();
        apply_default(&mut no_store, false);
        assert_eq!(no_store.tls, EtcdTlsConfig::default());
        assert!(plaintext_warning(&no_store).is_some());
    }

    #[test]
    fn plaintext_on_purpose_or_files_are_kept() {
        let mut plain = etcd();
        plain.tls.plaintext = true;
        apply_default(&mut plain, true);
        assert!(plain.tls.generated.is_none());
        assert!(plaintext_warning(&plain).is_none(), "said on purpose");

        let mut files = etcd();
        files.tls.client = Some(SurfaceTls {
            cert_file: "/c.crt".into(),
            key_file: "/c.key".into(),
            trusted_ca_file: "/ca.crt".into(),
            client_cert_auth: true,
        });
        apply_default(&mut files, true);
        assert!(files.tls.generated.is_none());
    }
}

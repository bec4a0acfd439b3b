//! `[etcd.tls]`: TLS on etcd's two surfaces — the client surface (the
//! client port: applications, `etcdctl`, eco itself) and the peer surface
//! (the peer port: members among themselves) — from certificate files the
//! operator provides, and eco's own client certificate.
//!
//! Each surface maps to etcd's flags one to one: `[etcd.tls.client]` to
//! `--cert-file`, `--key-file`, `--trusted-ca-file`, `--client-cert-auth`;
//! `[etcd.tls.peer]` to their `--peer-…` twins. A surface with TLS is
//! served over `https`, so its scheme follows (`etcd.client_scheme` and
//! `etcd.peer_scheme` may be left out; when given they must agree).
//!
//! eco always verifies the certificate etcd presents against a trusted CA
//! (there is no option to skip it), and presents `[etcd.tls.eco]` when the
//! client surface asks clients for a certificate.
//!
//! The files are read when used, not once at start, so certificates
//! renewed in place are picked up (etcd re-reads its own files on every
//! handshake too).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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

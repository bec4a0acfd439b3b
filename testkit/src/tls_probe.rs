//! What certificate a TLS server presents right now: a handshake with a
//! client that trusts a CA and presents a certificate, and the server's
//! leaf certificate (DER) it saw. Tests use it to show that etcd serves a
//! certificate renewed in place without a restart.

use crate::pki::CertFiles;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

/// The leaf certificate `addr` presents to a client trusting `ca` (and
/// presenting `identity`), verified as `server_name`; 5 s at most.
pub fn served_certificate(
    addr: SocketAddr,
    server_name: &str,
    ca: &Path,
    identity: Option<&CertFiles>,
) -> anyhow::Result<Vec<u8>> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca)? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    let config = match identity {
        Some(id) => builder.with_client_auth_cert(
            CertificateDer::pem_file_iter(&id.cert)?.collect::<Result<Vec<_>, _>>()?,
            PrivateKeyDer::from_pem_file(&id.key)?,
        )?,
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from(server_name.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let handshake = async {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await?;
            let (_, session) = tls.get_ref();
            session
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.to_vec())
                .ok_or_else(|| anyhow::anyhow!("{addr} presented no certificate"))
        };
        tokio::time::timeout(Duration::from_secs(5), handshake)
            .await
            .map_err(|_| anyhow::anyhow!("no TLS handshake with {addr} within 5 s"))?
    })
}

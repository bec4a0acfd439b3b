//! Generated TLS on this instance (I/O): obtain the cluster's CA from the
//! store — made and created-if-absent by the first instance that needs it,
//! so exactly one CA exists per cluster — and keep this instance's files in
//! [`generated_dir`] issued and fresh (`recovery::certificates` decides
//! when). Files: `member.crt`/`member.key` (the member, both surfaces),
//! `eco.crt`/`eco.key` (eco's client certificate), `ca.crt`; keys `0600`,
//! the directory `0700`. `ca.crt` is written last: a `ca.crt` that is not
//! the store's CA means the certificates beside it are from another CA and
//! are issued again.

use super::ca::{ClusterCa, Purpose};
use super::sealed::SealedCa;
use crate::config::{Config, GeneratedTls, generated_dir};
use crate::events::Event;
use crate::provider::Identity;
use crate::store::{CreateOutcome, ObjectStore, StoreError};
use anyhow::Context;
use recovery::certificates::{Held, Renewal, Wanted, decide};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::SystemTime;
use tokio::io::AsyncReadExt;

/// The CA object of `cluster` in the store.
pub fn ca_object(cluster: &str) -> String {
    format!("{cluster}/pki/ca.json")
}

/// The largest CA object read (it holds a certificate and a few seals).
const MAX_CA_OBJECT: u64 = 256 * 1024;

/// The CN of eco's own client certificate.
pub const ECO_CLIENT_NAME: &str = "eco";

/// The raw gossip keys (`gossip.key_file`, else `ECO_GOSSIP_KEYS`): they
/// seal the CA's key.
pub fn gossip_keys(config: &Config) -> anyhow::Result<Vec<[u8; 32]>> {
    let text = match &config.gossip.key_file {
        Some(path) => crate::secret_file::read(path, "gossip.key_file")?,
        None => std::env::var("ECO_GOSSIP_KEYS")
            .map(|v| v.replace(',', "\n"))
            .map_err(|_| {
                anyhow::anyhow!(
                    "generated TLS needs the gossip keys (gossip.key_file or ECO_GOSSIP_KEYS): they seal the cluster's CA"
                )
            })?,
    };
    gossip::parse_keys(&text).context("the gossip keys")
}

async fn read_object(store: &dyn ObjectStore, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
    match store.get(name).await {
        Ok((_, reader)) => {
            let mut bytes = Vec::new();
            Box::into_pin(reader)
                .take(MAX_CA_OBJECT)
                .read_to_end(&mut bytes)
                .await
                .map_err(|source| StoreError::Io {
                    what: format!("reading {name}"),
                    source,
                })?;
            Ok(Some(bytes))
        }
        Err(StoreError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The cluster's CA: opened from the store; when there is none and
/// `may_create`, made here and created-if-absent (another instance's CA
/// wins a race). After a gossip key rotation the object is sealed again
/// ([`SealedCa::resealed_for`]): for the new key, so instances that only
/// hold it can open the CA, and without the retired one.
pub async fn obtain_ca(
    store: &dyn ObjectStore,
    cluster: &str,
    keys: &[[u8; 32]],
    may_create: bool,
) -> anyhow::Result<ClusterCa> {
    let name = ca_object(cluster);
    let stored = read_object(store, &name)
        .await
        .with_context(|| format!("reading the cluster's CA ({name})"))?;
    let bytes = match stored {
        Some(bytes) => bytes,
        None if !may_create => anyhow::bail!(
            "the store holds no CA for cluster {cluster} ({name}): the cluster's first instance makes it"
        ),
        None => {
            let ca = ClusterCa::generate(cluster, SystemTime::now())?;
            let sealed = SealedCa::seal(&ca, keys, cluster);
            match store
                .create_if_absent(&name, &sealed.to_json())
                .await
                .with_context(|| format!("creating the cluster's CA ({name})"))?
            {
                CreateOutcome::Created => {
                    tracing::info!(object = %name, seals = sealed.seals.len(), "made the cluster's CA; its key is in the store sealed with the gossip keys");
                    return Ok(ca);
                }
                CreateOutcome::AlreadyExists(winner) => winner,
            }
        }
    };
    let sealed =
        SealedCa::from_json(&bytes).with_context(|| format!("the cluster's CA ({name})"))?;
    let ca = sealed
        .open(keys, cluster)
        .with_context(|| format!("opening the cluster's CA ({name})"))?;
    if let Some(resealed) = sealed.resealed_for(&ca, keys, cluster) {
        match store
            .put(&name, &mut &resealed.to_json()[..], Default::default())
            .await
        {
            Ok(_) => {
                tracing::info!(object = %name, seals = resealed.seals.len(), "sealed the cluster's CA again for this instance's gossip keys (a rotation)")
            }
            // Not fatal: this instance opened it; others retry.
            Err(e) => {
                tracing::warn!(object = %name, error = %e, "cannot seal the cluster's CA with the new gossip key(s); retried at the next check")
            }
        }
    }
    Ok(ca)
}

/// What was checked or done for one certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateOutcome {
    pub file: &'static str,
    pub renewal: Renewal,
}

fn normal(names: &[String]) -> Vec<String> {
    names
        .iter()
        .map(|n| match crate::provider::Host::parse(n) {
            Ok(h) => h.to_string(),
            Err(_) => n.to_ascii_lowercase(),
        })
        .collect()
}

fn held(cert: &Path, from_current_ca: bool) -> Option<Held> {
    let pem = std::fs::read_to_string(cert).ok()?;
    let d = crate::etcd::tls::describe_pem(&pem).ok()?;
    Some(Held {
        not_after_unix: d.not_after_unix,
        names: normal(&d.names),
        from_current_ca,
    })
}

fn write(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    crate::atomic_file::write_atomic(path, bytes)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))
}

/// The names of this instance's member certificate: its host and the
/// configured extra names.
pub fn member_names(me: &Identity, generated: &GeneratedTls) -> Vec<String> {
    let mut names = vec![me.host.to_string()];
    names.extend(generated.extra_names.iter().cloned());
    normal(&names)
}

/// Makes sure this instance's generated files are issued by the store's CA,
/// carry its names and are not near expiry; returns what was decided for
/// each certificate.
pub async fn ensure_files(
    config: &Config,
    me: &Identity,
    store: &dyn ObjectStore,
    keys: &[[u8; 32]],
) -> anyhow::Result<Vec<CertificateOutcome>> {
    let Some(generated) = &config.etcd.tls.generated else {
        return Ok(Vec::new());
    };
    let ca = obtain_ca(store, &config.cluster.name, keys, true).await?;
    let dir = generated_dir(&config.etcd.data_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("setting the mode of {}", dir.display()))?;
    let ca_file = dir.join("ca.crt");
    let current_ca =
        std::fs::read_to_string(&ca_file).ok().as_deref() == Some(ca.cert_pem.as_str());
    let now = SystemTime::now();
    let now_unix = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let renew_before_s = generated.renew_before().as_secs();
    let mut outcomes = Vec::new();
    for (file, purpose, common_name, names) in [
        (
            "member",
            Purpose::Member,
            me.id.clone(),
            member_names(me, generated),
        ),
        (
            "eco",
            Purpose::Client,
            ECO_CLIENT_NAME.to_string(),
            Vec::new(),
        ),
    ] {
        let cert = dir.join(format!("{file}.crt"));
        let key = dir.join(format!("{file}.key"));
        let wanted = Wanted {
            names: names.clone(),
            renew_before_s,
        };
        let renewal = decide(now_unix, held(&cert, current_ca).as_ref(), &wanted);
        if let Renewal::Issue { reason } = &renewal {
            let issued = ca.issue(purpose, &common_name, &names, generated.validity(), now)?;
            // The key first, then its certificate, back to back: a
            // handshake between the two renames may fail once, and is
            // retried.
            write(&key, issued.key_pem.as_bytes(), 0o600)?;
            write(&cert, issued.cert_pem.as_bytes(), 0o644)?;
            crate::event!(info, Event::CertificateIssued, certificate = %cert.display(), %reason, names = ?names, "issued a certificate from the cluster's CA");
        }
        outcomes.push(CertificateOutcome { file, renewal });
    }
    if !current_ca {
        write(&ca_file, ca.cert_pem.as_bytes(), 0o644)?;
    }
    Ok(outcomes)
}

/// A client certificate for `user` (CN) from the cluster's CA, valid
/// `validity`, written to `out` as `ca.crt`, `<user>.crt`, `<user>.key`
/// (`eco certs client`).
pub async fn issue_client(
    config: &Config,
    store: &dyn ObjectStore,
    user: &str,
    validity: std::time::Duration,
    out: &Path,
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    anyhow::ensure!(
        config.etcd.tls.generated.is_some(),
        "this cluster does not use generated TLS ([etcd.tls.generated]): issue client certificates from your own CA"
    );
    anyhow::ensure!(
        !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c)),
        "--user {user:?}: letters, digits, '-', '_', '.', '@' only"
    );
    let keys = gossip_keys(config)?;
    let ca = obtain_ca(store, &config.cluster.name, &keys, false).await?;
    let issued = ca.issue(Purpose::Client, user, &[], validity, SystemTime::now())?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let files = [
        (out.join("ca.crt"), ca.cert_pem.clone(), 0o644),
        (out.join(format!("{user}.key")), issued.key_pem, 0o600),
        (out.join(format!("{user}.crt")), issued.cert_pem, 0o644),
    ];
    for (path, text, mode) in &files {
        write(path, text.as_bytes(), *mode)?;
    }
    Ok(files.into_iter().map(|(p, _, _)| p).collect())
}

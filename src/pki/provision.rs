//! Generated TLS on this instance (I/O): obtain the cluster's CA from the
//! store — made and created-if-absent by the first instance that needs it
//! while the cluster is formed (or TLS turned on for a running plaintext
//! one), so exactly one CA exists per cluster, and never made again for a
//! cluster whose CA object is gone (`recovery::certificates::missing_ca`)
//! — and keep this instance's files in [`generated_dir`] issued and fresh
//! (`recovery::certificates` decides when). Files: `member.crt`/
//! `member.key` (the member, both surfaces), `eco.crt`/`eco.key` (eco's
//! client certificate), `ca.crt`; keys `0600`,
//! the directory `0700`. `ca.crt` is written last: a `ca.crt` that is not
//! the store's CA means the certificates beside it are from another CA and
//! are issued again.

use super::ca::{ClusterCa, Purpose};
use super::sealed::SealedCa;
use crate::base::events::Event;
use crate::config::{Config, GeneratedTls, generated_dir};
use crate::provider::Identity;
use crate::store::{CreateOutcome, ObjectStore, StoreError};
use anyhow::Context;
use recovery::certificates::{
    Held, HeldFiles, MakeCa, MissingCa, NoStoredCa, RefuseCa, Renewal, Wanted, decide, missing_ca,
};
use recovery::peer_scheme::PeerScheme;
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
        Some(path) => crate::base::secret_file::read(path, "gossip.key_file")?,
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

/// What this instance holds that tells whether its cluster had a CA
/// (read when the store holds none).
#[derive(Clone, Debug)]
pub struct LocalFacts {
    /// Its generated files' directory.
    pub dir: std::path::PathBuf,
    /// A CA certificate from an earlier issue is there (`ca.crt`).
    pub holds_ca_certificate: bool,
    /// The peer scheme its state file records for its member (`http` for
    /// a state written before the scheme was recorded); `None` without a
    /// state file.
    pub member_peer_scheme: Option<PeerScheme>,
}

impl LocalFacts {
    /// Read from this instance's generated directory and state file.
    pub fn read(config: &Config) -> anyhow::Result<Self> {
        let dir = generated_dir(&config.etcd.data_dir);
        let state = crate::local::state_file::StateFile::beside(&config.etcd.data_dir)
            .load()
            .context("reading the state file (does this instance's member speak https?)")?;
        Ok(Self {
            holds_ca_certificate: dir.join("ca.crt").is_file(),
            member_peer_scheme: state.map(|s| s.peer_scheme.unwrap_or(PeerScheme::Http)),
            dir,
        })
    }
}

/// When the store holds no CA: what to do.
#[derive(Clone, Copy, Debug)]
pub enum IfMissing<'a> {
    /// Make none and say so (`eco certs client`).
    Fail,
    /// Make it or refuse, as `recovery::certificates::missing_ca` decides
    /// from the store's records and the [`LocalFacts`] of the instance of
    /// this config.
    Decide(&'a Config),
}

/// The store holds no CA for a cluster that had one: none is made.
#[derive(Debug, thiserror::Error)]
#[error("{}", self.message())]
pub struct CaRefused {
    /// The missing object.
    pub object: String,
    pub cluster: String,
    /// The newest incarnation record (the cluster exists).
    pub record: String,
    pub why: RefuseCa,
    /// This instance's generated files.
    pub dir: std::path::PathBuf,
}

impl CaRefused {
    fn message(&self) -> String {
        let Self {
            object,
            cluster,
            record,
            why,
            dir,
        } = self;
        let ca_copy = dir.join("ca.crt");
        let (what, keeps) = match why {
            RefuseCa::HoldsItsCertificate => (
                format!(
                    "this instance holds a certificate of its CA ({}): the object is gone (deleted, or expired by a lifecycle rule)",
                    ca_copy.display()
                ),
                format!(
                    "This instance keeps using its certificates ({}, {}) and its copy of the CA certificate ({}); they cannot be renewed.",
                    dir.join("member.crt").display(),
                    dir.join("eco.crt").display(),
                    ca_copy.display()
                ),
            ),
            RefuseCa::MemberSpeaksHttps => (
                "this instance's member speaks https (its state file) while it holds no CA certificate: the CA its peers trust is gone from the store".to_string(),
                "This instance has no certificates of that CA to keep using.".to_string(),
            ),
            RefuseCa::NotAMember => (
                "this instance is not a member yet: it cannot tell a CA that is gone from a cluster that never had one".to_string(),
                "If the cluster runs in plaintext and generated TLS is being turned on, restart one of its existing members with the new config first: it makes the CA.".to_string(),
            ),
        };
        format!(
            "the store holds no CA for cluster {cluster} ({object}), but the cluster exists ({record}) and {what}. No new CA is made: the other members trust only the old one, operators' certificates are from it, and a new one would cut this instance off. {keeps} Restore {object} from a backup of the store (S3 with versioning: remove its delete marker); its key is sealed there under the gossip keys and nothing else holds it (docs/security.md, \"When the CA cannot be opened, or is gone\")"
        )
    }
}

/// Whether to make the cluster's CA, the store holding none.
async fn decide_missing(
    store: &dyn ObjectStore,
    cluster: &str,
    name: &str,
    config: &Config,
) -> anyhow::Result<MakeCa> {
    let local = LocalFacts::read(config)?;
    let newest = crate::store::record::newest(store, cluster)
        .await
        .with_context(|| {
            format!("the store holds no CA ({name}): reading the cluster's records to know whether it was formed")
        })?;
    let facts = NoStoredCa {
        cluster_recorded: newest.is_some(),
        holds_ca_certificate: local.holds_ca_certificate,
        member_peer_scheme: local.member_peer_scheme,
    };
    match missing_ca(facts) {
        MissingCa::Make(why) => Ok(why),
        MissingCa::Refuse(why) => Err(CaRefused {
            object: name.to_string(),
            cluster: cluster.to_string(),
            record: newest
                .map(|r| crate::store::record::record_name(cluster, r.incarnation))
                .unwrap_or_default(),
            why,
            dir: local.dir,
        }
        .into()),
    }
}

/// The cluster's CA: opened from the store; when there is none, made here
/// and created-if-absent (another instance's CA wins a race) if
/// [`IfMissing::Decide`] says so. After a gossip key rotation the object
/// is sealed again ([`SealedCa::resealed_for`]): for the new key, so
/// instances that only hold it can open the CA, and without the retired
/// one. A CA this instance cannot open is never made again nor resealed.
pub async fn obtain_ca(
    store: &dyn ObjectStore,
    cluster: &str,
    keys: &[[u8; 32]],
    if_missing: IfMissing<'_>,
) -> anyhow::Result<ClusterCa> {
    let name = ca_object(cluster);
    let stored = read_object(store, &name)
        .await
        .with_context(|| format!("reading the cluster's CA ({name})"))?;
    let bytes = match (stored, if_missing) {
        (Some(bytes), _) => bytes,
        (None, IfMissing::Fail) => anyhow::bail!(
            "the store holds no CA for cluster {cluster} ({name}): the cluster's first instance makes it when the cluster is formed; if it was, restore {name} from a backup of the store"
        ),
        (None, IfMissing::Decide(config)) => {
            let why = decide_missing(store, cluster, &name, config).await?;
            let ca = ClusterCa::generate(cluster, SystemTime::now())?;
            let sealed = SealedCa::seal(&ca, keys, cluster);
            match store
                .create_if_absent(&name, &sealed.to_json())
                .await
                .with_context(|| format!("creating the cluster's CA ({name})"))?
            {
                CreateOutcome::Created => {
                    let why = match why {
                        MakeCa::Forming => "the cluster is being formed",
                        MakeCa::TurningTlsOn => "TLS is being turned on for the running cluster",
                    };
                    tracing::info!(object = %name, seals = sealed.seals.len(), why, "made the cluster's CA; its key is in the store sealed with the gossip keys");
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

/// The generated files this instance holds (for going on without the CA).
pub fn held_files(config: &Config) -> HeldFiles {
    let dir = generated_dir(&config.etcd.data_dir);
    let not_after = |file: &str| {
        let pem = std::fs::read_to_string(dir.join(file)).ok()?;
        Some(crate::etcd::tls::describe_pem(&pem).ok()?.not_after_unix)
    };
    HeldFiles {
        member_not_after_unix: not_after("member.crt"),
        client_not_after_unix: not_after("eco.crt"),
        ca_certificate: dir.join("ca.crt").is_file(),
    }
}

fn write(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    crate::base::atomic_file::write_atomic(path, bytes)?;
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
    let ca = obtain_ca(store, &config.cluster.name, keys, IfMissing::Decide(config)).await?;
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

/// A client certificate's files: (file name, PEM text, mode) for
/// `ca.crt`, `<user>.key`, `<user>.crt`.
pub type ClientFiles = [(String, String, u32); 3];

/// A client certificate for `user` (CN) from the cluster's CA, valid
/// `validity` (`eco certs client`): its files, not written anywhere. A
/// validity of zero, or longer than the CA has left, is refused
/// (`recovery::certificates::client_validity`), saying the longest one
/// possible.
pub async fn issue_client(
    config: &Config,
    store: &dyn ObjectStore,
    user: &str,
    validity: std::time::Duration,
) -> anyhow::Result<ClientFiles> {
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
    let ca = obtain_ca(store, &config.cluster.name, &keys, IfMissing::Fail).await?;
    let now = SystemTime::now();
    let ca_not_after = crate::etcd::tls::describe_pem(&ca.cert_pem)
        .map_err(|e| anyhow::anyhow!("the cluster's CA certificate: {e}"))?
        .not_after_unix;
    let now_unix = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let validity =
        recovery::certificates::client_validity(validity.as_secs(), now_unix, ca_not_after)
            .map(std::time::Duration::from_secs)
            .map_err(|e| {
                let at_most = (ca_not_after - now_unix).max(0) as u64;
                anyhow::anyhow!(
                    "--validity {}: {e}; at most {} (the CA expires at {})",
                    humantime::format_duration(validity),
                    humantime::format_duration(std::time::Duration::from_secs(at_most)),
                    humantime::format_rfc3339_seconds(
                        SystemTime::UNIX_EPOCH
                            + std::time::Duration::from_secs(ca_not_after.max(0) as u64)
                    )
                )
            })?;
    let issued = ca.issue(Purpose::Client, user, &[], validity, now)?;
    Ok([
        ("ca.crt".to_string(), ca.cert_pem.clone(), 0o644),
        (format!("{user}.key"), issued.key_pem, 0o600),
        (format!("{user}.crt"), issued.cert_pem, 0o644),
    ])
}

/// Writes [`issue_client`]'s files into `out` (created if missing), each
/// atomically with its mode; their paths.
pub fn write_client_files(
    files: &ClientFiles,
    out: &Path,
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut paths = Vec::new();
    for (name, text, mode) in files {
        let path = out.join(name);
        write(&path, text.as_bytes(), *mode)?;
        paths.push(path);
    }
    Ok(paths)
}

/// [`issue_client`]'s files as a tar archive (ustar, each file's mode
/// kept, owned by uid 0): what `eco certs client --out -` writes to its
/// standard output, for a container with no shell to copy files from.
pub fn client_files_tar(files: &ClientFiles) -> anyhow::Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
    let mtime = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    for (name, text, mode) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(text.len() as u64);
        header.set_mode(*mode);
        header.set_mtime(mtime);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, name, text.as_bytes())
            .with_context(|| format!("adding {name} to the archive"))?;
    }
    tar.into_inner().context("finishing the archive")
}

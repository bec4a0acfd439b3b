//! `eco restore`.

use crate::base::events::Event;
use crate::config::Config;
use crate::snapshot::restore::{self, RestoreRequest};
use anyhow::Context;
use recovery::archive::Point;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `eco restore` restores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A snapshot file, or a snapshot's name in the store.
    Snapshot(String),
    /// A point of the change archive.
    Archive(Point),
}

impl Source {
    /// From the command line (clap already requires exactly one).
    pub fn from_args(
        from: Option<String>,
        latest: bool,
        at_revision: Option<i64>,
        at_time: Option<String>,
    ) -> anyhow::Result<Self> {
        match from {
            Some(f) if !latest && at_revision.is_none() && at_time.is_none() => {
                Ok(Source::Snapshot(f))
            }
            Some(_) => {
                anyhow::bail!("give exactly one of --from, --latest, --at-revision, --at-time")
            }
            None => point_from_args(latest, at_revision, at_time).map(Source::Archive),
        }
    }
}

/// A point of the change archive from `--latest`, `--at-revision` or
/// `--at-time` (exactly one).
pub fn point_from_args(
    latest: bool,
    at_revision: Option<i64>,
    at_time: Option<String>,
) -> anyhow::Result<Point> {
    Ok(match (latest, at_revision, at_time) {
        (true, None, None) => Point::Latest,
        (false, Some(r), None) if r > 0 => Point::Revision(r),
        (false, Some(r), None) => anyhow::bail!("--at-revision {r}: a revision is at least 1"),
        (false, None, Some(t)) => Point::Time(parse_time(&t)?),
        _ => anyhow::bail!("give exactly one of --latest, --at-revision, --at-time"),
    })
}

/// An RFC 3339 time as Unix ms.
fn parse_time(text: &str) -> anyhow::Result<u64> {
    let t = humantime::parse_rfc3339_weak(text).map_err(|e| {
        anyhow::anyhow!(
            "--at-time {text:?} is not an RFC 3339 time (e.g. 2026-11-27T14:05:00Z): {e}"
        )
    })?;
    let ms = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| anyhow::anyhow!("--at-time {text:?} is before 1970"))?
        .as_millis();
    Ok(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// How long a point's replay may take to restore its snapshot and start
/// the throwaway member.
const REPLAY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Restores a point of `config`'s change archive per `req`: the chain's
/// snapshot and segments replayed into a throwaway etcd, its snapshot
/// restored (revision bumped) into the data directory.
pub async fn run_point(
    point: Point,
    config: &Config,
    req: &RestoreRequest,
) -> anyhow::Result<String> {
    let parent = beside_target(req)?;
    let started = std::time::Instant::now();
    let replayed = replay_point(point, config, &parent).await?;
    restore::restore_file(&replayed.file, req).await?;
    Ok(format!(
        "restored revision {} of cluster {} into {} in {:.1}s: {}",
        replayed.revision,
        config.cluster.name,
        req.data_dir.display(),
        started.elapsed().as_secs_f64(),
        replayed_summary(&replayed),
    ))
}

/// The directory the target data directory goes in (made if missing):
/// where a download or a replay's file is written, on the same disk.
fn beside_target(req: &RestoreRequest) -> anyhow::Result<PathBuf> {
    let parent = req
        .data_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&parent).with_context(|| format!("making {}", parent.display()))?;
    Ok(parent)
}

/// A point of `config`'s change archive replayed into a snapshot file in
/// `work_in` (removed when the result is dropped); the `archive.restored`
/// event says what it used.
pub async fn replay_point(
    point: Point,
    config: &Config,
    work_in: &std::path::Path,
) -> anyhow::Result<crate::archive::replay::Replayed> {
    let store = super::store(config).await?;
    let binaries = crate::etcd::binaries::find(&config.etcd).await?;
    // The throwaway member is plain text on 127.0.0.1; the credentials of
    // [auth] for a snapshot that holds etcd's authentication.
    let access = crate::etcd::access::EtcdAccess::new(config.etcd.call_timeout.get())
        .with_credentials(crate::etcd::credentials::Credentials::from_config(
            &config.auth,
        ));
    let identities = crate::snapshot::codec_choice::configured_identities(&config.snapshot)
        .context("[snapshot.encryption]")?;
    let replayed = crate::archive::replay::replay(
        &crate::archive::replay::ReplayRequest {
            store: &*store,
            identities: identities.as_ref(),
            cluster: &config.cluster.name,
            binaries: &binaries,
            access: &access,
            work_in,
            timeout: REPLAY_TIMEOUT,
        },
        point,
    )
    .await?;
    crate::event!(
        info,
        Event::ArchiveRestored,
        revision = replayed.revision,
        snapshot = %replayed.plan.snapshot.name,
        segments = replayed.plan.segments.len(),
        revisions = replayed.revisions,
        leases_dropped = replayed.leases_dropped,
        "restored a point of the change archive"
    );
    Ok(replayed)
}

/// What a replay used and what it could not carry, for a person.
pub fn replayed_summary(r: &crate::archive::replay::Replayed) -> String {
    format!(
        "{}; {} revision(s) replayed\n{} key(s) restored without their lease (a segment does not carry lease grants); users, roles and membership are the snapshot's",
        r.plan.reason, r.revisions, r.leases_dropped
    )
}

/// Restores `from` (a file, or a snapshot name in the configured store) per
/// `req`. A stored snapshot is downloaded beside the data directory and its
/// sha256 checked before anything is restored.
pub async fn run(
    from: &str,
    config: Option<&Config>,
    req: &RestoreRequest,
) -> anyhow::Result<String> {
    let file = PathBuf::from(from);
    if file.is_file() {
        // A copy of a stored object may be compressed or encrypted: undone
        // into a file beside the target first (an encrypted one needs the
        // identity file of --config's [snapshot.encryption]).
        let identities = match config {
            Some(c) => crate::snapshot::codec_choice::configured_identities(&c.snapshot)
                .context("[snapshot.encryption]")?,
            None => None,
        };
        let decoded = decode_copy(&file, &beside_target(req)?, identities.as_ref()).await?;
        let result = restore::restore_file(decoded.as_ref().map_or(&file, |(p, _)| p), req).await;
        if let Some((p, _)) = &decoded {
            let _ = std::fs::remove_file(p);
        }
        result?;
        return Ok(format!(
            "restored {}{} into {}",
            file.display(),
            decoded.map_or(String::new(), |(_, how)| format!(" ({how})")),
            req.data_dir.display()
        ));
    }
    let config = config.ok_or_else(|| {
        anyhow::anyhow!(
            "{from} is not a file; to restore a stored snapshot, pass --config naming the store"
        )
    })?;
    let store = super::store(config).await?;
    let parent = beside_target(req)?;
    let download = parent.join(format!(".eco-restore-{:08x}.db", rand::random::<u32>()));
    let identities = crate::snapshot::codec_choice::configured_identities(&config.snapshot)
        .context("[snapshot.encryption]")?;
    let fetched = restore::fetch_verified(&*store, from, &download, identities.as_ref()).await;
    let result = match fetched {
        Ok(_) => restore::restore_file(&download, req)
            .await
            .map_err(anyhow::Error::from),
        Err(e) => Err(e.into()),
    };
    let _ = std::fs::remove_file(&download);
    result.map(|()| {
        format!(
            "restored {from} (sha256 verified) into {}",
            req.data_dir.display()
        )
    })
}

/// `eco restore` from its arguments: the etcd tools from `--etcd-bin-dir`,
/// else the config's, else the ones eco finds; a token made up when none is
/// given; the revision bumped past every one the old cluster handed out.
pub fn from_cli(
    from: Source,
    data_dir: PathBuf,
    name: String,
    peer_url: String,
    token: Option<String>,
    config: Option<PathBuf>,
    etcd_bin_dir: Option<PathBuf>,
) -> ExitCode {
    let config = match config.as_deref().map(super::one_shot::load_or_exit) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(code)) => return code,
    };
    super::one_shot::one_shot(async move {
        let (etcdutl, etcdctl) = match (&etcd_bin_dir, &config) {
            (Some(dir), _) => (
                Some(dir.join("etcdutl")).filter(|p| p.exists()),
                Some(dir.join("etcdctl")).filter(|p| p.exists()),
            ),
            (None, Some(c)) => {
                let b = crate::etcd::binaries::find(&c.etcd).await?;
                (b.etcdutl, b.etcdctl)
            }
            (None, None) => {
                let b = crate::etcd::binaries::find(&Default::default()).await?;
                (b.etcdutl, b.etcdctl)
            }
        };
        let req = crate::snapshot::restore::RestoreRequest {
            data_dir,
            token: token
                .unwrap_or_else(|| format!("{name}-restored-{:08x}", rand::random::<u32>())),
            name,
            peer_url,
            etcdutl,
            etcdctl,
            timeout: std::time::Duration::from_secs(30 * 60),
            bump_revision: true,
        };
        match from {
            Source::Snapshot(from) => run(&from, config.as_ref(), &req).await,
            Source::Archive(point) => {
                let config = config.ok_or_else(|| {
                    anyhow::anyhow!("--latest, --at-revision and --at-time read the change archive: pass --config naming the store")
                })?;
                run_point(point, &config, &req).await
            }
        }
    })
}

/// Undoes the layers a copy of a stored snapshot carries (told by their
/// magic, outermost first: age, then zstd) into a `0600` file in `dir`:
/// the file and what was undone, `None` for a plain snapshot.
async fn decode_copy(
    file: &std::path::Path,
    dir: &std::path::Path,
    identities: Option<&crate::codec::Identities>,
) -> anyhow::Result<Option<(PathBuf, String)>> {
    use std::os::unix::fs::OpenOptionsExt;
    use tokio::io::AsyncReadExt;
    let what = file.display().to_string();
    let mut current: Option<PathBuf> = None;
    let mut undone = Vec::new();
    // At most the two layers eco writes.
    for _ in 0..2 {
        let source = current.clone().unwrap_or_else(|| file.to_path_buf());
        let mut head = [0u8; 32];
        let mut f = tokio::fs::File::open(&source)
            .await
            .with_context(|| format!("reading {}", source.display()))?;
        let n = f.read(&mut head).await.unwrap_or(0);
        let layer = crate::codec::Layers::outermost(&head[..n]);
        if layer == crate::codec::Layers::default() {
            break;
        }
        let out_path = dir.join(format!(".eco-restore-{:08x}.db", rand::random::<u32>()));
        let out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&out_path)
            .with_context(|| format!("creating {}", out_path.display()))?;
        let reader = tokio::fs::File::open(&source)
            .await
            .with_context(|| format!("reading {}", source.display()))?;
        let decoded = crate::codec::decode_to_file(&what, reader, layer, identities, out).await;
        if let Some(previous) = current.take() {
            let _ = std::fs::remove_file(previous);
        }
        if let Err(e) = decoded {
            let _ = std::fs::remove_file(&out_path);
            return Err(e.into());
        }
        undone.push(if layer.age {
            "decrypted"
        } else {
            "decompressed"
        });
        current = Some(out_path);
    }
    Ok(current.map(|p| (p, undone.join(", "))))
}

//! `eco restore`.

use crate::config::Config;
use crate::snapshot::restore::{self, RestoreRequest};
use std::path::PathBuf;
use std::process::ExitCode;

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
        restore::restore_file(&file, req).await?;
        return Ok(format!(
            "restored {} into {}",
            file.display(),
            req.data_dir.display()
        ));
    }
    let config = config.ok_or_else(|| {
        anyhow::anyhow!(
            "{from} is not a file; to restore a stored snapshot, pass --config naming the store"
        )
    })?;
    let store = super::store(config).await?;
    let parent = req
        .data_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&parent)?;
    let download = parent.join(format!(".eco-restore-{:08x}.db", rand::random::<u32>()));
    let fetched = restore::fetch_verified(&*store, from, &download).await;
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
    from: String,
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
        run(&from, config.as_ref(), &req).await
    })
}

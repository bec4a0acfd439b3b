//! `eco restore`.

use crate::config::Config;
use crate::snapshot::restore::{self, RestoreRequest};
use std::path::PathBuf;

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

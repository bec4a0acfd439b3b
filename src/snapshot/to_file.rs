//! A member's snapshot streamed into a local file (`Maintenance.Snapshot`):
//! written beside its final name, etcd's trailing sha256 checked over
//! every byte, synced, then renamed into place — the file either holds a
//! whole, checked snapshot or does not exist. Memory stays one chunk.
//! Used where the snapshot never leaves the machine: the seeding's WAL
//! replay and the archive's replay into a throwaway member.

use super::trailing_hash::TrailingHash;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("writing the snapshot to {file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the snapshot stream: {0}")]
    Etcd(#[from] etcd_client::Error),
    #[error("the snapshot stream: no answer within {0:?}")]
    NoAnswer(Duration),
    #[error("the snapshot written to {0}: etcd's trailing sha256 does not match the data")]
    Corrupt(PathBuf),
}

/// Streams `client`'s member's snapshot into `file` (mode 0600: the whole
/// database). `timeout` bounds the first answer and each chunk. Returns
/// the file's size.
pub async fn save(
    client: &mut etcd_client::Client,
    file: &Path,
    timeout: Duration,
) -> Result<u64, SaveError> {
    let partial = partial_of(file);
    let saved = write(client, &partial, timeout).await;
    let done = match saved {
        Ok(size) => tokio::fs::rename(&partial, file)
            .await
            .map(|()| size)
            .map_err(|source| SaveError::Io {
                file: file.to_path_buf(),
                source,
            }),
        Err(e) => Err(e),
    };
    if done.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
        return done;
    }
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        // The rename made durable.
        if let Ok(d) = tokio::fs::File::open(dir).await {
            let _ = d.sync_all().await;
        }
    }
    done
}

fn partial_of(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    file.with_file_name(name)
}

async fn write(
    client: &mut etcd_client::Client,
    partial: &Path,
    timeout: Duration,
) -> Result<u64, SaveError> {
    let io = |source| SaveError::Io {
        file: partial.to_path_buf(),
        source,
    };
    let mut out = tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(partial)
        .await
        .map_err(io)?;
    let mut stream = tokio::time::timeout(timeout, client.snapshot())
        .await
        .map_err(|_| SaveError::NoAnswer(timeout))??;
    let mut check = TrailingHash::new();
    let mut size = 0u64;
    loop {
        match tokio::time::timeout(timeout, stream.message()).await {
            Err(_) => return Err(SaveError::NoAnswer(timeout)),
            Ok(Err(e)) => return Err(e.into()),
            Ok(Ok(None)) => break,
            Ok(Ok(Some(m))) => {
                check.update(m.blob());
                size += m.blob().len() as u64;
                out.write_all(m.blob()).await.map_err(io)?;
            }
        }
    }
    out.sync_all().await.map_err(io)?;
    if !check.verify() {
        return Err(SaveError::Corrupt(partial.to_path_buf()));
    }
    Ok(size)
}

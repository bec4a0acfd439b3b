//! `eco snapshot import`: an etcd snapshot file made by any tool (`etcdctl
//! snapshot save`, another operator, another eco's `eco restore` source)
//! put into the store as a snapshot of this cluster, with eco's metadata,
//! so that a new cluster can start from it (`recovery.bootstrap_from`, or
//! the newest snapshot when the store holds no record).
//!
//! The file is checked before anything is written: etcd's trailing
//! checksum, then a restore into a throwaway member (in a temporary
//! directory, removed afterwards) that says its revision and its key
//! space's HashKV — recorded, so the daily verified restore checks the
//! stored copy against them. The object is named for incarnation 0 (before
//! any incarnation of this cluster: it never outranks a snapshot the
//! cluster took) under a token of its own (`<cluster>-0-<8 hex>`). The
//! file is only read; nothing is written when a check fails.

use super::name::SnapshotName;
use super::restore::{self, RestoreError};
use super::take::meta;
use super::verify;
use crate::etcd::access::EtcdAccess;
use crate::etcd::binaries::EtcdBinaries;
use crate::store::{ObjectInfo, ObjectStore, StoreError};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Restore(#[from] RestoreError),
    #[error("{file} cannot be imported: {why}; nothing was stored")]
    Unusable { file: String, why: String },
    #[error("storing {name}: {source}")]
    Store {
        name: String,
        #[source]
        source: StoreError,
    },
    #[error("reading {file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

/// What to import, where, with what.
pub struct ImportRequest<'a> {
    pub store: &'a dyn ObjectStore,
    pub cluster: &'a str,
    pub file: &'a Path,
    pub binaries: &'a EtcdBinaries,
    pub access: &'a EtcdAccess,
    /// The throwaway member's temporary directory is made in here.
    pub work_in: &'a Path,
    /// Bounds the restore and the throwaway member's start.
    pub timeout: Duration,
    /// Recorded as the importer (`instance` metadata).
    pub by: &'a str,
    /// The format it is written in (the cluster's).
    pub format: recovery::cluster_version::Format,
    /// Its compression and encryption, per the format.
    pub codec: &'a super::codec_choice::SnapshotCodec,
}

/// The snapshot stored.
#[derive(Clone, Debug)]
pub struct Imported {
    pub name: SnapshotName,
    pub object: ObjectInfo,
    pub keys_hash: Option<u32>,
}

pub async fn import(req: &ImportRequest<'_>) -> Result<Imported, ImportError> {
    let file = req.file.display().to_string();
    restore::verify_file(req.file).await.map_err(|e| match e {
        RestoreError::Corrupt { why, .. } => ImportError::Unusable {
            file: file.clone(),
            why,
        },
        other => other.into(),
    })?;
    let restored =
        verify::inspect_file(req.file, req.binaries, req.access, req.work_in, req.timeout)
            .await
            .map_err(|why| ImportError::Unusable {
                file: file.clone(),
                why,
            })?;
    let hash = match restored.hash {
        Some(Ok(h)) => Some(h),
        Some(Err(why)) => {
            return Err(ImportError::Unusable {
                file,
                why: format!("the restored member does not answer HashKV: {why}"),
            });
        }
        None => None,
    };
    let (encoding, format) = req.codec.for_snapshot(req.format);
    let token = format!("{}-0-{:08x}", req.cluster, rand::random::<u32>());
    let name = SnapshotName {
        cluster: req.cluster.to_string(),
        incarnation: 0,
        revision: restored.revision,
        token: token.clone(),
    };
    let mut metadata = BTreeMap::from([
        (meta::CLUSTER.to_string(), req.cluster.to_string()),
        (meta::INCARNATION.to_string(), "0".to_string()),
        (meta::TOKEN.to_string(), token),
        (meta::REVISION.to_string(), restored.revision.to_string()),
        (
            meta::ETCD_VERSION.to_string(),
            req.binaries.version.to_string(),
        ),
        (meta::INSTANCE.to_string(), req.by.to_string()),
        (
            meta::CREATED_UNIX_MS.to_string(),
            crate::base::wall_clock::unix_ms().to_string(),
        ),
        (meta::FORMAT.to_string(), format.to_string()),
    ]);
    metadata.extend(encoding.metadata());
    if let Some(h) = &hash {
        metadata.insert(meta::HASH_KV.into(), h.hash.to_string());
        metadata.insert(meta::HASH_REVISION.into(), h.revision.to_string());
        metadata.insert(
            meta::COMPACT_REVISION.into(),
            h.compact_revision.to_string(),
        );
    }
    let reader = tokio::fs::File::open(req.file)
        .await
        .map_err(|source| ImportError::Io {
            file: file.clone(),
            source,
        })?;
    let (mut encoded, thread) =
        crate::codec::encode_stream(reader, &encoding, &format!("snapshot {name}"));
    let stored = req
        .store
        .put(&name.to_string(), &mut encoded, metadata)
        .await;
    drop(encoded);
    let encoded = thread.await.map_err(|e| ImportError::Io {
        file: file.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let object = stored.map_err(|source| ImportError::Store {
        name: name.to_string(),
        source,
    })?;
    encoded.map_err(|e| ImportError::Io {
        file: file.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(Imported {
        name,
        object,
        keys_hash: hash.map(|h| h.hash),
    })
}

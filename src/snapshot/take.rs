//! Streaming a snapshot from one etcd member into a store.

use super::name::SnapshotName;
use super::trailing_hash::TrailingHash;
use crate::etcd::access::EtcdAccess;
use crate::etcd::probe::{self, ProbeError};
use crate::store::{ObjectInfo, ObjectStore, StoreError};
use bytes::Bytes;
use std::collections::BTreeMap;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::StreamReader;

/// What to snapshot and how to name it.
#[derive(Clone, Debug)]
pub struct SnapshotRequest {
    /// Client URL of the member to snapshot.
    pub endpoint: String,
    pub cluster: String,
    pub incarnation: u64,
    pub token: String,
    /// Instance taking the snapshot (recorded in metadata).
    pub instance: String,
    /// The format it is written in (the cluster version's; recorded in
    /// metadata).
    pub format: recovery::cluster_version::Format,
    /// Compression and encryption, per the format
    /// (`super::codec_choice`; recorded in metadata).
    pub codec: super::codec_choice::SnapshotCodec,
}

/// A snapshot safely stored.
#[derive(Clone, Debug)]
pub struct TakenSnapshot {
    pub name: SnapshotName,
    pub object: ObjectInfo,
    /// The position recorded for the snapshot: the member's raft
    /// *applied* index just before it ([`recorded_position`]).
    pub raft_index: u64,
}

/// The raft index recorded with a snapshot, which the quorum-loss ranking
/// compares with survivors' WAL commit indexes: it must be a lower bound
/// of what the snapshot holds. The backend a snapshot streams holds every
/// entry *applied* when it starts, and the applied index only grows, so
/// the applied index read just before is such a bound; the commit index
/// is not (with an apply backlog it runs ahead of the backend, and the
/// store would outrank a survivor that holds entries the snapshot lacks).
/// A server that reports no applied index (0) falls back to the commit
/// index.
pub fn recorded_position(raft_index: u64, raft_applied_index: u64) -> u64 {
    if raft_applied_index == 0 {
        raft_index
    } else {
        raft_applied_index.min(raft_index)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Probe(#[from] ProbeError),
    #[error("snapshot stream from {endpoint}: {message}")]
    Stream { endpoint: String, message: String },
    #[error("storing the snapshot: {0}")]
    Store(#[from] StoreError),
}

/// How often a long transfer reports its progress.
const PROGRESS_EVERY: u64 = 256 << 20;

/// Metadata keys of snapshot objects.
pub mod meta {
    pub const CLUSTER: &str = "cluster";
    pub const INCARNATION: &str = "incarnation";
    pub const TOKEN: &str = "token";
    pub const REVISION: &str = "revision";
    pub const RAFT_INDEX: &str = "raft_index";
    pub const ETCD_VERSION: &str = "etcd_version";
    pub const INSTANCE: &str = "instance";
    pub const CREATED_UNIX_MS: &str = "created_unix_ms";
    /// etcd's HashKV of the key space at `hash_revision`, with the
    /// compaction it was taken under: what a verified restore compares.
    pub const HASH_KV: &str = "hash_kv";
    pub const HASH_REVISION: &str = "hash_revision";
    pub const COMPACT_REVISION: &str = "compact_revision";
    /// The format the snapshot and its metadata are written in
    /// (`recovery::cluster_version`; absent: format 1).
    pub const FORMAT: &str = "format";
}

/// Streams a snapshot of the member at `req.endpoint` into `store`; each
/// call, and the wait for each chunk of the stream, is bounded by the
/// access's call timeout.
pub async fn take(
    store: &dyn ObjectStore,
    access: &EtcdAccess,
    req: &SnapshotRequest,
) -> Result<TakenSnapshot, SnapshotError> {
    let stream_err = |message: String| SnapshotError::Stream {
        endpoint: req.endpoint.clone(),
        message,
    };
    let timeout = access.call_timeout();
    let (encoding, format) = req.codec.for_snapshot(req.format);
    let mut client = access.connect(&req.endpoint).await?;
    let status = probe::status(&mut client, &req.endpoint, timeout).await?;
    let position = recorded_position(status.raft_index, status.raft_applied_index);
    // The key space's hash at the revision just before the snapshot (the
    // snapshot holds it): a restore of this snapshot must hash the same.
    let hash = match tokio::time::timeout(timeout, client.hash_kv(status.revision)).await {
        Ok(Ok(h)) => Some(h),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "no HashKV for the snapshot's record");
            None
        }
        Err(_) => None,
    };
    let mut stream = tokio::time::timeout(timeout, client.snapshot())
        .await
        .map_err(|_| stream_err(format!("no answer within {:?}", timeout)))?
        .map_err(|e| stream_err(e.to_string()))?;
    let first = tokio::time::timeout(timeout, stream.message())
        .await
        .map_err(|_| stream_err(format!("no first chunk within {:?}", timeout)))?
        .map_err(|e| stream_err(e.to_string()))?
        .ok_or_else(|| stream_err("the stream ended before any data".into()))?;
    // The first header marks the point in time of the snapshot (etcd ≥ 3.5);
    // older servers send none: the revision just before is a lower bound.
    let revision = first
        .header()
        .map(|h| h.revision())
        .filter(|r| *r > 0)
        .unwrap_or(status.revision);
    let name = SnapshotName {
        cluster: req.cluster.clone(),
        incarnation: req.incarnation,
        revision,
        token: req.token.clone(),
    };
    let created = crate::base::wall_clock::unix_ms();
    let metadata = BTreeMap::from([
        (meta::CLUSTER.to_string(), req.cluster.clone()),
        (meta::INCARNATION.to_string(), req.incarnation.to_string()),
        (meta::TOKEN.to_string(), req.token.clone()),
        (meta::REVISION.to_string(), revision.to_string()),
        (meta::RAFT_INDEX.to_string(), position.to_string()),
        (meta::ETCD_VERSION.to_string(), status.version.clone()),
        (meta::INSTANCE.to_string(), req.instance.clone()),
        (meta::CREATED_UNIX_MS.to_string(), created.to_string()),
        (meta::FORMAT.to_string(), format.to_string()),
    ]);
    let mut metadata = metadata;
    metadata.extend(encoding.metadata());
    if let Some(h) = &hash {
        metadata.insert(meta::HASH_KV.into(), h.hash().to_string());
        metadata.insert(meta::HASH_REVISION.into(), status.revision.to_string());
        metadata.insert(
            meta::COMPACT_REVISION.into(),
            h.compact_version().to_string(),
        );
    }

    // A small bounded channel between the etcd stream and the store: memory
    // stays flat. A failure is sent down the channel as an error, so the
    // store aborts the upload instead of committing a short object.
    let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(4);
    let endpoint = req.endpoint.clone();
    let producer = tokio::spawn(async move {
        let mut check = TrailingHash::new();
        check.update(first.blob());
        // Progress of long transfers, in the log (and so on the terminal of
        // `eco snapshot now`): every PROGRESS_EVERY bytes.
        let started = std::time::Instant::now();
        let mut streamed = first.blob().len() as u64;
        let mut next_report = PROGRESS_EVERY;
        if tx
            .send(Ok(Bytes::copy_from_slice(first.blob())))
            .await
            .is_err()
        {
            return Err("the store stopped reading".to_string());
        }
        loop {
            let next = match tokio::time::timeout(timeout, stream.message()).await {
                Err(_) => Err(format!("no chunk within {timeout:?}")),
                Ok(Err(e)) => Err(e.to_string()),
                Ok(Ok(m)) => Ok(m),
            };
            match next {
                Ok(Some(m)) => {
                    check.update(m.blob());
                    streamed += m.blob().len() as u64;
                    if streamed >= next_report {
                        next_report += PROGRESS_EVERY;
                        let secs = started.elapsed().as_secs_f64().max(0.001);
                        tracing::info!(
                            %endpoint,
                            mib = streamed >> 20,
                            mib_per_s = format!("{:.0}", (streamed >> 20) as f64 / secs),
                            "snapshot streaming"
                        );
                    }
                    if tx.send(Ok(Bytes::copy_from_slice(m.blob()))).await.is_err() {
                        return Err("the store stopped reading".to_string());
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.clone()))).await;
                    return Err(e);
                }
            }
        }
        if !check.verify() {
            let e =
                "etcd's trailing sha256 does not match the data (truncated or corrupted stream)"
                    .to_string();
            let _ = tx
                .send(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    e.clone(),
                )))
                .await;
            return Err(e);
        }
        Ok(())
    });
    let reader = StreamReader::new(ReceiverStream::new(rx));
    let (stored, encoded) = if encoding.layers() == Default::default() {
        let mut reader = reader;
        let stored = store.put(&name.to_string(), &mut reader, metadata).await;
        (stored, None)
    } else {
        // Compressed and/or encrypted on a blocking thread between two
        // bounded channels; a failure on either side fails the other.
        let (mut encoded, thread) =
            crate::codec::encode_stream(reader, &encoding, &format!("snapshot {name}"));
        let stored = store.put(&name.to_string(), &mut encoded, metadata).await;
        drop(encoded);
        (stored, Some(thread))
    };
    // The store is done reading, whether it committed or failed: the
    // channel is closed (the reader dropped), so the producer's next send
    // fails instead of waiting forever on a full channel nobody reads (a
    // store that failed before reading everything once stalled the writer
    // for good).
    let produced = producer.await.map_err(|e| stream_err(e.to_string()))?;
    let encoded = match encoded {
        Some(thread) => Some(thread.await.map_err(|e| stream_err(e.to_string()))?),
        None => None,
    };
    let object = stored?;
    produced.map_err(stream_err)?;
    if let Some(Err(e)) = encoded {
        return Err(stream_err(e.to_string()));
    }
    Ok(TakenSnapshot {
        name,
        object,
        raft_index: position,
    })
}

#[cfg(test)]
mod tests {
    use super::recorded_position;

    #[test]
    fn the_recorded_position_never_exceeds_what_was_applied() {
        // An apply backlog: committed 120, applied 100 → 100.
        assert_eq!(recorded_position(120, 100), 100);
        assert_eq!(recorded_position(100, 100), 100);
        // A server without an applied index (0): the commit index.
        assert_eq!(recorded_position(100, 0), 100);
    }
}

//! `put`: the content, streamed and hashed on the way, then its info
//! object (the commit point).

use super::errors::{bounded, failed};
use super::info::Committed;
use super::layout::Located;
use super::{Clients, CloudStore};
use crate::store::{ObjectInfo, StoreError};
use bytes::Bytes;
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use tokio::io::{AsyncRead, AsyncReadExt};

pub(super) async fn put(
    store: &CloudStore,
    name: &str,
    content: &mut (dyn AsyncRead + Unpin + Send),
    metadata: BTreeMap<String, String>,
) -> Result<ObjectInfo, StoreError> {
    let object = store.layout.locate(name)?;
    let clients = &*store.clients;
    let part = store.tuning.part_size;
    let mut hasher = Sha256::new();
    let first = read_up_to(content, part, name).await?;
    hasher.update(&first);
    let (size, etag) = if first.len() < part {
        let size = first.len() as u64;
        let key = object.key.as_ref();
        let done = bounded(
            clients.transfer_limit,
            &clients.describe,
            "uploading",
            key,
            async {
                clients
                    .uploads
                    .put(&object.key, PutPayload::from(first))
                    .await
                    .map_err(|e| failed(&clients.describe, "uploading", key, &e))
            },
        )
        .await?;
        (size, done.e_tag)
    } else {
        multipart(store, &object, first, content, &mut hasher).await?
    };
    let info = ObjectInfo {
        name: name.to_string(),
        size,
        sha256: hex::encode(hasher.finalize()),
        metadata,
    };
    let committed = Committed {
        info: info.clone(),
        etag,
    };
    write_info(clients, &object, &committed).await?;
    Ok(info)
}

/// Writes the info object that commits an object.
async fn write_info(
    clients: &Clients,
    object: &Located,
    committed: &Committed,
) -> Result<(), StoreError> {
    let bytes = committed.encode()?;
    let key = object.info.as_ref();
    let op = "writing the info object";
    bounded(clients.call_limit, &clients.describe, op, key, async {
        clients
            .calls
            .put(&object.info, PutPayload::from(bytes))
            .await
            .map(|_| ())
            .map_err(|e| failed(&clients.describe, op, key, &e))
    })
    .await
}

/// A multipart upload of `first` and the rest of `content`, at most
/// `parts_in_flight` parts uploading while the next is read. Returns the
/// size and the ETag of the completed object. A failure aborts the upload.
async fn multipart(
    store: &CloudStore,
    object: &Located,
    first: Vec<u8>,
    content: &mut (dyn AsyncRead + Unpin + Send),
    hasher: &mut Sha256,
) -> Result<(u64, Option<String>), StoreError> {
    let clients = &*store.clients;
    let key = object.key.as_ref();
    let part = store.tuning.part_size;
    let in_flight = store.tuning.parts_in_flight;
    let describe = &clients.describe;
    let upload = bounded(
        clients.call_limit,
        describe,
        "starting the upload of",
        key,
        async {
            clients
                .uploads
                .put_multipart(&object.key)
                .await
                .map_err(|e| failed(describe, "starting the upload of", key, &e))
        },
    )
    .await?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, part);
    let mut size = first.len() as u64;
    writer.put(Bytes::from(first));
    let streamed: Result<(), StoreError> = async {
        loop {
            bounded(
                clients.transfer_limit,
                describe,
                "uploading a part of",
                key,
                async {
                    writer
                        .wait_for_capacity(in_flight)
                        .await
                        .map_err(|e| failed(describe, "uploading a part of", key, &e))
                },
            )
            .await?;
            let chunk = read_up_to(content, part, &object.name).await?;
            if chunk.is_empty() {
                return Ok(());
            }
            hasher.update(&chunk);
            size += chunk.len() as u64;
            let last = chunk.len() < part;
            writer.put(Bytes::from(chunk));
            if last {
                return Ok(());
            }
        }
    }
    .await;
    if let Err(e) = streamed {
        let why = match tokio::time::timeout(clients.call_limit, writer.abort()).await {
            Ok(Ok(())) => None,
            Ok(Err(abort)) => Some(super::errors::chain(&abort)),
            Err(_) => Some(format!("no answer within {:?}", clients.call_limit)),
        };
        if let Some(why) = why {
            tracing::warn!(object = %object.name, error = %why, "cannot abort a failed upload (its parts stay until the store's lifecycle removes them)");
        }
        return Err(e);
    }
    // `finish` uploads the last part, waits for every part and completes
    // (aborting on failure).
    let done = bounded(
        clients.transfer_limit,
        describe,
        "completing the upload of",
        key,
        async {
            writer
                .finish()
                .await
                .map_err(|e| failed(describe, "completing the upload of", key, &e))
        },
    )
    .await?;
    Ok((size, done.e_tag))
}

/// Reads up to `limit` bytes (less only at the end of `content`).
async fn read_up_to(
    content: &mut (dyn AsyncRead + Unpin + Send),
    limit: usize,
    name: &str,
) -> Result<Vec<u8>, StoreError> {
    let mut buf = Vec::with_capacity(limit.min(1 << 20));
    let mut taken = (&mut *content).take(limit as u64);
    taken
        .read_to_end(&mut buf)
        .await
        .map_err(|source| StoreError::Io {
            what: format!("reading the content of {name}"),
            source,
        })?;
    Ok(buf)
}

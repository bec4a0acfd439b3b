//! `put`: the content streamed in `part_size` buffers, hashed on the way;
//! one `PutObject` with its sha256 when it fits in one buffer, else a
//! multipart upload straight to its key, committed by its marker once
//! complete (`commit.rs` says why and how).

use super::errors::{Failure, store_error};
use super::keys::{self, Sha256At};
use super::{Conn, S3Store, commit};
use crate::store::{ObjectInfo, StoreError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, CompletedMultipartUpload, CompletedPart};
use base64::Engine;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinSet;

/// S3's most parts per multipart upload.
pub(super) const MAX_PARTS: u64 = 10_000;

/// How many part buffers exist: now, and at most since the store was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartBuffers {
    pub live: usize,
    pub peak: usize,
}

/// Counts the part buffers alive (the SDK holds them while a part uploads
/// and may retry).
#[derive(Debug, Default)]
pub(super) struct Gauge {
    live: AtomicUsize,
    peak: AtomicUsize,
}

impl Gauge {
    pub(super) fn now(&self) -> PartBuffers {
        PartBuffers {
            live: self.live.load(Ordering::SeqCst),
            peak: self.peak.load(Ordering::SeqCst),
        }
    }
}

/// One part's bytes, counted in the gauge until its last reference drops.
struct PartBuffer {
    data: Vec<u8>,
    gauge: Arc<Gauge>,
}

impl PartBuffer {
    fn new(gauge: &Arc<Gauge>, size: usize) -> Self {
        let live = gauge.live.fetch_add(1, Ordering::SeqCst) + 1;
        gauge.peak.fetch_max(live, Ordering::SeqCst);
        Self {
            data: vec![0; size],
            gauge: gauge.clone(),
        }
    }
}

impl AsRef<[u8]> for PartBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl Drop for PartBuffer {
    fn drop(&mut self) {
        self.gauge.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads up to `part_size` bytes (fewer only at the end of the content).
async fn read_part(
    store: &S3Store,
    content: &mut (dyn AsyncRead + Unpin + Send),
    name: &str,
) -> Result<PartBuffer, StoreError> {
    let mut part = PartBuffer::new(&store.buffers, store.tuning.part_size);
    let mut len = 0;
    while len < part.data.len() {
        let n = content
            .read(&mut part.data[len..])
            .await
            .map_err(|source| StoreError::Io {
                what: format!("reading the content of {name}"),
                source,
            })?;
        if n == 0 {
            break;
        }
        len += n;
    }
    part.data.truncate(len);
    Ok(part)
}

pub(super) async fn put(
    store: &S3Store,
    name: &str,
    content: &mut (dyn AsyncRead + Unpin + Send),
    metadata: BTreeMap<String, String>,
) -> Result<ObjectInfo, StoreError> {
    let object = store.layout.locate(name)?;
    let too_big = |message| StoreError::Metadata {
        name: name.to_string(),
        message,
    };
    // Refused before anything is uploaded (the real sha256 is as long).
    keys::encode_metadata(&metadata, Sha256At::Object(&"0".repeat(64))).map_err(too_big)?;
    let conn = &store.conn;
    let mut hasher = Sha256::new();
    let first = read_part(store, content, name).await?;
    hasher.update(first.as_ref());
    if first.data.len() < store.tuning.part_size {
        // One request, applied whole by S3, its sha256 in its metadata.
        let sha256 = hex::encode(hasher.finalize());
        let size = first.data.len() as u64;
        let headers =
            keys::encode_metadata(&metadata, Sha256At::Object(&sha256)).map_err(too_big)?;
        conn.transfers
            .put_object()
            .bucket(&conn.bucket)
            .key(&object.key)
            .content_length(size as i64)
            .set_metadata(Some(headers))
            .set_server_side_encryption(conn.sse.clone())
            .set_ssekms_key_id(conn.kms_key_id.clone())
            .body(ByteStream::from(Bytes::from_owner(first)))
            .send()
            .await
            .map_err(store_error("storing", &conn.bucket, Some(&object.key)))?;
        return Ok(ObjectInfo {
            name: name.to_string(),
            size,
            sha256,
            metadata,
        });
    }

    let headers = keys::encode_metadata(&metadata, Sha256At::Marker).map_err(too_big)?;
    let upload_id = create_upload(conn, &object.key, headers).await?;
    let mut parts = JoinSet::new();
    let uploaded = upload_parts(
        store,
        content,
        name,
        &object.key,
        &upload_id,
        first,
        &mut hasher,
        &mut parts,
    )
    .await;
    let (size, etag) = match uploaded {
        Ok(done) => done,
        Err(e) => {
            // Stop the parts in flight before aborting, so none lands after.
            parts.shutdown().await;
            abort(conn, &object.key, &upload_id).await;
            return Err(e);
        }
    };
    // The object is complete, and invisible until its marker names it.
    let sha256 = hex::encode(hasher.finalize());
    if let Err(e) = commit::write_marker(conn, &object, &etag, &sha256).await {
        if let Err(left) = conn.delete(&object.key, "deleting the uncommitted").await {
            tracing::warn!(error = %left, "an uncommitted object is left behind (invisible; removed by a start's sweep a day later)");
        }
        return Err(e);
    }
    Ok(ObjectInfo {
        name: name.to_string(),
        size,
        sha256,
        metadata,
    })
}

/// Starts a multipart upload of `key` with its headers. Every part carries
/// its CRC32, which S3 checks on arrival (a part damaged on the way is
/// refused, not found at restore), as AWS's own tools do.
async fn create_upload(
    conn: &Conn,
    key: &str,
    metadata: HashMap<String, String>,
) -> Result<String, StoreError> {
    let out = conn
        .calls
        .create_multipart_upload()
        .bucket(&conn.bucket)
        .key(key)
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .set_metadata(Some(metadata))
        .set_server_side_encryption(conn.sse.clone())
        .set_ssekms_key_id(conn.kms_key_id.clone())
        .send()
        .await
        .map_err(store_error(
            "starting an upload of",
            &conn.bucket,
            Some(key),
        ))?;
    out.upload_id.ok_or_else(|| {
        StoreError::Unavailable(format!(
            "starting an upload of s3://{}/{key}: the answer has no upload id",
            conn.bucket
        ))
    })
}

/// Uploads `first` and the rest of `content` as parts of `upload_id`, at
/// most `parts_in_flight` at once, and completes the upload once the
/// content ended without error. Returns the size and the object's ETag.
/// On error, the caller stops `parts` and aborts the upload.
#[allow(clippy::too_many_arguments)]
async fn upload_parts(
    store: &S3Store,
    content: &mut (dyn AsyncRead + Unpin + Send),
    name: &str,
    key: &str,
    upload_id: &str,
    first: PartBuffer,
    hasher: &mut Sha256,
    parts: &mut JoinSet<Result<CompletedPart, StoreError>>,
) -> Result<(u64, String), StoreError> {
    let conn = &store.conn;
    let mut done = Vec::new();
    let mut size = 0u64;
    let mut number = 0i32;
    let mut part = first;
    loop {
        let len = part.data.len();
        size += len as u64;
        number += 1;
        if number as u64 > MAX_PARTS {
            return Err(StoreError::Unavailable(format!(
                "storing {name}: more than {MAX_PARTS} parts of {} bytes; raise snapshot.s3.part_size",
                store.tuning.part_size
            )));
        }
        while parts.len() >= store.tuning.parts_in_flight {
            done.push(joined(parts.join_next().await)?);
        }
        parts.spawn(upload_part(
            conn.clone(),
            key.to_string(),
            upload_id.to_string(),
            number,
            part,
        ));
        if len < store.tuning.part_size {
            break;
        }
        // Read the next part while the others upload.
        part = read_part(store, content, name).await?;
        if part.data.is_empty() {
            break;
        }
        hasher.update(part.as_ref());
    }
    while !parts.is_empty() {
        done.push(joined(parts.join_next().await)?);
    }
    done.sort_by_key(|p| p.part_number);
    let etag = complete(conn, key, upload_id, done).await?;
    Ok((size, etag))
}

fn joined(
    outcome: Option<Result<Result<CompletedPart, StoreError>, tokio::task::JoinError>>,
) -> Result<CompletedPart, StoreError> {
    match outcome {
        Some(Ok(result)) => result,
        Some(Err(e)) => Err(StoreError::Unavailable(format!(
            "a part upload task failed: {e}"
        ))),
        None => Err(StoreError::Unavailable(
            "a part upload task vanished".into(),
        )),
    }
}

async fn upload_part(
    conn: Arc<Conn>,
    key: String,
    upload_id: String,
    number: i32,
    part: PartBuffer,
) -> Result<CompletedPart, StoreError> {
    let len = part.data.len() as i64;
    // A header the SDK sends as given (no checksum trailer, which older
    // S3-compatible stores refuse).
    let crc32 =
        base64::engine::general_purpose::STANDARD.encode(crc32fast::hash(&part.data).to_be_bytes());
    let out = conn
        .transfers
        .upload_part()
        .bucket(&conn.bucket)
        .key(&key)
        .upload_id(&upload_id)
        .part_number(number)
        .content_length(len)
        .checksum_crc32(&crc32)
        .body(ByteStream::from(Bytes::from_owner(part)))
        .send()
        .await
        .map_err(store_error(
            &format!("uploading part {number} of"),
            &conn.bucket,
            Some(&key),
        ))?;
    Ok(CompletedPart::builder()
        .part_number(number)
        .set_e_tag(out.e_tag)
        .checksum_crc32(crc32)
        .build())
}

/// Completes an upload; returns the object's ETag (asked with a
/// `HeadObject` when the answer has none).
async fn complete(
    conn: &Conn,
    key: &str,
    upload_id: &str,
    parts: Vec<CompletedPart>,
) -> Result<String, StoreError> {
    let out = conn
        .transfers
        .complete_multipart_upload()
        .bucket(&conn.bucket)
        .key(key)
        .upload_id(upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .map_err(store_error(
            "completing the upload of",
            &conn.bucket,
            Some(key),
        ))?;
    if let Some(etag) = out.e_tag {
        return Ok(etag);
    }
    let head = conn
        .calls
        .head_object()
        .bucket(&conn.bucket)
        .key(key)
        .send()
        .await
        .map_err(store_error("reading the ETag of", &conn.bucket, Some(key)))?;
    head.e_tag.ok_or_else(|| {
        StoreError::Unavailable(format!(
            "storing s3://{}/{key}: the endpoint gives no ETag, which the commit marker needs",
            conn.bucket
        ))
    })
}

/// Aborts an upload; a failure is logged (the sweep at start retries).
async fn abort(conn: &Conn, key: &str, upload_id: &str) {
    if let Err(e) = conn
        .calls
        .abort_multipart_upload()
        .bucket(&conn.bucket)
        .key(key)
        .upload_id(upload_id)
        .send()
        .await
    {
        let failure = Failure::of(&e);
        tracing::warn!(
            error = %failure.into_error("aborting the upload of", &conn.bucket, Some(key)),
            upload_id,
            "an unfinished upload is left behind (removed by the next start's sweep)"
        );
    }
}

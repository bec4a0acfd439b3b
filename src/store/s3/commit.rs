//! The commit of a multipart put: the complete temporary object copied
//! server-side to its name with its metadata — one `CopyObject` up to
//! [`super::Tuning::single_copy_max`], else a multipart copy
//! (`UploadPartCopy`), aborted on failure.

use super::S3Store;
use super::errors::store_error;
use super::keys;
use super::upload::{MAX_PARTS, abort, complete, create_upload, joined};
use crate::store::StoreError;
use aws_sdk_s3::types::{CompletedPart, MetadataDirective};
use std::collections::HashMap;
use tokio::task::JoinSet;

/// Copies the complete temporary object to its name with its metadata:
/// the commit point.
pub(super) async fn copy(
    store: &S3Store,
    from: &str,
    to: &str,
    size: u64,
    metadata: HashMap<String, String>,
) -> Result<(), StoreError> {
    let conn = &store.conn;
    let source = keys::copy_source(&conn.bucket, from);
    if size <= store.tuning.single_copy_max {
        conn.transfers
            .copy_object()
            .bucket(&conn.bucket)
            .key(to)
            .copy_source(source)
            .metadata_directive(MetadataDirective::Replace)
            .set_metadata(Some(metadata))
            .set_server_side_encryption(conn.sse.clone())
            .set_ssekms_key_id(conn.kms_key_id.clone())
            .send()
            .await
            .map_err(store_error(
                "committing (copying) to",
                &conn.bucket,
                Some(to),
            ))?;
        return Ok(());
    }
    let upload_id = create_upload(conn, to, Some(metadata)).await?;
    let copied = copy_parts(store, &source, to, &upload_id, size).await;
    if copied.is_err() {
        abort(conn, to, &upload_id).await;
    }
    copied
}

/// A multipart copy of `size` bytes of `source` to `to`.
async fn copy_parts(
    store: &S3Store,
    source: &str,
    to: &str,
    upload_id: &str,
    size: u64,
) -> Result<(), StoreError> {
    let conn = &store.conn;
    let part = store
        .tuning
        .copy_part_size
        .max(size.div_ceil(MAX_PARTS))
        .clamp(super::MIN_PART_SIZE, super::MAX_PART_SIZE);
    let mut tasks = JoinSet::new();
    let mut done = Vec::new();
    let mut start = 0u64;
    let mut number = 0i32;
    while start < size {
        let end = (start + part).min(size) - 1;
        number += 1;
        while tasks.len() >= store.tuning.parts_in_flight {
            done.push(joined(tasks.join_next().await)?);
        }
        let (conn, source, to, upload_id) = (
            conn.clone(),
            source.to_string(),
            to.to_string(),
            upload_id.to_string(),
        );
        tasks.spawn(async move {
            let out = conn
                .transfers
                .upload_part_copy()
                .bucket(&conn.bucket)
                .key(&to)
                .upload_id(&upload_id)
                .part_number(number)
                .copy_source(source)
                .copy_source_range(format!("bytes={start}-{end}"))
                .send()
                .await
                .map_err(store_error(
                    &format!("committing (copying part {number}) to"),
                    &conn.bucket,
                    Some(&to),
                ))?;
            Ok(CompletedPart::builder()
                .part_number(number)
                .set_e_tag(out.copy_part_result.and_then(|r| r.e_tag))
                .build())
        });
        start = end + 1;
    }
    while !tasks.is_empty() {
        done.push(joined(tasks.join_next().await)?);
    }
    done.sort_by_key(|p| p.part_number);
    complete(conn, to, upload_id, done).await
}

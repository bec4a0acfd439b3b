//! `get`, `head` and `list`: an object's info comes from its headers (the
//! caller's metadata, and the sha256 or the word that it is in the marker)
//! and, for a multipart object, its commit marker (`commit.rs`). An object
//! without eco's sha256 was not committed by eco and is not an object of
//! the store, except a record, whose info is computed from its (small)
//! content, as the directory store does: records are never skipped.

use super::errors::store_error;
use super::keys::{self, Located, Sha256Of, is_record_name};
use super::{Conn, S3Store, commit};
use crate::store::{ListPage, NameFilter, ObjectInfo, ObjectReader, StoreError};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use tokio::task::JoinSet;

/// The largest record read to compute its info (records are small JSON
/// documents; the directory store has the same bound).
pub(super) const MAX_RECORD: u64 = 1 << 20;

fn metadata_error(name: &str) -> impl FnOnce(String) -> StoreError {
    let name = name.to_string();
    move |message| StoreError::Metadata { name, message }
}

fn size_of(name: &str, length: Option<i64>) -> Result<u64, StoreError> {
    length
        .and_then(|l| u64::try_from(l).ok())
        .ok_or_else(|| StoreError::Metadata {
            name: name.to_string(),
            message: "the endpoint gave no content length".into(),
        })
}

/// The info of an object whose headers were read: `None` when eco did not
/// commit it.
async fn info_of(
    conn: &Conn,
    object: &Located,
    length: Option<i64>,
    etag: Option<&str>,
    headers: Option<&HashMap<String, String>>,
) -> Result<Option<ObjectInfo>, StoreError> {
    let name = &object.name;
    let (sha256, metadata) = keys::decode_metadata(headers).map_err(metadata_error(name))?;
    let sha256 = match sha256 {
        Sha256Of::Object(sha256) => sha256,
        Sha256Of::Marker => match commit::committed_sha256(conn, object, etag).await? {
            Some(sha256) => sha256,
            None => return Ok(None),
        },
        Sha256Of::Absent if is_record_name(name) => {
            return Ok(read_small(conn, &object.key, name)
                .await?
                .map(|content| record_info(name, &content)));
        }
        Sha256Of::Absent => {
            tracing::debug!(object = %name, "skipping an object without eco's sha256 metadata (not written by eco)");
            return Ok(None);
        }
    };
    Ok(Some(ObjectInfo {
        name: name.to_string(),
        size: size_of(name, length)?,
        sha256,
        metadata,
    }))
}

fn record_info(name: &str, content: &[u8]) -> ObjectInfo {
    ObjectInfo {
        name: name.to_string(),
        size: content.len() as u64,
        sha256: hex::encode(Sha256::digest(content)),
        metadata: BTreeMap::new(),
    }
}

/// The whole content of a small object (a record); `None` when missing,
/// an error when larger than [`MAX_RECORD`].
pub(super) async fn read_small(
    conn: &Conn,
    key: &str,
    name: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    let Some(out) = conn.get_object(key, "reading").await? else {
        return Ok(None);
    };
    let too_big = |size: u64| StoreError::Metadata {
        name: name.to_string(),
        message: format!("{size} bytes, more than a record can hold ({MAX_RECORD})"),
    };
    if let Some(size) = out.content_length.and_then(|l| u64::try_from(l).ok())
        && size > MAX_RECORD
    {
        return Err(too_big(size));
    }
    let mut content = Vec::new();
    Box::pin(out.body.into_async_read())
        .take(MAX_RECORD + 1)
        .read_to_end(&mut content)
        .await
        .map_err(|source| StoreError::Io {
            what: format!("reading s3://{}/{key}", conn.bucket),
            source,
        })?;
    if content.len() as u64 > MAX_RECORD {
        return Err(too_big(content.len() as u64));
    }
    Ok(Some(content))
}

pub(super) async fn get(
    store: &S3Store,
    name: &str,
) -> Result<(ObjectInfo, ObjectReader), StoreError> {
    let object = store.layout.locate(name)?;
    let conn = &store.conn;
    let Some(out) = conn.get_object(&object.key, "reading").await? else {
        return Err(StoreError::NotFound(name.to_string()));
    };
    let (sha256, metadata) =
        keys::decode_metadata(out.metadata.as_ref()).map_err(metadata_error(name))?;
    let sha256 = match sha256 {
        Sha256Of::Object(sha256) => sha256,
        // The marker must name the ETag of the body being read.
        Sha256Of::Marker => {
            match commit::committed_sha256(conn, &object, out.e_tag.as_deref()).await? {
                Some(sha256) => sha256,
                None => return Err(StoreError::NotFound(name.to_string())),
            }
        }
        Sha256Of::Absent if is_record_name(name) => {
            drop(out);
            let content = read_small(conn, &object.key, name)
                .await?
                .ok_or_else(|| StoreError::NotFound(name.to_string()))?;
            let info = record_info(name, &content);
            return Ok((info, Box::new(std::io::Cursor::new(content))));
        }
        // Not committed by eco: not an object of the store.
        Sha256Of::Absent => return Err(StoreError::NotFound(name.to_string())),
    };
    let info = ObjectInfo {
        name: name.to_string(),
        size: size_of(name, out.content_length)?,
        sha256,
        metadata,
    };
    // Streamed: the body is read as the caller reads.
    Ok((info, Box::new(Box::pin(out.body.into_async_read()))))
}

pub(super) async fn head(
    conn: Arc<Conn>,
    object: Located,
) -> Result<Option<ObjectInfo>, StoreError> {
    let Some(out) = conn.head_object(&object.key, "reading the info of").await? else {
        return Ok(None);
    };
    info_of(
        &conn,
        &object,
        out.content_length,
        out.e_tag.as_deref(),
        out.metadata.as_ref(),
    )
    .await
}

/// Why the object is there but not committed by eco (no sha256 of eco's,
/// or no marker naming its ETag); `None` when absent or committed.
pub(super) async fn uncommitted(
    conn: Arc<Conn>,
    object: Located,
) -> Result<Option<String>, StoreError> {
    let Some(out) = conn.head_object(&object.key, "reading the info of").await? else {
        return Ok(None);
    };
    let committed = info_of(
        &conn,
        &object,
        out.content_length,
        out.e_tag.as_deref(),
        out.metadata.as_ref(),
    )
    .await?;
    Ok(committed.is_none().then(|| {
        format!(
            "s3://{}/{} ({} bytes) has no sha256 of eco's or no commit marker: eco did not commit it, so it is not read (a crash leftover, or put there by another tool)",
            conn.bucket,
            object.key,
            out.content_length.unwrap_or(0)
        )
    }))
}

/// One page; only the names `wanted` accepts get a `HeadObject`.
pub(super) async fn list(
    store: &S3Store,
    prefix: &str,
    after: Option<&str>,
    wanted: &NameFilter,
) -> Result<ListPage, StoreError> {
    let key_prefix = store.layout.list_prefix(prefix)?;
    let conn = &store.conn;
    let out = conn
        .calls
        .list_objects_v2()
        .bucket(&conn.bucket)
        .prefix(&key_prefix)
        .set_start_after(after.map(|a| store.layout.cursor_key(a)))
        .set_max_keys(store.tuning.page_size)
        .send()
        .await
        .map_err(store_error("listing", &conn.bucket, Some(&key_prefix)))?;
    let mut last = None;
    let mut unwanted = 0usize;
    let mut heads_for = Vec::new();
    for key in out
        .contents
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| o.key)
    {
        let Some(name) = store.layout.name_of(&key) else {
            continue;
        };
        last = Some(name.to_string());
        if !wanted(name) {
            // Not a name the caller keeps (junk beside the snapshots):
            // no request for it.
            unwanted += 1;
            continue;
        }
        if let Ok(object) = store.layout.locate(name) {
            heads_for.push(object);
        } else {
            // Hidden keys (.sha256/, .probe/) and keys no object has.
            tracing::debug!(key = %key, "skipping a key that names no object of the store");
        }
    }
    let next = match (out.is_truncated == Some(true), last) {
        (false, _) => None,
        (true, Some(last)) => Some(last),
        (true, None) => {
            return Err(StoreError::Unavailable(format!(
                "listing s3://{}/{key_prefix}: the endpoint says more keys follow but returned none",
                conn.bucket
            )));
        }
    };
    if unwanted > 0 {
        tracing::debug!(prefix = %key_prefix, keys = unwanted, "skipped keys whose names the listing does not keep, without reading them");
    }
    let mut objects = Vec::with_capacity(heads_for.len());
    for result in heads(conn, heads_for, store.tuning.heads_in_flight).await? {
        match result {
            Ok(Some(info)) => objects.push(info),
            // Deleted since the page was read, or not committed by eco.
            Ok(None) => {}
            // Metadata eco cannot read commits nothing; a record's problem
            // fails the listing: records are never skipped.
            Err(StoreError::Metadata { name, message }) if !is_record_name(&name) => {
                store.warn_once(&name, &message);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(ListPage { objects, next })
}

/// [`head`] of each object, `limit` at a time, in order.
async fn heads(
    conn: &Arc<Conn>,
    wanted: Vec<Located>,
    limit: usize,
) -> Result<Vec<Result<Option<ObjectInfo>, StoreError>>, StoreError> {
    let mut results: Vec<Option<Result<Option<ObjectInfo>, StoreError>>> =
        (0..wanted.len()).map(|_| None).collect();
    let mut todo = wanted.into_iter().enumerate();
    let mut tasks = JoinSet::new();
    loop {
        while tasks.len() < limit.max(1) {
            let Some((i, object)) = todo.next() else {
                break;
            };
            let conn = conn.clone();
            tasks.spawn(async move { (i, head(conn, object).await) });
        }
        match tasks.join_next().await {
            None => break,
            Some(Ok((i, result))) => results[i] = Some(result),
            Some(Err(e)) => {
                return Err(StoreError::Unavailable(format!(
                    "a listing's HeadObject task failed: {e}"
                )));
            }
        }
    }
    Ok(results.into_iter().flatten().collect())
}

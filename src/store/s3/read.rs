//! `get`, `head` and `list`: an object's info comes from its headers (the
//! sha256 and the caller's metadata are user metadata); an object without
//! eco's sha256 was not committed by eco and is not an object of the store,
//! except a record, whose info is computed from its (small) content, as
//! the directory store does: records are never skipped.

use super::errors::{Class, Failure, store_error};
use super::keys::{self, is_record_name};
use super::{Conn, S3Store};
use crate::store::{ListPage, ObjectInfo, ObjectReader, StoreError, check_name};
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
    key: &str,
    name: &str,
    length: Option<i64>,
    headers: Option<&HashMap<String, String>>,
) -> Result<Option<ObjectInfo>, StoreError> {
    let (sha256, metadata) = keys::decode_metadata(headers).map_err(metadata_error(name))?;
    match sha256 {
        Some(sha256) => Ok(Some(ObjectInfo {
            name: name.to_string(),
            size: size_of(name, length)?,
            sha256,
            metadata,
        })),
        None if is_record_name(name) => Ok(read_small(conn, key, name)
            .await?
            .map(|content| record_info(name, &content))),
        None => {
            tracing::debug!(object = %name, "skipping an object without eco's sha256 metadata (not written by eco)");
            Ok(None)
        }
    }
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
    let out = match conn
        .transfers
        .get_object()
        .bucket(&conn.bucket)
        .key(key)
        .send()
        .await
    {
        Ok(out) => out,
        Err(e) => {
            let failure = Failure::of(&e);
            if failure.class == Class::NotFound {
                return Ok(None);
            }
            return Err(failure.into_error("reading", &conn.bucket, Some(key)));
        }
    };
    let too_big = |size: u64| StoreError::Metadata {
        name: name.to_string(),
        message: format!("{size} bytes, more than a record can hold ({MAX_RECORD})"),
    };
    if let Some(size) = out.content_length.and_then(|l| u64::try_from(l).ok()) {
        if size > MAX_RECORD {
            return Err(too_big(size));
        }
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
    let key = store.layout.key(name)?;
    let conn = &store.conn;
    let out = match conn
        .transfers
        .get_object()
        .bucket(&conn.bucket)
        .key(&key)
        .send()
        .await
    {
        Ok(out) => out,
        Err(e) => {
            let failure = Failure::of(&e);
            if failure.class == Class::NotFound {
                return Err(StoreError::NotFound(name.to_string()));
            }
            return Err(failure.into_error("reading", &conn.bucket, Some(&key)));
        }
    };
    let (sha256, metadata) =
        keys::decode_metadata(out.metadata.as_ref()).map_err(metadata_error(name))?;
    match sha256 {
        Some(sha256) => {
            let info = ObjectInfo {
                name: name.to_string(),
                size: size_of(name, out.content_length)?,
                sha256,
                metadata,
            };
            // Streamed: the body is read as the caller reads.
            Ok((info, Box::new(Box::pin(out.body.into_async_read()))))
        }
        None if is_record_name(name) => {
            drop(out);
            let content = read_small(conn, &key, name)
                .await?
                .ok_or_else(|| StoreError::NotFound(name.to_string()))?;
            let info = record_info(name, &content);
            Ok((info, Box::new(std::io::Cursor::new(content))))
        }
        // Not committed by eco: not an object of the store.
        None => Err(StoreError::NotFound(name.to_string())),
    }
}

pub(super) async fn head(
    conn: Arc<Conn>,
    key: String,
    name: String,
) -> Result<Option<ObjectInfo>, StoreError> {
    let out = match conn
        .calls
        .head_object()
        .bucket(&conn.bucket)
        .key(&key)
        .send()
        .await
    {
        Ok(out) => out,
        Err(e) => {
            let failure = Failure::of(&e);
            if failure.class == Class::NotFound {
                return Ok(None);
            }
            return Err(failure.into_error("reading the info of", &conn.bucket, Some(&key)));
        }
    };
    info_of(
        &conn,
        &key,
        &name,
        out.content_length,
        out.metadata.as_ref(),
    )
    .await
}

pub(super) async fn list(
    store: &S3Store,
    prefix: &str,
    after: Option<&str>,
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
    let mut wanted = Vec::new();
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
        if check_name(name).is_ok() {
            wanted.push((key.clone(), name.to_string()));
        } else {
            // Scratch keys (.upload/, .probe/) and keys no object has.
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
    let mut objects = Vec::with_capacity(wanted.len());
    for result in heads(conn, wanted, store.tuning.heads_in_flight).await? {
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

/// `HeadObject` of each `(key, name)`, `limit` at a time, in order.
async fn heads(
    conn: &Arc<Conn>,
    wanted: Vec<(String, String)>,
    limit: usize,
) -> Result<Vec<Result<Option<ObjectInfo>, StoreError>>, StoreError> {
    let mut results: Vec<Option<Result<Option<ObjectInfo>, StoreError>>> =
        (0..wanted.len()).map(|_| None).collect();
    let mut todo = wanted.into_iter().enumerate();
    let mut tasks = JoinSet::new();
    loop {
        while tasks.len() < limit.max(1) {
            let Some((i, (key, name))) = todo.next() else {
                break;
            };
            let conn = conn.clone();
            tasks.spawn(async move { (i, head(conn, key, name).await) });
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

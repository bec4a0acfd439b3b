//! Reads: `get`, `head`, listings and `uncommitted`. An object is read
//! only while its info object names its content ([`super::info`]);
//! records (`is_record_name`) have no info and are read whole.

use super::CloudStore;
use super::errors::{bounded, failed};
use super::info::{Committed, MAX_INFO};
use super::layout::Located;
use crate::store::{
    ListPage, NameFilter, ObjectInfo, ObjectReader, StoreError, check_name, is_record_name,
};
use futures_util::{StreamExt, TryStreamExt};
use object_store::{GetOptions, ObjectMeta};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The largest record read (records are small JSON documents).
pub(super) const MAX_RECORD: u64 = 1 << 20;

/// A record's info and content (`None` when it does not exist).
pub(super) async fn read_record(
    store: &CloudStore,
    object: &Located,
) -> Result<Option<(ObjectInfo, bytes::Bytes)>, StoreError> {
    let Some((_, bytes)) = store
        .clients
        .read_small(&object.key, MAX_RECORD, "reading the record")
        .await?
    else {
        return Ok(None);
    };
    let info = ObjectInfo {
        name: object.name.clone(),
        size: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(&bytes)),
        metadata: BTreeMap::new(),
    };
    Ok(Some((info, bytes)))
}

/// The info object of an object (`None` when there is none).
async fn read_info(store: &CloudStore, object: &Located) -> Result<Option<Committed>, StoreError> {
    match store
        .clients
        .read_small(&object.info, MAX_INFO, "reading the info object")
        .await?
    {
        Some((_, bytes)) => Committed::decode(&object.name, &bytes).map(Some),
        None => Ok(None),
    }
}

/// What is at an object's name: its info when committed, or why not.
enum Found {
    Committed(Committed),
    /// Nothing at all.
    Absent,
    /// Something that is not an object, and why.
    Uncommitted(String),
}

/// Looks at an object's info and content (the content's facts given when
/// a listing already has them).
async fn look(
    store: &CloudStore,
    object: &Located,
    content: Option<ObjectMeta>,
) -> Result<Found, StoreError> {
    let info = read_info(store, object).await;
    let content = match content {
        Some(meta) => Some(meta),
        None => {
            store
                .clients
                .head(&object.key, "reading the facts of")
                .await?
        }
    };
    let Some(content) = content else {
        return Ok(Found::Absent);
    };
    Ok(match info {
        Ok(Some(committed)) => match committed.mismatch(&content) {
            None => Found::Committed(committed),
            Some(why) => Found::Uncommitted(format!(
                "{} is not the content its info object {} commits: {why} (replaced behind eco's back, or a put was interrupted before its info was written)",
                object.key, object.info
            )),
        },
        Ok(None) => Found::Uncommitted(format!(
            "{} has no info object {} (a put interrupted before its info was written, or written by something other than eco)",
            object.key, object.info
        )),
        Err(StoreError::Metadata { message, .. }) => Found::Uncommitted(format!(
            "the info object {} of {} is unreadable: {message}",
            object.info, object.key
        )),
        Err(e) => return Err(e),
    })
}

pub(super) async fn head(
    store: &CloudStore,
    object: &Located,
) -> Result<Option<ObjectInfo>, StoreError> {
    if is_record_name(&object.name) {
        return Ok(read_record(store, object).await?.map(|(info, _)| info));
    }
    match look(store, object, None).await? {
        Found::Committed(c) => Ok(Some(c.info)),
        Found::Absent | Found::Uncommitted(_) => Ok(None),
    }
}

pub(super) async fn uncommitted(
    store: &CloudStore,
    object: &Located,
) -> Result<Option<String>, StoreError> {
    if is_record_name(&object.name) {
        return Ok(None);
    }
    match look(store, object, None).await? {
        Found::Uncommitted(why) => Ok(Some(why)),
        Found::Committed(_) | Found::Absent => Ok(None),
    }
}

pub(super) async fn get(
    store: &CloudStore,
    name: &str,
) -> Result<(ObjectInfo, ObjectReader), StoreError> {
    let object = store.layout.locate(name)?;
    if is_record_name(name) {
        let (info, bytes) = read_record(store, &object)
            .await?
            .ok_or_else(|| StoreError::NotFound(name.to_string()))?;
        return Ok((info, Box::new(std::io::Cursor::new(bytes))));
    }
    let committed = match read_info(store, &object).await {
        Ok(Some(c)) => c,
        Ok(None) => return Err(StoreError::NotFound(name.to_string())),
        Err(StoreError::Metadata { message, .. }) => {
            store.warn_once(name, &message);
            return Err(StoreError::NotFound(name.to_string()));
        }
        Err(e) => return Err(e),
    };
    let clients = &*store.clients;
    let key = object.key.as_ref();
    // The content the info commits, and only that one: a content replaced
    // since is refused by its ETag.
    let options = GetOptions {
        if_match: committed.etag.clone(),
        ..Default::default()
    };
    let got = bounded(
        clients.transfer_limit,
        &clients.describe,
        "reading",
        key,
        async {
            match clients.downloads.get_opts(&object.key, options).await {
                Ok(got) => Ok(Some(got)),
                Err(object_store::Error::NotFound { .. })
                | Err(object_store::Error::Precondition { .. }) => Ok(None),
                Err(e) => Err(failed(&clients.describe, "reading", key, &e)),
            }
        },
    )
    .await?;
    let Some(got) = got else {
        return Err(StoreError::NotFound(name.to_string()));
    };
    if committed.mismatch(&got.meta).is_some() {
        return Err(StoreError::NotFound(name.to_string()));
    }
    let stream = got.into_stream().map_err(std::io::Error::other);
    Ok((
        committed.info,
        Box::new(tokio_util::io::StreamReader::new(stream)),
    ))
}

pub(super) async fn list(
    store: &CloudStore,
    prefix: &str,
    after: Option<&str>,
    wanted: &NameFilter,
) -> Result<ListPage, StoreError> {
    let (folder, keep) = store.layout.listing(prefix)?;
    let clients = &*store.clients;
    let offset = after.map(|a| store.layout.cursor_key(a));
    let mut listing = match &offset {
        // The offset as a key: a cursor is any string the last page ended
        // on; one that is no key lists from the start of the folder (the
        // filter below drops what is not after it).
        Some(o) => match object_store::path::Path::parse(o) {
            Ok(from) => clients.calls.list_with_offset(Some(&folder), &from),
            Err(_) => clients.calls.list(Some(&folder)),
        },
        None => clients.calls.list(Some(&folder)),
    };
    let page_size = store.tuning.page_size.max(1);
    let mut scanned: Vec<ObjectMeta> = Vec::new();
    let mut last: Option<String> = None;
    let shown = folder.as_ref();
    while scanned.len() < page_size {
        // Each page of the store's listing is one call.
        let next = bounded(
            clients.call_limit,
            &clients.describe,
            "listing",
            shown,
            async { Ok(listing.next().await) },
        )
        .await?;
        let Some(item) = next else { break };
        let meta = item.map_err(|e| failed(&clients.describe, "listing", shown, &e))?;
        let key = meta.location.as_ref();
        if !key.starts_with(&keep) || offset.as_deref().is_some_and(|o| key <= o) {
            continue;
        }
        last = store.layout.name_of(key).map(str::to_string);
        scanned.push(meta);
    }
    let next = if scanned.len() == page_size {
        last
    } else {
        None
    };
    let kept: Vec<(Located, ObjectMeta)> = scanned
        .into_iter()
        .filter_map(|meta| {
            let name = store.layout.name_of(meta.location.as_ref())?.to_string();
            if check_name(&name).is_err() || !wanted(&name) {
                return None;
            }
            // A name of another cluster cannot be listed here (the folder
            // is within the cluster), so `locate` only fails on junk.
            let object = store.layout.locate(&name).ok()?;
            Some((object, meta))
        })
        .collect();
    let infos: Vec<Result<Option<ObjectInfo>, StoreError>> = futures_util::stream::iter(kept)
        .map(|(object, meta)| async move { listed(store, &object, meta).await })
        .buffered(store.tuning.infos_in_flight.max(1))
        .collect()
        .await;
    let mut objects = Vec::new();
    for info in infos {
        if let Some(info) = info? {
            objects.push(info);
        }
    }
    Ok(ListPage { objects, next })
}

/// The info of a listed content: `None` (skipped) when it is not
/// committed; records are read (and fail the listing when unreadable).
async fn listed(
    store: &CloudStore,
    object: &Located,
    meta: ObjectMeta,
) -> Result<Option<ObjectInfo>, StoreError> {
    if is_record_name(&object.name) {
        if meta.size > MAX_RECORD {
            return Err(StoreError::Metadata {
                name: object.name.clone(),
                message: format!(
                    "{} bytes, more than a record can hold ({MAX_RECORD})",
                    meta.size
                ),
            });
        }
        return Ok(read_record(store, object).await?.map(|(info, _)| info));
    }
    match look(store, object, Some(meta)).await? {
        Found::Committed(c) => Ok(Some(c.info)),
        Found::Absent => Ok(None),
        Found::Uncommitted(why) => {
            if why.contains("is unreadable") {
                store.warn_once(&object.name, &why);
            } else {
                tracing::debug!(object = %object.name, why = %why, "skipping a store object that is not committed");
            }
            Ok(None)
        }
    }
}

//! The sweep of what crashed puts and probes left behind, once older than
//! a day: probe keys, unfinished multipart uploads, and multipart objects
//! that were completed but never committed (no marker names them).

use super::S3Store;
use super::errors::{Failure, store_error};
use super::keys::{self, Located, MARKERS, PROBES, Sha256Of};
use super::{Conn, commit};
use crate::store::StoreError;
use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::Object;
use std::collections::HashSet;
use std::time::{Duration, SystemTime};

/// How old a leftover must be before the start-time sweep removes it.
pub(super) const LEFTOVER_AGE: Duration = Duration::from_secs(24 * 3600);

fn older_than(at: Option<&DateTime>, cutoff: SystemTime) -> bool {
    at.and_then(|t| SystemTime::try_from(*t).ok())
        .is_some_and(|t| t <= cutoff)
}

pub(super) async fn sweep(store: &S3Store, age: Duration) -> Result<usize, StoreError> {
    let cutoff = SystemTime::now()
        .checked_sub(age)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut removed = 0;
    for o in list_all(&store.conn, &store.layout.scratch_prefix(PROBES)).await? {
        if let Some(key) = &o.key
            && older_than(o.last_modified.as_ref(), cutoff)
        {
            store.conn.delete(key, "sweeping").await?;
            removed += 1;
        }
    }
    removed += abort_unfinished(store, cutoff).await?;
    removed += remove_uncommitted(store, cutoff).await?;
    Ok(removed)
}

/// Every object under `prefix`, all pages.
async fn list_all(conn: &Conn, prefix: &str) -> Result<Vec<Object>, StoreError> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let out = conn
            .calls
            .list_objects_v2()
            .bucket(&conn.bucket)
            .prefix(prefix)
            .set_start_after(after.take())
            .send()
            .await
            .map_err(store_error("listing", &conn.bucket, Some(prefix)))?;
        let objects = out.contents.unwrap_or_default();
        after = objects.last().and_then(|o| o.key.clone());
        all.extend(objects);
        if out.is_truncated != Some(true) || after.is_none() {
            return Ok(all);
        }
    }
}

/// Complete multipart objects of eco whose marker is missing or names
/// another content, a day old: a crash between the completion and the
/// marker. Deleted with any such marker.
async fn remove_uncommitted(store: &S3Store, cutoff: SystemTime) -> Result<usize, StoreError> {
    let conn = &store.conn;
    let prefix = store.layout.cluster_prefix();
    let all = list_all(conn, &prefix).await?;
    let markers: HashSet<&str> = all
        .iter()
        .filter_map(|o| o.key.as_deref())
        .filter(|k| k.starts_with(&format!("{prefix}{MARKERS}/")))
        .collect();
    let mut removed = 0;
    for o in &all {
        let (Some(key), true) = (&o.key, older_than(o.last_modified.as_ref(), cutoff)) else {
            continue;
        };
        let Some(object) = store
            .layout
            .name_of(key)
            .and_then(|name| store.layout.locate(name).ok())
        else {
            continue; // hidden keys (markers, probes) and keys no object has
        };
        if keys::is_record_name(&object.name) {
            continue;
        }
        if !is_uncommitted(conn, &object, markers.contains(object.marker.as_str())).await? {
            continue;
        }
        tracing::info!(object = %object.name, "sweeping a multipart object that was never committed (no marker names it)");
        conn.delete(&object.key, "sweeping").await?;
        conn.delete(&object.marker, "sweeping the stale marker of")
            .await?;
        removed += 1;
    }
    Ok(removed)
}

/// Whether `object` is eco's multipart object without a marker that
/// names it. Objects of other writers are never uncommitted.
async fn is_uncommitted(
    conn: &Conn,
    object: &Located,
    has_marker: bool,
) -> Result<bool, StoreError> {
    let Some(out) = conn.head_object(&object.key, "reading the info of").await? else {
        return Ok(false); // deleted since the listing
    };
    if !matches!(
        keys::decode_metadata(out.metadata.as_ref()),
        Ok((Sha256Of::Marker, _))
    ) {
        return Ok(false);
    }
    if !has_marker {
        return Ok(true);
    }
    Ok(commit::committed_sha256(conn, object, out.e_tag.as_deref())
        .await?
        .is_none())
}

/// Aborts the multipart uploads under the cluster's prefix started before
/// `cutoff`.
async fn abort_unfinished(store: &S3Store, cutoff: SystemTime) -> Result<usize, StoreError> {
    let conn = &store.conn;
    let prefix = store.layout.cluster_prefix();
    let mut removed = 0;
    let (mut key_marker, mut id_marker) = (None, None);
    loop {
        let out = match conn
            .calls
            .list_multipart_uploads()
            .bucket(&conn.bucket)
            .prefix(&prefix)
            .set_key_marker(key_marker.take())
            .set_upload_id_marker(id_marker.take())
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                let failure = Failure::of(&e);
                if failure.not_implemented() {
                    tracing::debug!("the endpoint cannot list multipart uploads; not swept");
                    return Ok(removed);
                }
                return Err(failure.into_error(
                    "listing the uploads under",
                    &conn.bucket,
                    Some(&prefix),
                ));
            }
        };
        for u in out.uploads.unwrap_or_default() {
            if let (Some(key), Some(id)) = (&u.key, &u.upload_id)
                && older_than(u.initiated.as_ref(), cutoff)
            {
                conn.calls
                    .abort_multipart_upload()
                    .bucket(&conn.bucket)
                    .key(key)
                    .upload_id(id)
                    .send()
                    .await
                    .map_err(store_error(
                        "aborting the upload of",
                        &conn.bucket,
                        Some(key),
                    ))?;
                removed += 1;
            }
        }
        if out.is_truncated != Some(true) {
            return Ok(removed);
        }
        key_marker = out.next_key_marker;
        id_marker = out.next_upload_id_marker;
        if key_marker.is_none() {
            return Ok(removed);
        }
    }
}

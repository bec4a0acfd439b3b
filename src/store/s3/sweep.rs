//! The sweep of what crashed puts and probes left behind: temporary
//! uploads, probe keys and unfinished multipart uploads older than a day.

use super::S3Store;
use super::errors::{Failure, store_error};
use super::keys::{PROBES, UPLOADS};
use crate::store::StoreError;
use aws_sdk_s3::primitives::DateTime;
use std::time::{Duration, SystemTime};

/// How old a leftover must be before the start-time sweep removes it.
pub(super) const LEFTOVER_AGE: Duration = Duration::from_secs(24 * 3600);

fn older_than(at: Option<&DateTime>, cutoff: SystemTime) -> bool {
    at.and_then(|t| SystemTime::try_from(*t).ok())
        .is_some_and(|t| t <= cutoff)
}

pub(super) async fn sweep(store: &S3Store, age: Duration) -> Result<usize, StoreError> {
    let conn = &store.conn;
    let cutoff = SystemTime::now()
        .checked_sub(age)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut removed = 0;
    for folder in [UPLOADS, PROBES] {
        let prefix = store.layout.scratch_prefix(folder);
        let mut after: Option<String> = None;
        loop {
            let out = conn
                .calls
                .list_objects_v2()
                .bucket(&conn.bucket)
                .prefix(&prefix)
                .set_start_after(after.take())
                .send()
                .await
                .map_err(store_error("listing", &conn.bucket, Some(&prefix)))?;
            let objects = out.contents.unwrap_or_default();
            after = objects.last().and_then(|o| o.key.clone());
            for o in &objects {
                if let Some(key) = &o.key {
                    if older_than(o.last_modified.as_ref(), cutoff) {
                        conn.delete(key, "sweeping").await?;
                        removed += 1;
                    }
                }
            }
            if out.is_truncated != Some(true) || after.is_none() {
                break;
            }
        }
    }
    let prefix = store.layout.scratch_prefix(UPLOADS);
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
                    break;
                }
                return Err(failure.into_error(
                    "listing the uploads under",
                    &conn.bucket,
                    Some(&prefix),
                ));
            }
        };
        for u in out.uploads.unwrap_or_default() {
            if let (Some(key), Some(id)) = (&u.key, &u.upload_id) {
                if older_than(u.initiated.as_ref(), cutoff) {
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
        }
        if out.is_truncated != Some(true) {
            break;
        }
        key_marker = out.next_key_marker;
        id_marker = out.next_upload_id_marker;
        if key_marker.is_none() {
            break;
        }
    }
    Ok(removed)
}

//! Conditional create (`If-None-Match: *`), the start-time checks that
//! prove the endpoint honours it, and the sweep of what crashed puts left.

use super::errors::{Class, Failure, store_error};
use super::keys::{self, PROBES, UPLOADS};
use super::read::read_small;
use super::{Conn, S3Store};
use crate::store::{ConditionalCreate, CreateOutcome, StoreError};
use aws_sdk_s3::primitives::{ByteStream, DateTime};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};
use tokio::task::JoinSet;

/// Attempts of a conditional create that meets concurrent writers (409)
/// or a winner deleted before it was read.
const CREATE_ATTEMPTS: u32 = 10;

/// Creators per burst of concurrent conditional creates of one probe key
/// at start ([`super::Tuning::probe_bursts`] bursts): an endpoint that
/// checks `If-None-Match` and then writes, without atomicity, lets several
/// creators of a burst win.
const BURST: usize = 8;

/// How old a leftover must be before the start-time sweep removes it.
pub(super) const LEFTOVER_AGE: Duration = Duration::from_secs(24 * 3600);

enum Conditional {
    Created,
    /// The key exists (412).
    Exists,
    /// Concurrent conditional writes on the key (409): try again.
    Conflict,
}

/// One `PutObject` with `If-None-Match: *`, its sha256 in the metadata.
async fn conditional_put(
    conn: &Conn,
    key: &str,
    content: &[u8],
) -> Result<Conditional, StoreError> {
    let sha256 = hex::encode(Sha256::digest(content));
    let headers = keys::encode_metadata(&BTreeMap::new(), &sha256)
        .map_err(|message| StoreError::Unavailable(format!("creating {key}: {message}")))?;
    let sent = conn
        .calls
        .put_object()
        .bucket(&conn.bucket)
        .key(key)
        .if_none_match("*")
        .content_length(content.len() as i64)
        .set_metadata(Some(headers))
        .set_server_side_encryption(conn.sse.clone())
        .set_ssekms_key_id(conn.kms_key_id.clone())
        .body(ByteStream::from(content.to_vec()))
        .send()
        .await;
    match sent {
        Ok(_) => Ok(Conditional::Created),
        Err(e) => {
            let failure = Failure::of(&e);
            match failure.class {
                Class::PreconditionFailed => Ok(Conditional::Exists),
                Class::Conflict => Ok(Conditional::Conflict),
                _ => Err(failure.into_error("creating", &conn.bucket, Some(key))),
            }
        }
    }
}

pub(super) async fn create_if_absent(
    store: &S3Store,
    name: &str,
    content: &[u8],
) -> Result<CreateOutcome, StoreError> {
    let key = store.layout.key(name)?;
    let conn = &store.conn;
    for attempt in 1..=CREATE_ATTEMPTS {
        match conditional_put(conn, &key, content).await? {
            Conditional::Created => return Ok(CreateOutcome::Created),
            Conditional::Exists => {
                if let Some(existing) = read_small(conn, &key, name).await? {
                    return Ok(CreateOutcome::AlreadyExists(existing));
                }
                // Deleted between our attempt and the read: try again.
            }
            Conditional::Conflict => {
                let pause = 20u64 << attempt.min(6);
                let jitter = rand::random::<u64>() % pause;
                tokio::time::sleep(Duration::from_millis(pause + jitter)).await;
            }
        }
    }
    Err(StoreError::Unavailable(format!(
        "creating s3://{}/{key}: still contended after {CREATE_ATTEMPTS} attempts",
        conn.bucket
    )))
}

pub(super) async fn check_at_start(store: &S3Store) -> Result<ConditionalCreate, StoreError> {
    let conn = &store.conn;
    // A listing rather than HeadBucket: its errors have a body, so the
    // endpoint's code (NoSuchBucket, InvalidAccessKeyId,
    // PermanentRedirect…) names the cause; and eco needs the permission.
    let root = store.layout.cluster_prefix();
    if let Err(e) = conn
        .calls
        .list_objects_v2()
        .bucket(&conn.bucket)
        .prefix(&root)
        .max_keys(1)
        .send()
        .await
    {
        let failure = Failure::of(&e);
        if failure.class == Class::NotFound || failure.code() == Some("NoSuchBucket") {
            return Err(StoreError::Unavailable(format!(
                "s3://{}: the bucket does not exist (check snapshot.s3.bucket; eco does not create it)",
                conn.bucket
            )));
        }
        return Err(failure.into_error("listing", &conn.bucket, Some(&root)));
    }
    let mut verdict = sequential_probe(store).await?;
    if verdict == ConditionalCreate::Honoured {
        for _ in 0..store.tuning.probe_bursts {
            verdict = concurrent_probe(store).await?;
            if verdict == ConditionalCreate::Ignored {
                break;
            }
        }
    }
    match sweep(store, LEFTOVER_AGE).await {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "removed what interrupted uploads left behind"),
        Err(e) => tracing::warn!(error = %e, "cannot sweep what interrupted uploads left behind"),
    }
    Ok(verdict)
}

/// Deletes a probe key; a failure is logged (the sweep removes it later).
async fn drop_probe(conn: &Conn, key: &str) {
    if let Err(e) = conn.delete(key, "deleting the probe").await {
        tracing::warn!(error = %e, "a conditional-create probe is left behind");
    }
}

/// Creates a probe key twice: the first proves the bucket writable, the
/// second must be refused.
async fn sequential_probe(store: &S3Store) -> Result<ConditionalCreate, StoreError> {
    let conn = &store.conn;
    let probe = store.layout.scratch_key(PROBES);
    let first =
        conditional_put(conn, &probe, b"eco: conditional create probe, first write").await?;
    if !matches!(first, Conditional::Created) {
        drop_probe(conn, &probe).await;
        return Err(StoreError::Unavailable(format!(
            "s3://{}/{probe}: a fresh probe key was refused as if it existed",
            conn.bucket
        )));
    }
    let second =
        conditional_put(conn, &probe, b"eco: conditional create probe, second write").await;
    drop_probe(conn, &probe).await;
    Ok(match second? {
        Conditional::Exists | Conditional::Conflict => ConditionalCreate::Honoured,
        Conditional::Created => ConditionalCreate::Ignored,
    })
}

/// [`BURST`] concurrent creators of one probe key: more than one winner
/// means the endpoint's check is not atomic.
async fn concurrent_probe(store: &S3Store) -> Result<ConditionalCreate, StoreError> {
    let probe = store.layout.scratch_key(PROBES);
    let mut tasks = JoinSet::new();
    for i in 0..BURST {
        let (conn, probe) = (store.conn.clone(), probe.clone());
        tasks.spawn(async move {
            conditional_put(
                &conn,
                &probe,
                format!("eco: concurrent probe {i}").as_bytes(),
            )
            .await
        });
    }
    let mut created = 0;
    let mut failed = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(Conditional::Created)) => created += 1,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => failed = Some(e),
            Err(e) => failed = Some(StoreError::Unavailable(format!("a probe task failed: {e}"))),
        }
    }
    drop_probe(&store.conn, &probe).await;
    if let Some(e) = failed {
        return Err(e);
    }
    if created > 1 {
        tracing::warn!(
            created,
            creators = BURST,
            "several concurrent conditional creates of one key succeeded: the endpoint's If-None-Match is not atomic"
        );
        return Ok(ConditionalCreate::Ignored);
    }
    Ok(ConditionalCreate::Honoured)
}

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

//! The start-time check: the bucket is usable, and the endpoint honours
//! conditional creates (a sequential probe; optionally bursts of
//! concurrent ones).

use super::conditional::{Conditional, conditional_put};
use super::errors::{Class, Failure};
use super::keys::PROBES;
use super::sweep::{LEFTOVER_AGE, sweep};
use super::{Conn, S3Store};
use crate::store::{ConditionalCreate, StoreError};
use tokio::task::JoinSet;

/// Creators per burst of concurrent conditional creates of one probe key
/// at start ([`super::Tuning::probe_bursts`] bursts): an endpoint that
/// checks `If-None-Match` and then writes, without atomicity, lets several
/// creators of a burst win.
const BURST: usize = 8;

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

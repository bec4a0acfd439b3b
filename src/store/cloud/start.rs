//! The start-time check: the bucket or container is reachable and
//! writable, and a conditional create is honoured (a sequential probe;
//! optionally bursts of concurrent ones).

use super::CloudStore;
use super::conditional::{Conditional, conditional_put};
use super::errors::{bounded, failed};
use super::sweep::{LEFTOVER_AGE, sweep};
use crate::store::{ConditionalCreate, StoreError};
use futures_util::StreamExt;
use tokio::task::JoinSet;

/// Creators per burst of concurrent conditional creates of one probe key.
const BURST: usize = 8;

pub(super) async fn check_at_start(store: &CloudStore) -> Result<ConditionalCreate, StoreError> {
    let clients = &store.clients;
    // One listing entry: proves the bucket or container there and
    // readable (a missing one is the store's error, with its cause).
    let folder = store.layout.cluster_folder()?;
    let shown = folder.as_ref();
    bounded(
        clients.call_limit,
        &clients.describe,
        "listing",
        shown,
        async {
            match clients.calls.list(Some(&folder)).next().await {
                None | Some(Ok(_)) => Ok(()),
                Some(Err(e)) => Err(failed(&clients.describe, "listing", shown, &e)),
            }
        },
    )
    .await?;
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
        Ok(removed) => tracing::info!(removed, "removed what interrupted writes left behind"),
        Err(e) => tracing::warn!(error = %e, "cannot sweep what interrupted writes left behind"),
    }
    Ok(verdict)
}

/// Deletes a probe key; a failure is logged (the sweep removes it later).
async fn drop_probe(store: &CloudStore, key: &object_store::path::Path) {
    if let Err(e) = store.clients.delete(key, "deleting the probe").await {
        tracing::warn!(error = %e, "a conditional-create probe is left behind");
    }
}

/// Creates a probe key twice: the first proves the store writable, the
/// second must be refused.
async fn sequential_probe(store: &CloudStore) -> Result<ConditionalCreate, StoreError> {
    let probe = store.layout.probe_key()?;
    let first = conditional_put(
        &store.clients,
        &probe,
        b"eco: conditional create probe, first write",
    )
    .await?;
    if first != Conditional::Created {
        drop_probe(store, &probe).await;
        return Err(StoreError::Unavailable(format!(
            "{}: {probe}: a fresh probe key was refused as if it existed",
            store.clients.describe
        )));
    }
    let second = conditional_put(
        &store.clients,
        &probe,
        b"eco: conditional create probe, second write",
    )
    .await;
    drop_probe(store, &probe).await;
    Ok(match second? {
        Conditional::Exists => ConditionalCreate::Honoured,
        Conditional::Created => {
            tracing::warn!(store = %store.clients.describe, "a second conditional create of one key succeeded: the store ignores the condition");
            ConditionalCreate::Ignored
        }
    })
}

/// [`BURST`] concurrent creators of one probe key: more than one winner
/// means the store's check is not atomic.
async fn concurrent_probe(store: &CloudStore) -> Result<ConditionalCreate, StoreError> {
    let probe = store.layout.probe_key()?;
    let mut tasks = JoinSet::new();
    for i in 0..BURST {
        let (clients, probe) = (store.clients.clone(), probe.clone());
        tasks.spawn(async move {
            conditional_put(
                &clients,
                &probe,
                format!("eco: concurrent probe {i}").as_bytes(),
            )
            .await
        });
    }
    let mut created = 0;
    let mut failed_with = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(Conditional::Created)) => created += 1,
            Ok(Ok(Conditional::Exists)) => {}
            Ok(Err(e)) => failed_with = Some(e),
            Err(e) => {
                failed_with = Some(StoreError::Unavailable(format!("a probe task failed: {e}")))
            }
        }
    }
    drop_probe(store, &probe).await;
    if let Some(e) = failed_with {
        return Err(e);
    }
    if created > 1 {
        tracing::warn!(
            created,
            creators = BURST,
            "several concurrent conditional creates of one key succeeded: the store's conditional create is not atomic"
        );
        return Ok(ConditionalCreate::Ignored);
    }
    Ok(ConditionalCreate::Honoured)
}

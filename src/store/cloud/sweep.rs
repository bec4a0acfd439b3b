//! The sweep of what interrupted writes left, once a day old: probe keys
//! (a start check that died between its create and its delete) and info
//! objects whose content is gone (a delete or a put that died between
//! its two writes). Contents are never removed: a content without its
//! info is not an object of the store (listings skip it), but it may be
//! the only copy of something, or another tool's.

use super::CloudStore;
use super::errors::{bounded, failed};
use crate::store::StoreError;
use futures_util::StreamExt;
use object_store::ObjectMeta;
use object_store::path::Path;
use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How old a leftover must be before the start-time sweep removes it
/// (younger ones may be another instance's put in progress).
pub const LEFTOVER_AGE: Duration = Duration::from_secs(24 * 3600);

pub(super) async fn sweep(store: &CloudStore, older_than: Duration) -> Result<usize, StoreError> {
    let cutoff = SystemTime::now()
        .checked_sub(older_than)
        .unwrap_or(UNIX_EPOCH)
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let old = |meta: &ObjectMeta| meta.last_modified.timestamp() <= cutoff;
    let mut removed = 0;
    for probe in keys(store, &store.layout.probes()?).await? {
        if old(&probe) {
            store
                .clients
                .delete(&probe.location, "sweeping the probe")
                .await?;
            removed += 1;
        }
    }
    // One listing of the cluster's keys, not a request per info object
    // (the archive's segments make many).
    let all = keys(store, &store.layout.cluster_folder()?).await?;
    let present: HashSet<&str> = all.iter().map(|m| m.location.as_ref()).collect();
    for info in &all {
        if !old(info) {
            continue;
        }
        let Some(name) = store.layout.name_of_info(info.location.as_ref()) else {
            continue;
        };
        let Ok(object) = store.layout.locate(&name) else {
            continue;
        };
        if !present.contains(object.key.as_ref()) {
            store
                .clients
                .delete(&info.location, "sweeping the info object")
                .await?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Every key under `folder`, each page of the listing bounded.
async fn keys(store: &CloudStore, folder: &Path) -> Result<Vec<ObjectMeta>, StoreError> {
    let clients = &store.clients;
    let shown = folder.as_ref();
    let mut listing = clients.calls.list(Some(folder));
    let mut all = Vec::new();
    loop {
        let next = bounded(
            clients.call_limit,
            &clients.describe,
            "listing",
            shown,
            async { Ok(listing.next().await) },
        )
        .await?;
        match next {
            None => return Ok(all),
            Some(Ok(meta)) => all.push(meta),
            Some(Err(e)) => return Err(failed(&clients.describe, "listing", shown, &e)),
        }
    }
}

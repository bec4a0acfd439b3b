//! Small JSON objects kept whole in the store (the maintenance pause, the
//! last verified restore): read whole (absent is `None`, never an error),
//! written whole by one put (every store's put is atomic: a reader sees
//! the old object or the new one).
//!
//! What it is not: the incarnation records (`record.rs`), which need a
//! conditional create and their own checks.

use super::{ObjectStore, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use tokio::io::AsyncReadExt;

#[derive(Debug, thiserror::Error)]
pub enum JsonObjectError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `what` names the object for humans (`the pause object`).
    #[error("{what} {name} is unreadable: {why}")]
    Unreadable {
        what: &'static str,
        name: String,
        why: String,
    },
}

/// The object `name`, `None` when it does not exist.
pub async fn read<T: DeserializeOwned>(
    store: &dyn ObjectStore,
    name: &str,
    what: &'static str,
) -> Result<Option<T>, JsonObjectError> {
    let unreadable = |why: String| JsonObjectError::Unreadable {
        what,
        name: name.to_string(),
        why,
    };
    let (_, mut reader) = match store.get(name).await {
        Ok(found) => found,
        Err(StoreError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| unreadable(e.to_string()))
}

/// Writes `value` as the object `name`, replacing what was there.
pub async fn write<T: Serialize>(
    store: &dyn ObjectStore,
    name: &str,
    what: &'static str,
    value: &T,
) -> Result<(), JsonObjectError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| JsonObjectError::Unreadable {
        what,
        name: name.to_string(),
        why: e.to_string(),
    })?;
    store.put(name, &mut &bytes[..], BTreeMap::new()).await?;
    Ok(())
}

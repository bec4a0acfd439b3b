//! `object_store`'s errors as eco's: a missing object is `None` (or
//! [`StoreError::NotFound`]), anything else [`StoreError::Unavailable`]
//! naming the store, the operation and the key, with every cause; and the
//! outer bound of each call.

use crate::store::StoreError;
use std::future::Future;
use std::time::Duration;

/// The error and all its causes, on one line.
pub(super) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// An `object_store` error of `op` on `key` of the store `store`.
pub(super) fn failed(store: &str, op: &str, key: &str, e: &object_store::Error) -> StoreError {
    StoreError::Unavailable(format!("{store}: {op} {key}: {}", chain(e)))
}

/// `Ok(None)` for a missing object, the error otherwise.
pub(super) fn absent_or<T>(
    result: Result<T, object_store::Error>,
    store: &str,
    op: &str,
    key: &str,
) -> Result<Option<T>, StoreError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(failed(store, op, key, &e)),
    }
}

/// Runs `call`, failing with an error naming `op` and `key` once `limit`
/// has passed (the clients bound each attempt; this bounds the whole,
/// retries and credential fetches included).
pub(super) async fn bounded<T>(
    limit: Duration,
    store: &str,
    op: &str,
    key: &str,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    match tokio::time::timeout(limit, call).await {
        Ok(result) => result,
        Err(_) => Err(StoreError::Unavailable(format!(
            "{store}: {op} {key}: no answer within {limit:?}"
        ))),
    }
}

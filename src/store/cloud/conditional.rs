//! `create_if_absent`: `PutMode::Create`, the commit point of records. A
//! refused create reads the winner's content.

use super::errors::{bounded, failed};
use super::layout::Located;
use super::read::read_record;
use super::{Clients, CloudStore};
use crate::store::{CreateOutcome, StoreError};
use object_store::path::Path;
use object_store::{PutMode, PutOptions, PutPayload};

/// What a conditional create of one key did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Conditional {
    Created,
    /// The key existed.
    Exists,
}

/// Creates `key` with `content` unless it exists.
pub(super) async fn conditional_put(
    clients: &Clients,
    key: &Path,
    content: &[u8],
) -> Result<Conditional, StoreError> {
    let shown = key.as_ref();
    let op = "creating";
    bounded(clients.call_limit, &clients.describe, op, shown, async {
        match clients
            .calls
            .put_opts(
                key,
                PutPayload::from(content.to_vec()),
                PutOptions::from(PutMode::Create),
            )
            .await
        {
            Ok(_) => Ok(Conditional::Created),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(Conditional::Exists),
            Err(e) => Err(failed(&clients.describe, op, shown, &e)),
        }
    })
    .await
}

pub(super) async fn create_if_absent(
    store: &CloudStore,
    name: &str,
    content: &[u8],
) -> Result<CreateOutcome, StoreError> {
    let object: Located = store.layout.locate(name)?;
    // The winner's content is read after the refusal; if it is gone by
    // then (deleted), the create is tried again, a few times.
    for _ in 0..3 {
        match conditional_put(&store.clients, &object.key, content).await? {
            Conditional::Created => return Ok(CreateOutcome::Created),
            Conditional::Exists => {
                if let Some((_, winner)) = read_record(store, &object).await? {
                    return Ok(CreateOutcome::AlreadyExists(winner.to_vec()));
                }
            }
        }
    }
    Err(StoreError::Unavailable(format!(
        "{}: creating {}: refused as existing, yet gone when read, three times",
        store.clients.describe, object.key
    )))
}

//! Conditional create (`If-None-Match: *`): the record of truth's atomic
//! create, with the content of the winner read back by a loser.

use super::errors::{Class, Failure};
use super::keys::{self};
use super::read::read_small;
use super::{Conn, S3Store};
use crate::store::{CreateOutcome, StoreError};
use aws_sdk_s3::primitives::ByteStream;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;

/// Attempts of a conditional create that meets concurrent writers (409)
/// or a winner deleted before it was read.
const CREATE_ATTEMPTS: u32 = 10;

pub(super) enum Conditional {
    Created,
    /// The key exists (412).
    Exists,
    /// Concurrent conditional writes on the key (409): try again.
    Conflict,
}

/// One `PutObject` with `If-None-Match: *`, its sha256 in the metadata.
pub(super) async fn conditional_put(
    conn: &Conn,
    key: &str,
    content: &[u8],
) -> Result<Conditional, StoreError> {
    let sha256 = hex::encode(Sha256::digest(content));
    let headers = keys::encode_metadata(&BTreeMap::new(), keys::Sha256At::Object(&sha256))
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

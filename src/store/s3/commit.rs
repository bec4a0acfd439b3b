//! The commit of a multipart object: its marker.
//!
//! A multipart object is uploaded straight to its key and becomes visible
//! in S3 once `CompleteMultipartUpload` returns, but its sha256 is only
//! known after the last part, when S3 no longer takes metadata for it. So
//! the object is committed by a second, zero-byte object, its marker
//! (`<prefix>/<cluster>/.sha256/<rest of the name>`), written after the
//! completion and holding the sha256 and the **ETag of the object it
//! commits**. A reader takes a multipart object (`sha256-in: marker`) as
//! committed only when its marker exists and names its current ETag:
//!
//! - a crash or a failure between the completion and the marker leaves an
//!   object without a marker: invisible, removed by the start sweep;
//! - an object replaced by another put of its name is invisible until the
//!   new marker lands, never shown with the old sha256;
//! - a delete removes the marker first: once it is gone the object is
//!   invisible, whatever happens to the delete of the object itself.
//!
//! No object is copied: a server-side copy of the whole object (the
//! commit before) cost as much as its upload (docs/benchmarks.md).

use super::Conn;
use super::errors::store_error;
use super::keys::{self, Located};
use crate::store::StoreError;
use aws_sdk_s3::primitives::ByteStream;

/// Writes the marker of `object`, committing its content of `etag` with
/// `sha256`.
pub(super) async fn write_marker(
    conn: &Conn,
    object: &Located,
    etag: &str,
    sha256: &str,
) -> Result<(), StoreError> {
    conn.calls
        .put_object()
        .bucket(&conn.bucket)
        .key(&object.marker)
        .content_length(0)
        .set_metadata(Some(keys::encode_marker(sha256, etag)))
        .set_server_side_encryption(conn.sse.clone())
        .set_ssekms_key_id(conn.kms_key_id.clone())
        .body(ByteStream::from_static(b""))
        .send()
        .await
        .map_err(store_error(
            "committing (writing the marker of)",
            &conn.bucket,
            Some(&object.key),
        ))?;
    Ok(())
}

/// The sha256 of a multipart object whose ETag is `etag`: `None` when it
/// is not committed (no marker, or a marker of another content).
pub(super) async fn committed_sha256(
    conn: &Conn,
    object: &Located,
    etag: Option<&str>,
) -> Result<Option<String>, StoreError> {
    let Some(etag) = etag else {
        return Err(StoreError::Metadata {
            name: object.name.clone(),
            message: "the endpoint gave no ETag, so its commit marker cannot be checked".into(),
        });
    };
    let Some(out) = conn
        .head_object(&object.marker, "reading the commit marker")
        .await?
    else {
        tracing::debug!(object = %object.name, "skipping a multipart object without a commit marker (not committed)");
        return Ok(None);
    };
    let (sha256, committed) =
        keys::decode_marker(out.metadata.as_ref()).map_err(|message| StoreError::Metadata {
            name: object.name.clone(),
            message,
        })?;
    if committed != keys::bare_etag(etag) {
        tracing::debug!(object = %object.name, etag, committed, "skipping a multipart object whose marker commits another content");
        return Ok(None);
    }
    Ok(Some(sha256))
}

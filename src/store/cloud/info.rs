//! The info object that commits an object of a cloud store: a small JSON
//! document at the object's info key (`…/.info/…`), written after the
//! content, holding eco's [`ObjectInfo`] and the content's ETag. An object
//! is an object of the store only while its info names it, its size and
//! its content's ETag: a content replaced behind the info's back, or whose
//! put was interrupted before its info was written, is not one.

use crate::store::{ObjectInfo, StoreError};
use object_store::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The largest info object read (metadata maps are small).
pub(super) const MAX_INFO: u64 = 64 * 1024;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct Committed {
    #[serde(flatten)]
    pub(super) info: ObjectInfo,
    /// The ETag of the content it commits, as the store gave it when the
    /// content was written (`None`: the store gave none; the size is
    /// still checked).
    #[serde(default)]
    pub(super) etag: Option<String>,
}

impl Committed {
    pub(super) fn encode(&self) -> Result<Vec<u8>, StoreError> {
        serde_json::to_vec(self).map_err(|e| StoreError::Metadata {
            name: self.info.name.clone(),
            message: e.to_string(),
        })
    }

    /// The info of `name` in `bytes`; an error when it does not parse or
    /// describes another object.
    pub(super) fn decode(name: &str, bytes: &[u8]) -> Result<Self, StoreError> {
        let committed: Self = serde_json::from_slice(bytes).map_err(|e| StoreError::Metadata {
            name: name.into(),
            message: format!("its info object does not parse: {e}"),
        })?;
        if committed.info.name != name {
            return Err(StoreError::Metadata {
                name: name.into(),
                message: format!("its info object describes {:?}", committed.info.name),
            });
        }
        Ok(committed)
    }

    /// Why the content `meta` is not the one this info commits; `None`
    /// when it is.
    pub(super) fn mismatch(&self, meta: &ObjectMeta) -> Option<String> {
        if meta.size != self.info.size {
            return Some(format!(
                "its content is {} bytes, its info object says {}",
                meta.size, self.info.size
            ));
        }
        // Listings and heads may quote an ETag differently (Azure lists
        // `0x8D…`, answers `"0x8D…"` in headers).
        let bare = |t: &str| t.trim_start_matches("W/").trim_matches('"').to_string();
        match (&self.etag, &meta.e_tag) {
            (Some(want), Some(got)) if bare(want) != bare(got) => Some(format!(
                "its content's ETag is {got}, its info object names {want}"
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(size: u64, etag: &str) -> ObjectMeta {
        ObjectMeta {
            location: object_store::path::Path::from("eco/c/x"),
            last_modified: Default::default(),
            size,
            e_tag: Some(etag.to_string()),
            version: None,
        }
    }

    #[test]
    fn an_info_commits_its_content_only() {
        let committed = Committed {
            info: ObjectInfo {
                name: "c/x".into(),
                size: 5,
                sha256: "ab".into(),
                metadata: Default::default(),
            },
            etag: Some("\"0x8DE1\"".into()),
        };
        let bytes = committed.encode().unwrap();
        assert_eq!(Committed::decode("c/x", &bytes).unwrap(), committed);
        assert!(Committed::decode("c/y", &bytes).is_err(), "another name");
        assert!(Committed::decode("c/x", b"{").is_err());
        // Azure lists ETags bare and sends them quoted.
        assert_eq!(committed.mismatch(&meta(5, "0x8DE1")), None);
        assert_eq!(committed.mismatch(&meta(5, "\"0x8DE1\"")), None);
        assert!(committed.mismatch(&meta(5, "0x8DE2")).is_some());
        assert!(committed.mismatch(&meta(6, "0x8DE1")).is_some());
    }
}

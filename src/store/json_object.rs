//! Small JSON objects kept whole in the store (the maintenance pause, the
//! last verified restore): read whole (absent is `None`, never an error),
//! written whole by one put (every store's put is atomic: a reader sees
//! the old object or the new one).
//!
//! Reads are bounded: such an object holds a few lines, and every
//! instance reads it every few seconds, so one larger than [`MAX_SIZE`]
//! (by its info, before any byte is read, and again while reading) is an
//! error naming it, never read into memory. Something of that name that
//! the store did not commit (a file without its info file) is an error
//! saying so ([`JsonObjectError::Uncommitted`]), so a caller can tell it
//! from "absent".
//!
//! Each carries the format it was written in (a `"format"` key; absent:
//! format 1, eco 0.1.0's, whose readers ignore the key): one of a format
//! this eco does not read is unreadable ([`JsonObjectError::Unreadable`],
//! saying so), never misread.
//!
//! What it is not: the incarnation records (`record.rs`), which need a
//! conditional create and their own checks.

use super::{ObjectStore, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use tokio::io::AsyncReadExt;

/// The largest small JSON object read.
pub const MAX_SIZE: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum JsonObjectError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `what` names the object for humans (`the pause object`). Its
    /// content does not parse, or is larger than [`MAX_SIZE`].
    #[error("{what} {name} is unreadable: {why}")]
    Unreadable {
        what: &'static str,
        name: String,
        why: String,
    },
    /// Something of that name is in the store, but not committed: it is
    /// not read (`ObjectStore::uncommitted`).
    #[error("{what} {name} is not an object of the store: {why}")]
    Uncommitted {
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
    let too_large = |size: u64| {
        unreadable(format!(
            "{size} bytes, more than such an object may hold ({MAX_SIZE}): not read"
        ))
    };
    let (info, reader) = match store.get(name).await {
        Ok(found) => found,
        Err(StoreError::NotFound(_)) => {
            return match store.uncommitted(name).await? {
                Some(why) => Err(JsonObjectError::Uncommitted {
                    what,
                    name: name.to_string(),
                    why,
                }),
                None => Ok(None),
            };
        }
        Err(e) => return Err(e.into()),
    };
    if info.size > MAX_SIZE {
        return Err(too_large(info.size));
    }
    // The content may be larger than its info says (replaced by hand):
    // never more than the bound is read.
    let mut bytes = Vec::new();
    reader
        .take(MAX_SIZE + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() as u64 > MAX_SIZE {
        return Err(unreadable(format!(
            "more than such an object may hold ({MAX_SIZE} bytes; its info says {}): not read",
            info.size
        )));
    }
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| unreadable(e.to_string()))?;
    if let Some(format) = value.get("format")
        && let Some(why) =
            recovery::cluster_version::unreadable(format.as_u64(), &format.to_string())
    {
        return Err(unreadable(why));
    }
    serde_json::from_value(value)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::dir::DirStore;
    use crate::store::memory::MemoryStore;
    use crate::store::{CreateOutcome, ListPage, ObjectInfo, ObjectReader};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::task::Poll;
    use tokio::io::{AsyncRead, ReadBuf};

    /// A store that counts the bytes its readers hand out.
    struct Counting {
        inner: DirStore,
        read: Arc<AtomicU64>,
    }

    struct CountingReader {
        inner: ObjectReader,
        read: Arc<AtomicU64>,
    }

    impl AsyncRead for CountingReader {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let before = buf.filled().len();
            let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
            let n = (buf.filled().len() - before) as u64;
            self.read.fetch_add(n, Ordering::SeqCst);
            polled
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for Counting {
        fn describe(&self) -> String {
            self.inner.describe()
        }
        async fn put(
            &self,
            name: &str,
            content: &mut (dyn tokio::io::AsyncRead + Unpin + Send),
            metadata: BTreeMap<String, String>,
        ) -> Result<ObjectInfo, StoreError> {
            self.inner.put(name, content, metadata).await
        }
        async fn get(&self, name: &str) -> Result<(ObjectInfo, ObjectReader), StoreError> {
            let (info, inner) = self.inner.get(name).await?;
            let read = self.read.clone();
            Ok((info, Box::new(CountingReader { inner, read })))
        }
        async fn head(&self, name: &str) -> Result<Option<ObjectInfo>, StoreError> {
            self.inner.head(name).await
        }
        async fn list(&self, prefix: &str, after: Option<&str>) -> Result<ListPage, StoreError> {
            self.inner.list(prefix, after).await
        }
        async fn list_matching(
            &self,
            prefix: &str,
            after: Option<&str>,
            wanted: &crate::store::NameFilter,
        ) -> Result<ListPage, StoreError> {
            self.inner.list_matching(prefix, after, wanted).await
        }
        async fn delete(&self, name: &str) -> Result<(), StoreError> {
            self.inner.delete(name).await
        }
        async fn create_if_absent(
            &self,
            name: &str,
            content: &[u8],
        ) -> Result<CreateOutcome, StoreError> {
            self.inner.create_if_absent(name, content).await
        }
        async fn uncommitted(&self, name: &str) -> Result<Option<String>, StoreError> {
            self.inner.uncommitted(name).await
        }
    }

    #[tokio::test]
    async fn an_object_larger_than_the_bound_is_refused_unread_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let store = Counting {
            inner: DirStore::new(d.path().into()),
            read: Default::default(),
        };
        let name = "c/maintenance/pause.json";
        // 4 MiB of spaces around a JSON string: valid JSON, far too large.
        let mut big = vec![b' '; 4 << 20];
        big[..3].copy_from_slice(b"\"x\"");
        store
            .put(name, &mut &big[..], BTreeMap::new())
            .await
            .unwrap();
        let e = read::<String>(&store, name, "the pause object")
            .await
            .unwrap_err();
        assert_eq!(store.read.load(Ordering::SeqCst), 0, "nothing read");
        let text = e.to_string();
        assert!(
            matches!(e, JsonObjectError::Unreadable { .. })
                && text.contains(name)
                && text.contains("more than such an object may hold"),
            "{text}"
        );
        // Content replaced behind its info's back: still bounded.
        store
            .put(name, &mut &b"\"x\""[..], BTreeMap::new())
            .await
            .unwrap();
        std::fs::write(d.path().join(name), &big).unwrap();
        let e = read::<String>(&store, name, "the pause object")
            .await
            .unwrap_err()
            .to_string();
        assert!(store.read.load(Ordering::SeqCst) <= MAX_SIZE + 1);
        assert!(e.contains(name) && e.contains("its info says 3"), "{e}");
        // At the bound: read.
        let mut fits = vec![b' '; MAX_SIZE as usize];
        fits[..3].copy_from_slice(b"\"x\"");
        store
            .put(name, &mut &fits[..], BTreeMap::new())
            .await
            .unwrap();
        assert_eq!(
            read::<String>(&store, name, "x").await.unwrap().as_deref(),
            Some("x")
        );
    }

    #[tokio::test]
    async fn an_object_of_a_format_this_eco_does_not_read_is_unreadable_saying_so() {
        let store = MemoryStore::new();
        let name = "c/maintenance/pause.json";
        for (text, readable) in [
            (r#"{"by": "a"}"#, true),
            (r#"{"by": "a", "format": 1}"#, true),
            (r#"{"by": "a", "format": 2}"#, true),
            (r#"{"by": "a", "format": 3}"#, true),
            (r#"{"by": "a", "format": 4}"#, false),
            (r#"{"by": "a", "format": "x"}"#, false),
        ] {
            store
                .put(name, &mut text.as_bytes(), BTreeMap::new())
                .await
                .unwrap();
            let got = read::<serde_json::Value>(&store, name, "the pause object").await;
            match got {
                Ok(v) => assert!(readable && v.is_some(), "{text}"),
                Err(e) => {
                    assert!(!readable, "{text}: {e}");
                    assert!(
                        matches!(e, JsonObjectError::Unreadable { .. })
                            && e.to_string().contains("does not read"),
                        "{e}"
                    );
                }
            }
        }
    }

    #[tokio::test]
    async fn absent_is_none_and_uncommitted_is_said() {
        let d = tempfile::tempdir().unwrap();
        let store = DirStore::new(d.path().into());
        let name = "c/maintenance/pause.json";
        assert!(read::<String>(&store, name, "x").await.unwrap().is_none());
        std::fs::create_dir_all(d.path().join("c/maintenance")).unwrap();
        std::fs::write(d.path().join(name), b"\"by hand\"").unwrap();
        let e = read::<String>(&store, name, "the pause object")
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, JsonObjectError::Uncommitted { .. })
                && text.contains(name)
                && text.contains("no info file"),
            "{text}"
        );
        // A store that cannot hold one: absent.
        let memory = MemoryStore::default();
        assert!(read::<String>(&memory, name, "x").await.unwrap().is_none());
    }
}

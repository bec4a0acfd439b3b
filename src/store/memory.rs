//! An in-memory store, for tests: the same contract as every store
//! (objects complete or invisible, paginated listings, an atomic
//! conditional create), plus a switch that makes every call fail, so the
//! callers' "a store error is never an empty listing" paths can be tested
//! without a broken filesystem.
//!
//! What it does not do: persist anything, or stream in flat memory (the
//! content is buffered; tests store small objects).

use super::{
    CreateOutcome, ListPage, NameFilter, ObjectInfo, ObjectReader, ObjectStore, StoreError,
    check_name,
};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Default number of objects per listing page.
pub const PAGE_SIZE: usize = 1000;

pub struct MemoryStore {
    objects: Mutex<BTreeMap<String, (ObjectInfo, Vec<u8>)>>,
    page_size: usize,
    failing: AtomicBool,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::with_page_size(PAGE_SIZE)
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store with small pages, to exercise pagination.
    pub fn with_page_size(page_size: usize) -> Self {
        Self {
            objects: Mutex::new(BTreeMap::new()),
            page_size: page_size.max(1),
            failing: AtomicBool::new(false),
        }
    }

    /// While set, every call fails with [`StoreError::Unavailable`].
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(
                "the in-memory store is set to fail".into(),
            ));
        }
        Ok(())
    }

    fn objects(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (ObjectInfo, Vec<u8>)>> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn info_of(name: &str, content: &[u8], metadata: BTreeMap<String, String>) -> ObjectInfo {
    ObjectInfo {
        name: name.into(),
        size: content.len() as u64,
        sha256: hex::encode(Sha256::digest(content)),
        metadata,
    }
}

#[async_trait::async_trait]
impl ObjectStore for MemoryStore {
    fn describe(&self) -> String {
        "memory".into()
    }

    async fn put(
        &self,
        name: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
        metadata: BTreeMap<String, String>,
    ) -> Result<ObjectInfo, StoreError> {
        check_name(name)?;
        self.check()?;
        let mut bytes = Vec::new();
        content
            .read_to_end(&mut bytes)
            .await
            .map_err(|source| StoreError::Io {
                what: format!("reading the content of {name}"),
                source,
            })?;
        // Complete or invisible: inserted only once read to the end.
        let info = info_of(name, &bytes, metadata);
        self.objects()
            .insert(name.to_string(), (info.clone(), bytes));
        Ok(info)
    }

    async fn get(&self, name: &str) -> Result<(ObjectInfo, ObjectReader), StoreError> {
        check_name(name)?;
        self.check()?;
        let (info, bytes) = self
            .objects()
            .get(name)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        Ok((info, Box::new(std::io::Cursor::new(bytes))))
    }

    async fn head(&self, name: &str) -> Result<Option<ObjectInfo>, StoreError> {
        check_name(name)?;
        self.check()?;
        Ok(self.objects().get(name).map(|(info, _)| info.clone()))
    }

    /// Every object here is committed.
    async fn uncommitted(&self, name: &str) -> Result<Option<String>, StoreError> {
        check_name(name)?;
        self.check()?;
        Ok(None)
    }

    async fn list(&self, prefix: &str, after: Option<&str>) -> Result<ListPage, StoreError> {
        self.list_matching(prefix, after, &|_| true).await
    }

    async fn list_matching(
        &self,
        prefix: &str,
        after: Option<&str>,
        wanted: &NameFilter,
    ) -> Result<ListPage, StoreError> {
        self.check()?;
        let objects = self.objects();
        let mut page: Vec<ObjectInfo> = objects
            .range::<str, _>((
                after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
                std::ops::Bound::Unbounded,
            ))
            .filter(|(name, _)| name.starts_with(prefix) && wanted(name))
            .take(self.page_size + 1)
            .map(|(_, (info, _))| info.clone())
            .collect();
        let next = if page.len() > self.page_size {
            page.truncate(self.page_size);
            page.last().map(|o| o.name.clone())
        } else {
            None
        };
        Ok(ListPage {
            objects: page,
            next,
        })
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        check_name(name)?;
        self.check()?;
        self.objects().remove(name);
        Ok(())
    }

    async fn create_if_absent(
        &self,
        name: &str,
        content: &[u8],
    ) -> Result<CreateOutcome, StoreError> {
        check_name(name)?;
        self.check()?;
        let mut objects = self.objects();
        if let Some((_, existing)) = objects.get(name) {
            return Ok(CreateOutcome::AlreadyExists(existing.clone()));
        }
        objects.insert(
            name.to_string(),
            (info_of(name, content, BTreeMap::new()), content.to_vec()),
        );
        Ok(CreateOutcome::Created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{contract, list_all};

    #[tokio::test]
    async fn the_contract_holds() {
        contract::check(
            std::sync::Arc::new(MemoryStore::new()),
            std::sync::Arc::new(MemoryStore::with_page_size(3)),
        )
        .await;
    }

    #[tokio::test]
    async fn a_failing_store_fails_every_call_and_never_lists_empty() {
        let s = MemoryStore::new();
        s.put("a/b", &mut &b"x"[..], BTreeMap::new()).await.unwrap();
        s.set_failing(true);
        assert!(list_all(&s, "a/").await.is_err());
        assert!(s.head("a/b").await.is_err());
        assert!(s.create_if_absent("a/c", b"y").await.is_err());
        s.set_failing(false);
        assert_eq!(list_all(&s, "a/").await.unwrap().len(), 1);
    }
}

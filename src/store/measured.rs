//! A store that measures another: every call is timed and its failures
//! counted by operation ([`crate::store::metrics::StoreMetrics`]); what the
//! call returns is passed through untouched. The daemon wraps the store
//! the config chose in it, so every caller is measured alike.

use super::{
    ConditionalCreate, CreateOutcome, ListPage, NameFilter, ObjectInfo, ObjectReader, ObjectStore,
    StoreError,
};
use crate::store::metrics::StoreMetrics;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::AsyncRead;

pub struct MeasuredStore {
    inner: Arc<dyn ObjectStore>,
    metrics: StoreMetrics,
}

impl MeasuredStore {
    pub fn new(inner: Arc<dyn ObjectStore>, metrics: StoreMetrics) -> Self {
        Self { inner, metrics }
    }

    fn record<T>(
        &self,
        operation: &'static str,
        since: Instant,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.metrics
            .call(operation, since.elapsed(), result.as_ref().err());
        result
    }
}

#[async_trait::async_trait]
impl ObjectStore for MeasuredStore {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn put(
        &self,
        name: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
        metadata: BTreeMap<String, String>,
    ) -> Result<ObjectInfo, StoreError> {
        let since = Instant::now();
        let result = self.inner.put(name, content, metadata).await;
        self.record("put", since, result)
    }

    async fn get(&self, name: &str) -> Result<(ObjectInfo, ObjectReader), StoreError> {
        let since = Instant::now();
        let result = self.inner.get(name).await;
        self.record("get", since, result)
    }

    async fn head(&self, name: &str) -> Result<Option<ObjectInfo>, StoreError> {
        let since = Instant::now();
        let result = self.inner.head(name).await;
        self.record("head", since, result)
    }

    async fn list(&self, prefix: &str, after: Option<&str>) -> Result<ListPage, StoreError> {
        let since = Instant::now();
        let result = self.inner.list(prefix, after).await;
        self.record("list", since, result)
    }

    async fn list_matching(
        &self,
        prefix: &str,
        after: Option<&str>,
        wanted: &NameFilter,
    ) -> Result<ListPage, StoreError> {
        let since = Instant::now();
        let result = self.inner.list_matching(prefix, after, wanted).await;
        self.record("list", since, result)
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        let since = Instant::now();
        let result = self.inner.delete(name).await;
        self.record("delete", since, result)
    }

    async fn create_if_absent(
        &self,
        name: &str,
        content: &[u8],
    ) -> Result<CreateOutcome, StoreError> {
        let since = Instant::now();
        let result = self.inner.create_if_absent(name, content).await;
        self.record("create_if_absent", since, result)
    }

    /// Counted as a `head`: it is one (or a `stat`).
    async fn uncommitted(&self, name: &str) -> Result<Option<String>, StoreError> {
        let since = Instant::now();
        let result = self.inner.uncommitted(name).await;
        self.record("head", since, result)
    }

    async fn check_at_start(&self) -> Result<ConditionalCreate, StoreError> {
        self.inner.check_at_start().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn passes_answers_through_and_counts_failures_by_operation() {
        let metrics = StoreMetrics::default();
        let store = MeasuredStore::new(Arc::new(MemoryStore::default()), metrics.clone());
        assert!(matches!(
            store.create_if_absent("c/incarnations/1", b"x").await,
            Ok(CreateOutcome::Created)
        ));
        assert!(matches!(
            store.create_if_absent("c/incarnations/1", b"y").await,
            Ok(CreateOutcome::AlreadyExists(v)) if v == b"x"
        ));
        assert!(matches!(
            store.get("c/missing").await,
            Err(StoreError::NotFound(_))
        ));
        let mut registry = prometheus_client::registry::Registry::with_prefix("eco");
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(r#"eco_store_operation_seconds_count{operation="create_if_absent"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"eco_store_operation_seconds_count{operation="list"} 0"#));
        assert!(
            text.contains(
                r#"eco_store_operation_errors_total{operation="get",error="not_found"} 1"#
            )
        );
    }
}

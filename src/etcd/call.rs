//! One etcd call under its timeout. The error names the call and says
//! whether it timed out or etcd answered with an error. The ACL calls
//! (`acl.rs`) and the maintenance calls (`maintenance.rs`) share it; the
//! membership calls (`members.rs`) classify etcd's answers further.

use std::future::Future;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("{call} did not answer within {timeout:?}")]
    Timeout {
        call: &'static str,
        timeout: Duration,
    },
    #[error("{call} failed: {source}")]
    Etcd {
        call: &'static str,
        #[source]
        source: etcd_client::Error,
    },
}

/// Runs `f`, etcd's call named `call`, for at most `timeout`.
pub async fn timed<T>(
    call: &'static str,
    timeout: Duration,
    f: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, CallError> {
    tokio::time::timeout(timeout, f)
        .await
        .map_err(|_| CallError::Timeout { call, timeout })?
        .map_err(|source| CallError::Etcd { call, source })
}

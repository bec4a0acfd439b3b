//! What can go wrong asking one etcd member anything: connecting (TLS
//! files, credentials) or a call (a timeout, etcd's error). Shared by the
//! connections of [`super::access::EtcdAccess`] and the probes of
//! [`super::probe`].

use std::time::Duration;

/// An etcd member could not be reached or asked, naming its endpoint.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("etcd at {endpoint} did not answer within {timeout:?}")]
    Timeout { endpoint: String, timeout: Duration },
    #[error("etcd at {endpoint}: {source}")]
    Etcd {
        endpoint: String,
        #[source]
        source: etcd_client::Error,
    },
    #[error("etcd at {endpoint}: eco's TLS files cannot be used: {message}")]
    Tls { endpoint: String, message: String },
    /// eco's credentials could not be used (the file, or etcd refused them).
    #[error("etcd at {endpoint}: eco cannot authenticate as {user}: {message}")]
    Auth {
        endpoint: String,
        user: String,
        message: String,
    },
}

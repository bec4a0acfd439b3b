//! The one way eco builds an etcd client: [`EtcdAccess`] holds how eco
//! reaches etcd members — the timeout of every call, and the connection
//! options, which is where client TLS and credentials are added — so every
//! client (probes, membership changes, snapshots, the WAL replay's
//! temporary etcd, the CLI) connects the same way. Nothing else calls
//! `etcd_client::Client::connect`.
//!
//! One client per member: Status, Snapshot and Defragment answer for the
//! member a client is connected to.

use super::probe::{MemberProbe, ProbeError};
use crate::config::EtcdConfig;
use etcd_client::{Client, ConnectOptions};
use std::time::Duration;

/// How eco reaches etcd members.
#[derive(Clone, Debug)]
pub struct EtcdAccess {
    call_timeout: Duration,
}

impl EtcdAccess {
    /// Every call times out after `call_timeout`.
    pub fn new(call_timeout: Duration) -> Self {
        Self { call_timeout }
    }

    /// The access the config describes (`etcd.call_timeout`).
    pub fn from_config(config: &EtcdConfig) -> Self {
        Self::new(config.call_timeout.get())
    }

    /// The same access with another call timeout (long transfers).
    pub fn with_call_timeout(&self, call_timeout: Duration) -> Self {
        let mut access = self.clone();
        access.call_timeout = call_timeout;
        access
    }

    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    fn options(&self) -> ConnectOptions {
        ConnectOptions::new()
            .with_connect_timeout(self.call_timeout)
            .with_timeout(self.call_timeout)
    }

    /// A client of the member at `endpoint`. The connection is lazy: errors
    /// show on calls.
    pub async fn connect(&self, endpoint: &str) -> Result<Client, ProbeError> {
        let connecting = Client::connect([endpoint], Some(self.options()));
        match tokio::time::timeout(self.call_timeout, connecting).await {
            Err(_) => Err(ProbeError::Timeout {
                endpoint: endpoint.into(),
                timeout: self.call_timeout,
            }),
            Ok(Err(source)) => Err(ProbeError::Etcd {
                endpoint: endpoint.into(),
                source,
            }),
            Ok(Ok(c)) => Ok(c),
        }
    }

    /// A reusable Status probe of the member at `endpoint`.
    pub fn probe(&self, endpoint: String) -> MemberProbe {
        MemberProbe::new(endpoint, self.clone())
    }
}

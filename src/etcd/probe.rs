//! Asking etcd how it is, through `etcd-client`, with a timeout on every
//! call. One client per member: Status answers for the member it is
//! connected to. Clients come from [`super::access::EtcdAccess`].

use super::access::EtcdAccess;
pub use super::probe_error::ProbeError;
use etcd_client::Client;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What one etcd member says about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberStatus {
    pub cluster_id: u64,
    pub member_id: u64,
    /// 0 when the member knows no leader.
    pub leader: u64,
    pub revision: i64,
    pub raft_term: u64,
    pub raft_index: u64,
    pub raft_applied_index: u64,
    pub is_learner: bool,
    pub db_size: i64,
    /// The part of the backend in use (the rest is reclaimable by a
    /// defragmentation).
    #[serde(default)]
    pub db_size_in_use: i64,
    pub version: String,
    /// Alarms and errors etcd reports.
    pub errors: Vec<String>,
}

impl MemberStatus {
    pub fn has_leader(&self) -> bool {
        self.leader != 0
    }
    pub fn is_leader(&self) -> bool {
        self.leader != 0 && self.leader == self.member_id
    }
}

/// Status of the member `client` is connected to.
pub async fn status(
    client: &mut Client,
    endpoint: &str,
    timeout: Duration,
) -> Result<MemberStatus, ProbeError> {
    let answer = tokio::time::timeout(timeout, client.status())
        .await
        .map_err(|_| ProbeError::Timeout {
            endpoint: endpoint.into(),
            timeout,
        })?
        .map_err(|source| ProbeError::Etcd {
            endpoint: endpoint.into(),
            source,
        })?;
    let header = answer.header();
    Ok(MemberStatus {
        cluster_id: header.map(|h| h.cluster_id()).unwrap_or(0),
        member_id: header.map(|h| h.member_id()).unwrap_or(0),
        revision: header.map(|h| h.revision()).unwrap_or(0),
        leader: answer.leader(),
        raft_term: answer.raft_term(),
        raft_index: answer.raft_index(),
        raft_applied_index: answer.raft_applied_index(),
        is_learner: answer.is_learner(),
        db_size: answer.db_size(),
        db_size_in_use: answer.raft_used_db_size(),
        version: answer.version().to_string(),
        errors: answer.errors().to_vec(),
    })
}

/// A reusable probe of one member: keeps its client and reconnects after
/// errors.
pub struct MemberProbe {
    endpoint: String,
    access: EtcdAccess,
    client: Option<Client>,
}

impl MemberProbe {
    pub fn new(endpoint: String, access: EtcdAccess) -> Self {
        Self {
            endpoint,
            access,
            client: None,
        }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The member's Status, connection included, within `timeout` (at
    /// most the call timeout).
    pub async fn status(&mut self, timeout: Duration) -> Result<MemberStatus, ProbeError> {
        let timeout = timeout.min(self.access.call_timeout());
        let probe = async {
            let mut client = match self.client.take() {
                Some(c) => c,
                None => self.access.connect_for_status(&self.endpoint).await?,
            };
            let result = status(&mut client, &self.endpoint, timeout).await;
            if result.is_ok() {
                self.client = Some(client);
            }
            result
        };
        match tokio::time::timeout(timeout, probe).await {
            Ok(result) => result,
            Err(_) => Err(ProbeError::Timeout {
                endpoint: self.endpoint.clone(),
                timeout,
            }),
        }
    }
}

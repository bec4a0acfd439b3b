//! Cluster membership calls — list, add as learner, promote, remove — each
//! under a timeout. etcd's "too many learners" and "learner not in sync"
//! answers are classified as waits (the caller retries later), not failures.

use etcd_client::{Client, MemberAddOptions};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;

/// One etcd member as the member list reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub id: u64,
    /// Empty for a member that was added but has not started yet.
    pub name: String,
    pub peer_urls: Vec<String>,
    pub client_urls: Vec<String>,
    pub is_learner: bool,
}

impl Member {
    /// Added to the cluster, but its etcd has never joined.
    pub fn never_started(&self) -> bool {
        self.name.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    #[error("{call} did not answer within {timeout:?}")]
    Timeout {
        call: &'static str,
        timeout: Duration,
    },
    /// etcd allows one learner at a time; another is still catching up.
    #[error("another learner is still joining; retry later")]
    TooManyLearners,
    /// The learner has not caught up with the leader yet.
    #[error("the learner is not in sync with the leader yet; retry later")]
    LearnerNotReady,
    /// The change would not be safe now (e.g. the cluster is unhealthy).
    #[error("etcd refused the change as unsafe now: {0}")]
    Unsafe(String),
    #[error("member {0:x} is not in the cluster")]
    NotFound(u64),
    #[error("{call} failed: {source}")]
    Etcd {
        call: &'static str,
        #[source]
        source: etcd_client::Error,
    },
}

impl MembershipError {
    /// Whether retrying later is the right answer.
    pub fn is_wait(&self) -> bool {
        matches!(
            self,
            MembershipError::TooManyLearners
                | MembershipError::LearnerNotReady
                | MembershipError::Unsafe(_)
                | MembershipError::Timeout { .. }
        )
    }
}

fn classify(call: &'static str, source: etcd_client::Error) -> MembershipError {
    let text = source.to_string();
    if text.contains("too many learner members") {
        MembershipError::TooManyLearners
    } else if text.contains("can only promote a learner member which is in sync") {
        MembershipError::LearnerNotReady
    } else if text.contains("unhealthy cluster")
        || text.contains("re-configuration failed due to not enough started members")
    {
        MembershipError::Unsafe(text)
    } else if text.contains("member not found") {
        MembershipError::NotFound(0)
    } else {
        MembershipError::Etcd { call, source }
    }
}

async fn timed<T>(
    call: &'static str,
    timeout: Duration,
    f: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, MembershipError> {
    tokio::time::timeout(timeout, f)
        .await
        .map_err(|_| MembershipError::Timeout { call, timeout })?
        .map_err(|e| classify(call, e))
}

fn convert(m: &etcd_client::Member) -> Member {
    Member {
        id: m.id(),
        name: m.name().to_string(),
        peer_urls: m.peer_urls().to_vec(),
        client_urls: m.client_urls().to_vec(),
        is_learner: m.is_learner(),
    }
}

/// The member list, as seen by the member `client` talks to.
pub async fn list(client: &mut Client, timeout: Duration) -> Result<Vec<Member>, MembershipError> {
    let r = timed("MemberList", timeout, client.member_list()).await?;
    Ok(r.members().iter().map(convert).collect())
}

/// Adds a learner with `peer_url`; returns it and the members after the add
/// (what the new member's `--initial-cluster` must list).
pub async fn add_learner(
    client: &mut Client,
    peer_url: &str,
    timeout: Duration,
) -> Result<(Member, Vec<Member>), MembershipError> {
    let r = timed(
        "MemberAdd",
        timeout,
        client.member_add(
            [peer_url.to_string()],
            Some(MemberAddOptions::new().with_is_learner()),
        ),
    )
    .await?;
    let added = r
        .member()
        .map(convert)
        .ok_or(MembershipError::NotFound(0))?;
    Ok((added, r.member_list().iter().map(convert).collect()))
}

pub async fn promote(
    client: &mut Client,
    id: u64,
    timeout: Duration,
) -> Result<(), MembershipError> {
    timed("MemberPromote", timeout, client.member_promote(id))
        .await
        .map(|_| ())
        .map_err(|e| match e {
            MembershipError::NotFound(_) => MembershipError::NotFound(id),
            e => e,
        })
}

pub async fn remove(
    client: &mut Client,
    id: u64,
    timeout: Duration,
) -> Result<(), MembershipError> {
    timed("MemberRemove", timeout, client.member_remove(id))
        .await
        .map(|_| ())
        .map_err(|e| match e {
            MembershipError::NotFound(_) => MembershipError::NotFound(id),
            e => e,
        })
}

/// Sets the peer URLs the cluster records for member `id` (`MemberUpdate`):
/// how the other members dial it from now on.
pub async fn update_peer_urls(
    client: &mut Client,
    id: u64,
    peer_urls: Vec<String>,
    timeout: Duration,
) -> Result<(), MembershipError> {
    timed("MemberUpdate", timeout, client.member_update(id, peer_urls))
        .await
        .map(|_| ())
        .map_err(|e| match e {
            MembershipError::NotFound(_) => MembershipError::NotFound(id),
            e => e,
        })
}

/// Hands raft leadership to member `to` (`MoveLeader`). etcd accepts it
/// only from the leader, so `client` must be connected to the leader.
pub async fn move_leader(
    client: &mut Client,
    to: u64,
    timeout: Duration,
) -> Result<(), MembershipError> {
    timed("MoveLeader", timeout, client.move_leader(to))
        .await
        .map(|_| ())
}

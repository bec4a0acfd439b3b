//! What the planner sees.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The local data directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataState {
    /// Missing or empty.
    Empty,
    /// etcd data (a WAL) is present.
    Present,
    /// Files that are not etcd data.
    Unusable,
}

/// This instance's own facts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalFacts {
    pub instance_id: String,
    pub peer_url: String,
    /// Member id recorded in the state file, if any.
    pub recorded_member_id: Option<u64>,
    pub data: DataState,
    pub etcd_running: bool,
    /// The local etcd answers and believes it is the raft leader.
    pub is_leader: bool,
}

/// One etcd member, as the member list and its own Status report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberFacts {
    pub id: u64,
    /// Empty for a member added but never started.
    pub name: String,
    pub peer_urls: Vec<String>,
    pub is_learner: bool,
    /// Answered its last Status probe and knows a leader.
    pub healthy: bool,
    /// Since when (ms) it has been continuously unhealthy.
    pub unhealthy_since_ms: Option<u64>,
    /// Since when (ms) it has been seen as a learner.
    pub learner_since_ms: Option<u64>,
    /// When (ms) this instance saw it become a voter after seeing it as a
    /// learner: its promotion. etcd promotes a learner it has just sent
    /// its database to while the learner still restores it (tens of
    /// seconds on gigabytes, answering no probe), so a voter's unhealthy
    /// time counts from here, never from the learner's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_at_ms: Option<u64>,
}

impl MemberFacts {
    pub fn never_started(&self) -> bool {
        self.name.is_empty()
    }
}

/// Timings the rules use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannerConfig {
    pub unhealthy_member_ttl_ms: u64,
    pub learner_timeout_ms: u64,
    /// How far behind another instance's view of the group this
    /// instance's may be (a few of the provider's refresh intervals): a
    /// learner no instance of this view owns is removed only once it has
    /// been seen that long — the instance that added it read a newer
    /// group, which this one will read too.
    pub group_lag_ms: u64,
}

impl PlannerConfig {
    /// [`Self::group_lag_ms`] for a provider that refreshes its group every
    /// `refresh_ms`: three refreshes (one may fail, and the other instance
    /// may have read just after a change), at least 3 s.
    pub fn group_lag_ms_for(refresh_ms: u64) -> u64 {
        refresh_ms.saturating_mul(3).max(3_000)
    }
}

/// Everything the planner decides on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub now_ms: u64,
    pub local: LocalFacts,
    /// Instance ids in the group, with their peer URLs.
    pub group: Vec<(String, String)>,
    pub desired_size: usize,
    /// Every instance `group` leaves out has certainly departed
    /// (`crate::departures`: an instance a read leaves out stays in `group`
    /// until its departure is confirmed). False while eco has not read the
    /// group over the confirmation span since it started — nothing tells
    /// it who was listed before —, and a member no instance owns is kept
    /// until then.
    pub absences_confirmed: bool,
    /// This instance is absent from the provider's latest read, its
    /// departure not confirmed yet (it is still in `group`).
    pub absent_unconfirmed: bool,
    /// The member list from any member that answered; `None` if none did.
    pub members: Option<Vec<MemberFacts>>,
    /// Instances alive in gossip (up, recently heard), this one included,
    /// each with the time (`now_ms`'s clock) since which it has been alive
    /// without a break; `None` without gossip (unknown).
    pub live: Option<BTreeMap<String, u64>>,
    pub config: PlannerConfig,
}

impl Observation {
    /// This instance's member: by recorded id, else by name, else (never
    /// started) by peer URL.
    pub fn my_member(&self) -> Option<&MemberFacts> {
        let members = self.members.as_ref()?;
        let l = &self.local;
        members
            .iter()
            .find(|m| Some(m.id) == l.recorded_member_id)
            .or_else(|| members.iter().find(|m| m.name == l.instance_id))
            .or_else(|| {
                members
                    .iter()
                    .find(|m| m.never_started() && m.peer_urls.contains(&l.peer_url))
            })
    }

    /// This instance is in the group (else it is leaving).
    pub fn in_group(&self) -> bool {
        self.group
            .iter()
            .any(|(id, _)| *id == self.local.instance_id)
    }

    /// The group instance a member belongs to, by name or peer URL.
    pub fn owner_of(&self, m: &MemberFacts) -> Option<&str> {
        self.group
            .iter()
            .find(|(id, url)| *id == m.name || (m.name.is_empty() && m.peer_urls.contains(url)))
            .map(|(id, _)| id.as_str())
    }
}

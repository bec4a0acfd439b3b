//! The group of instances a provider reports.

use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// One machine of the group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    pub id: String,
    pub address: IpAddr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// What a provider reports: who we are and who is in the group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub self_id: String,
    /// Sorted by id.
    pub instances: Vec<Instance>,
    /// How many instances the group should have (a scaling target), which
    /// may differ from `instances.len()` while the group changes.
    pub desired_size: usize,
}

impl Group {
    /// This instance's entry.
    pub fn me(&self) -> Option<&Instance> {
        self.get(&self.self_id)
    }

    pub fn get(&self, id: &str) -> Option<&Instance> {
        self.instances.iter().find(|i| i.id == id)
    }
}

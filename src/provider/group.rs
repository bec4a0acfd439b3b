//! The group of instances a provider reports, and how an instance is
//! reached: a [`Host`] that is an IP address or a DNS name.

pub use crate::base::names::{Host, check_instance_id};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::net::IpAddr;

/// One machine of the group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    pub id: String,
    /// Where peers and clients reach it (`address` in a group file).
    #[serde(rename = "address")]
    pub host: Host,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// This instance, as its provider knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub id: String,
    /// Where peers and clients reach it: etcd's advertised URLs, gossip's
    /// advertised address.
    pub host: Host,
    /// The address its listeners bind (etcd's listen URLs, gossip, the API
    /// unless configured).
    pub bind: IpAddr,
    pub zone: Option<String>,
}

impl Identity {
    /// The identity of the group's instance `me`.
    pub fn of(me: &Instance) -> Identity {
        Identity {
            id: me.id.clone(),
            host: me.host.clone(),
            bind: me.host.bind_address(),
            zone: me.zone.clone(),
        }
    }
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
    /// Instances of `instances` the provider's latest read left out, whose
    /// departure is not confirmed yet (`confirmed.rs`); empty in a read.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub departing: BTreeSet<String>,
}

impl Group {
    /// This instance's entry.
    pub fn me(&self) -> Option<&Instance> {
        self.get(&self.self_id)
    }

    pub fn get(&self, id: &str) -> Option<&Instance> {
        self.instances.iter().find(|i| i.id == id)
    }

    /// The instance ids, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.instances.iter().map(|i| i.id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_ips_or_dns_names() {
        assert_eq!(
            Host::parse("127.0.0.11").unwrap(),
            Host::Ip("127.0.0.11".parse().unwrap())
        );
        assert_eq!(Host::parse("::1").unwrap().authority(), "[::1]");
        let pod = Host::parse("eco-0.eco.prod.svc.cluster.local.").unwrap();
        assert_eq!(pod, Host::Name("eco-0.eco.prod.svc.cluster.local".into()));
        assert_eq!(pod.bind_address().to_string(), "0.0.0.0");
        assert_eq!(
            Host::parse("10.0.0.5").unwrap().bind_address().to_string(),
            "10.0.0.5"
        );
        for bad in [
            "",
            "no pe",
            "-x",
            "x-",
            "a..b",
            "1.2.3.999",
            "a_b",
            &"x".repeat(64),
        ] {
            assert!(Host::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_host_round_trips_as_a_string() {
        let i: Instance = toml::from_str("id = \"a\"\naddress = \"Eco-1.Example\"\n").unwrap();
        assert_eq!(i.host, Host::Name("eco-1.example".into()));
        assert!(
            toml::to_string(&i)
                .unwrap()
                .contains("address = \"eco-1.example\"")
        );
    }
}

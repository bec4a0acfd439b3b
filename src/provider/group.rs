//! The group of instances a provider reports, and how an instance is
//! reached: a [`Host`] that is an IP address or a DNS name.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// Where an instance is reached: an IP address, or a DNS name (a
/// StatefulSet pod's stable name; its IP changes on every restart).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    Ip(IpAddr),
    Name(String),
}

impl Host {
    /// Parses an IP address or a DNS name (labels of letters, digits and
    /// `-`, not starting or ending with `-`, 1 to 63 bytes each, 253 in
    /// all; a trailing dot is allowed). The result is canonical, so two
    /// spellings of one host compare equal: an IPv4-mapped IPv6 address is
    /// its IPv4 address, a name is lowercase without the trailing dot.
    pub fn parse(text: &str) -> Result<Host, String> {
        if let Ok(ip) = text.parse::<IpAddr>() {
            // `::ffff:127.0.3.1` is 127.0.3.1: one machine, one host.
            return Ok(Host::Ip(ip.to_canonical()));
        }
        let name = text.strip_suffix('.').unwrap_or(text);
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        let all_digits = name.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        if name.is_empty() || name.len() > 253 || all_digits || !name.split('.').all(label_ok) {
            return Err(format!(
                "{text:?} is neither an IP address nor a DNS name (letters, digits, '-' and '.')"
            ));
        }
        Ok(Host::Name(name.to_ascii_lowercase()))
    }

    /// The IP address, when the host is one.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::Ip(ip) => Some(*ip),
            Host::Name(_) => None,
        }
    }

    /// The host as a URL's authority needs it (IPv6 in brackets).
    pub fn authority(&self) -> String {
        match self {
            Host::Ip(IpAddr::V6(a)) => format!("[{a}]"),
            Host::Ip(IpAddr::V4(a)) => a.to_string(),
            Host::Name(n) => n.clone(),
        }
    }

    /// The address a process on this host binds: the IP itself, or every
    /// address for a name (a name's address changes; the name stays).
    pub fn bind_address(&self) -> IpAddr {
        match self {
            Host::Ip(ip) => *ip,
            Host::Name(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(ip) => write!(f, "{ip}"),
            Host::Name(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for Host {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Host {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Host::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Whether `id` may name an instance: 1 to 128 bytes of ASCII letters,
/// digits, `-`, `_` and `.`. It becomes etcd's member name and part of
/// `--initial-cluster` (`name=url,…`), gossip ids, file names in the store
/// and metric labels, so `=`, `,`, `/`, spaces and control characters are
/// refused wherever an id comes from: the config, `--instance-id`,
/// `ECO_INSTANCE_ID`, a group file.
pub fn check_instance_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{id:?} is not an instance id; allowed: 1 to 128 letters, digits, '-', '_' or '.'"
        ))
    }
}

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

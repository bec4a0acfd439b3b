//! The names eco accepts from its config, its command line and its group:
//! a [`Host`] (an IP address or a DNS name), an instance id
//! ([`check_instance_id`]) and a store object name
//! ([`check_object_name`]). Each rule is here once, on the bottom floor,
//! so that the config's validation and the parts that use the names (the
//! provider, the store) read the same one.
//!
//! What it does not do: resolve a name (the provider does, when it reads
//! the group) or say which object names eco writes (the store's keys).

use serde::{Deserialize, Serialize};
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

/// Checks an object name: relative, `/`-separated, no empty, `.` or `..`
/// segments, no segment starting with `.` (reserved for temporary and
/// metadata files).
pub fn check_object_name(name: &str) -> Result<(), &'static str> {
    let bad = |why| Err(why);
    if name.is_empty() || name.len() > 512 {
        return bad("must be 1 to 512 bytes");
    }
    for seg in name.split('/') {
        if seg.is_empty() {
            return bad("has an empty segment");
        }
        if seg.starts_with('.') {
            return bad("a segment starts with '.'");
        }
        if !seg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+' | b'='))
        {
            return bad("only letters, digits and - _ . + = are allowed");
        }
    }
    Ok(())
}

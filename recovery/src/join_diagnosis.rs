//! Why a join keeps failing, said in terms a human can act on.
//!
//! A member added as a learner whose etcd keeps exiting before it ever
//! joined (its name is still unpublished in the member list) has a reason
//! in etcd's own words — usually "discovery failed … EOF" or a timeout —
//! that rarely names the cause. One cause eco can tell for certain from
//! its own side: etcd's peers check a peer's client certificate against
//! the address the connection comes *from*, and when that source address
//! (the one the kernel picks toward each peer; on loopback, 127.0.0.1
//! whatever the listener's address) is not among the certificate's names,
//! every peer rejects it. The remedy is the certificate's names (with
//! generated TLS: `etcd.tls.generated.extra_names`).
//!
//! Pure: the facts in, the sentence out; the I/O (reading the certificate,
//! asking the kernel for source addresses) is the daemon's.

use serde::{Deserialize, Serialize};

/// The address this instance's connections to one peer come from, and
/// whether its peer certificate names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerSource {
    /// The peer's peer URL.
    pub peer: String,
    /// The local address the kernel picks toward it.
    pub source: String,
    /// This instance's peer certificate names `source` (an IP SAN, or a
    /// DNS name written as that address).
    pub named: bool,
}

/// What the diagnosis reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinFacts<'a> {
    /// This instance's member is in the list but has never started (no
    /// name): it is joining.
    pub joining: bool,
    /// etcd exited since it was started for this member (a crash, not a
    /// stop eco asked for).
    pub exited: bool,
    /// etcd's own last fatal line, if it logged one.
    pub etcd_reason: Option<&'a str>,
    /// The peers require a client certificate from peers
    /// (`client_cert_auth` on the peer surface).
    pub peers_check_certificates: bool,
    /// This instance's peer certificate's names (empty without peer TLS).
    pub certificate_names: &'a [String],
    /// Toward each other member.
    pub sources: &'a [PeerSource],
    /// The config key that adds names to this instance's certificate, when
    /// eco generates it (`etcd.tls.generated.extra_names`).
    pub names_key: Option<&'a str>,
}

/// Why the join fails, or `None` while nothing says it does.
pub fn diagnose(f: &JoinFacts) -> Option<String> {
    if !(f.joining && f.exited) {
        return None;
    }
    let said = match f.etcd_reason {
        Some(r) => format!("etcd exits before it joins: \"{r}\""),
        None => "etcd exits before it joins (it logged no fatal line)".to_string(),
    };
    if f.peers_check_certificates
        && let Some(s) = f.sources.iter().find(|s| !s.named)
    {
        let remedy = match f.names_key {
            Some(key) => format!("add \"{}\" to {key}", s.source),
            None => format!(
                "reissue the certificate with \"{}\" among its names",
                s.source
            ),
        };
        return Some(format!(
            "{said}; the peers reject this member's certificate: they check it against the address its connections come from, {} (toward {}), which the certificate does not name (it names {}): {remedy}",
            s.source,
            s.peer,
            if f.certificate_names.is_empty() {
                "nothing".to_string()
            } else {
                f.certificate_names.join(", ")
            }
        ));
    }
    Some(format!(
        "{said}; check that the peers' peer port is reachable from this instance (a firewall, a security group) and that they accept its certificate; etcd is restarted with a growing back-off"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(named: bool) -> PeerSource {
        PeerSource {
            peer: "https://127.0.1.2:2380".into(),
            source: "127.0.0.1".into(),
            named,
        }
    }

    #[test]
    fn table() {
        let names = vec!["127.0.1.1".to_string()];
        let bad = [source(true), source(false)];
        let good = [source(true)];
        let base = JoinFacts {
            joining: true,
            exited: true,
            etcd_reason: Some("discovery failed: EOF"),
            peers_check_certificates: true,
            certificate_names: &names,
            sources: &bad,
            names_key: Some("etcd.tls.generated.extra_names"),
        };
        let text = diagnose(&base).expect("a diagnosis");
        assert!(text.contains("\"discovery failed: EOF\""), "{text}");
        assert!(text.contains("reject this member's certificate"), "{text}");
        assert!(
            text.contains("127.0.0.1 (toward https://127.0.1.2:2380)"),
            "{text}"
        );
        assert!(text.contains("it names 127.0.1.1"), "{text}");
        assert!(
            text.contains("add \"127.0.0.1\" to etcd.tls.generated.extra_names"),
            "{text}"
        );

        let own = JoinFacts {
            names_key: None,
            ..base.clone()
        };
        assert!(diagnose(&own).unwrap().contains("reissue the certificate"));

        let reachable = JoinFacts {
            sources: &good,
            ..base.clone()
        };
        let text = diagnose(&reachable).unwrap();
        assert!(text.contains("peer port is reachable"), "{text}");
        assert!(!text.contains("reject"), "{text}");

        let no_auth = JoinFacts {
            peers_check_certificates: false,
            ..base.clone()
        };
        assert!(!diagnose(&no_auth).unwrap().contains("reject"));

        let silent = JoinFacts {
            etcd_reason: None,
            ..reachable.clone()
        };
        assert!(diagnose(&silent).unwrap().contains("logged no fatal line"));

        assert_eq!(
            diagnose(&JoinFacts {
                joining: false,
                ..base.clone()
            }),
            None,
            "a member that joined"
        );
        assert_eq!(
            diagnose(&JoinFacts {
                exited: false,
                ..base
            }),
            None,
            "nothing failed yet"
        );
    }
}

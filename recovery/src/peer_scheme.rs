//! Turning TLS on (or off) on the peer surface of a running cluster,
//! member by member, without losing quorum.
//!
//! etcd's peers reach a member at the peer URLs the cluster records for it
//! (`member update` changes them), and a member's peer listener speaks one
//! scheme: a member that listens with `https` while the others dial `http`
//! (or the reverse) is cut off. So each member's switch is two steps, by
//! its own instance: record the new URL in the cluster (`member update`,
//! committed by the quorum), then restart etcd listening with the new
//! scheme. Between the two the member is cut off for one restart: one
//! member at a time, and only while every member is healthy, so the others
//! keep the quorum.
//!
//! The rules, for this instance, in order:
//!
//! 1. The cluster's record of its own member is unknown (no member list):
//!    keep the listener.
//! 2. The listener does not speak the recorded scheme: restart etcd with
//!    the recorded one — it is how the cluster dials this member. This is
//!    the second step of a switch, and it repairs every crash between the
//!    two steps, and a first start that guessed wrong.
//! 3. The recorded scheme is the wanted one (`[etcd.tls]` in this
//!    instance's config): nothing to do.
//! 4. Otherwise this member must switch, once all of these hold:
//!    every member is a healthy voter (no membership change in flight);
//!    every member's instance reports a listener
//!    that matches its own record (nobody is between the two steps); for
//!    `https`, every member's instance runs etcd with peer TLS material
//!    (a member without it cannot dial an `https` peer: the operator rolls
//!    the new config out to every instance first); and no member before
//!    this one (by name) still has to switch. Then: record the wanted URL.
//!
//! The client surface needs no step of its own: while a member's peer
//! listener still speaks `http` it serves its client port over `http` too
//! (with its TLS material loaded, nothing on the wire changes before the
//! switch, and instances not yet given the TLS config still reach it); its
//! switch's restart makes both surfaces `https`.
//!
//! Turning TLS off again is not supported: a member's `https` listener
//! needs its material until every member switched, and a config without
//! peer TLS has none; the rules wait for a human instead.
//!
//! What this does not do: restart etcd to load TLS material for dialing
//! (that is the config change's own restart, rolled out by the operator
//! or the group's instance refresh), or decide anything about certificates
//! (`crate::certificates`).

use serde::{Deserialize, Serialize};

/// A peer URL's scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerScheme {
    Http,
    Https,
}

impl PeerScheme {
    pub fn as_str(self) -> &'static str {
        match self {
            PeerScheme::Http => "http",
            PeerScheme::Https => "https",
        }
    }

    /// The scheme of `url` (`http://…`, `https://…`), if it is one of them.
    pub fn of_url(url: &str) -> Option<PeerScheme> {
        if url.starts_with("https://") {
            Some(PeerScheme::Https)
        } else if url.starts_with("http://") {
            Some(PeerScheme::Http)
        } else {
            None
        }
    }
}

impl std::fmt::Display for PeerScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an instance says of itself in gossip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceFacts {
    /// The scheme its etcd's peer listener speaks; `None`: etcd not
    /// running.
    pub listening: Option<PeerScheme>,
    /// Its etcd runs with peer TLS material, so it can dial `https` peers.
    pub tls_ready: bool,
}

/// One member of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberFacts {
    /// The member's name (its instance id).
    pub name: String,
    /// The scheme of the peer URL the cluster records for it.
    pub recorded: PeerScheme,
    /// It answers and knows a leader.
    pub healthy: bool,
    /// A learner (still catching up, or never started).
    pub learner: bool,
    /// What its instance last said in gossip; `None`: nothing heard.
    pub instance: Option<InstanceFacts>,
}

/// Everything the decision reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// This instance's member name.
    pub me: String,
    /// The scheme this instance's config wants on the peer surface.
    pub want: PeerScheme,
    /// The scheme its etcd's peer listener speaks now.
    pub listening: PeerScheme,
    /// Every member, as the member list and the probes say; empty when no
    /// member list answered.
    pub members: Vec<MemberFacts>,
}

/// What to do about the peer scheme now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing.
    Keep,
    /// A switch is wanted but not now, for this reason.
    Wait { reason: String },
    /// Restart etcd with its peer listener on `listen`.
    Restart { listen: PeerScheme, reason: String },
    /// Record this member's peer URL with scheme `to` (`member update`).
    Record { to: PeerScheme, reason: String },
}

/// The scheme etcd's peer listener starts with: without peer TLS
/// material only `http` can be served; else the one the state file
/// recorded (`recorded`: `None` without a state file, a new member made
/// with the config's `want`; `Some(None)` for a state written before the
/// record existed, which ran `http`). A wrong start costs one restart:
/// [`decide`]'s listener follows the cluster's record.
pub fn start_listener(
    has_material: bool,
    recorded: Option<Option<PeerScheme>>,
    want: PeerScheme,
) -> PeerScheme {
    if !has_material {
        return PeerScheme::Http;
    }
    match recorded {
        Some(scheme) => scheme.unwrap_or(PeerScheme::Http),
        None => want,
    }
}

/// The rules of the module documentation.
pub fn decide(f: &Facts) -> Step {
    let Some(own) = f.members.iter().find(|m| m.name == f.me) else {
        return Step::Keep;
    };
    if f.want == PeerScheme::Http && own.recorded == PeerScheme::Https {
        return Step::Wait {
            reason: "the cluster dials this member with https but [etcd.tls] has no peer TLS: turning TLS off on a running cluster is not supported (an https listener needs its material until every member switched); put the TLS config back".into(),
        };
    }
    if own.recorded != f.listening {
        return Step::Restart {
            listen: own.recorded,
            reason: format!(
                "the cluster dials this member with {} but its peer listener speaks {}: the listener follows the cluster's record",
                own.recorded, f.listening
            ),
        };
    }
    if own.recorded == f.want {
        return Step::Keep;
    }
    let wait = |reason: String| Step::Wait {
        reason: format!("peer surface to {} later: {reason}", f.want),
    };
    for m in &f.members {
        if m.learner {
            return wait(format!(
                "member {} is a learner (a membership change is in flight)",
                m.name
            ));
        }
        if !m.healthy {
            return wait(format!(
                "member {} is not healthy (one member at a time, all healthy)",
                m.name
            ));
        }
        match m.instance {
            None => {
                return wait(format!(
                    "nothing heard from the instance of member {}",
                    m.name
                ));
            }
            Some(i) if i.listening != Some(m.recorded) => {
                return wait(format!(
                    "member {} is between the steps of its own switch (recorded {}, listening {})",
                    m.name,
                    m.recorded,
                    i.listening.map_or("nothing", |s| s.as_str())
                ));
            }
            Some(i) if f.want == PeerScheme::Https && !i.tls_ready => {
                return wait(format!(
                    "member {} runs without peer TLS material and could not dial an https peer (roll the TLS config out to every instance)",
                    m.name
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(first) = f
        .members
        .iter()
        .filter(|m| m.recorded != f.want)
        .map(|m| &m.name)
        .min()
        .filter(|first| **first != f.me)
    {
        return wait(format!("member {first} switches first (by name)"));
    }
    Step::Record {
        to: f.want,
        reason: format!(
            "TLS on the peer surface wanted ({}): every member is healthy and ready, and it is this member's turn",
            f.want
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::PeerScheme::{Http, Https};
    use super::*;

    fn member(name: &str, recorded: PeerScheme, listening: PeerScheme, ready: bool) -> MemberFacts {
        MemberFacts {
            name: name.into(),
            recorded,
            healthy: true,
            learner: false,
            instance: Some(InstanceFacts {
                listening: Some(listening),
                tls_ready: ready,
            }),
        }
    }

    fn facts(me: &str, listening: PeerScheme, members: Vec<MemberFacts>) -> Facts {
        Facts {
            me: me.into(),
            want: Https,
            listening,
            members,
        }
    }

    fn all_ready_http() -> Vec<MemberFacts> {
        vec![
            member("a", Http, Http, true),
            member("b", Http, Http, true),
            member("c", Http, Http, true),
        ]
    }

    fn kind(s: &Step) -> String {
        match s {
            Step::Keep => "keep".into(),
            Step::Wait { reason } => format!("wait: {reason}"),
            Step::Restart { listen, .. } => format!("restart {listen}"),
            Step::Record { to, .. } => format!("record {to}"),
        }
    }

    #[test]
    fn table() {
        let mut unhealthy = all_ready_http();
        unhealthy[2].healthy = false;
        let mut not_ready = all_ready_http();
        not_ready[2].instance = Some(InstanceFacts {
            listening: Some(Http),
            tls_ready: false,
        });
        let mut learner = all_ready_http();
        learner[1].learner = true;
        let mut silent = all_ready_http();
        silent[1].instance = None;
        let mut a_done = all_ready_http();
        a_done[0] = member("a", Https, Https, true);
        let mut a_between = all_ready_http();
        a_between[0] = member("a", Https, Http, true);
        let all_https = vec![
            member("a", Https, Https, true),
            member("b", Https, Https, true),
            member("c", Https, Https, true),
        ];
        let cases: Vec<(&str, Facts, &str)> = vec![
            ("no member list", facts("a", Http, vec![]), "keep"),
            (
                "the first by name switches",
                facts("a", Http, all_ready_http()),
                "record https",
            ),
            (
                "the others wait for it",
                facts("b", Http, all_ready_http()),
                "wait: peer surface to https later: member a switches first (by name)",
            ),
            (
                "a recorded, its listener follows",
                facts("a", Http, a_between.clone()),
                "restart https",
            ),
            (
                "b waits while a is between its steps",
                facts("b", Http, a_between),
                "wait: peer surface to https later: member a is between the steps of its own switch (recorded https, listening http)",
            ),
            (
                "then b switches",
                facts("b", Http, a_done.clone()),
                "record https",
            ),
            (
                "c waits for b",
                facts("c", Http, a_done),
                "wait: peer surface to https later: member b switches first (by name)",
            ),
            (
                "an unhealthy member blocks",
                facts("a", Http, unhealthy),
                "wait: peer surface to https later: member c is not healthy (one member at a time, all healthy)",
            ),
            (
                "a member without TLS material blocks https",
                facts("a", Http, not_ready),
                "wait: peer surface to https later: member c runs without peer TLS material and could not dial an https peer (roll the TLS config out to every instance)",
            ),
            (
                "a silent instance blocks",
                facts("a", Http, silent),
                "wait: peer surface to https later: nothing heard from the instance of member b",
            ),
            ("all switched", facts("b", Https, all_https.clone()), "keep"),
            (
                "a wrong first guess is repaired",
                facts("b", Http, all_https),
                "restart https",
            ),
        ];
        for (name, f, want) in cases {
            assert_eq!(kind(&decide(&f)), want, "{name}");
        }
    }

    #[test]
    fn the_listener_starts_on_the_recorded_scheme() {
        let cases = [
            (
                false,
                Some(Some(Https)),
                Https,
                Http,
                "no material: http only",
            ),
            (true, Some(Some(Https)), Https, Https, "recorded https"),
            (
                true,
                Some(Some(Http)),
                Https,
                Http,
                "recorded http, switch pending",
            ),
            (
                true,
                Some(None),
                Https,
                Http,
                "a state from before the record ran http",
            ),
            (
                true,
                None,
                Https,
                Https,
                "a new member is made with the config's",
            ),
        ];
        for (material, recorded, want, expect, name) in cases {
            assert_eq!(start_listener(material, recorded, want), expect, "{name}");
        }
    }

    #[test]
    fn turning_tls_off_waits_for_a_human() {
        let members = vec![
            member("a", Https, Https, false),
            member("b", Https, Https, false),
        ];
        let f = Facts {
            me: "a".into(),
            want: Http,
            listening: Http,
            members,
        };
        assert!(kind(&decide(&f)).starts_with("wait: the cluster dials this member with https"));
    }

    /// Every member following the rules, one pass each in turn, ends with
    /// every member on the wanted scheme, and at no point are two members
    /// cut off at once (recorded differs from listening).
    #[test]
    fn a_rollout_converges_one_member_at_a_time() {
        for n in 1..=5usize {
            let names: Vec<String> = (0..n).map(|i| format!("i-{i}")).collect();
            let mut recorded = vec![Http; n];
            let mut listening = vec![Http; n];
            for _round in 0..4 * n {
                for i in 0..n {
                    let members = (0..n)
                        .map(|j| member(&names[j], recorded[j], listening[j], true))
                        .collect();
                    match decide(&facts(&names[i], listening[i], members)) {
                        Step::Record { to, .. } => recorded[i] = to,
                        Step::Restart { listen, .. } => listening[i] = listen,
                        Step::Keep | Step::Wait { .. } => {}
                    }
                    let cut_off = (0..n).filter(|&j| recorded[j] != listening[j]).count();
                    assert!(cut_off <= 1, "{n} members: {cut_off} cut off at once");
                }
            }
            assert!(
                recorded.iter().chain(&listening).all(|s| *s == Https),
                "{n} members did not converge"
            );
        }
    }
}

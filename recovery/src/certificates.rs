//! Generated TLS: whether this instance issues its certificate again, and
//! how often it looks. An instance renews its own certificates from the
//! cluster's CA, without a restart (etcd reads its files on every
//! handshake), so instances renew independently and no member is ever
//! down for it.
//!
//! Also: whether an instance may make the cluster's CA when the store holds
//! none ([`missing_ca`]: only while the cluster is being formed, or when TLS
//! is turned on for a running plaintext cluster — never for a cluster whose
//! CA is gone, which a new CA would cut off), what it does with the
//! certificates it holds when it cannot obtain the CA ([`without_ca`]), and
//! how long an operator's client certificate may be valid
//! ([`client_validity`]).

use crate::peer_scheme::PeerScheme;

/// A certificate this instance holds, as read from its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Expiry, seconds since the Unix epoch.
    pub not_after_unix: i64,
    /// Its subject alternative names, normalised (lowercase, IPs
    /// canonical), in any order.
    pub names: Vec<String>,
    /// Whether the CA file beside it is the cluster's CA now.
    pub from_current_ca: bool,
}

/// What the certificate must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// The names it must carry, normalised, in any order.
    pub names: Vec<String>,
    /// Renew once less than this is left (seconds).
    pub renew_before_s: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// Keep it; it is renewed in `renew_in_s` seconds.
    Keep { renew_in_s: u64 },
    /// Issue a new one, for this reason.
    Issue { reason: String },
}

/// Whether to issue the certificate again at `now_unix`.
pub fn decide(now_unix: i64, held: Option<&Held>, wanted: &Wanted) -> Renewal {
    let Some(held) = held else {
        return Renewal::Issue {
            reason: "no certificate yet (or it cannot be read)".into(),
        };
    };
    if !held.from_current_ca {
        return Renewal::Issue {
            reason: "it was not issued by the cluster's CA now in the store".into(),
        };
    }
    let mut have = held.names.clone();
    let mut want = wanted.names.clone();
    have.sort();
    have.dedup();
    want.sort();
    want.dedup();
    if have != want {
        return Renewal::Issue {
            reason: format!("its names {have:?} are not the wanted {want:?}"),
        };
    }
    let left = held.not_after_unix - now_unix;
    let renew_in = left - wanted.renew_before_s as i64;
    if renew_in <= 0 {
        return Renewal::Issue {
            reason: if left <= 0 {
                "it has expired".into()
            } else {
                format!(
                    "{left} s left, less than renew_before ({} s)",
                    wanted.renew_before_s
                )
            },
        };
    }
    Renewal::Keep {
        renew_in_s: renew_in as u64,
    }
}

/// What a holder of gossip keys does to the seals of the cluster's CA
/// (by key id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reseal {
    /// Own keys without a seal: seal the CA for them (a rotation's new
    /// key, added second everywhere before it is promoted).
    pub add: Vec<String>,
    /// Seals of keys this instance does not hold, dropped once it holds a
    /// single key (the rotation is over from its view: the old key was
    /// removed everywhere before it was removed here), so a retired key
    /// stops opening the CA.
    pub drop: Vec<String>,
}

/// The reseal of a CA sealed for `sealed` by a holder of `own` keys.
pub fn reseal(sealed: &[String], own: &[String]) -> Reseal {
    Reseal {
        add: own
            .iter()
            .filter(|k| !sealed.contains(k))
            .cloned()
            .collect(),
        drop: if own.len() == 1 {
            sealed
                .iter()
                .filter(|k| !own.contains(k))
                .cloned()
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// What an instance knows when the store holds no CA for its cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoStoredCa {
    /// The store holds an incarnation record of the cluster: it was formed.
    pub cluster_recorded: bool,
    /// This instance holds a CA certificate from an earlier issue (its
    /// `ca.crt`): the cluster had a CA.
    pub holds_ca_certificate: bool,
    /// The peer scheme this instance's state file records for its member
    /// (`http` for a state written before the scheme was recorded); `None`
    /// without a state file (not a member yet).
    pub member_peer_scheme: Option<PeerScheme>,
}

/// Why an instance makes the cluster's CA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MakeCa {
    /// No incarnation record: the cluster is being formed (incarnation 1).
    Forming,
    /// The cluster runs and this instance's member still speaks `http`
    /// holding no CA certificate: TLS is being turned on, and no member
    /// switches to `https` before every instance holds the CA's material
    /// (`crate::peer_scheme`), so no member uses a CA yet.
    TurningTlsOn,
}

/// Why an instance makes no CA although the store holds none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefuseCa {
    /// It holds a certificate of the cluster's CA: the CA existed and its
    /// object is gone. A new CA would be trusted by no other member and
    /// would not accept operators' certificates.
    HoldsItsCertificate,
    /// Its member speaks `https`: the cluster's TLS comes from a CA the
    /// store no longer holds (or from files of another CA).
    MemberSpeaksHttps,
    /// It is not a member yet (no state file) of a cluster that exists: it
    /// cannot tell a CA that is gone from a cluster that never had one.
    NotAMember,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingCa {
    /// Make the CA (created only if absent: of two makers one wins).
    Make(MakeCa),
    /// Make none; keep what this instance holds.
    Refuse(RefuseCa),
}

/// Whether an instance makes the cluster's CA, the store holding none: only
/// while the cluster is being formed, or when TLS is turned on for a
/// running plaintext cluster; never for a cluster that had one.
pub fn missing_ca(f: NoStoredCa) -> MissingCa {
    if !f.cluster_recorded {
        return MissingCa::Make(MakeCa::Forming);
    }
    if f.holds_ca_certificate {
        return MissingCa::Refuse(RefuseCa::HoldsItsCertificate);
    }
    match f.member_peer_scheme {
        Some(PeerScheme::Https) => MissingCa::Refuse(RefuseCa::MemberSpeaksHttps),
        Some(PeerScheme::Http) => MissingCa::Make(MakeCa::TurningTlsOn),
        None => MissingCa::Refuse(RefuseCa::NotAMember),
    }
}

/// The generated files an instance holds, as read from them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldFiles {
    /// The member certificate's expiry (Unix seconds), when it reads.
    pub member_not_after_unix: Option<i64>,
    /// eco's client certificate's expiry, when it reads.
    pub client_not_after_unix: Option<i64>,
    /// A CA certificate (`ca.crt`) is there.
    pub ca_certificate: bool,
}

/// What an instance does when it cannot obtain the cluster's CA (gone from
/// the store, sealed under keys it does not hold, the store unreachable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WithoutCa {
    /// Go on with the certificates it holds (they cannot be renewed); the
    /// first of them expires in `expires_in_s`.
    KeepHeld { expires_in_s: u64 },
    /// Nothing usable: etcd cannot run with TLS.
    Stop { reason: String },
}

/// Whether the certificates held are enough to go on without the CA at
/// `now_unix`: every file there and none expired.
pub fn without_ca(now_unix: i64, held: &HeldFiles) -> WithoutCa {
    if !held.ca_certificate {
        return WithoutCa::Stop {
            reason: "it holds no CA certificate (ca.crt)".into(),
        };
    }
    let mut first = i64::MAX;
    for (what, not_after) in [
        ("member", held.member_not_after_unix),
        ("client (eco)", held.client_not_after_unix),
    ] {
        let Some(not_after) = not_after else {
            return WithoutCa::Stop {
                reason: format!("it holds no {what} certificate"),
            };
        };
        if not_after <= now_unix {
            return WithoutCa::Stop {
                reason: format!(
                    "its {what} certificate expired {} s ago",
                    now_unix - not_after
                ),
            };
        }
        first = first.min(not_after);
    }
    WithoutCa::KeepHeld {
        expires_in_s: (first - now_unix) as u64,
    }
}

/// Why a client certificate's validity is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValidityRefused {
    #[error("the validity must be positive")]
    NotPositive,
    #[error(
        "{requested_s} s is longer than the CA has left ({ca_left_s} s): a certificate cannot outlive the CA that signs it"
    )]
    BeyondTheCa { requested_s: u64, ca_left_s: u64 },
    #[error("the cluster's CA has expired")]
    CaExpired,
}

/// The validity of an operator's client certificate (`eco certs client
/// --validity`): positive, and within what the CA has left (the CA's
/// expiry at `ca_not_after_unix`). Refused otherwise, never shortened
/// silently: the operator asked for that time.
pub fn client_validity(
    requested_s: u64,
    now_unix: i64,
    ca_not_after_unix: i64,
) -> Result<u64, ValidityRefused> {
    if ca_not_after_unix <= now_unix {
        return Err(ValidityRefused::CaExpired);
    }
    if requested_s == 0 {
        return Err(ValidityRefused::NotPositive);
    }
    let ca_left_s = (ca_not_after_unix - now_unix) as u64;
    if requested_s > ca_left_s {
        return Err(ValidityRefused::BeyondTheCa {
            requested_s,
            ca_left_s,
        });
    }
    Ok(requested_s)
}

/// How often an instance looks at its certificates (seconds): a tenth of
/// the time a certificate is kept before renewal, between 1 s and an hour,
/// so a renewal is never late by more than a tenth of its margin.
pub fn check_period_s(validity_s: u64, renew_before_s: u64) -> u64 {
    (validity_s.saturating_sub(renew_before_s) / 10).clamp(1, 3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(not_after: i64, names: &[&str], current: bool) -> Held {
        Held {
            not_after_unix: not_after,
            names: names.iter().map(|s| s.to_string()).collect(),
            from_current_ca: current,
        }
    }

    fn wanted(names: &[&str]) -> Wanted {
        Wanted {
            names: names.iter().map(|s| s.to_string()).collect(),
            renew_before_s: 100,
        }
    }

    #[test]
    fn table() {
        let w = wanted(&["10.0.0.5", "etcd.example.com"]);
        let issue = |r: &Renewal| matches!(r, Renewal::Issue { .. });
        let cases: &[(Option<Held>, i64, bool, &str)] = &[
            (None, 0, true, "nothing held"),
            (
                Some(held(1000, &["etcd.example.com", "10.0.0.5"], true)),
                0,
                false,
                "fresh, names in another order",
            ),
            (
                Some(held(1000, &["10.0.0.5"], true)),
                0,
                true,
                "a name missing",
            ),
            (
                Some(held(1000, &["10.0.0.5", "etcd.example.com", "x"], true)),
                0,
                true,
                "a name too many",
            ),
            (
                Some(held(1000, &["10.0.0.5", "etcd.example.com"], false)),
                0,
                true,
                "another CA",
            ),
            (
                Some(held(1000, &["10.0.0.5", "etcd.example.com"], true)),
                899,
                false,
                "101 s left",
            ),
            (
                Some(held(1000, &["10.0.0.5", "etcd.example.com"], true)),
                900,
                true,
                "100 s left: renew",
            ),
            (
                Some(held(1000, &["10.0.0.5", "etcd.example.com"], true)),
                2000,
                true,
                "expired",
            ),
        ];
        for (h, now, want_issue, why) in cases {
            let got = decide(*now, h.as_ref(), &w);
            assert_eq!(issue(&got), *want_issue, "{why}: {got:?}");
        }
        assert_eq!(
            decide(
                0,
                Some(&held(1000, &["10.0.0.5", "etcd.example.com"], true)),
                &w
            ),
            Renewal::Keep { renew_in_s: 900 }
        );
    }

    #[test]
    fn reseal_table() {
        let v = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // (sealed, own keys, add, drop, why)
        type Case<'a> = (
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            &'a str,
        );
        let cases: &[Case] = &[
            (&["a"], &["a"], &[], &[], "nothing to do"),
            (
                &["a"],
                &["a", "b"],
                &["b"],
                &[],
                "step 1: the new key added",
            ),
            (
                &["a", "b"],
                &["b", "a"],
                &[],
                &[],
                "step 2: promoted, nothing to do",
            ),
            (
                &["a", "b"],
                &["b"],
                &[],
                &["a"],
                "step 3: the old key dropped",
            ),
            (
                &["a"],
                &["b"],
                &["b"],
                &["a"],
                "a lone new key: sealed, the other dropped",
            ),
            (
                &["a", "b"],
                &["c", "a"],
                &["c"],
                &[],
                "keeps what it cannot judge while rotating",
            ),
        ];
        for (sealed, own, add, drop, why) in cases {
            assert_eq!(
                reseal(&v(sealed), &v(own)),
                Reseal {
                    add: v(add),
                    drop: v(drop)
                },
                "{why}"
            );
        }
    }

    #[test]
    fn a_ca_is_made_only_for_a_cluster_that_never_had_one() {
        use PeerScheme::{Http, Https};
        // (recorded, holds ca.crt, member's scheme, decision, why)
        type Case = (bool, bool, Option<PeerScheme>, MissingCa, &'static str);
        let make = MissingCa::Make;
        let refuse = MissingCa::Refuse;
        let cases: &[Case] = &[
            (
                false,
                false,
                None,
                make(MakeCa::Forming),
                "forming incarnation 1",
            ),
            (
                false,
                true,
                Some(Https),
                make(MakeCa::Forming),
                "no record: a new cluster, whatever is left on the volume",
            ),
            (
                true,
                true,
                Some(Https),
                refuse(RefuseCa::HoldsItsCertificate),
                "the object deleted under a running cluster",
            ),
            (
                true,
                true,
                Some(Http),
                refuse(RefuseCa::HoldsItsCertificate),
                "gone while TLS was being turned on, after this instance got it",
            ),
            (
                true,
                true,
                None,
                refuse(RefuseCa::HoldsItsCertificate),
                "a copy of the CA, no state",
            ),
            (
                true,
                false,
                Some(Https),
                refuse(RefuseCa::MemberSpeaksHttps),
                "its member speaks https without a CA copy",
            ),
            (
                true,
                false,
                None,
                refuse(RefuseCa::NotAMember),
                "a new instance joining a formed cluster",
            ),
            (
                true,
                false,
                Some(Http),
                make(MakeCa::TurningTlsOn),
                "TLS turned on for a running plaintext cluster",
            ),
        ];
        for (recorded, holds, scheme, want, why) in cases {
            let got = missing_ca(NoStoredCa {
                cluster_recorded: *recorded,
                holds_ca_certificate: *holds,
                member_peer_scheme: *scheme,
            });
            assert_eq!(got, *want, "{why}");
        }
    }

    #[test]
    fn without_the_ca_the_held_certificates_are_kept_until_they_expire() {
        let files = |member, client, ca| HeldFiles {
            member_not_after_unix: member,
            client_not_after_unix: client,
            ca_certificate: ca,
        };
        let stop = |r: &WithoutCa, word: &str| matches!(r, WithoutCa::Stop { reason } if reason.contains(word));
        assert_eq!(
            without_ca(100, &files(Some(1000), Some(400), true)),
            WithoutCa::KeepHeld { expires_in_s: 300 },
            "the first expiry"
        );
        let cases: &[(HeldFiles, &str, &str)] = &[
            (files(None, None, false), "ca.crt", "nothing held"),
            (files(Some(1000), Some(1000), false), "ca.crt", "no CA copy"),
            (
                files(None, Some(1000), true),
                "member",
                "no member certificate",
            ),
            (
                files(Some(1000), None, true),
                "client",
                "no client certificate",
            ),
            (
                files(Some(100), Some(1000), true),
                "expired 0 s ago",
                "member expired now",
            ),
            (
                files(Some(1000), Some(40), true),
                "client (eco) certificate expired 60 s",
                "client expired",
            ),
        ];
        for (held, word, why) in cases {
            let got = without_ca(100, held);
            assert!(stop(&got, word), "{why}: {got:?}");
        }
    }

    #[test]
    fn a_client_validity_is_positive_and_within_the_ca() {
        // (requested, now, CA's expiry, result)
        let cases: &[(u64, i64, i64, Result<u64, ValidityRefused>)] = &[
            (3600, 0, 10_000, Ok(3600)),
            (10_000, 0, 10_000, Ok(10_000)),
            (0, 0, 10_000, Err(ValidityRefused::NotPositive)),
            (
                10_001,
                0,
                10_000,
                Err(ValidityRefused::BeyondTheCa {
                    requested_s: 10_001,
                    ca_left_s: 10_000,
                }),
            ),
            (
                1000 * 365 * 86_400,
                5_000,
                10_000,
                Err(ValidityRefused::BeyondTheCa {
                    requested_s: 1000 * 365 * 86_400,
                    ca_left_s: 5_000,
                }),
            ),
            (1, 10_000, 10_000, Err(ValidityRefused::CaExpired)),
        ];
        for (requested, now, ca, want) in cases {
            assert_eq!(
                &client_validity(*requested, *now, *ca),
                want,
                "{requested} s at {now}"
            );
        }
    }

    #[test]
    fn the_check_period_is_a_tenth_of_the_margin_within_bounds() {
        let day = 24 * 3600;
        assert_eq!(check_period_s(90 * day, 30 * day), 3600);
        assert_eq!(check_period_s(3600, 3590), 1);
        assert_eq!(check_period_s(3600, 3500), 10);
        assert_eq!(check_period_s(100, 200), 1, "never zero");
    }
}

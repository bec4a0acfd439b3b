//! Generated TLS: whether this instance issues its certificate again, and
//! how often it looks. An instance renews its own certificates from the
//! cluster's CA, without a restart (etcd reads its files on every
//! handshake), so instances renew independently and no member is ever
//! down for it.

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
    fn the_check_period_is_a_tenth_of_the_margin_within_bounds() {
        let day = 24 * 3600;
        assert_eq!(check_period_s(90 * day, 30 * day), 3600);
        assert_eq!(check_period_s(3600, 3590), 1);
        assert_eq!(check_period_s(3600, 3500), 10);
        assert_eq!(check_period_s(100, 200), 1, "never zero");
    }
}

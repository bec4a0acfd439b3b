//! How the voting members are spread over availability zones, and whether
//! the loss of any one zone would lose quorum: what an operator (and the
//! `EcoZoneSpreadUnsafe` alert) needs to know before a zone goes down.
//!
//! Plain data in, plain data out. A voter whose zone is not known (the
//! static provider without `zone`, a StatefulSet pod other than this one,
//! an instance the group no longer lists) is counted under [`UNKNOWN`], and
//! the verdict is then not "safe": eco never claims a spread it cannot see.
//! What this module does not do: it decides nothing about membership (eco
//! never moves members between zones), it only reports.

use std::collections::BTreeMap;

use crate::quorum::quorum;

/// The zone label of voters whose zone is not known.
pub const UNKNOWN: &str = "unknown";

/// The spread of the voting members over zones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneSpread {
    /// Voters per zone ([`UNKNOWN`] for those whose zone is not known).
    pub voters_per_zone: BTreeMap<String, usize>,
    /// Distinct known zones with at least one voter.
    pub zones: usize,
    /// Whether every single zone can be lost with a quorum of voters left.
    pub verdict: ZoneLoss,
}

/// What losing one zone does to quorum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZoneLoss {
    /// Any one zone can go: the voters outside each zone are a quorum.
    Survives,
    /// Losing this zone (the one holding the most voters) leaves fewer than
    /// a quorum.
    LosesQuorum {
        zone: String,
        left: usize,
        quorum: usize,
    },
    /// Some voters' zones are not known, and the known ones do not prove
    /// it safe.
    Unknown { voters: usize },
    /// No voters.
    NoVoters,
}

impl ZoneSpread {
    /// 1 when any one zone can be lost, else 0 (the metric).
    pub fn survives_zone_loss(&self) -> bool {
        self.verdict == ZoneLoss::Survives
    }
}

/// The spread of `voters`, each with its zone when known.
pub fn zone_spread<'a>(voters: impl IntoIterator<Item = Option<&'a str>>) -> ZoneSpread {
    let mut voters_per_zone: BTreeMap<String, usize> = BTreeMap::new();
    for zone in voters {
        let zone = zone.filter(|z| !z.is_empty()).unwrap_or(UNKNOWN);
        *voters_per_zone.entry(zone.to_string()).or_default() += 1;
    }
    let total: usize = voters_per_zone.values().sum();
    let unknown = voters_per_zone.get(UNKNOWN).copied().unwrap_or(0);
    let zones = voters_per_zone.keys().filter(|z| *z != UNKNOWN).count();
    let verdict = if total == 0 {
        ZoneLoss::NoVoters
    } else {
        let need = quorum(total);
        // The worst zone is the one with the most voters (the first by
        // name among equals, so the verdict is stable).
        let worst = voters_per_zone
            .iter()
            .filter(|(z, _)| *z != UNKNOWN)
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)));
        match worst {
            Some((zone, n)) if total - n < need => ZoneLoss::LosesQuorum {
                zone: zone.clone(),
                left: total - n,
                quorum: need,
            },
            // The unknown voters may all share a zone with each other or
            // with the worst known zone.
            _ if unknown > 0 => {
                let worst_known = worst.map(|(_, n)| *n).unwrap_or(0);
                if total - (unknown + worst_known) >= need {
                    ZoneLoss::Survives
                } else {
                    ZoneLoss::Unknown { voters: unknown }
                }
            }
            _ => ZoneLoss::Survives,
        }
    };
    ZoneSpread {
        voters_per_zone,
        zones,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(zones: &[Option<&str>]) -> ZoneSpread {
        zone_spread(zones.iter().copied())
    }

    #[test]
    fn table() {
        use ZoneLoss::*;
        let a = Some("a");
        let b = Some("b");
        let c = Some("c");
        let cases: Vec<(&str, Vec<Option<&str>>, ZoneLoss, usize)> = vec![
            ("none", vec![], NoVoters, 0),
            (
                "one voter, one zone",
                vec![a],
                LosesQuorum {
                    zone: "a".into(),
                    left: 0,
                    quorum: 1,
                },
                1,
            ),
            ("three in three zones", vec![a, b, c], Survives, 3),
            (
                "three in two zones",
                vec![a, a, b],
                LosesQuorum {
                    zone: "a".into(),
                    left: 1,
                    quorum: 2,
                },
                2,
            ),
            (
                "three in one zone",
                vec![a, a, a],
                LosesQuorum {
                    zone: "a".into(),
                    left: 0,
                    quorum: 2,
                },
                1,
            ),
            (
                "five in three zones 2-2-1",
                vec![a, a, b, b, c],
                Survives,
                3,
            ),
            (
                "five in two zones 3-2",
                vec![a, a, a, b, b],
                LosesQuorum {
                    zone: "a".into(),
                    left: 2,
                    quorum: 3,
                },
                2,
            ),
            (
                "four in two zones 2-2",
                vec![a, a, b, b],
                LosesQuorum {
                    zone: "a".into(),
                    left: 2,
                    quorum: 3,
                },
                2,
            ),
            ("four in four zones", vec![a, b, c, Some("d")], Survives, 4),
            (
                "three, zones unknown",
                vec![None, None, None],
                Unknown { voters: 3 },
                0,
            ),
            (
                "one unknown among three",
                vec![a, b, None],
                Unknown { voters: 1 },
                2,
            ),
            (
                "empty zone is unknown",
                vec![a, b, Some("")],
                Unknown { voters: 1 },
                2,
            ),
            (
                "a known zone already loses quorum",
                vec![a, a, None],
                LosesQuorum {
                    zone: "a".into(),
                    left: 1,
                    quorum: 2,
                },
                1,
            ),
            (
                "five: one unknown cannot hurt 1-1-1-1",
                vec![a, b, c, Some("d"), None],
                Survives,
                4,
            ),
        ];
        for (name, voters, verdict, zones) in cases {
            let s = spread(&voters);
            assert_eq!(s.verdict, verdict, "{name}");
            assert_eq!(s.zones, zones, "{name}");
            assert_eq!(
                s.voters_per_zone.values().sum::<usize>(),
                voters.len(),
                "{name}"
            );
            assert_eq!(s.survives_zone_loss(), verdict == Survives, "{name}");
        }
    }

    /// Brute force: the verdict "survives" holds exactly when removing any
    /// one known zone, and the unknown voters placed in the worst possible
    /// zone, leaves a quorum.
    #[test]
    fn survives_matches_brute_force() {
        let zones = [Some("a"), Some("b"), Some("c"), None];
        for n in 1..=7usize {
            let mut idx = vec![0usize; n];
            loop {
                let voters: Vec<Option<&str>> = idx.iter().map(|i| zones[*i]).collect();
                let s = spread(&voters);
                let need = quorum(n);
                let unknown = voters.iter().filter(|z| z.is_none()).count();
                let worst = ["a", "b", "c"]
                    .iter()
                    .map(|z| voters.iter().filter(|v| **v == Some(*z)).count())
                    .max()
                    .unwrap_or(0);
                let safe = n - (worst + unknown) >= need;
                assert_eq!(s.survives_zone_loss(), safe, "{voters:?}");
                // next combination
                let mut k = 0;
                while k < n {
                    idx[k] += 1;
                    if idx[k] < zones.len() {
                        break;
                    }
                    idx[k] = 0;
                    k += 1;
                }
                if k == n {
                    break;
                }
            }
        }
    }
}

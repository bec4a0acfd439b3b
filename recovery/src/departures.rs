//! Whether an instance has departed: a departure is confirmed, never read
//! once.
//!
//! A provider's answer is a moment's view of something that changes: a
//! group file being rewritten in place (truncated, then written), a file
//! flipping between two contents, a scaling API answering mid-change. An
//! instance missing from one read may be back in the next, and acting on
//! one read removes members and moves data aside for nothing. So an
//! instance counts as **departed** — out of the group eco acts on, its
//! member removed, this instance leaving, certified gone for quorum-loss
//! recovery — only once its departure is **confirmed**:
//!
//! - **consecutive reads all say it is gone**: a read that lists it (or,
//!   for certified-gone answers, does not certify it) breaks the run; a
//!   read that failed or was refused says nothing and neither breaks nor
//!   extends it;
//! - **at least [`MIN_READS`] of them** (the first and two more refreshes);
//! - **spanning at least [`Rule::min_span_ms`]** from the first to the
//!   last: two of the provider's refresh intervals, never less than
//!   [`MIN_SPAN_MS`] — longer than any writer takes to rewrite a file in
//!   place, so a fast refresh cannot confirm a half-written file;
//! - a read that lists **no instance at all** is never evidence
//!   ([`GroupReads::read`] refuses it, as eco refuses it at start): an
//!   emptied or truncated file, a group being deleted. The group eco acts
//!   on stays.
//!
//! An instance that appears is in the group at once (joining is its own
//! careful, step by step change); only departures wait. Until eco has read
//! the group over the confirmation span since it started, nothing tells it
//! which instances were listed before: [`GroupReads::absences_confirmed`]
//! is false, and the planner keeps the members no instance of the group
//! owns until it is true.
//!
//! What this module does not do: read anything, or keep a clock (every
//! read comes with its time, in milliseconds of one monotonic clock).

use std::collections::{BTreeMap, BTreeSet};

/// Reads a departure needs: the first, and two more.
pub const MIN_READS: u32 = 3;

/// The shortest span a departure needs, whatever the refresh interval.
pub const MIN_SPAN_MS: u64 = 5_000;

/// What confirms a departure, for one provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub min_reads: u32,
    /// From the first read of the run to the last.
    pub min_span_ms: u64,
}

impl Rule {
    /// The rule for a provider read every `refresh_ms`: [`MIN_READS`]
    /// reads over two refresh intervals, at least [`MIN_SPAN_MS`].
    pub fn for_refresh_ms(refresh_ms: u64) -> Rule {
        Rule {
            min_reads: MIN_READS,
            min_span_ms: refresh_ms.saturating_mul(2).max(MIN_SPAN_MS),
        }
    }
}

/// An unbroken run of reads that all say one thing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub first_ms: u64,
    pub last_ms: u64,
    pub reads: u32,
}

impl Run {
    fn start(now_ms: u64) -> Run {
        Run {
            first_ms: now_ms,
            last_ms: now_ms,
            reads: 1,
        }
    }

    fn extended(self, now_ms: u64) -> Run {
        Run {
            first_ms: self.first_ms,
            last_ms: self.last_ms.max(now_ms),
            reads: self.reads.saturating_add(1),
        }
    }

    /// The run is long enough to confirm what it says.
    pub fn confirms(&self, rule: Rule) -> bool {
        self.reads >= rule.min_reads
            && self.last_ms.saturating_sub(self.first_ms) >= rule.min_span_ms
    }
}

/// Per instance, the run of reads saying it is gone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Absences {
    runs: BTreeMap<String, Run>,
}

impl Absences {
    /// After a read at `now_ms` saying the instances of `gone` are gone:
    /// their runs continue (or start); every other run is broken — the
    /// read did not say that instance is gone.
    pub fn after_read(&self, now_ms: u64, gone: &BTreeSet<String>) -> Absences {
        let runs = gone
            .iter()
            .map(|id| {
                let run = match self.runs.get(id) {
                    Some(run) => run.extended(now_ms),
                    None => Run::start(now_ms),
                };
                (id.clone(), run)
            })
            .collect();
        Absences { runs }
    }

    /// The instances whose departure is confirmed.
    pub fn confirmed(&self, rule: Rule) -> BTreeSet<String> {
        self.runs
            .iter()
            .filter(|(_, run)| run.confirms(rule))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The run of reads saying `id` is gone, if the last read said so.
    pub fn run(&self, id: &str) -> Option<&Run> {
        self.runs.get(id)
    }
}

/// A read of the group that is not evidence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the provider's answer lists no instance: that is never evidence that every instance departed; refused"
)]
pub struct ListsNoInstance;

/// What eco knows of the group from its reads since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupReads {
    /// The instances of the group eco acts on: those the last read listed,
    /// and those absent since whose departure is not confirmed yet.
    pub acting: BTreeSet<String>,
    /// The runs of reads that leave an instance of `acting` out.
    pub absent: Absences,
    /// The run of accepted reads since eco started.
    pub history: Option<Run>,
}

impl GroupReads {
    /// After a read at `now_ms` that lists `listed`: whoever it lists is in
    /// the group; an instance of the group it leaves out stays until its
    /// departure is confirmed. A read that lists nobody is refused and
    /// changes nothing.
    pub fn read(
        &self,
        rule: Rule,
        now_ms: u64,
        listed: &BTreeSet<String>,
    ) -> Result<GroupReads, ListsNoInstance> {
        if listed.is_empty() {
            return Err(ListsNoInstance);
        }
        let left_out: BTreeSet<String> = self.acting.difference(listed).cloned().collect();
        let runs = self.absent.after_read(now_ms, &left_out);
        let departed = runs.confirmed(rule);
        let absent = Absences {
            runs: runs
                .runs
                .into_iter()
                .filter(|(id, _)| !departed.contains(id))
                .collect(),
        };
        let acting = listed
            .iter()
            .chain(left_out.difference(&departed))
            .cloned()
            .collect();
        Ok(GroupReads {
            acting,
            absent,
            history: Some(match self.history {
                Some(run) => run.extended(now_ms),
                None => Run::start(now_ms),
            }),
        })
    }

    /// Eco has read the group long enough since it started that an
    /// instance no read listed has certainly departed.
    pub fn absences_confirmed(&self, rule: Rule) -> bool {
        self.history.is_some_and(|run| run.confirms(rule))
    }

    /// The instances of the group the last read left out, each with its
    /// run: departures not confirmed yet.
    pub fn unconfirmed(&self) -> impl Iterator<Item = (&str, &Run)> {
        self.absent.runs.iter().map(|(id, run)| (id.as_str(), run))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    /// 3 reads over at least 5 s.
    const RULE: Rule = Rule {
        min_reads: 3,
        min_span_ms: 5_000,
    };

    #[test]
    fn the_rule_follows_the_refresh_interval_with_a_floor() {
        for (refresh_ms, span_ms) in [
            (0, 5_000),
            (100, 5_000),
            (300, 5_000),
            (2_500, 5_000),
            (5_000, 10_000),
            (10_000, 20_000),
            (u64::MAX, u64::MAX),
        ] {
            assert_eq!(
                Rule::for_refresh_ms(refresh_ms),
                Rule {
                    min_reads: 3,
                    min_span_ms: span_ms
                },
                "refresh {refresh_ms} ms"
            );
        }
    }

    /// Reads (or answers): each one's time and the ids it names.
    type Reads<'a> = &'a [(u64, &'a [&'a str])];

    /// The group eco acts on after each read (`None`: the read was
    /// refused), and whether absences are confirmed after the last.
    fn replay(reads: Reads) -> (Vec<Option<Vec<String>>>, GroupReads) {
        let mut state = GroupReads::default();
        let mut out = Vec::new();
        for (at, listed) in reads {
            match state.read(RULE, *at, &set(listed)) {
                Ok(next) => {
                    state = next;
                    out.push(Some(state.acting.iter().cloned().collect()));
                }
                Err(ListsNoInstance) => out.push(None),
            }
        }
        (out, state)
    }

    const ABC: &[&str] = &["a", "b", "c"];
    const AB: &[&str] = &["a", "b"];
    const NONE: &[&str] = &[];

    #[test]
    fn a_departure_needs_consecutive_reads_over_the_span() {
        // (case, reads, the group after the last read)
        let table: &[(&str, Reads, &[&str])] = &[
            (
                "one read leaving c out removes nobody",
                &[(0, ABC), (1_000, AB)],
                ABC,
            ),
            (
                "three reads over 5 s confirm",
                &[(0, ABC), (1_000, AB), (3_000, AB), (6_000, AB)],
                AB,
            ),
            (
                "three reads, 1 ms short of the span",
                &[(0, ABC), (1_000, AB), (3_000, AB), (5_999, AB)],
                ABC,
            ),
            (
                "many reads over a short span",
                &[
                    (0, ABC),
                    (1_000, AB),
                    (1_300, AB),
                    (1_600, AB),
                    (1_900, AB),
                    (2_200, AB),
                ],
                ABC,
            ),
            (
                "two reads over a long span",
                &[(0, ABC), (1_000, AB), (60_000, AB)],
                ABC,
            ),
            (
                "a read listing c breaks the run",
                &[
                    (0, ABC),
                    (1_000, AB),
                    (4_000, AB),
                    (5_000, ABC),
                    (6_000, AB),
                    (9_000, AB),
                ],
                ABC,
            ),
            (
                "the run that starts again confirms in its own time",
                &[
                    (0, ABC),
                    (1_000, AB),
                    (5_000, ABC),
                    (6_000, AB),
                    (9_000, AB),
                    (11_000, AB),
                ],
                AB,
            ),
            (
                "a read listing nobody neither breaks nor extends a run",
                &[
                    (0, ABC),
                    (1_000, AB),
                    (2_000, NONE),
                    (3_000, AB),
                    (5_000, NONE),
                    (6_000, AB),
                ],
                AB,
            ),
            (
                "reads listing nobody never count for a departure",
                &[
                    (0, ABC),
                    (1_000, AB),
                    (3_000, NONE),
                    (7_000, NONE),
                    (9_000, NONE),
                ],
                ABC,
            ),
            ("a new instance is in at once", &[(0, AB), (300, ABC)], ABC),
            (
                "a departed instance listed again is back at once",
                &[
                    (0, ABC),
                    (1_000, AB),
                    (3_000, AB),
                    (6_000, AB),
                    (6_300, ABC),
                ],
                ABC,
            ),
            (
                "two leave together, each confirmed",
                &[(0, ABC), (1_000, &["a"]), (3_000, &["a"]), (6_000, &["a"])],
                &["a"],
            ),
            (
                "the instances left out change: each run is its own",
                &[
                    (0, ABC),
                    (1_000, &["a", "c"]),
                    (3_000, &["a"]),
                    (6_000, &["a"]),
                    (7_000, &["a"]),
                ],
                &["a", "c"],
            ),
        ];
        for (case, reads, want) in table {
            let (after, _) = replay(reads);
            let last = after
                .iter()
                .rev()
                .flatten()
                .next()
                .expect("an accepted read");
            assert_eq!(last, &set(want).into_iter().collect::<Vec<_>>(), "{case}");
        }
    }

    #[test]
    fn a_read_listing_nobody_is_refused_and_changes_nothing() {
        let (after, state) = replay(&[(0, ABC), (1_000, NONE), (2_000, NONE)]);
        assert_eq!(after[1], None);
        assert_eq!(after[2], None);
        assert_eq!(state.acting, set(ABC));
        assert_eq!(state.history.map(|h| h.reads), Some(1), "not a read");
        assert_eq!(
            GroupReads::default().read(RULE, 0, &set(NONE)),
            Err(ListsNoInstance)
        );
    }

    #[test]
    fn flapping_every_300_ms_removes_nobody() {
        let mut reads: Vec<(u64, &[&str])> = Vec::new();
        for i in 0..200u64 {
            reads.push((i * 300, if i % 2 == 0 { ABC } else { AB }));
        }
        let (after, state) = replay(&reads);
        assert!(
            after
                .iter()
                .all(|g| g.as_deref() == Some(&["a".to_string(), "b".into(), "c".into()][..]))
        );
        assert_eq!(state.acting, set(ABC));
    }

    #[test]
    fn the_unconfirmed_departures_are_listed_with_their_runs() {
        let (_, state) = replay(&[(0, ABC), (1_000, AB), (2_000, AB)]);
        let pending: Vec<(&str, Run)> = state.unconfirmed().map(|(id, r)| (id, *r)).collect();
        assert_eq!(
            pending,
            [(
                "c",
                Run {
                    first_ms: 1_000,
                    last_ms: 2_000,
                    reads: 2
                }
            )]
        );
        let (_, state) = replay(&[(0, ABC), (1_000, AB), (3_000, AB), (6_000, AB)]);
        assert_eq!(state.unconfirmed().count(), 0, "c departed");
    }

    #[test]
    fn absences_are_confirmed_once_eco_read_the_group_over_the_span() {
        // (reads since start, confirmed after the last)
        let table: &[(Reads, bool)] = &[
            (&[(0, AB)], false),
            (&[(0, AB), (5_000, AB)], false),
            (&[(0, AB), (300, AB), (600, AB)], false),
            (&[(0, AB), (2_000, AB), (5_000, AB)], true),
            (&[(0, AB), (2_000, NONE), (5_000, AB)], false),
            (&[(0, AB), (2_000, NONE), (5_000, AB), (5_300, ABC)], true),
        ];
        for (reads, want) in table {
            let (_, state) = replay(reads);
            assert_eq!(state.absences_confirmed(RULE), *want, "{reads:?}");
        }
    }

    #[test]
    fn certified_gone_answers_are_confirmed_the_same_way() {
        // (answers: time and the ids certified gone, confirmed after the last)
        let table: &[(Reads, &[&str])] = &[
            (&[(0, &["x"])], &[]),
            (&[(0, &["x"]), (2_000, &["x"]), (5_000, &["x"])], &["x"]),
            (&[(0, &["x"]), (2_000, &["x"]), (4_999, &["x"])], &[]),
            (
                &[(0, &["x"]), (2_000, &[]), (5_000, &["x"]), (7_000, &["x"])],
                &[],
            ),
            (
                &[
                    (0, &["x", "y"]),
                    (2_000, &["x"]),
                    (5_000, &["x", "y"]),
                    (10_000, &["x", "y"]),
                ],
                &["x"],
            ),
            (
                &[
                    (0, &["x", "y"]),
                    (2_000, &["x"]),
                    (5_000, &["x", "y"]),
                    (9_000, &["y"]),
                    (10_000, &["y"]),
                ],
                &["y"],
            ),
            (
                &[(0, &["x", "y"]), (2_000, &["x", "y"]), (5_000, &["y"])],
                &["y"],
            ),
        ];
        for (answers, want) in table {
            let mut a = Absences::default();
            for (at, gone) in *answers {
                a = a.after_read(*at, &set(gone));
            }
            assert_eq!(a.confirmed(RULE), set(want), "{answers:?}");
        }
    }
}

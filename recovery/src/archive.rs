//! The change archive's decisions, pure: which stored
//! segments continue which snapshot (the chains), where the archive's
//! writer resumes, which snapshot and segments a restore to a point uses,
//! which segments retention may delete, and when a segment is cut.
//!
//! A **segment** holds every change of the whole revisions `first..=last`
//! of one incarnation, as etcd's watch delivered them. A **chain** is a
//! full snapshot and the segments that continue it without a gap: the
//! first covers the revision after the snapshot's, each next one the
//! revision after the previous one's last. Segments may overlap (two
//! writers around a leadership change may both archive a range): within one
//! incarnation a revision's changes are etcd's history, the same for every
//! watcher, so either copy serves, and replay skips what the target already
//! holds. A segment never reached from a snapshot is not a chain's and
//! is never replayed.
//!
//! What this module does not do: read or write anything, or decide what a
//! segment cannot carry (leases, auth, membership — the replay drops a
//! key's lease and says how many; auth and membership come from the
//! snapshot and the config).

use serde::{Deserialize, Serialize};

/// A stored full snapshot, as its name and metadata say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotPoint {
    pub name: String,
    pub incarnation: u64,
    pub revision: i64,
    /// When it was taken (its metadata; 0 when unknown).
    pub taken_unix_ms: u64,
}

/// A stored segment, as its name and metadata say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry {
    pub name: String,
    pub incarnation: u64,
    pub first: i64,
    pub last: i64,
    /// When the writer received its first and last revisions (its
    /// metadata; 0 when unknown).
    pub first_seen_unix_ms: u64,
    pub last_seen_unix_ms: u64,
    /// Its size in the store.
    pub size: u64,
}

/// A snapshot and how far the segments that continue it reach. The
/// segments themselves are not kept ([`chain_segments`] gives them for the
/// one chain a plan replays): every kept snapshot's chain may pass through
/// most of the archive, so holding each would take kept snapshots ×
/// segments in memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chain {
    pub snapshot: SnapshotPoint,
    /// How many segments continue it, and their size in the store.
    pub segments: usize,
    pub segment_bytes: u64,
    /// The newest revision the chain restores to (the snapshot's when it
    /// has no segment).
    pub end: i64,
    /// When the writer received `end` (the snapshot's time when no
    /// segment continues it).
    pub end_seen_unix_ms: u64,
}

/// The segments in the order chains are walked: by incarnation, then first
/// revision (references only: one word a segment).
struct Ordered<'a> {
    segments: Vec<&'a SegmentEntry>,
}

impl<'a> Ordered<'a> {
    fn new(segments: &'a [SegmentEntry]) -> Self {
        let mut by_first: Vec<&SegmentEntry> =
            segments.iter().filter(|s| s.first <= s.last).collect();
        by_first.sort_by(|a, b| {
            (a.incarnation, a.first, a.last, &a.name).cmp(&(
                b.incarnation,
                b.first,
                b.last,
                &b.name,
            ))
        });
        Ordered { segments: by_first }
    }

    /// The segments of one incarnation.
    fn of(&self, incarnation: u64) -> &[&'a SegmentEntry] {
        let from = self
            .segments
            .partition_point(|s| s.incarnation < incarnation);
        let to = self
            .segments
            .partition_point(|s| s.incarnation <= incarnation);
        &self.segments[from..to]
    }

    /// Walks `snapshot`'s chain (the classic interval cover: of the
    /// segments that start at or before the revision after the current
    /// end, the one that ends last), giving each segment of it in order to
    /// `visit`; returns its end and when that end was received.
    fn walk(
        &self,
        snapshot: &SnapshotPoint,
        mut visit: impl FnMut(&'a SegmentEntry),
    ) -> (i64, u64) {
        let mine = self.of(snapshot.incarnation);
        let mut end = snapshot.revision;
        let mut end_seen = snapshot.taken_unix_ms;
        let mut i = 0;
        loop {
            let mut best: Option<&'a SegmentEntry> = None;
            while i < mine.len() && mine[i].first <= end.saturating_add(1) {
                let s = mine[i];
                if s.last > end && best.is_none_or(|b| s.last > b.last) {
                    best = Some(s);
                }
                i += 1;
            }
            match best {
                Some(s) => {
                    end = s.last;
                    end_seen = s.last_seen_unix_ms.max(end_seen);
                    visit(s);
                }
                None => return (end, end_seen),
            }
        }
    }

    /// The segments of `snapshot`'s chain, in replay order.
    fn path(&self, snapshot: &SnapshotPoint) -> Vec<&'a SegmentEntry> {
        let mut path = Vec::new();
        self.walk(snapshot, |s| path.push(s));
        path
    }

    fn chain(&self, snapshot: &SnapshotPoint) -> Chain {
        let (mut count, mut bytes) = (0usize, 0u64);
        let (end, end_seen_unix_ms) = self.walk(snapshot, |s| {
            count += 1;
            bytes = bytes.saturating_add(s.size);
        });
        Chain {
            snapshot: snapshot.clone(),
            segments: count,
            segment_bytes: bytes,
            end,
            end_seen_unix_ms,
        }
    }
}

/// The chain of every snapshot: for each, the segments of its incarnation
/// that reach furthest without a gap. Ordered as the snapshots: by
/// incarnation, then revision. Memory: the chains, and one reference per
/// segment while they are worked out.
pub fn chains(snapshots: &[SnapshotPoint], segments: &[SegmentEntry]) -> Vec<Chain> {
    chains_of(&Ordered::new(segments), snapshots)
}

fn chains_of(ordered: &Ordered, snapshots: &[SnapshotPoint]) -> Vec<Chain> {
    let mut points: Vec<&SnapshotPoint> = snapshots.iter().collect();
    points.sort_by(|a, b| {
        (a.incarnation, a.revision, &a.name).cmp(&(b.incarnation, b.revision, &b.name))
    });
    points.into_iter().map(|s| ordered.chain(s)).collect()
}

/// The segments of `snapshot`'s chain, in replay order.
pub fn chain_segments<'a>(
    snapshot: &SnapshotPoint,
    segments: &'a [SegmentEntry],
) -> Vec<&'a SegmentEntry> {
    Ordered::new(segments).path(snapshot)
}

/// Where the archive's writer goes on, for the incarnation it archives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Watch from this revision: the revision after the newest point any
    /// chain of the incarnation reaches.
    From { revision: i64, reason: String },
    /// No snapshot of the incarnation to continue: take one now, and
    /// watch from the revision after it.
    NewChain { reason: String },
}

/// Where the writer of incarnation `incarnation` resumes.
pub fn resume(snapshots: &[SnapshotPoint], segments: &[SegmentEntry], incarnation: u64) -> Resume {
    let mine: Vec<SnapshotPoint> = snapshots
        .iter()
        .filter(|s| s.incarnation == incarnation)
        .cloned()
        .collect();
    let best = chains(&mine, segments).into_iter().max_by_key(|c| c.end);
    match best {
        None => Resume::NewChain {
            reason: format!(
                "the store holds no snapshot of incarnation {incarnation} for the archive to continue"
            ),
        },
        Some(c) if c.segments == 0 => Resume::From {
            revision: c.end.saturating_add(1),
            reason: format!(
                "continuing after snapshot {} (revision {})",
                c.snapshot.name, c.end
            ),
        },
        Some(c) => Resume::From {
            revision: c.end.saturating_add(1),
            reason: format!(
                "continuing the chain of snapshot {} after revision {} ({} segments)",
                c.snapshot.name, c.end, c.segments
            ),
        },
    }
}

/// The point a restore goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Point {
    /// The newest point the archive reaches.
    Latest,
    /// Exactly this revision.
    Revision(i64),
    /// The last revision the writer had received at this time.
    Time(u64),
}

/// Where a replay stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Until {
    /// After this revision (inclusive).
    Revision(i64),
    /// After the last revision received at or before this time.
    Time(u64),
}

impl Until {
    /// Whether a revision received at `seen_unix_ms` is replayed.
    pub fn includes(self, revision: i64, seen_unix_ms: u64) -> bool {
        match self {
            Until::Revision(r) => revision <= r,
            Until::Time(t) => seen_unix_ms <= t,
        }
    }
}

/// What a restore to a point replays: a snapshot, then its chain's
/// segments in order, each revision after the restored one while `until`
/// includes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestorePlan {
    pub snapshot: SnapshotPoint,
    pub segments: Vec<SegmentEntry>,
    pub until: Until,
    /// The revision the restored data will be at (for a time: the newest
    /// the chosen segments reach; fewer when the time falls inside one).
    pub reaches: i64,
    /// The point is this exact revision (`--at-revision`): restoring more
    /// is an error, not a bonus.
    pub exact: bool,
    pub reason: String,
}

/// Why no plan reaches the point.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoPlan {
    #[error("the store holds no snapshot")]
    NoSnapshot,
    #[error("revision {wanted} is not covered by the archive; chains cover {covered}")]
    RevisionNotCovered { wanted: i64, covered: String },
    #[error(
        "no snapshot was taken at or before {wanted_unix_ms} ms since the epoch; the oldest is from {oldest_unix_ms}"
    )]
    TimeBeforeEverySnapshot {
        wanted_unix_ms: u64,
        oldest_unix_ms: u64,
    },
}

/// The chains' covered ranges, for an error or a listing:
/// `i3 r120–r480, i4 r900–r905`.
pub fn covered(chains: &[Chain]) -> String {
    if chains.is_empty() {
        return "nothing".into();
    }
    chains
        .iter()
        .map(|c| {
            format!(
                "i{} r{}–r{}",
                c.snapshot.incarnation, c.snapshot.revision, c.end
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The snapshot and segments that restore `point`. Of the chains that
/// reach it, the one whose snapshot is newest (fewest segments to replay);
/// the newest incarnation first (eco bumps revisions at each restore, so
/// a later incarnation's revisions are higher).
pub fn plan_restore(
    snapshots: &[SnapshotPoint],
    segments: &[SegmentEntry],
    point: Point,
) -> Result<RestorePlan, NoPlan> {
    let ordered = Ordered::new(segments);
    let all = chains_of(&ordered, snapshots);
    if all.is_empty() {
        return Err(NoPlan::NoSnapshot);
    }
    let newest_first = || all.iter().rev();
    match point {
        Point::Latest => {
            let newest_incarnation = all
                .iter()
                .map(|c| c.snapshot.incarnation)
                .max()
                .unwrap_or(0);
            let best = all
                .iter()
                .filter(|c| c.snapshot.incarnation == newest_incarnation)
                .max_by(|a, b| (a.end, a.snapshot.revision).cmp(&(b.end, b.snapshot.revision)));
            let Some(c) = best else {
                return Err(NoPlan::NoSnapshot);
            };
            Ok(plan_of(
                &ordered,
                c,
                Until::Revision(c.end),
                Some(c.end),
                "the newest point the archive reaches".into(),
            ))
        }
        Point::Revision(r) => {
            let found = newest_first().find(|c| c.snapshot.revision <= r && c.end >= r);
            match found {
                Some(c) => Ok(RestorePlan {
                    exact: true,
                    ..plan_of(
                        &ordered,
                        c,
                        Until::Revision(r),
                        Some(r),
                        format!("revision {r}"),
                    )
                }),
                None => Err(NoPlan::RevisionNotCovered {
                    wanted: r,
                    covered: covered(&all),
                }),
            }
        }
        Point::Time(t) => {
            // The newest snapshot taken at or before t, newest incarnation
            // first; its chain replayed up to t.
            let found = newest_first()
                .find(|c| c.snapshot.taken_unix_ms > 0 && c.snapshot.taken_unix_ms <= t);
            match found {
                Some(c) => Ok(plan_of(
                    &ordered,
                    c,
                    Until::Time(t),
                    None,
                    format!("the time {t} ms since the epoch"),
                )),
                None => Err(NoPlan::TimeBeforeEverySnapshot {
                    wanted_unix_ms: t,
                    oldest_unix_ms: all
                        .iter()
                        .map(|c| c.snapshot.taken_unix_ms)
                        .min()
                        .unwrap_or(0),
                }),
            }
        }
    }
}

/// What restores the newest point of `snapshot`'s chain (quorum-loss
/// recovery seeds from the snapshot its record names, carried as far as
/// its chain reaches): `None` when no segment continues it (the snapshot
/// alone is the newest point) or it is not listed.
pub fn plan_chain_end(
    snapshots: &[SnapshotPoint],
    segments: &[SegmentEntry],
    snapshot: &str,
) -> Option<RestorePlan> {
    let point = snapshots.iter().find(|s| s.name == snapshot)?;
    plan_chain_end_from(point, segments)
}

/// What carries `point` — a snapshot that may not be in the store (the
/// seeding's WAL replay keeps its snapshot beside the data directory) — to
/// the newest point of its chain: `None` when no segment continues it.
pub fn plan_chain_end_from(
    point: &SnapshotPoint,
    segments: &[SegmentEntry],
) -> Option<RestorePlan> {
    let ordered = Ordered::new(segments);
    let chain = ordered.chain(point);
    (chain.segments > 0).then(|| {
        plan_of(
            &ordered,
            &chain,
            Until::Revision(chain.end),
            Some(chain.end),
            "the newest point of the seeding snapshot's chain".into(),
        )
    })
}

/// The plan replaying `c`'s segments while `until` includes them; it
/// reaches `reaches`, or (for a time) as far as the segments received up to
/// it go. Only this chain's segments are cloned.
fn plan_of(
    ordered: &Ordered,
    c: &Chain,
    until: Until,
    reaches: Option<i64>,
    what: String,
) -> RestorePlan {
    let path = ordered.path(&c.snapshot);
    let reaches = reaches.unwrap_or_else(|| {
        path.iter()
            .take_while(|s| until.includes(s.first, s.first_seen_unix_ms))
            .map(|s| s.last)
            .last()
            .unwrap_or(c.snapshot.revision)
    });
    let segments: Vec<SegmentEntry> = path
        .into_iter()
        .filter(|s| match until {
            // Only segments with a revision after the snapshot's to give.
            Until::Revision(r) => s.first.max(c.snapshot.revision.saturating_add(1)) <= r,
            Until::Time(t) => s.first_seen_unix_ms <= t,
        })
        .cloned()
        .collect();
    RestorePlan {
        reason: format!(
            "{what}: snapshot {} (revision {}) and {} segment(s) of its chain",
            c.snapshot.name,
            c.snapshot.revision,
            segments.len()
        ),
        snapshot: c.snapshot.clone(),
        segments,
        until,
        reaches,
        exact: false,
    }
}

/// Segments retention may delete once `kept` are the snapshots left:
///
/// - a segment no kept snapshot of its incarnation precedes (nothing kept
///   can replay it);
/// - a segment superseded long ago: a kept snapshot of its incarnation at
///   or past its last revision was taken more than `keep_for_ms` before
///   `now_unix_ms`, so every point it serves is older than that (points
///   in time are kept for `archive.keep_for`; older ones are the kept
///   snapshots themselves). What the newest point needs is never
///   superseded, whatever the clocks say.
///
/// Nothing is deleted when no snapshot is kept (a listing that lost them
/// is no reason to lose the archive too).
pub fn segments_to_delete(
    kept: &[SnapshotPoint],
    segments: &[SegmentEntry],
    now_unix_ms: u64,
    keep_for_ms: u64,
) -> Vec<(String, String)> {
    if kept.is_empty() {
        return Vec::new();
    }
    segments
        .iter()
        .filter_map(|s| {
            let mine = || kept.iter().filter(|k| k.incarnation == s.incarnation);
            let oldest = mine().map(|k| k.revision).min();
            let superseded = mine()
                .filter(|k| {
                    k.revision >= s.last
                        && k.taken_unix_ms > 0
                        && now_unix_ms.saturating_sub(k.taken_unix_ms) > keep_for_ms
                })
                .map(|k| k.revision)
                .min();
            match (oldest, superseded) {
                (None, _) => Some((
                    s.name.clone(),
                    format!("no snapshot of incarnation {} is kept", s.incarnation),
                )),
                (Some(o), _) if s.last <= o => Some((
                    s.name.clone(),
                    format!(
                        "ends at revision {}, at or before the oldest kept snapshot of incarnation {} (revision {o})",
                        s.last, s.incarnation
                    ),
                )),
                (_, Some(r)) => Some((
                    s.name.clone(),
                    format!(
                        "superseded by the snapshot at revision {r}, taken more than {} s ago (archive.keep_for)",
                        keep_for_ms / 1000
                    ),
                )),
                _ => None,
            }
        })
        .collect()
}

/// Whether the changes held now make a segment: they fill one, or the
/// oldest would otherwise be in the store later than `interval_ms` after it
/// arrived — `reserve_ms` is what storing takes (the writer's check period
/// and its last upload), at most half the interval so a slow store does
/// not shrink segments to nothing. Nothing held, nothing cut.
pub fn cut_due(
    held_bytes: u64,
    oldest_held_age_ms: Option<u64>,
    interval_ms: u64,
    max_bytes: u64,
    reserve_ms: u64,
) -> bool {
    match oldest_held_age_ms {
        None => false,
        Some(age) => {
            let reserve = reserve_ms.min(interval_ms / 2);
            age.saturating_add(reserve) >= interval_ms || held_bytes >= max_bytes
        }
    }
}

/// Segments' worth of changes a writer holds, at most, while its store
/// refuses them: past that it stops holding and starts again from the
/// archive's newest point (etcd still has the changes).
pub const HELD_SEGMENTS_AT_MOST: u64 = 4;

/// The largest `archive.max_segment_bytes` a configuration may set (the
/// replay's bound on a segment object is derived from it).
pub const LARGEST_CUT: u64 = 64 << 20;

/// What the archive writer does after a segment could not be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterStoreFailure {
    /// Keep the changes held; the next tick tries them again.
    KeepHolding,
    /// Drop them and restart the watch from the archive's newest point:
    /// they were lost (the encoding failed midway) or have grown past
    /// [`HELD_SEGMENTS_AT_MOST`] segments (a store down that long is
    /// better caught up from etcd than from memory).
    RestartWatch,
}

/// After a segment of `held_bytes` could not be stored (`lost`: its
/// changes did not come back), what the writer does.
pub fn after_store_failure(
    held_bytes: u64,
    max_segment_bytes: u64,
    lost: bool,
) -> AfterStoreFailure {
    if lost || held_bytes > max_segment_bytes.saturating_mul(HELD_SEGMENTS_AT_MOST) {
        AfterStoreFailure::RestartWatch
    } else {
        AfterStoreFailure::KeepHolding
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_segment_stays_held_up_to_four_segments_unless_lost() {
        use AfterStoreFailure::*;
        for (held, lost, want) in [
            (1, false, KeepHolding),
            (400, false, KeepHolding),
            (401, false, RestartWatch),
            (1, true, RestartWatch),
            (u64::MAX, false, RestartWatch),
        ] {
            assert_eq!(after_store_failure(held, 100, lost), want, "{held} {lost}");
        }
        assert_eq!(after_store_failure(u64::MAX, u64::MAX, false), KeepHolding);
    }

    fn snap(inc: u64, rev: i64, at: u64) -> SnapshotPoint {
        SnapshotPoint {
            name: format!("s-i{inc}-r{rev}"),
            incarnation: inc,
            revision: rev,
            taken_unix_ms: at,
        }
    }

    fn seg(inc: u64, first: i64, last: i64) -> SegmentEntry {
        SegmentEntry {
            name: format!("g-i{inc}-r{first}-r{last}"),
            incarnation: inc,
            first,
            last,
            first_seen_unix_ms: first as u64 * 10,
            last_seen_unix_ms: last as u64 * 10,
            size: 1,
        }
    }

    fn names(c: &Chain, segments: &[SegmentEntry]) -> Vec<String> {
        let path: Vec<String> = chain_segments(&c.snapshot, segments)
            .iter()
            .map(|s| s.name.clone())
            .collect();
        assert_eq!(path.len(), c.segments, "the chain counts its path");
        path
    }

    #[test]
    fn a_chain_follows_segments_without_a_gap_and_stops_at_one() {
        let c = chains(
            &[snap(1, 100, 1000)],
            &[seg(1, 101, 150), seg(1, 151, 160), seg(1, 170, 180)],
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].end, 160);
        assert_eq!(c[0].segment_bytes, 2);
        assert_eq!(
            names(
                &c[0],
                &[seg(1, 101, 150), seg(1, 151, 160), seg(1, 170, 180)]
            ),
            ["g-i1-r101-r150", "g-i1-r151-r160"]
        );
    }

    #[test]
    fn overlapping_segments_and_a_snapshot_inside_a_segment_are_followed() {
        // Two writers archived overlapping ranges; a newer snapshot falls
        // inside a segment (the writer did not start a new chain for it).
        let segs = [
            seg(1, 101, 150),
            seg(1, 101, 140),
            seg(1, 141, 170),
            seg(1, 171, 171),
        ];
        let c = chains(&[snap(1, 100, 1000), snap(1, 145, 2000)], &segs);
        assert_eq!(c[0].end, 171);
        assert_eq!(
            names(&c[0], &segs),
            ["g-i1-r101-r150", "g-i1-r141-r170", "g-i1-r171-r171"]
        );
        assert_eq!(c[1].end, 171);
        assert_eq!(names(&c[1], &segs), ["g-i1-r141-r170", "g-i1-r171-r171"]);
    }

    #[test]
    fn another_incarnations_segments_never_continue_a_snapshot() {
        let c = chains(&[snap(1, 100, 1000)], &[seg(2, 101, 150)]);
        assert_eq!(c[0].end, 100);
        assert_eq!(c[0].segments, 0);
    }

    #[test]
    fn a_segment_that_starts_after_the_snapshot_leaves_a_gap() {
        let c = chains(&[snap(1, 100, 1000)], &[seg(1, 102, 150)]);
        assert_eq!(c[0].end, 100);
    }

    #[test]
    fn the_writer_resumes_after_the_furthest_chain_of_its_incarnation() {
        let snaps = [snap(1, 100, 1000), snap(2, 500, 2000)];
        let segs = [seg(1, 101, 150), seg(2, 501, 520), seg(2, 521, 530)];
        assert!(matches!(
            resume(&snaps, &segs, 2),
            Resume::From { revision: 531, .. }
        ));
        assert!(matches!(
            resume(&snaps, &segs, 1),
            Resume::From { revision: 151, .. }
        ));
        assert!(matches!(
            resume(&snaps, &[], 2),
            Resume::From { revision: 501, .. }
        ));
        assert!(matches!(resume(&snaps, &segs, 3), Resume::NewChain { .. }));
        assert!(matches!(resume(&[], &segs, 1), Resume::NewChain { .. }));
    }

    #[test]
    fn a_restore_to_a_revision_uses_the_newest_snapshot_before_it_whose_chain_reaches_it() {
        let snaps = [snap(1, 100, 1000), snap(1, 200, 2000)];
        // The newer snapshot's chain has a gap; the older one reaches far.
        let segs = [seg(1, 101, 180), seg(1, 181, 260), seg(1, 262, 300)];
        let p = plan_restore(&snaps, &segs, Point::Revision(250)).unwrap();
        assert_eq!(p.snapshot.revision, 200);
        assert_eq!(p.segments.len(), 1, "{:?}", p.segments);
        assert_eq!(p.segments[0].first, 181);
        assert_eq!(p.until, Until::Revision(250));
        let p = plan_restore(&snaps, &segs, Point::Revision(150)).unwrap();
        assert_eq!(p.snapshot.revision, 100);
        assert_eq!(p.segments.len(), 1, "only the segments up to the point");
        let p = plan_restore(&snaps, &segs, Point::Revision(200)).unwrap();
        assert_eq!(p.snapshot.revision, 200);
        assert!(p.segments.is_empty());
        // Past the gap, and before every snapshot: not covered, saying what is.
        for r in [270, 50] {
            match plan_restore(&snaps, &segs, Point::Revision(r)) {
                Err(NoPlan::RevisionNotCovered { wanted, covered }) => {
                    assert_eq!(wanted, r);
                    assert_eq!(covered, "i1 r100–r260, i1 r200–r260");
                }
                other => panic!("{r}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_latest_point_is_the_furthest_of_the_newest_incarnation() {
        let snaps = [snap(1, 100, 1000), snap(2, 900, 3000)];
        let segs = [seg(1, 101, 800), seg(2, 901, 950)];
        let p = plan_restore(&snaps, &segs, Point::Latest).unwrap();
        assert_eq!((p.snapshot.incarnation, p.reaches), (2, 950));
        assert_eq!(
            plan_restore(&[], &segs, Point::Latest),
            Err(NoPlan::NoSnapshot)
        );
    }

    #[test]
    fn a_restore_to_a_time_starts_from_the_newest_snapshot_taken_before_it() {
        // Segment times are revision × 10 ms in these tables.
        let snaps = [snap(1, 100, 1000), snap(1, 200, 2000)];
        let segs = [seg(1, 101, 200), seg(1, 201, 250), seg(1, 251, 300)];
        let p = plan_restore(&snaps, &segs, Point::Time(2600)).unwrap();
        assert_eq!(p.snapshot.revision, 200);
        assert_eq!(p.segments.len(), 2);
        assert_eq!(p.reaches, 300);
        assert!(p.until.includes(259, 2590) && !p.until.includes(261, 2610));
        let p = plan_restore(&snaps, &segs, Point::Time(1500)).unwrap();
        assert_eq!(p.snapshot.revision, 100);
        assert!(matches!(
            plan_restore(&snaps, &segs, Point::Time(999)),
            Err(NoPlan::TimeBeforeEverySnapshot {
                oldest_unix_ms: 1000,
                ..
            })
        ));
    }

    #[test]
    fn a_seeding_snapshot_is_carried_to_the_end_of_its_chain() {
        let snaps = [snap(1, 100, 1000), snap(1, 200, 2000)];
        let segs = [seg(1, 101, 180), seg(1, 201, 230), seg(1, 231, 240)];
        let p = plan_chain_end(&snaps, &segs, "s-i1-r200").unwrap();
        assert_eq!((p.reaches, p.segments.len()), (240, 2));
        let p = plan_chain_end(&snaps, &segs, "s-i1-r100").unwrap();
        assert_eq!(p.reaches, 180);
        assert_eq!(
            plan_chain_end(&snaps, &[], "s-i1-r200"),
            None,
            "no segment: the snapshot alone"
        );
        assert_eq!(plan_chain_end(&snaps, &segs, "s-i9-r1"), None, "not listed");
        // A snapshot the store does not hold (a WAL replay's, kept on the
        // seeder's disk) at revision 230 is carried by the same segments.
        let local = SnapshotPoint {
            name: "seed-2.replayed.db".into(),
            ..snap(1, 230, 2300)
        };
        let p = plan_chain_end_from(&local, &segs).unwrap();
        assert_eq!((p.reaches, p.segments.len()), (240, 1));
        assert_eq!(p.snapshot.name, "seed-2.replayed.db");
        let ahead = SnapshotPoint {
            revision: 240,
            ..local
        };
        assert_eq!(plan_chain_end_from(&ahead, &segs), None, "nothing past it");
    }

    #[test]
    fn retention_keeps_every_segment_a_kept_snapshot_can_replay() {
        let segs = [
            seg(1, 101, 150),
            seg(1, 151, 200),
            seg(1, 201, 250),
            seg(2, 1, 5),
        ];
        let day = 86_400_000;
        let gone = segments_to_delete(&[snap(1, 150, 0), snap(1, 220, 0)], &segs, 10 * day, day);
        let gone: Vec<&str> = gone.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(gone, ["g-i1-r101-r150", "g-i2-r1-r5"]);
        assert!(
            segments_to_delete(&[], &segs, 10 * day, day).is_empty(),
            "no snapshot kept: nothing deleted"
        );
    }

    #[test]
    fn points_older_than_keep_for_go_and_the_newest_point_never_does() {
        let day = 86_400_000;
        let now = 10 * day;
        let segs = [seg(1, 101, 150), seg(1, 151, 200), seg(1, 201, 250)];
        // Snapshots at 100 (9 days old), 200 (2 days old), 230 (an hour old).
        let kept = [
            snap(1, 100, now - 9 * day),
            snap(1, 200, now - 2 * day),
            snap(1, 230, now - 3_600_000),
        ];
        let gone = segments_to_delete(&kept, &segs, now, day);
        let gone: Vec<&str> = gone.iter().map(|(n, _)| n.as_str()).collect();
        // 101–150 and 151–200 are superseded by the snapshot at 200, two
        // days old; 201–250 carries the newest point past 230.
        assert_eq!(gone, ["g-i1-r101-r150", "g-i1-r151-r200"]);
        // Kept for a week: nothing goes.
        assert!(segments_to_delete(&kept, &segs, now, 7 * day + 1).is_empty());
        // A snapshot with no time never supersedes.
        let untimed = [snap(1, 100, now - 9 * day), snap(1, 200, 0)];
        assert!(segments_to_delete(&untimed, &segs, now, day).is_empty());
    }

    proptest::proptest! {
        /// However writers cut, overlap and leave gaps, a chain reaches
        /// exactly as far as the union of its incarnation's segments covers
        /// every revision after the snapshot's without a hole, and its
        /// segments, in order, each continue the previous end.
        #[test]
        fn a_chain_reaches_exactly_the_contiguous_cover(
            ranges in proptest::collection::vec((1i64..200, 0i64..30), 0..40),
            start in 0i64..50,
        ) {
            let segs: Vec<SegmentEntry> = ranges.iter().map(|(f, len)| seg(1, *f, f + len)).collect();
            let c = &chains(&[snap(1, start, 1)], &segs)[0];
            let covered = |r: i64| segs.iter().any(|s| s.first <= r && r <= s.last);
            let mut naive = start;
            while covered(naive + 1) {
                naive += 1;
            }
            proptest::prop_assert_eq!(c.end, naive);
            let mut end = start;
            let path = chain_segments(&c.snapshot, &segs);
            proptest::prop_assert_eq!(path.len(), c.segments);
            for s in path {
                proptest::prop_assert!(s.first <= end + 1 && s.last > end);
                end = s.last;
            }
            proptest::prop_assert_eq!(end, c.end);
        }
    }

    #[test]
    fn a_segment_is_cut_in_time_to_be_stored_within_the_interval_or_when_full() {
        assert!(!cut_due(0, None, 1000, 100, 0), "nothing held");
        assert!(!cut_due(10, Some(999), 1000, 100, 0));
        assert!(cut_due(10, Some(1000), 1000, 100, 0));
        assert!(cut_due(100, Some(0), 1000, 100, 0), "full");
        // Storing takes 150 ms: cut at 850 ms.
        assert!(!cut_due(10, Some(849), 1000, 100, 150));
        assert!(cut_due(10, Some(850), 1000, 100, 150));
        // A slow store reserves half the interval at most.
        assert!(!cut_due(10, Some(499), 1000, 100, 5000));
        assert!(cut_due(10, Some(500), 1000, 100, 5000));
    }
}

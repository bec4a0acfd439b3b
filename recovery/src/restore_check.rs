//! Continuously verified restores: when the snapshot writer restores the
//! newest snapshot into a throwaway etcd, and whether what the restore
//! serves matches the snapshot's record. Pure.
//!
//! A snapshot is verified when it restores (the store's sha256 and etcd's
//! trailing checksum hold, the restore tool accepts it, etcd starts on
//! it) and the restored key space agrees with what was recorded when it
//! was taken: its revision is at least the recorded one, and etcd's
//! HashKV at the recorded revision equals the recorded hash. HashKV
//! depends on the compaction it runs under; when the restored member's
//! compaction differs from the recorded one (a compaction ran between the
//! hash and the snapshot) the hash is not comparable, and the result says
//! so rather than fail.
//!
//! What it does not do: restore anything, or decide what a failed
//! verification means for recovery (the snapshot stays; an alert asks a
//! human to look).

use serde::{Deserialize, Serialize};

/// The last verification, as the store's record says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastVerification {
    /// The snapshot object it verified.
    pub snapshot: String,
    pub at_unix_ms: u64,
    pub ok: bool,
}

/// How far ahead of this machine's clock a record's time may be and still
/// be believed: two machines' clocks differ a little.
pub const CLOCK_SKEW_ALLOWANCE_MS: u64 = 5 * 60 * 1000;

/// How far `at_unix_ms` is ahead of `now_unix_ms`, when it is further than
/// [`CLOCK_SKEW_ALLOWANCE_MS`]: a time in the future, which is not believed
/// (a record written by a machine whose clock was wrong, or by hand). `None`
/// for a believable time.
pub fn ahead_of_clock(now_unix_ms: u64, at_unix_ms: u64) -> Option<u64> {
    let ahead = at_unix_ms.saturating_sub(now_unix_ms);
    (ahead > CLOCK_SKEW_ALLOWANCE_MS).then_some(ahead)
}

/// The last success a record claims, when believable: a time in the future
/// is no success to count (it would hide that none is recent).
pub fn believed_last_ok(now_unix_ms: u64, last_ok_unix_ms: Option<u64>) -> Option<u64> {
    last_ok_unix_ms.filter(|at| ahead_of_clock(now_unix_ms, *at).is_none())
}

/// What is wrong with the times of a verification record, for humans;
/// `None` when they are believable.
pub fn record_in_future(
    now_unix_ms: u64,
    at_unix_ms: u64,
    last_ok_unix_ms: Option<u64>,
) -> Option<String> {
    let what = |ahead: u64, which: &str| {
        format!(
            "{which} is {} s ahead of this machine's clock: not believed (a wrong clock, or a record not written by eco); a verification is due",
            ahead / 1000
        )
    };
    if let Some(ahead) = ahead_of_clock(now_unix_ms, at_unix_ms) {
        return Some(what(ahead, "the record's time"));
    }
    last_ok_unix_ms
        .and_then(|at| ahead_of_clock(now_unix_ms, at))
        .map(|ahead| what(ahead, "its last success's time"))
}

/// Why a verification is due now, if one is: the newest snapshot was never
/// verified, the last record's time is in the future (not believed, see
/// [`ahead_of_clock`]), the last one failed and a newer snapshot exists,
/// or the last one is `interval_ms` old. `interval_ms == 0`: never.
pub fn verification_due(
    now_unix_ms: u64,
    interval_ms: u64,
    newest: Option<&str>,
    last: Option<&LastVerification>,
) -> Option<String> {
    let newest = newest?;
    if interval_ms == 0 {
        return None;
    }
    let Some(last) = last else {
        return Some("no snapshot of this cluster was verified yet".into());
    };
    if let Some(ahead) = ahead_of_clock(now_unix_ms, last.at_unix_ms) {
        return Some(format!(
            "the last verification's record is dated {} s ahead of this clock: its time is not believed",
            ahead / 1000
        ));
    }
    if !last.ok && last.snapshot != newest {
        return Some(format!(
            "the last verification ({}) failed; a newer snapshot is stored",
            last.snapshot
        ));
    }
    let age = now_unix_ms.saturating_sub(last.at_unix_ms);
    (age >= interval_ms).then(|| {
        format!(
            "the last verification is {} s old (every {} s)",
            age / 1000,
            interval_ms / 1000
        )
    })
}

/// etcd's HashKV of a key space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySpaceHash {
    pub hash: u32,
    /// The revision hashed up to.
    pub revision: i64,
    /// The compaction the hash ran under.
    pub compact_revision: i64,
}

/// What the snapshot's record says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    pub revision: i64,
    /// Absent for snapshots taken without a hash (older eco, or etcd did
    /// not answer HashKV then).
    pub hash: Option<KeySpaceHash>,
}

/// What the restored member answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    pub revision: i64,
    /// HashKV at the recorded hash's revision; `Err` with etcd's answer.
    pub hash: Option<Result<KeySpaceHash, String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    Verified { detail: String },
    Failed { why: String },
}

/// Whether the restore matches the record.
pub fn judge(recorded: &Recorded, restored: &Restored) -> Verdict {
    if restored.revision < recorded.revision {
        return Verdict::Failed {
            why: format!(
                "the restored key space is at revision {}, the snapshot's record says {}",
                restored.revision, recorded.revision
            ),
        };
    }
    let Some(want) = recorded.hash else {
        return Verdict::Verified {
            detail: format!(
                "restored at revision {}; the record holds no hash to compare",
                restored.revision
            ),
        };
    };
    match &restored.hash {
        None => Verdict::Verified {
            detail: format!(
                "restored at revision {}; the hash was not asked",
                restored.revision
            ),
        },
        Some(Err(e)) => Verdict::Failed {
            why: format!(
                "the restored member did not answer HashKV at revision {}: {e}",
                want.revision
            ),
        },
        Some(Ok(got)) if got.compact_revision != want.compact_revision => Verdict::Verified {
            detail: format!(
                "restored at revision {}; the hash is not comparable (compacted at {} in the snapshot, {} when hashed)",
                restored.revision, got.compact_revision, want.compact_revision
            ),
        },
        Some(Ok(got)) if got.hash == want.hash => Verdict::Verified {
            detail: format!(
                "restored at revision {}; HashKV at revision {} matches ({:08x})",
                restored.revision, want.revision, want.hash
            ),
        },
        Some(Ok(got)) => Verdict::Failed {
            why: format!(
                "HashKV at revision {} is {:08x} after the restore, {:08x} when the snapshot was taken: the key space differs",
                want.revision, got.hash, want.hash
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400_000;

    fn last(snapshot: &str, at: u64, ok: bool) -> LastVerification {
        LastVerification {
            snapshot: snapshot.into(),
            at_unix_ms: at,
            ok,
        }
    }

    #[test]
    fn when_a_verification_is_due() {
        let now = 10 * DAY;
        let table: &[(u64, Option<&str>, Option<LastVerification>, bool)] = &[
            (DAY, None, None, false),
            (DAY, Some("s2"), None, true),
            (0, Some("s2"), None, false),
            (
                DAY,
                Some("s2"),
                Some(last("s2", now - DAY + 1, true)),
                false,
            ),
            (DAY, Some("s2"), Some(last("s2", now - DAY, true)), true),
            (DAY, Some("s2"), Some(last("s1", now - 1, true)), false),
            (DAY, Some("s2"), Some(last("s1", now - 1, false)), true),
            (DAY, Some("s2"), Some(last("s2", now - 1, false)), false),
            // A clock a little behind the record's: not due before the interval.
            (DAY, Some("s2"), Some(last("s2", now + 5, true)), false),
            (
                DAY,
                Some("s2"),
                Some(last("s2", now + CLOCK_SKEW_ALLOWANCE_MS, true)),
                false,
            ),
            // A record dated in the future (beyond the allowance) is not
            // believed: due, ok or failed, whatever the interval.
            (
                DAY,
                Some("s2"),
                Some(last("s2", now + CLOCK_SKEW_ALLOWANCE_MS + 1, true)),
                true,
            ),
            (
                DAY,
                Some("s2"),
                Some(last("s2", 4_102_444_800_000, true)),
                true,
            ),
            (
                DAY,
                Some("s2"),
                Some(last("s2", 4_102_444_800_000, false)),
                true,
            ),
            (
                0,
                Some("s2"),
                Some(last("s2", 4_102_444_800_000, true)),
                false,
            ),
        ];
        for (interval, newest, last, due) in table {
            assert_eq!(
                verification_due(now, *interval, *newest, last.as_ref()).is_some(),
                *due,
                "{interval} {newest:?} {last:?}"
            );
        }
    }

    #[test]
    fn which_record_times_are_believed() {
        let now = 10 * DAY;
        let future = now + CLOCK_SKEW_ALLOWANCE_MS + 1;
        let table: &[(u64, Option<u64>, bool, Option<u64>)] = &[
            // (at, last ok, believed, last ok counted)
            (now - DAY, Some(now - DAY), true, Some(now - DAY)),
            (now + 1000, Some(now + 1000), true, Some(now + 1000)),
            (now + CLOCK_SKEW_ALLOWANCE_MS, None, true, None),
            (future, Some(future), false, None),
            (now - 1, Some(future), false, None),
            (4_102_444_800_000, Some(now - DAY), false, Some(now - DAY)),
        ];
        for (at, last_ok, believed, counted) in table {
            let said = record_in_future(now, *at, *last_ok);
            assert_eq!(said.is_none(), *believed, "{at} {last_ok:?}: {said:?}");
            if let Some(said) = said {
                assert!(said.contains("ahead of this machine's clock"), "{said}");
            }
            assert_eq!(believed_last_ok(now, *last_ok), *counted, "{last_ok:?}");
        }
    }

    fn hash(hash: u32, compact: i64) -> KeySpaceHash {
        KeySpaceHash {
            hash,
            revision: 100,
            compact_revision: compact,
        }
    }

    #[test]
    fn judging_a_restore() {
        let rec = Recorded {
            revision: 100,
            hash: Some(hash(7, 50)),
        };
        let ok = |r: &Restored| matches!(judge(&rec, r), Verdict::Verified { .. });
        assert!(ok(&Restored {
            revision: 100,
            hash: Some(Ok(hash(7, 50)))
        }));
        assert!(ok(&Restored {
            revision: 104,
            hash: Some(Ok(hash(7, 50)))
        }));
        assert!(!ok(&Restored {
            revision: 99,
            hash: Some(Ok(hash(7, 50)))
        }));
        assert!(!ok(&Restored {
            revision: 100,
            hash: Some(Ok(hash(8, 50)))
        }));
        assert!(!ok(&Restored {
            revision: 100,
            hash: Some(Err("compacted".into()))
        }));
        // Another compaction: not comparable, said so.
        match judge(
            &rec,
            &Restored {
                revision: 100,
                hash: Some(Ok(hash(8, 60))),
            },
        ) {
            Verdict::Verified { detail } => assert!(detail.contains("not comparable"), "{detail}"),
            v => panic!("{v:?}"),
        }
        // No recorded hash: the revision alone.
        let bare = Recorded {
            revision: 100,
            hash: None,
        };
        assert!(matches!(
            judge(
                &bare,
                &Restored {
                    revision: 100,
                    hash: None
                }
            ),
            Verdict::Verified { .. }
        ));
    }
}

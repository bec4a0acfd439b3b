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

/// Why a verification is due now, if one is: the newest snapshot was never
/// verified, the last one failed and a newer snapshot exists, or the last
/// one is `interval_ms` old. `interval_ms == 0`: never.
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
            // A clock behind the record's: not due before the interval.
            (DAY, Some("s2"), Some(last("s2", now + 5, true)), false),
        ];
        for (interval, newest, last, due) in table {
            assert_eq!(
                verification_due(now, *interval, *newest, last.as_ref()).is_some(),
                *due,
                "{interval} {newest:?} {last:?}"
            );
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

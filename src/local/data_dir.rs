//! The etcd data directory: inspecting it and moving it aside.
//!
//! eco never deletes a live data directory. One that must go is renamed to
//! `<data_dir>.moved-<UTC time>-<reason>` beside it so a human can still
//! recover from it. Which copies may be deleted later is decided by
//! `recovery::moved_aside` (by age, never the newest copy holding data,
//! never while the live directory holds none); [`prune`] lists and
//! deletes.

use crate::base::events::Event;
use recovery::moved_aside::{Copy, Retention};
use std::path::{Path, PathBuf};

const MOVED_MARK: &str = ".moved-";

/// What is in a data directory: missing or empty, etcd's `member/`
/// directory with a WAL (`Present`), or something that is not etcd data
/// (`Unusable`) — the decisions' own type.
pub use recovery::planner::DataState;

#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("data directory {path}: {message}")]
    Unusable { path: PathBuf, message: String },
    #[error("cannot move data directory {path} aside to {to}: {source}")]
    Move {
        path: PathBuf,
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reports what `dir` holds.
pub fn inspect(dir: &Path) -> Result<DataState, DataDirError> {
    let unusable = |message: String| DataDirError::Unusable {
        path: dir.to_path_buf(),
        message,
    };
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DataState::Empty),
        Err(e) => Err(unusable(e.to_string())),
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(DataState::Empty);
            }
            let wal = dir.join("member").join("wal");
            let has_wal = std::fs::read_dir(&wal)
                .map(|mut w| w.next().is_some())
                .unwrap_or(false);
            Ok(if has_wal {
                DataState::Present
            } else {
                DataState::Unusable
            })
        }
    }
}

/// What `dir` holds, for deciding how it goes
/// (`recovery::moved_aside::disposal`): a WAL; exactly etcd's skeleton of
/// a start that never joined (directories `member/`, `member/snap/`, an
/// empty `member/wal/`, and at most the file `member/snap/db`); or
/// anything else.
pub fn contents(dir: &Path) -> recovery::moved_aside::Contents {
    use recovery::moved_aside::Contents;
    if inspect(dir).is_ok_and(|d| d == DataState::Present) {
        return Contents::Wal;
    }
    let allowed_dirs = [
        dir.join("member"),
        dir.join("member").join("snap"),
        dir.join("member").join("wal"),
    ];
    let allowed_file = dir.join("member").join("snap").join("db");
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            return Contents::Other;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                return Contents::Other;
            };
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() && allowed_dirs.contains(&path) => stack.push(path),
                Ok(t) if t.is_file() && path == allowed_file => {}
                _ => return Contents::Other,
            }
        }
    }
    Contents::UnjoinedSkeleton
}

/// Makes sure the data directory's parent exists and is writable, so that
/// problems show as one clear error before etcd is started.
pub fn prepare_parent(dir: &Path) -> Result<(), DataDirError> {
    let unusable = |message: String| DataDirError::Unusable {
        path: dir.to_path_buf(),
        message,
    };
    let parent = dir
        .parent()
        .ok_or_else(|| unusable("has no parent directory".into()))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| unusable(format!("cannot create {}: {e}", parent.display())))?;
    let probe = parent.join(format!(".eco-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| unusable(format!("{} is not writable: {e}", parent.display())))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Renames `dir` aside (if it exists); returns where it went. The one
/// exception: etcd's skeleton of a start that never joined holds nothing
/// and is removed (`recovery::moved_aside::disposal`), so a join that keeps
/// failing leaves no copy per attempt; `None` then too.
pub fn move_aside(dir: &Path, reason: &str) -> Result<Option<PathBuf>, DataDirError> {
    if !dir.exists() {
        return Ok(None);
    }
    if recovery::moved_aside::disposal(contents(dir)) == recovery::moved_aside::Disposal::Remove {
        std::fs::remove_dir_all(dir).map_err(|e| DataDirError::Unusable {
            path: dir.to_path_buf(),
            message: format!("cannot remove the leftover of a start that never joined: {e}"),
        })?;
        crate::event!(info, Event::DataLeftoverRemoved, path = %dir.display(), reason, "removed etcd's leftover of a start that never joined (no WAL: it held nothing)");
        return Ok(None);
    }
    let stamp = chrono_like_stamp();
    let reason: String = reason
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut to = PathBuf::from(format!("{}{MOVED_MARK}{stamp}-{reason}", dir.display()));
    let mut n = 1;
    while to.exists() {
        to = PathBuf::from(format!("{}{MOVED_MARK}{stamp}-{reason}-{n}", dir.display()));
        n += 1;
    }
    std::fs::rename(dir, &to).map_err(|source| DataDirError::Move {
        path: dir.to_path_buf(),
        to: to.clone(),
        source,
    })?;
    if let Some(parent) = dir.parent() {
        let _ = crate::base::atomic_file::sync_dir(parent);
    }
    crate::event!(warn, Event::DataMovedAside, from = %dir.display(), to = %to.display(), reason, "moved data directory aside");
    Ok(Some(to))
}

/// The moved-aside copies of `dir`, oldest first.
pub fn moved_aside(dir: &Path) -> Vec<PathBuf> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Vec::new();
    };
    let prefix = format!("{}{MOVED_MARK}", name.to_string_lossy());
    let mut found: Vec<PathBuf> = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    // The stamp sorts chronologically.
    found.sort();
    found
}

/// Deletes the moved-aside copies of `dir` that `recovery::moved_aside`
/// lets go under `retention`; returns those deleted.
pub fn prune(dir: &Path, retention: Retention) -> Vec<PathBuf> {
    let now_ms = crate::base::wall_clock::unix_ms();
    let copies: Vec<Copy> = moved_aside(dir)
        .iter()
        .map(|p| {
            let name = p.to_string_lossy().to_string();
            let moved_ms = p
                .file_name()
                .and_then(|f| f.to_str())
                .and_then(|f| f.split(MOVED_MARK).nth(1))
                .and_then(parse_stamp);
            Copy {
                // A name without a readable time is as young as can be:
                // kept.
                age_ms: moved_ms.map_or(0, |at| now_ms.saturating_sub(at)),
                holds_data: inspect(p).is_ok_and(|d| d == DataState::Present),
                name,
            }
        })
        .collect();
    let live = inspect(dir).is_ok_and(|d| d == DataState::Present);
    let mut deleted = Vec::new();
    for (name, why) in recovery::moved_aside::to_delete(&copies, retention, live) {
        let path = PathBuf::from(&name);
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {
                crate::event!(info, Event::MovedAsideDeleted, path = %name, %why, "deleted a moved-aside data directory");
                deleted.push(path);
            }
            Err(e) => {
                tracing::warn!(path = %name, error = %e, "cannot delete a moved-aside data directory")
            }
        }
    }
    deleted
}

/// `YYYYmmddTHHMMSS.mmmZ` in UTC, from the system clock.
fn chrono_like_stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        now.subsec_millis()
    )
}

/// The Unix ms of a `YYYYmmddTHHMMSS.mmmZ` stamp at the start of `text`.
fn parse_stamp(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[8] != b'T' || b[15] != b'.' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<u64>().ok();
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, min, sec, ms) = (num(9..11)?, num(11..13)?, num(13..15)?, num(16..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || h > 23 || min > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(y as i64, m as u32, d as u32);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + min * 60 + sec;
    Some(secs * 1000 + ms)
}

/// (year, month, day) to days since 1970-01-01, Howard Hinnant's algorithm.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn inspect_kinds() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("etcd");
        assert_eq!(inspect(&dir).unwrap(), DataState::Empty);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(inspect(&dir).unwrap(), DataState::Empty);
        std::fs::write(dir.join("junk"), b"x").unwrap();
        assert_eq!(inspect(&dir).unwrap(), DataState::Unusable);
        std::fs::create_dir_all(dir.join("member/wal")).unwrap();
        std::fs::write(dir.join("member/wal/0.wal"), b"x").unwrap();
        assert_eq!(inspect(&dir).unwrap(), DataState::Present);
    }

    #[test]
    fn stamps_read_back_as_times() {
        assert_eq!(parse_stamp("19700101T000000.000Z-x"), Some(0));
        assert_eq!(
            parse_stamp("20251122T010203.004Z-wiped"),
            Some((20_414 * 86_400 + 3723) * 1000 + 4)
        );
        assert_eq!(parse_stamp("2025-11-22-garbage"), None);
        assert_eq!(parse_stamp("20251322T010203.004Z"), None);
        let stamp = chrono_like_stamp();
        let back = parse_stamp(&stamp).unwrap();
        assert!(
            crate::base::wall_clock::unix_ms().abs_diff(back) < 5_000,
            "{stamp}"
        );
    }

    #[test]
    fn a_loop_of_moves_keeps_every_copy_and_old_ones_go_by_age() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("etcd");
        let retention = Retention {
            keep: 2,
            min_age_ms: 3_600_000,
        };
        // The real data first, then a loop of empty moves.
        std::fs::create_dir_all(dir.join("member/wal")).unwrap();
        std::fs::write(dir.join("member/wal/0.wal"), b"x").unwrap();
        for i in 0..6 {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("v"), format!("{i}")).unwrap();
            let to = move_aside(&dir, "wiped member/test").unwrap().unwrap();
            assert!(!dir.exists());
            assert!(to.exists());
        }
        std::fs::create_dir_all(dir.join("member/wal")).unwrap();
        std::fs::write(dir.join("member/wal/0.wal"), b"x").unwrap();
        assert!(prune(&dir, retention).is_empty(), "all young: all kept");
        assert_eq!(moved_aside(&dir).len(), 6);
        // Age them: rename each with a stamp two hours old.
        for (i, p) in moved_aside(&dir).iter().enumerate() {
            let old = format!("{}.moved-19700101T0{i}0000.000Z-old", dir.display());
            std::fs::rename(p, old).unwrap();
        }
        let deleted = prune(&dir, retention);
        let left = moved_aside(&dir);
        assert_eq!(left.len() + deleted.len(), 6);
        assert_eq!(
            left.len(),
            3,
            "the newest two, and the newest with data: {left:?}"
        );
        assert!(
            left.iter().any(|p| p.join("member/wal/0.wal").exists()),
            "the copy that held the data stays"
        );
        assert_eq!(
            move_aside(d.path().join("none").as_path(), "x").unwrap(),
            None
        );
    }

    #[test]
    fn unwritable_parent_is_one_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("a-file");
        std::fs::write(&file, b"").unwrap();
        let e = prepare_parent(&file.join("sub").join("etcd"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot create") && e.contains("a-file"), "{e}");
    }
}

//! The etcd data directory: inspecting it and moving it aside.
//!
//! eco never deletes a live data directory. One that must go is renamed to
//! `<data_dir>.moved-<UTC time>-<reason>` beside it so a human can still
//! recover from it; only the oldest moved-aside copies beyond the configured
//! number are deleted.

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

/// Renames `dir` aside (if it exists) and prunes old moved-aside copies
/// beyond `keep`. Returns where it went.
pub fn move_aside(dir: &Path, reason: &str, keep: usize) -> Result<Option<PathBuf>, DataDirError> {
    if !dir.exists() {
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
        let _ = crate::atomic_file::sync_dir(parent);
    }
    tracing::warn!(from = %dir.display(), to = %to.display(), reason, "moved data directory aside");
    prune(dir, keep.max(1));
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

fn prune(dir: &Path, keep: usize) {
    let copies = moved_aside(dir);
    let excess = copies.len().saturating_sub(keep);
    for old in &copies[..excess] {
        match std::fs::remove_dir_all(old) {
            Ok(()) => {
                tracing::info!(path = %old.display(), keep, "deleted the oldest moved-aside data directory")
            }
            Err(e) => {
                tracing::warn!(path = %old.display(), error = %e, "cannot delete an old moved-aside data directory")
            }
        }
    }
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
    fn move_aside_keeps_data_and_bounds_copies() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("etcd");
        for i in 0..4 {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("v"), format!("{i}")).unwrap();
            let to = move_aside(&dir, "wiped member/test", 2).unwrap().unwrap();
            assert!(!dir.exists());
            assert_eq!(
                std::fs::read_to_string(to.join("v")).unwrap(),
                format!("{i}")
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let copies = moved_aside(&dir);
        assert_eq!(copies.len(), 2);
        assert_eq!(std::fs::read_to_string(copies[1].join("v")).unwrap(), "3");
        assert_eq!(std::fs::read_to_string(copies[0].join("v")).unwrap(), "2");
        assert_eq!(move_aside(&dir, "x", 2).unwrap(), None);
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

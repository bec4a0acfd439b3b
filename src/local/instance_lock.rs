//! One eco per data directory: an exclusive lock held for the process's
//! life.
//!
//! Two eco processes on one data directory (a copy-pasted unit, a second
//! container on the same volume) would each supervise an etcd on the same
//! files and kill the other's in a loop. So before eco reads or writes
//! anything beside the data directory, it takes an exclusive `flock` on
//! `<parent of data_dir>/eco.lock` — the directory that also holds the
//! state file and the protocol's state. The lock is released by the kernel
//! when the process exits, however it exits (no stale lock after a crash
//! or SIGKILL). The file records who holds it (pid, instance id, start
//! time) so the second process's error names the holder. etcd does not
//! inherit the descriptor (it is close-on-exec).
//!
//! Not covered: two machines sharing one data directory over a network
//! filesystem whose `flock` is not coherent across clients.

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock's file name, beside the data directory.
pub const LOCK_FILE: &str = "eco.lock";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another eco already runs on the data directory {data_dir} ({holder}); it holds {path}. Stop it first, or give this one its own etcd.data_dir"
    )]
    Held {
        data_dir: PathBuf,
        path: PathBuf,
        holder: String,
    },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The held lock; dropping it (or exiting) releases it.
#[derive(Debug)]
pub struct InstanceLock {
    _file: Flock<File>,
    pub path: PathBuf,
}

/// Takes the lock for `data_dir` as `instance`, or says who holds it.
pub fn acquire(data_dir: &Path, instance: &str) -> Result<InstanceLock, LockError> {
    let parent = data_dir.parent().unwrap_or(Path::new("."));
    let path = parent.join(LOCK_FILE);
    let io = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io)?;
    let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((mut file, Errno::EWOULDBLOCK)) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(LockError::Held {
                data_dir: data_dir.to_path_buf(),
                path,
                holder: if holder.is_empty() {
                    "holder unknown".into()
                } else {
                    holder.to_string()
                },
            });
        }
        Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
    };
    // The lock is on this inode: rewrite in place, never by rename.
    let who = format!(
        "pid {}, instance {instance}, since {} ms after the epoch",
        std::process::id(),
        crate::base::wall_clock::unix_ms()
    );
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    file.write_all(who.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(InstanceLock { _file: file, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_naming_the_first_and_the_lock_is_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("etcd");
        let first = acquire(&data, "eco-1").expect("first");
        let err = acquire(&data, "eco-1").unwrap_err().to_string();
        assert!(
            err.contains("another eco")
                && err.contains(&format!("pid {}", std::process::id()))
                && err.contains("eco.lock"),
            "{err}"
        );
        drop(first);
        acquire(&data, "eco-1").expect("free again");
    }
}

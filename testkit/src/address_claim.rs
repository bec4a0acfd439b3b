//! Addresses claimed for the life of a test, across test processes.
//!
//! Every real-process test runs its instances on addresses it chose
//! (loopback addresses, or a `10.<net>.0.0/24` block of network
//! namespaces), with eco's and etcd's fixed ports on each. Tests of one
//! binary run in parallel threads, and `make test` runs several test
//! binaries at once (cargo nextest): two tests that chose the same address
//! would take each other's ports. A claim is an exclusive `flock(2)` on
//! `<temp dir>/eco-test-claims/<address>`, held until the claim is dropped
//! (after the test's processes are killed): a second test that wants the
//! address waits for the first to end instead of failing on a port in use.
//! The kernel releases a lock when its process dies, so a killed test
//! leaves no stale claim.
//!
//! A claim is taken by [`crate::cluster::Cluster`] for each instance's
//! address (and its namespace block), by [`crate::instance::Instance`],
//! and by [`crate::pods::PodSet`] for its block.

use anyhow::Context;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a test waits for another to release an address: longer than
/// any one test runs (nextest's own bound terminates a test first).
const WAIT_AT_MOST: Duration = Duration::from_secs(20 * 60);

/// An address held by this test until dropped.
#[derive(Debug)]
pub struct AddressClaim {
    /// The locked file (the lock goes with it).
    _file: File,
    pub address: String,
}

/// Where the claims live (one file per address; never removed: removing a
/// locked file would let a third test lock a new file of the same name).
fn claims_dir() -> PathBuf {
    std::env::temp_dir().join("eco-test-claims")
}

/// Claims `address` (an IP address, or a name such as `ns-10.28`), waiting
/// while another test holds it.
pub fn claim(address: &str) -> anyhow::Result<AddressClaim> {
    anyhow::ensure!(
        !address.is_empty()
            && address
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b)),
        "address claim {address:?}: letters, digits, '.', '-' and ':' only"
    );
    let dir = claims_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    let path = dir.join(address);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("address claim {}", path.display()))?;
    let deadline = Instant::now() + WAIT_AT_MOST;
    let mut said = false;
    loop {
        // flock(2) (File::try_lock is newer than the workspace's MSRV).
        // SAFETY: the descriptor is open for the life of `file`.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked == 0 {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(error).with_context(|| format!("locking {}", path.display()));
        }
        if Instant::now() >= deadline {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            anyhow::bail!(
                "address {address} still held after {} s by {}",
                WAIT_AT_MOST.as_secs(),
                holder.trim()
            );
        }
        if !said {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            eprintln!(
                "address {address} is held by {}: waiting for it",
                holder.trim()
            );
            said = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Who holds it, for the message of a test that waits.
    let holder = format!(
        "pid {} ({})\n",
        std::process::id(),
        std::thread::current().name().unwrap_or("a test")
    );
    file.set_len(0)
        .and_then(|()| file.write_all(holder.as_bytes()))
        .with_context(|| format!("address claim {}", path.display()))?;
    Ok(AddressClaim {
        _file: file,
        address: address.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_address_waits_for_its_release() {
        let name = format!("test-{}", std::process::id());
        let first = claim(&name).expect("first claim");
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let second = claim(&name).expect("second claim");
            tx.send(()).expect("send");
            drop(second);
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "a second claim of a held address must wait"
        );
        drop(first);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the second claim once the first is released");
        waiter.join().expect("waiter");
    }

    #[test]
    fn a_name_with_a_slash_is_refused() {
        assert!(claim("../etc").is_err());
    }
}

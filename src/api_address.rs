//! Where this instance's HTTP API listens, recorded by the daemon beside
//! its state file (`eco-api.address`), so `eco status --config` finds the
//! instance even when its provider no longer names it — an instance
//! removed from its group keeps running, leaving, and must still explain
//! itself. The CLI reads it only when the config and the provider cannot
//! give the address; nothing decides from it.

use crate::atomic_file::write_atomic;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "eco-api.address";

/// The file beside the data directory `data_dir` (in its parent).
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.parent().unwrap_or(Path::new(".")).join(FILE_NAME)
}

/// Records `addr` (atomically).
pub fn record(data_dir: &Path, addr: SocketAddr) -> std::io::Result<()> {
    write_atomic(&file(data_dir), format!("{addr}\n").as_bytes()).map_err(std::io::Error::other)
}

/// The recorded address, if there is one that parses.
pub fn recorded(data_dir: &Path) -> Option<SocketAddr> {
    std::fs::read_to_string(file(data_dir))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_beside_the_data_directory() {
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("etcd");
        assert_eq!(recorded(&data), None);
        let addr: SocketAddr = "127.0.0.11:2390".parse().unwrap();
        record(&data, addr).unwrap();
        assert_eq!(recorded(&data), Some(addr));
        assert_eq!(file(&data), d.path().join(FILE_NAME));
    }
}

//! Where this instance's HTTP API serves `/status` (`api.status_bind` when
//! set, else the main listener), recorded by the daemon beside its state
//! file (`eco-api.address`), so `eco status --config` finds the instance
//! even when its provider no longer names it — an instance removed from
//! its group keeps running, leaving, and must still explain itself. With
//! `[api.tls]` a second line holds the name the API's certificate is
//! verified as (the instance's address or DNS name). The CLI reads it only
//! when the config and the provider cannot give the address; nothing
//! decides from it.

use crate::base::atomic_file::write_atomic;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "eco-api.address";

/// The file beside the data directory `data_dir` (in its parent).
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.parent().unwrap_or(Path::new(".")).join(FILE_NAME)
}

/// Records `addr` and, for an API over TLS, the name its certificate is
/// verified as (atomically).
pub fn record(data_dir: &Path, addr: SocketAddr, tls_name: Option<&str>) -> std::io::Result<()> {
    let text = match tls_name {
        Some(name) => format!("{addr}\n{name}\n"),
        None => format!("{addr}\n"),
    };
    write_atomic(&file(data_dir), text.as_bytes()).map_err(std::io::Error::other)
}

fn line(data_dir: &Path, n: usize) -> Option<String> {
    let text = std::fs::read_to_string(file(data_dir)).ok()?;
    let line = text.lines().nth(n)?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// The recorded address, if there is one that parses.
pub fn recorded(data_dir: &Path) -> Option<SocketAddr> {
    line(data_dir, 0)?.parse().ok()
}

/// The recorded TLS server name, if the API serves TLS.
pub fn recorded_tls_name(data_dir: &Path) -> Option<String> {
    line(data_dir, 1)
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
        record(&data, addr, None).unwrap();
        assert_eq!(recorded(&data), Some(addr));
        assert_eq!(recorded_tls_name(&data), None);
        assert_eq!(file(&data), d.path().join(FILE_NAME));
        record(&data, addr, Some("eco-1.example.com")).unwrap();
        assert_eq!(recorded(&data), Some(addr));
        assert_eq!(
            recorded_tls_name(&data).as_deref(),
            Some("eco-1.example.com")
        );
    }
}

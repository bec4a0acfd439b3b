//! Checks made before etcd starts, so that common mistakes end in one clear
//! line instead of a crash loop: ports already taken; and the open-files
//! limit raised to what the system allows.

use std::net::{IpAddr, SocketAddr, TcpListener};

/// Fails with the first `(key, port)` already bound on `address`.
pub fn ports_free(address: IpAddr, ports: &[(&str, u32)]) -> anyhow::Result<()> {
    for (key, port) in ports {
        let Ok(port16) = u16::try_from(*port) else {
            anyhow::bail!("`{key}` = {port} is not a port");
        };
        let at = SocketAddr::new(address, port16);
        if let Err(e) = TcpListener::bind(at) {
            anyhow::bail!(
                "{at} (`{key}`) cannot be used: {e}; is another etcd or eco running there?"
            );
        }
    }
    Ok(())
}

/// Raises this process's soft limit on open files to its hard limit (the
/// default soft limit, 1024, is small for a process that holds etcd
/// clients, gossip, the store and an HTTP API at once); returns the limit
/// now in force. etcd inherits it.
pub fn raise_open_file_limit() -> Option<u64> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Some(hard);
    }
    Some(soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_in_use_names_the_key() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port() as u32;
        let e = ports_free("127.0.0.1".parse().unwrap(), &[("etcd.client_port", port)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("etcd.client_port") && e.contains("in use"),
            "{e}"
        );
    }
}

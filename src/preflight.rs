//! Checks made before etcd starts, so that common mistakes end in one clear
//! line instead of a crash loop: ports already taken.

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

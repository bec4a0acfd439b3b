//! A join that keeps failing, explained: the facts
//! `recovery::join_diagnosis` reads — whether this instance's member is
//! joining (in the list, never started), whether etcd exited since, etcd's
//! own reason, and, toward each other member, the address this
//! instance's connections come from and whether its peer certificate names
//! it — gathered here; the sentence goes to `/status` (`join_problem`),
//! `eco status`, and the log when it changes.

use super::Daemon;
use super::observe::Observed;
use recovery::join_diagnosis::{self, JoinFacts, PeerSource};
use std::net::{IpAddr, UdpSocket};

/// A restart this recent still counts as the join failing.
const RECENT_START_MS: u64 = 30_000;

impl Daemon {
    /// Why this instance's join fails, if it does.
    pub(super) fn join_problem(&self, seen: &Observed, peer_names: &[String]) -> Option<String> {
        let (list, _) = seen.cluster.members.as_ref()?;
        let me = list.iter().find(|m| {
            Some(m.id) == self.durable.state().and_then(|s| s.member_id)
                || m.peer_urls.contains(&self.ctx.peer_url)
        })?;
        let joining = me.name.is_empty();
        let p = &seen.process;
        let started_recently = p.started_unix_ms.is_some_and(|at| {
            crate::base::wall_clock::unix_ms().saturating_sub(at) < RECENT_START_MS
        });
        let exited = p.crashes > 0 && (p.restart_in_ms.is_some() || started_recently || !p.running);
        if !(joining && exited) {
            return None;
        }
        let tls = self.ctx.config.etcd.tls_files();
        let sources: Vec<PeerSource> = list
            .iter()
            .filter(|m| m.id != me.id)
            .flat_map(|m| m.peer_urls.iter())
            .filter_map(|url| {
                let source = source_toward(url)?;
                let named = peer_names.iter().any(|n| {
                    n.parse::<IpAddr>().is_ok_and(|ip| ip == source) || *n == source.to_string()
                });
                Some(PeerSource {
                    peer: url.clone(),
                    source: source.to_string(),
                    named,
                })
            })
            .collect();
        join_diagnosis::diagnose(&JoinFacts {
            joining,
            exited,
            etcd_reason: p.last_exit_reason.as_deref(),
            peers_check_certificates: tls.peer.as_ref().is_some_and(|t| t.client_cert_auth),
            certificate_names: peer_names,
            sources: &sources,
            names_key: self
                .ctx
                .config
                .etcd
                .tls
                .generated
                .is_some()
                .then_some("etcd.tls.generated.extra_names"),
        })
    }
}

/// The local address the kernel picks for a connection to the host of
/// `url` (an IP literal; a DNS name is not resolved here): a UDP socket
/// "connected" to it sends nothing.
fn source_toward(url: &str) -> Option<IpAddr> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = host.parse().ok()?;
    let port: u16 = port.parse().ok()?;
    let bind = match ip {
        IpAddr::V4(_) => "0.0.0.0:0",
        IpAddr::V6(_) => "[::]:0",
    };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect((ip, port)).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

#[cfg(test)]
mod tests {
    use super::source_toward;

    #[test]
    fn the_kernel_picks_127_0_0_1_toward_any_loopback_address() {
        assert_eq!(
            source_toward("https://127.0.31.2:2380").map(|a| a.to_string()),
            Some("127.0.0.1".to_string())
        );
        assert_eq!(
            source_toward("https://etcd-0.eco:2380"),
            None,
            "names are not resolved"
        );
        assert_eq!(source_toward("nonsense"), None);
    }
}

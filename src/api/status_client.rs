//! `eco status`: fetch `/status` from an instance's API and print it.
//!
//! Over HTTPS when the instance's `[api.tls]` is on ([`ApiTarget::tls`]):
//! the server's certificate is always verified, against the CA of
//! `[api.tls]` and as the instance's address or DNS name.

use crate::api::status::InstanceStatus;
use crate::api::tls::ApiClientTls;
use crate::base::printable::printable;
use anyhow::Context;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// Where and how to reach an instance's API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiTarget {
    pub addr: SocketAddr,
    /// `Some` when the API serves HTTPS: how it is verified.
    pub tls: Option<ApiClientTls>,
}

impl ApiTarget {
    /// Plain HTTP at `addr`.
    pub fn plain(addr: SocketAddr) -> Self {
        Self { addr, tls: None }
    }

    /// `http://ADDR` or `https://ADDR`, for messages.
    pub fn url(&self) -> String {
        match &self.tls {
            Some(_) => format!("https://{}", self.addr),
            None => format!("http://{}", self.addr),
        }
    }
}

/// GETs `path` from `addr` over plain HTTP with a timeout; returns the
/// status code and body.
pub async fn get(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
) -> anyhow::Result<(u16, Vec<u8>)> {
    get_from(&ApiTarget::plain(addr), path, timeout).await
}

/// GETs `path` from `target` (HTTP or verified HTTPS) with a timeout;
/// returns the status code and body.
pub async fn get_from(
    target: &ApiTarget,
    path: &str,
    timeout: Duration,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let addr = target.addr;
    let work = async {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .with_context(|| format!("cannot connect to {addr}"))?;
        match &target.tls {
            None => request(stream, addr, path).await.context(
                "(if the API serves TLS, give the instance's config, whose [api.tls] says so, or --tls-ca)",
            ),
            Some(tls) => {
                let (connector, name) = tls.connector()?;
                let stream = connector.connect(name, stream).await.with_context(|| {
                    format!(
                        "no verified TLS session with {addr} (as {:?}, trusting {} {})",
                        tls.server_name,
                        tls.trusted_ca.key,
                        tls.trusted_ca.path.display()
                    )
                })?;
                request(stream, addr, path).await
            }
        }
    };
    tokio::time::timeout(timeout, work)
        .await
        .with_context(|| format!("{} did not answer within {timeout:?}", target.url()))?
}

/// One HTTP/1.1 GET on `stream`.
async fn request<S>(stream: S, addr: SocketAddr, path: &str) -> anyhow::Result<(u16, Vec<u8>)>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .context("HTTP handshake failed")?;
    let driver = tokio::spawn(conn);
    let request = hyper::Request::get(path)
        .header(hyper::header::HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .context("building the request")?;
    let response = sender
        .send_request(request)
        .await
        .context("request failed")?;
    let code = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .context("reading the response")?
        .to_bytes()
        .to_vec();
    driver.abort();
    Ok((code, body))
}

/// Renders a status for humans.
pub fn render(s: &InstanceStatus) -> String {
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<14} {v}\n"));
    line(
        "instance",
        format!("{} (cluster {})", s.instance_id, s.cluster),
    );
    line("phase", format!("{:?}", s.phase).to_lowercase());
    line(
        "ready",
        if s.ready {
            "yes".into()
        } else {
            format!("no — {}", s.not_ready_reason().unwrap_or_default())
        },
    );
    line("next action", s.next.action.clone());
    line("because", s.next.reason.clone());
    if let Some(p) = &s.paused {
        line("PAUSED", p.describe());
    }
    if let Some(why) = &s.paused_unreadable {
        line("PAUSED", printable(why).into_owned());
    }
    if let Some(problem) = &s.pause_problem {
        line("pause switch", printable(problem).into_owned());
    }
    if let Some(c) = &s.cluster_version {
        line(
            "eco formats",
            format!(
                "eco {} reads {}–{}; writes {}, finalized {}: {} — {}",
                s.eco_version, c.reads.0, c.reads.1, c.writing, c.finalized, c.next, c.reason
            ),
        );
        if let Some(problem) = &c.problem {
            line("eco formats", printable(problem).into_owned());
        }
    }
    if let Some(u) = &s.upgrade {
        line(
            "etcd upgrade",
            format!(
                "{} → {}: {}: {}",
                u.running, u.configured, u.state, u.reason
            ),
        );
    }
    if let Some(t) = &s.termination {
        line(
            "terminating",
            match &t.hook {
                Some(h) => format!(
                    "{} — lifecycle hook {} of group {} waits (heartbeat timeout {} s)",
                    t.source,
                    h.name,
                    h.group,
                    h.heartbeat_timeout_ms / 1000
                ),
                None => format!("{} — no lifecycle hook waits", t.source),
            },
        );
    }
    if let Some(problem) = &s.store_problem {
        line("store", format!("REFUSED — {problem}"));
    }
    if let Some(problem) = &s.tls_problem {
        line("etcd tls", format!("BROKEN — {problem}"));
    }
    if let Some(why) = &s.etcd_not_ready {
        line("etcd readyz", format!("NOT READY — {why}"));
    }
    if let Some(problem) = &s.join_problem {
        line("join", format!("FAILING — {problem}"));
    }
    if let Some(problem) = &s.api_tls_problem {
        line("api tls", format!("NOT SERVED — {problem}"));
    }
    let now = crate::base::wall_clock::unix_ms() / 1000;
    for c in &s.certificates {
        line(
            "certificate",
            match (c.not_after_unix, &c.problem) {
                (Some(at), _) if at <= now as i64 => format!("{} — EXPIRED ({})", c.key, c.subject),
                (Some(at), _) if c.names.is_empty() => format!(
                    "{} — {} days left ({})",
                    c.key,
                    (at - now as i64) / 86_400,
                    c.subject
                ),
                (Some(at), _) => format!(
                    "{} — {} days left ({}; {})",
                    c.key,
                    (at - now as i64) / 86_400,
                    c.subject,
                    c.names.join(", ")
                ),
                (None, Some(p)) => format!("{} — UNREADABLE: {p}", c.key),
                (None, None) => c.key.clone(),
            },
        );
    }
    if let Some(a) = &s.auth {
        let enabled = match a.enabled {
            Some(true) => "enabled in etcd",
            Some(false) => "not enabled in etcd yet",
            None => "etcd's state unknown here",
        };
        let managed = if a.managed { "managed" } else { "not managed" };
        line("auth", format!("{managed}, {enabled} — {}", a.why));
        if let Some(who) = &a.identity {
            line("", format!("eco is {who}"));
        }
        if let (Some(action), Some(reason)) = (&a.last_action, &a.last_reason) {
            line("", format!("last: {action} ({reason})"));
        }
        if let Some(e) = &a.last_error {
            line("", format!("ERROR — {e}"));
        }
    }
    if let Some(problem) = &s.group_problem {
        line("group", format!("STALE — {problem}"));
    }
    if let Some(r) = &s.recovery {
        line(
            "recovery",
            format!(
                "{} — {}",
                format!("{:?}", r.phase).to_lowercase(),
                r.summary
            ),
        );
        for w in &r.waiting_for {
            line("", w.clone());
        }
    }
    line(
        "etcd",
        format!(
            "{} at {} (peer {})",
            s.etcd_version, s.client_url, s.peer_url
        ),
    );
    for a in &s.etcd_advisories {
        line(
            match a.severity {
                recovery::etcd_advisories::Severity::DataLoss => "etcd UNSAFE",
                recovery::etcd_advisories::Severity::EndOfLife => "etcd advisory",
                recovery::etcd_advisories::Severity::UpgradePath => "etcd advisory",
            },
            format!("{} ({})", a.text, a.source),
        );
    }
    let p = &s.process;
    line(
        "process",
        format!(
            "{} pid={} starts={} crashes={} last_exit={}{}",
            if p.running { "running" } else { "stopped" },
            p.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            p.starts,
            p.crashes,
            p.last_exit.clone().unwrap_or_else(|| "-".into()),
            p.restart_in_ms
                .map(|ms| format!(" restart_in={ms}ms"))
                .unwrap_or_default()
        ),
    );
    match &s.member {
        Some(m) => line(
            "member",
            format!(
                "{:x} cluster={:x} leader={} revision={} raft_index={} term={}{}",
                m.member_id,
                m.cluster_id,
                if m.is_leader() {
                    "self".into()
                } else if m.has_leader() {
                    format!("{:x}", m.leader)
                } else {
                    "none".into()
                },
                m.revision,
                m.raft_index,
                m.raft_term,
                if m.is_learner { " learner" } else { "" }
            ),
        ),
        None => line("member", "unknown".into()),
    }
    if let Some(e) = &s.probe_error {
        line("probe error", e.clone());
    }
    if let Some(st) = &s.state {
        line(
            "state",
            format!(
                "incarnation {} token {} voters [{}]",
                st.incarnation,
                st.cluster_token,
                st.voting_members.join(", ")
            ),
        );
    }
    for m in &s.members {
        line(
            "etcd member",
            format!(
                "{} {} {}{}{} revision={}",
                m.id,
                if m.name.is_empty() {
                    "(not started)"
                } else {
                    m.name.as_str()
                },
                if m.learner { "learner" } else { "voter" },
                if m.leader { " leader" } else { "" },
                if m.healthy { " healthy" } else { " UNHEALTHY" },
                m.revision
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into())
            ),
        );
    }
    if let Some(v) = s.snapshots.as_ref().and_then(|sn| sn.verification.as_ref()) {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(v.at_unix_ms);
        line(
            "verified restore",
            format!(
                "{} at {} by {}: {} — {}",
                if v.ok { "ok" } else { "FAILED" },
                humantime::format_rfc3339_seconds(at),
                // The store's record: something else may have written it.
                printable(&v.instance),
                printable(&v.snapshot),
                printable(&v.detail)
            ),
        );
    }
    if let Some(a) = &s.archive {
        line("change archive", archive_line(a));
    }
    if let Some(problem) = s
        .snapshots
        .as_ref()
        .and_then(|sn| sn.verification_problem.as_ref())
    {
        line(
            "VERIFICATION RECORD",
            format!("dated in the future: {problem}"),
        );
    }
    if !s.gossip.is_empty() {
        let peers: Vec<String> = s
            .gossip
            .iter()
            .map(|p| {
                let flaps = match p.times_down {
                    0 => String::new(),
                    n => format!(", down {n}x since start"),
                };
                format!(
                    "{}:{}({}, {}ms{flaps})",
                    p.instance_id,
                    if p.up { "up" } else { "down" },
                    p.phase,
                    p.heard_ms_ago
                )
            })
            .collect();
        line("gossip", peers.join(", "));
    }
    if let Some(g) = &s.group {
        let members: Vec<String> = g
            .instances
            .iter()
            .map(|i| {
                format!(
                    "{}@{}{}",
                    i.id,
                    i.host,
                    i.zone.as_ref().map(|z| format!("/{z}")).unwrap_or_default()
                )
            })
            .collect();
        line(
            "group",
            format!("desired {}: {}", g.desired_size, members.join(", ")),
        );
    }
    out
}

/// The `change archive` line: what this instance archives, how far
/// behind, and what comes next.
fn archive_line(a: &crate::api::status::ArchiveStatus) -> String {
    if !a.writing {
        return "not archived here (the instance that writes snapshots archives)".into();
    }
    let newest = match (a.newest_revision, a.newest_seen_unix_ms) {
        (Some(r), Some(at)) => format!(
            "newest revision {r}, received {}",
            humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_millis(at))
        ),
        (Some(r), None) => format!("from revision {}", r + 1),
        _ => "starting".into(),
    };
    let mut out = format!(
        "{newest}; behind by {} revision(s), {:.1}s; {} segment(s) stored here",
        a.lag_revisions,
        a.lag_ms as f64 / 1000.0,
        a.segments
    );
    if let Some(c) = &a.chain {
        out.push_str(&format!("; {}", printable(c)));
    }
    if let Some(e) = &a.last_error {
        out.push_str(&format!(
            "; last error ({} in all): {}",
            a.failures,
            printable(e)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::status::{SnapshotStatus, example};
    use crate::snapshot::verify::VerificationRecord;
    use crate::store::pause::Pause;

    /// What the store holds is shown with control characters escaped, and
    /// a verification record dated in the future is said to be.
    #[test]
    fn store_text_is_escaped_and_a_future_record_is_said() {
        let mut s = example("eco-1", "it");
        s.paused = Some(Pause {
            by: "eve\u{1b}[2J".into(),
            at_unix_ms: 1,
            reason: "disk\nnext action    none".into(),
            format: 1,
        });
        s.pause_problem = Some("odd\r\u{1b}[31m".into());
        let future = 4_102_444_800_000;
        let record = VerificationRecord {
            snapshot: "it/snapshots/x.db".into(),
            at_unix_ms: future,
            ok: true,
            detail: "ok\u{1b}]0;title\u{7}".into(),
            instance: "elsewhere".into(),
            last_ok_unix_ms: Some(future),
            format: 1,
        };
        s.snapshots = Some(SnapshotStatus {
            verification_problem: recovery::restore_check::record_in_future(
                crate::base::wall_clock::unix_ms(),
                record.at_unix_ms,
                record.last_ok_unix_ms,
            ),
            verification: Some(record),
            ..Default::default()
        });
        let text = render(&s);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("next action    none")),
            "a line injected: {text}"
        );
        assert!(text.contains("eve\\u{1b}[2J"), "{text}");
        let future_line = text
            .lines()
            .find(|l| l.starts_with("VERIFICATION RECORD"))
            .unwrap_or_else(|| panic!("the future record is not said: {text}"));
        assert!(future_line.contains("in the future"), "{future_line}");
    }
}

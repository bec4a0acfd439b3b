//! eco's local HTTP endpoint: read-only. Nothing served here can steer eco.
//!
//! - `GET /healthz`: eco is alive (200).
//! - `GET /readyz`: 200 when the local etcd runs and knows a leader, else
//!   503 with the reason.
//! - `GET /metrics`: Prometheus text format.
//! - `GET /status`: [`InstanceStatus`] as JSON (what `eco status` prints).
//!   With `api.status_bind`, only on that second listener: the main one
//!   answers 404 saying where it is.
//!
//! Plain HTTP, or HTTPS with `[api.tls]` on every listener
//! ([`crate::api::tls`]: the certificate read again when its files change,
//! no client certificate asked for).
//!
//! The listener is bound on the instance's routable address by default,
//! so it is built to be hit by anyone on the network without hurting eco
//! (the API must never starve the control loop). Each listener
//! has:
//!
//! - **its own file-descriptor budget** ([`crate::api::budget`]): at most
//!   [`LIMITS`]`.max_connections` connections at once,
//!   [`LIMITS`]`.per_peer` from one source address. When either is used
//!   up, a new connection takes the slot of the connection idle the
//!   longest (handshaking, sending its headers, or between requests; of
//!   its own source, for a source's share), which is closed: idle
//!   connections from a few addresses cannot keep a health check out. When
//!   every such connection serves a request, the new one is accepted and
//!   closed at once (so it does not wait in the kernel's backlog ahead of
//!   a legitimate one). A
//!   TLS handshake holds its connection's slot: a failed or stalled one
//!   costs that slot only, for at most `header_read_timeout`;
//! - **timeouts**: the TLS handshake and then a request's headers must each
//!   arrive within `header_read_timeout`, and a connection lives at most
//!   `connection_lifetime` (clients reconnect; Prometheus does);
//! - **bounded shutdown**: on shutdown the listener closes, connections
//!   in flight get `shutdown_grace`, then are dropped.

use crate::api::budget::{Budget, Refused, Slot};
use crate::api::status::InstanceStatus;
use crate::api::tls::{ApiTlsError, ReloadingCertificate};
use crate::config::ApiTlsFiles;
use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

#[derive(Clone)]
struct ApiState {
    status: watch::Receiver<InstanceStatus>,
    metrics: Arc<Metrics>,
}

/// The API's resource limits.
#[derive(Clone, Copy, Debug)]
pub struct ApiLimits {
    pub max_connections: usize,
    pub per_peer: usize,
    pub header_read_timeout: Duration,
    pub connection_lifetime: Duration,
    pub shutdown_grace: Duration,
}

pub const LIMITS: ApiLimits = ApiLimits {
    max_connections: 128,
    per_peer: 16,
    header_read_timeout: Duration::from_secs(5),
    connection_lifetime: Duration::from_secs(30),
    shutdown_grace: Duration::from_secs(2),
};

/// Where and how the API serves.
#[derive(Clone, Debug)]
pub struct Serving {
    /// The main listener (`api.bind`, or the instance's address and
    /// `api.port`).
    pub main: SocketAddr,
    /// `api.status_bind`: the listener that alone serves `/status`.
    pub status: Option<SocketAddr>,
    /// `[api.tls]` in force: every listener serves HTTPS with these files.
    pub tls: Option<ApiTlsFiles>,
    /// The instance's host, which a renewed certificate must keep naming
    /// (see `crate::api::tls`).
    pub host: String,
}

/// The API, serving.
pub struct Served {
    /// Ends once the API stopped.
    pub task: tokio::task::JoinHandle<()>,
    /// With TLS: why the certificate files on disk are not the pair served
    /// (`None` while they are), for `/status`.
    pub tls_problem: Option<watch::Receiver<Option<String>>>,
}

/// Why the API cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr} (`{key}`): {source}")]
    Listen {
        addr: SocketAddr,
        key: &'static str,
        source: std::io::Error,
    },
    #[error("cannot serve the HTTP API over TLS ([api.tls]): {0}")]
    Tls(#[from] ApiTlsError),
}

/// The line the main listener answers `/status` with when `status_bind`
/// serves it.
pub fn status_elsewhere(status_bind: SocketAddr) -> String {
    format!("/status is served on {status_bind} only (api.status_bind)\n")
}

/// Binds the listeners of `serving` and serves until `shutdown` resolves.
pub async fn serve(
    serving: Serving,
    status: watch::Receiver<InstanceStatus>,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Served, ServeError> {
    let state = ApiState { status, metrics };
    let common = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text));
    let with_status = common.clone().route("/status", get(status_json));
    let main_app = match serving.status {
        None => with_status.clone(),
        Some(elsewhere) => common.route(
            "/status",
            get(move || async move { (StatusCode::NOT_FOUND, status_elsewhere(elsewhere)) }),
        ),
    }
    .with_state(state.clone());
    let mut tls_problem = None;
    let acceptor = match serving.tls {
        Some(files) => {
            let certificate = Arc::new(ReloadingCertificate::new(files, Some(serving.host))?);
            tls_problem = Some(certificate.problem());
            Some(TlsAcceptor::from(crate::api::tls::server_config(
                certificate,
            )?))
        }
        None => None,
    };
    let bind = |addr: SocketAddr, key: &'static str| async move {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Listen { addr, key, source })
    };
    let main = bind(serving.main, "api.bind`/`api.port").await?;
    let status_listener = match serving.status {
        Some(addr) => Some(bind(addr, "api.status_bind").await?),
        None => None,
    };
    // One shutdown for every listener.
    let (stop, stopped) = watch::channel(false);
    let mut loops = tokio::task::JoinSet::new();
    loops.spawn(accept_loop(
        main,
        main_app,
        acceptor.clone(),
        wait_stop(stopped.clone()),
        LIMITS,
    ));
    if let Some(listener) = status_listener {
        loops.spawn(accept_loop(
            listener,
            with_status.with_state(state),
            acceptor,
            wait_stop(stopped),
            LIMITS,
        ));
    }
    let task = tokio::spawn(async move {
        tokio::select! {
            _ = shutdown => {}
            // A loop that ended by itself: stop the others too.
            _ = loops.join_next() => {}
        }
        let _ = stop.send(true);
        while loops.join_next().await.is_some() {}
    });
    Ok(Served { task, tls_problem })
}

async fn wait_stop(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// A connection's service: the router, marking the connection busy while a
/// request is in progress (an idle one may be closed for a new
/// connection: [`crate::api::budget`]).
struct Tracked {
    inner: TowerToHyperService<Router>,
    slot: Arc<Slot>,
}

impl<R> hyper::service::Service<R> for Tracked
where
    TowerToHyperService<Router>: hyper::service::Service<R>,
    <TowerToHyperService<Router> as hyper::service::Service<R>>::Future: Send + 'static,
    <TowerToHyperService<Router> as hyper::service::Service<R>>::Response: 'static,
    <TowerToHyperService<Router> as hyper::service::Service<R>>::Error: 'static,
{
    type Response = <TowerToHyperService<Router> as hyper::service::Service<R>>::Response;
    type Error = <TowerToHyperService<Router> as hyper::service::Service<R>>::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn call(&self, request: R) -> Self::Future {
        let serving = self.slot.serving();
        let response = self.inner.call(request);
        Box::pin(async move {
            let answered = response.await;
            drop(serving);
            answered
        })
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    limits: ApiLimits,
) {
    let budget = Budget::new(limits.max_connections, limits.per_peer);
    let handshakes = Arc::new(HandshakeFailures::default());
    let mut connections = tokio::task::JoinSet::new();
    let mut refused: u64 = 0;
    let mut evicted: u64 = 0;
    let mut last_refusal_log: Option<tokio::time::Instant> = None;
    let mut last_eviction_log: Option<tokio::time::Instant> = None;
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            biased;
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors or a network error: never spin.
                tracing::warn!(error = %e, "the HTTP API cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let slot = match budget.admit(peer.ip()) {
            Ok((slot, closed_idle)) => {
                if closed_idle {
                    evicted += 1;
                    let now = tokio::time::Instant::now();
                    if last_eviction_log
                        .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(60))
                    {
                        last_eviction_log = Some(now);
                        tracing::warn!(
                            %peer,
                            closed_since_start = evicted,
                            max = limits.max_connections,
                            "the HTTP API is at its connection limit; closing the connection idle the longest for each new one"
                        );
                    }
                }
                Arc::new(slot)
            }
            Err(why) => {
                drop(stream);
                refused += 1;
                let now = tokio::time::Instant::now();
                if last_refusal_log.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(60))
                {
                    last_refusal_log = Some(now);
                    let reason = match why {
                        Refused::PeerShare => "this source address holds its share of connections",
                        Refused::Busy => "every connection serves a request",
                    };
                    tracing::warn!(
                        %peer,
                        refused,
                        max = limits.max_connections,
                        per_peer = limits.per_peer,
                        "the HTTP API closes new connections: {reason}"
                    );
                }
                continue;
            }
        };
        let service = Tracked {
            inner: TowerToHyperService::new(app.clone()),
            slot: slot.clone(),
        };
        let tls = tls.clone();
        let handshakes = handshakes.clone();
        let held = slot.clone();
        let task = connections.spawn(async move {
            let _slot = held;
            let deadline = tokio::time::Instant::now() + limits.connection_lifetime;
            match tls {
                None => serve_connection(stream, service, limits, deadline).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(limits.header_read_timeout, acceptor.accept(stream))
                            .await;
                    match handshake {
                        Ok(Ok(stream)) => serve_connection(stream, service, limits, deadline).await,
                        Ok(Err(e)) => handshakes.failed(peer, &e.to_string()),
                        Err(_) => handshakes.failed(peer, "no TLS handshake in time"),
                    }
                }
            }
        });
        slot.served_by(task);
        drop(slot);
    }
    drop(listener);
    let drained = tokio::time::timeout(limits.shutdown_grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::info!(
            open = connections.len(),
            "closing the HTTP API's remaining connections"
        );
        connections.abort_all();
    }
}

/// Serves HTTP/1.1 on one connection (plain or TLS) until `deadline`.
async fn serve_connection<S>(
    io: S,
    service: Tracked,
    limits: ApiLimits,
    deadline: tokio::time::Instant,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(io), service);
    let _ = tokio::time::timeout_at(deadline, connection).await;
}

/// Failed TLS handshakes of one listener: each one's own connection only
/// ends; they are logged at most once a minute, with their count (a
/// scraper without the CA, or plain HTTP sent to the TLS port, fails
/// every time).
#[derive(Default)]
struct HandshakeFailures {
    state: Mutex<(u64, Option<tokio::time::Instant>)>,
}

impl HandshakeFailures {
    fn failed(&self, peer: SocketAddr, error: &str) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let (count, logged) = &mut *state;
        *count += 1;
        let now = tokio::time::Instant::now();
        if logged.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(60)) {
            *logged = Some(now);
            tracing::info!(%peer, error, failed_since_start = *count, "a TLS handshake with the HTTP API failed (plain HTTP, or a client that does not trust the API's CA?)");
        } else {
            tracing::debug!(%peer, error, "a TLS handshake with the HTTP API failed");
        }
    }
}

async fn readyz(State(s): State<ApiState>) -> Response {
    let status = s.status.borrow().clone();
    match status.not_ready_reason() {
        None => (StatusCode::OK, "ready\n").into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        )
            .into_response(),
    }
}

/// OpenMetrics when the scraper asks for it (a Prometheus server does),
/// else the classic text format (`metrics::text_format`).
async fn metrics_text(State(s): State<ApiState>, headers: axum::http::HeaderMap) -> Response {
    use crate::metrics::text_format;
    let current = s.status.borrow().clone();
    s.metrics.observe(&current);
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    if text_format::wants_openmetrics(accept) {
        (
            [(header::CONTENT_TYPE, text_format::OPENMETRICS)],
            s.metrics.render(),
        )
            .into_response()
    } else {
        (
            [(header::CONTENT_TYPE, text_format::TEXT)],
            text_format::to_text_format(&s.metrics.render()),
        )
            .into_response()
    }
}

async fn status_json(State(s): State<ApiState>) -> Json<InstanceStatus> {
    Json(s.status.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::status_client::{ApiTarget, get_from};
    use crate::api::tls::ApiClientTls;
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A CA and a certificate for 127.0.0.1 in `dir`.
    fn material(dir: &std::path::Path) -> ApiTlsFiles {
        let issued = crate::api::tls::tests::issue("127.0.0.1");
        std::fs::write(dir.join("ca.crt"), issued.ca).unwrap();
        std::fs::write(dir.join("api.crt"), issued.cert).unwrap();
        std::fs::write(dir.join("api.key"), issued.key).unwrap();
        std::fs::set_permissions(dir.join("api.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        crate::config::api_tls::files_in(dir)
    }

    #[tokio::test]
    async fn tls_handshakes_hold_a_slot_of_the_budget_and_fail_alone() {
        let dir = tempfile::tempdir().unwrap();
        let files = material(dir.path());
        let certificate = Arc::new(ReloadingCertificate::new(files.clone(), None).unwrap());
        let acceptor = TlsAcceptor::from(crate::api::tls::server_config(certificate).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = ApiLimits {
            max_connections: 3,
            per_peer: 3,
            header_read_timeout: Duration::from_millis(400),
            connection_lifetime: Duration::from_secs(5),
            shutdown_grace: Duration::from_millis(100),
        };
        let app = Router::new().route("/healthz", get(|| async { "ok\n" }));
        let (stop, stopped) = watch::channel(false);
        let served = tokio::spawn(accept_loop(
            listener,
            app,
            Some(acceptor),
            wait_stop(stopped),
            limits,
        ));
        let target = ApiTarget {
            addr,
            tls: Some(ApiClientTls {
                trusted_ca: files.trusted_ca.clone(),
                server_name: "127.0.0.1".into(),
            }),
        };
        let healthz = || get_from(&target, "/healthz", Duration::from_secs(2));
        assert_eq!(healthz().await.unwrap().0, 200);

        // A failed handshake (plain HTTP) ends its own connection only.
        let mut plain = tokio::net::TcpStream::connect(addr).await.unwrap();
        plain
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(2), plain.read_to_end(&mut answer))
            .await
            .expect("the server closes a failed handshake at once")
            .ok();
        assert!(!answer.starts_with(b"HTTP/"), "no plain HTTP answer");
        drop(plain);
        assert_eq!(healthz().await.unwrap().0, 200);

        // Handshakes that never start fill the budget, but each new
        // connection takes the slot of the one idle the longest: a client
        // that speaks at once is served, and the oldest stalled one is
        // closed for it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut stalled = Vec::new();
        for _ in 0..limits.max_connections {
            stalled.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(healthz().await.unwrap().0, 200, "served with a full budget");
        let mut byte = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_secs(2), stalled[0].read(&mut byte))
            .await
            .expect("the oldest stalled connection is closed at once");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
        tokio::time::sleep(limits.header_read_timeout + Duration::from_millis(100)).await;
        assert_eq!(healthz().await.unwrap().0, 200, "slots returned");
        drop(stalled);

        let _ = stop.send(true);
        tokio::time::timeout(Duration::from_secs(2), served)
            .await
            .expect("bounded shutdown")
            .unwrap();
    }
}

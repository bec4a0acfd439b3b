//! eco's local HTTP endpoint: read-only. Nothing served here can steer eco.
//!
//! - `GET /healthz`: eco is alive (200).
//! - `GET /readyz`: 200 when the local etcd runs and knows a leader, else
//!   503 with the reason.
//! - `GET /metrics`: Prometheus text format.
//! - `GET /status`: [`InstanceStatus`] as JSON (what `eco status` prints).
//!
//! The listener is bound on the instance's routable address by default,
//! so it is built to be hit by anyone on the network without hurting eco
//! (DESIGN: the API must never starve the control loop):
//!
//! - **its own file-descriptor budget**: at most [`LIMITS`]`.max_connections`
//!   connections at once, [`LIMITS`]`.per_peer` from one source address; a
//!   connection beyond either is accepted and closed at once (so it does not
//!   wait in the kernel's backlog ahead of a legitimate one);
//! - **timeouts**: a request's headers must arrive within
//!   `header_read_timeout`, and a connection lives at most
//!   `connection_lifetime` (clients reconnect; Prometheus does);
//! - **bounded shutdown**: on shutdown the listener closes, connections
//!   in flight get `shutdown_grace`, then are dropped.

use crate::metrics::Metrics;
use crate::status::InstanceStatus;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, watch};

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

/// Binds `bind` and serves until `shutdown` resolves.
pub async fn serve(
    bind: SocketAddr,
    status: watch::Receiver<InstanceStatus>,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/status", get(status_json))
        .with_state(ApiState { status, metrics });
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {bind} (`api.bind`/`api.port`): {e}"))?;
    Ok(tokio::spawn(accept_loop(listener, app, shutdown, LIMITS)))
}

/// Connections open per source address.
type PerPeer = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// One open connection's share of the budget, returned when dropped.
struct Slot {
    peer: IpAddr,
    per_peer: PerPeer,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut m) = self.per_peer.lock() {
            if let Some(n) = m.get_mut(&self.peer) {
                *n -= 1;
                if *n == 0 {
                    m.remove(&self.peer);
                }
            }
        }
    }
}

/// A slot for a connection from `peer`, or `None` when the API's budget
/// or the peer's share is used up.
fn take_slot(
    permits: &Arc<Semaphore>,
    per_peer: &PerPeer,
    peer: IpAddr,
    limit: usize,
) -> Option<Slot> {
    let permit = permits.clone().try_acquire_owned().ok()?;
    let mut m = per_peer.lock().ok()?;
    let n = m.entry(peer).or_insert(0);
    if *n >= limit {
        return None;
    }
    *n += 1;
    Some(Slot {
        peer,
        per_peer: per_peer.clone(),
        _permit: permit,
    })
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    limits: ApiLimits,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let per_peer: PerPeer = Arc::default();
    let mut connections = tokio::task::JoinSet::new();
    let mut refused: u64 = 0;
    let mut last_refusal_log: Option<tokio::time::Instant> = None;
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
        let Some(slot) = take_slot(&permits, &per_peer, peer.ip(), limits.per_peer) else {
            drop(stream);
            refused += 1;
            let now = tokio::time::Instant::now();
            if last_refusal_log.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(60)) {
                last_refusal_log = Some(now);
                tracing::warn!(
                    %peer,
                    refused,
                    max = limits.max_connections,
                    per_peer = limits.per_peer,
                    "the HTTP API is at its connection limit; closing new connections"
                );
            }
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        connections.spawn(async move {
            let _slot = slot;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(limits.connection_lifetime, connection).await;
        });
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

async fn metrics_text(State(s): State<ApiState>) -> Response {
    let current = s.status.borrow().clone();
    s.metrics.observe(&current);
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.render(),
    )
        .into_response()
}

async fn status_json(State(s): State<ApiState>) -> Json<InstanceStatus> {
    Json(s.status.borrow().clone())
}

//! eco's local HTTP endpoint: read-only. Nothing served here can steer eco.
//!
//! - `GET /healthz`: eco is alive (200).
//! - `GET /readyz`: 200 when the local etcd runs and knows a leader, else
//!   503 with the reason.
//! - `GET /metrics`: Prometheus text format.
//! - `GET /status`: [`InstanceStatus`] as JSON (what `eco status` prints).

use crate::metrics::Metrics;
use crate::status::InstanceStatus;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::watch;

#[derive(Clone)]
struct ApiState {
    status: watch::Receiver<InstanceStatus>,
    metrics: Arc<Metrics>,
}

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
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(error = %e, "the HTTP API stopped");
        }
    }))
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

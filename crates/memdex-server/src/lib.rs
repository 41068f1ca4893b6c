//! memdex-server: the HTTP memory service over the front door, [`memdex_memory::Memory`]
//! (which owns the serving engine).
//!
//! Routes (OpenAPI document at `/openapi.json`):
//! `POST /v1/tenants/{tenant}/sessions`, `POST /v1/tenants/{tenant}/search`,
//! `DELETE /v1/tenants/{tenant}/items/{id}`, `DELETE /v1/tenants/{tenant}/sessions/{id}`,
//! `DELETE /v1/tenants/{tenant}`, `POST /v1/admin/compact`, `POST /v1/admin/verify`,
//! `POST /v1/admin/snapshot` (`admin`), `POST /v1/embeddings`,
//! `GET /healthz`, `GET /metrics`; reading what is stored: `GET /v1/tenants`,
//! `GET /v1/tenants/{tenant}/sessions`, `GET /v1/tenants/{tenant}/sessions/{id}`; the
//! inspector page at `/ui` (`ui.rs`; off with `ServerConfig::no_ui`).
//!
//! Every request passes one guard first: it authenticates the caller from the headers alone
//! (before any body is read and before an in-flight permit is taken, so strangers cannot
//! hold what callers need), then takes a permit (429 beyond the in-flight limit); bodies must
//! arrive within a timeout. Async handlers never run the model: they queue work for the
//! engine's model and writer threads and await the answer; the engine's bounded queues answer
//! 429 too. After shutdown starts every request gets 503.

mod admin;
pub mod api;
mod auth;
pub mod bodies;
pub mod browse;
mod error;
mod listen;
mod metrics;
mod openapi;
mod ui;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;
use memdex_memory::Memory;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower_http::timeout::RequestBodyTimeoutLayer;

pub use auth::{Caller, Keys};
pub use error::{bad_json, ApiError};
pub use metrics::Metrics;

/// Request limits; each violation is a 4xx naming the limit.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// What one call may carry (sessions and turns per append, bytes per text, `k`, embedding
    /// inputs): the front door checks these, for HTTP as for every front end.
    pub memory: memdex_memory::Limits,
    pub max_body_bytes: usize,
    /// Requests handled at once; more answer 429.
    pub max_in_flight: usize,
    /// Time a request body may take to arrive, once its headers are in.
    pub body_timeout: std::time::Duration,
    /// Time a connection may take to send a request's headers.
    pub header_timeout: std::time::Duration,
    /// Connections open at once; more are closed as they arrive.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            memory: memdex_memory::Limits::default(),
            max_body_bytes: 4 << 20,
            max_in_flight: 512,
            body_timeout: std::time::Duration::from_secs(30),
            header_timeout: std::time::Duration::from_secs(10),
            max_connections: 4096,
        }
    }
}

/// Server settings.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    pub keys: Keys,
    pub limits: HttpLimits,
    /// Do not serve the inspector page at `/ui` (`memdex serve --no-ui`).
    pub no_ui: bool,
    /// Where `POST /v1/admin/snapshot` writes (None: `snapshots/` in the store directory).
    pub snapshot_dir: Option<std::path::PathBuf>,
}

/// Server failures (binding, serving).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("refusing to listen on {addr} without an API key: set --api-key (MEMDEX_API_KEY) or bind to a loopback address")]
    OpenNonLoopback { addr: SocketAddr },
    #[error("{addr}: cannot listen: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl ServerConfig {
    /// Without any key the server may listen on loopback only.
    pub fn check_bind(&self, addr: &SocketAddr) -> Result<(), ServerError> {
        if self.keys.admin.is_none() && !addr.ip().is_loopback() {
            return Err(ServerError::OpenNonLoopback { addr: *addr });
        }
        Ok(())
    }
}

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The one way in: every handler's work goes through it.
    pub memory: Arc<Memory>,
    pub keys: Arc<Keys>,
    pub limits: Arc<HttpLimits>,
    pub metrics: Arc<Metrics>,
    /// Where snapshots asked over HTTP go.
    pub snapshot_dir: Arc<std::path::PathBuf>,
    shutting_down: Arc<AtomicBool>,
    in_flight: Arc<Semaphore>,
}

/// The router over `memory` with its middleware (metrics, 503 during shutdown, in-flight
/// limit). The memory should be opened with `config.limits.memory`.
pub fn router(memory: Arc<Memory>, config: ServerConfig) -> (Router, AppState) {
    let page = !config.no_ui;
    let snapshot_dir =
        (config.snapshot_dir.clone()).unwrap_or_else(|| memory.dir().join("snapshots"));
    let state = AppState {
        snapshot_dir: Arc::new(snapshot_dir),
        memory,
        keys: Arc::new(config.keys),
        in_flight: Arc::new(Semaphore::new(config.limits.max_in_flight)),
        limits: Arc::new(config.limits),
        metrics: Arc::new(Metrics::default()),
        shutting_down: Arc::new(AtomicBool::new(false)),
    };
    let app = Router::new()
        .route("/v1/tenants/{tenant}/sessions", post(api::append))
        .route("/v1/tenants/{tenant}/search", post(api::search))
        .route("/v1/tenants/{tenant}/items/{id}", delete(api::delete_item))
        .route(
            "/v1/tenants/{tenant}/sessions/{session_id}",
            delete(api::delete_session),
        )
        .route("/v1/tenants/{tenant}", delete(api::delete_tenant))
        .route("/v1/admin/compact", post(api::compact))
        .route("/v1/admin/verify", post(admin::verify))
        .route("/v1/admin/snapshot", post(admin::snapshot))
        .route("/v1/embeddings", post(api::embeddings))
        .route("/healthz", get(api::healthz))
        .route("/metrics", get(metrics_handler))
        .route("/openapi.json", get(openapi::handler))
        .merge(browse::routes())
        .merge(ui::routes(page))
        .route_layer(middleware::from_fn_with_state(state.clone(), guard))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(state.limits.max_body_bytes))
        .layer(RequestBodyTimeoutLayer::new(state.limits.body_timeout))
        .layer(middleware::from_fn(openai_errors))
        .with_state(state.clone());
    (app, state)
}

/// The OpenAI-compatible route answers every failure (the guard's, a wrong method, the
/// handler's) in OpenAI's error shape; every other route in memdex's.
async fn openai_errors(req: Request, next: Next) -> Response {
    let openai = req.uri().path() == "/v1/embeddings";
    let resp = next.run(req).await;
    if openai {
        error::openai_shape(resp)
    } else {
        resp
    }
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

/// A route asked with a method it does not take: the error body (axum adds `Allow`).
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{} does not take {method}", uri.path()))
}

async fn metrics_handler(State(st): State<AppState>) -> Response {
    let text = st.metrics.render(&st.memory);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        text,
    )
        .into_response()
}

/// Counts and times every request; 503 while shutting down; authenticates from the headers
/// (before the body is read); 429 beyond the in-flight limit.
async fn guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let resp = if st.shutting_down.load(Ordering::SeqCst) {
        ApiError::Unavailable.into_response()
    } else {
        match auth::authorize(&st.keys, req.uri().path(), req.headers()) {
            Err(e) => e.into_response(),
            // health and the API document answer whatever the load
            Ok(auth::Access::Public) => next.run(req).await,
            Ok(_) => admit(&st, req, next).await,
        }
    };
    st.metrics
        .observe(&method, &route, resp.status().as_u16(), start.elapsed());
    resp
}

/// Runs an authenticated request under an in-flight permit (429 when none is left).
async fn admit(st: &AppState, req: Request, next: Next) -> Response {
    {
        match st.in_flight.clone().try_acquire_owned() {
            Ok(permit) => {
                let r = next.run(req).await;
                drop(permit);
                r
            }
            Err(_) => ApiError::TooMany(format!(
                "more than {} requests in flight; retry later",
                st.limits.max_in_flight
            ))
            .into_response(),
        }
    }
}

/// Serves `memory` until `shutdown` resolves, then answers 503 to new requests, drains the
/// ones in flight and closes the memory (queued appends committed, threads joined).
pub async fn serve(
    listener: TcpListener,
    memory: Arc<Memory>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let conn = listen::ConnLimits {
        max_connections: config.limits.max_connections,
        header_timeout: config.limits.header_timeout,
        drain_timeout: Duration::from_secs(30),
    };
    let (app, state) = router(memory.clone(), config);
    let flag = state.shutting_down.clone();
    listen::accept_loop(listener, app, conn, async move {
        shutdown.await;
        tracing::info!("shutting down: draining requests in flight");
        flag.store(true, Ordering::SeqCst);
    })
    .await;
    state.shutting_down.store(true, Ordering::SeqCst);
    if tokio::task::spawn_blocking(move || memory.close())
        .await
        .is_err()
    {
        tracing::error!("closing the memory panicked");
    }
    tracing::info!("stopped");
    Ok(())
}

/// Binds `addr` (checked with [`ServerConfig::check_bind`]).
pub async fn bind(addr: SocketAddr, config: &ServerConfig) -> Result<TcpListener, ServerError> {
    config.check_bind(&addr)?;
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })
}

//! The handlers. The route guard (`lib.rs`) has already authenticated the caller from its
//! headers and taken an in-flight permit; bodies are read as bytes and parsed here (syntax,
//! unknown fields, wrong types, bad UTF-8 are 400s), then each handler makes one call of the
//! front door, [`memdex_memory::Memory`], which checks the request and does the work, and
//! answers its result or its [`memdex_memory::MemoryError`] mapped once (`error.rs`).

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine as _;
use memdex_ingest::SessionIn;
use memdex_memory::Health;
use memdex_memory::{
    AppendReport, CompactReport, DeleteReport, DeleteTarget, SearchHit, SearchTimings, TextKind,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bodies::EmbeddingsError;
pub use crate::bodies::{AppendIn, EmbeddingsIn, FormatIn, InputIn, SearchIn};
use crate::error::{bad_json, ApiError};
use crate::AppState;

type ApiResult<T> = Result<Json<T>, ApiError>;

pub(crate) fn body(b: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    b.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError::TooLarge(format!("request body too large: {e}"));
        }
        let timed_out = std::iter::successors(std::error::Error::source(&e), |s| s.source())
            .any(|s| s.is::<tower_http::timeout::TimeoutError>());
        if timed_out {
            ApiError::Timeout("the request body did not arrive in time".into())
        } else {
            ApiError::BadRequest(format!("cannot read the body: {e}"))
        }
    })
}

fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    p.map(|Path(v)| v)
        .map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// The append body as documented (parsed by shape in [`append`], for errors that name the
/// field).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum AppendBody {
    One(SessionIn),
    Many(Vec<SessionIn>),
    Wrapped(AppendIn),
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AppendOut {
    pub tenant: String,
    pub report: AppendReport,
}

/// `POST /v1/tenants/{tenant}/sessions`: committed (fsynced) and visible when it answers.
#[utoipa::path(post, path = "/v1/tenants/{tenant}/sessions",
    params(("tenant" = String, Path, description = "1-128 of A-Z a-z 0-9 . _ - @")),
    request_body = AppendBody,
    responses((status = 200, body = AppendOut, description = "per session: stored (with item ids) or unchanged"),
              (status = 409, body = crate::error::ErrorBody, description = "same session_id already stored with other content")))]
pub async fn append(
    State(st): State<AppState>,
    tenant: Result<Path<String>, PathRejection>,
    b: Result<Bytes, BytesRejection>,
) -> ApiResult<AppendOut> {
    let tenant = path(tenant)?;
    let value: Value = serde_json::from_slice(&body(b)?).map_err(|e| bad_json(&e))?;
    let mut out = st.memory.add_json_async(value, Some(&tenant)).await?;
    // every session names this tenant (or none): one append, one report
    let report = out
        .pop()
        .map(|t| t.report)
        .ok_or_else(|| ApiError::Internal("an append answered no report".into()))?;
    Ok(Json(AppendOut { tenant, report }))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SearchOut {
    pub tenant: String,
    pub query: String,
    /// The text actually searched (the query, or recent turns + query when ambiguous; an
    /// assistant's "the user" put in the first person: "What is my diet?").
    pub searched: String,
    pub hits: Vec<SearchHit>,
    /// Microseconds the search spent in each serving stage (the figures `/metrics` sums in
    /// `memdex_search_stage_seconds`); absent when nothing was ranked (a tenant with no
    /// memory). The `Server-Timing` header carries the same figures in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<SearchTimings>,
}

/// The reading stage's JSON: what a search with `context: true` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReadingContext {
    pub query: String,
    /// When the question is asked, `YYYY-MM-DD HH:MM` (UTC).
    pub question_date: String,
    /// The hits, sorted by time.
    pub items: Vec<SearchHit>,
    /// A Chain-of-Note prompt holding the items, the date and the question.
    pub prompt: String,
}

/// A search's answer: hits, or with `context: true` the reading stage's JSON.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum SearchAnswerOut {
    Hits(SearchOut),
    Context(ReadingContext),
}

/// `POST /v1/tenants/{tenant}/search`.
#[utoipa::path(post, path = "/v1/tenants/{tenant}/search",
    params(("tenant" = String, Path, description = "1-128 of A-Z a-z 0-9 . _ - @")),
    request_body = SearchIn,
    responses((status = 200, body = SearchAnswerOut,
               description = "hits (SearchOut), or with context: true the reading-stage JSON (ReadingContext)",
               headers(("Server-Timing" = String, description = "the search's milliseconds per serving stage, `tokenize;dur=0.021, model_queue;dur=0.004, embed;dur=1.870, rank_queue;dur=0.012, rank;dur=0.342` (the `timings` of SearchOut)"))),
              (status = 404, body = crate::error::ErrorBody, description = "tenant has no memory")))]
pub async fn search(
    State(st): State<AppState>,
    tenant: Result<Path<String>, PathRejection>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let tenant = path(tenant)?;
    let req = crate::bodies::search_request(&body(b)?)?;
    let answer = st.memory.search_async(&tenant, &req).await?;
    let timing = answer.timings.as_ref().map(server_timing);
    let json = if req.context {
        answer.context()
    } else {
        let out = SearchOut {
            tenant,
            query: answer.query,
            searched: answer.searched,
            hits: answer.hits,
            timings: answer.timings,
        };
        serde_json::to_value(out).map_err(|e| ApiError::Internal(e.to_string()))?
    };
    let mut response = Json(json).into_response();
    if let Some(v) = timing.and_then(|t| axum::http::HeaderValue::from_str(&t).ok()) {
        response.headers_mut().insert("server-timing", v);
    }
    Ok(response)
}

/// The `Server-Timing` header of a search's timings: each stage's milliseconds.
pub fn server_timing(t: &SearchTimings) -> String {
    let parts: Vec<String> = (t.stages())
        .map(|(name, us)| format!("{name};dur={:.3}", us as f64 / 1e3))
        .collect();
    parts.join(", ")
}

/// `DELETE /v1/tenants/{tenant}/items/{id}`.
#[utoipa::path(delete, path = "/v1/tenants/{tenant}/items/{id}",
    params(("tenant" = String, Path), ("id" = u64, Path, description = "item id from an append or search answer")),
    responses((status = 200, body = DeleteReport), (status = 404, body = crate::error::ErrorBody, description = "no such live item")))]
pub async fn delete_item(
    State(st): State<AppState>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<DeleteReport> {
    let (tenant, id) = path(p)?;
    let item_id: u64 = id
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("item id {id:?} is not a number")))?;
    delete(st, DeleteTarget::Item { tenant, item_id }).await
}

/// `DELETE /v1/tenants/{tenant}/sessions/{session_id}`.
#[utoipa::path(delete, path = "/v1/tenants/{tenant}/sessions/{session_id}",
    params(("tenant" = String, Path), ("session_id" = String, Path)),
    responses((status = 200, body = DeleteReport), (status = 404, body = crate::error::ErrorBody, description = "no such live session")))]
pub async fn delete_session(
    State(st): State<AppState>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<DeleteReport> {
    let (tenant, session_id) = path(p)?;
    delete(st, DeleteTarget::Session { tenant, session_id }).await
}

/// `DELETE /v1/tenants/{tenant}`.
#[utoipa::path(delete, path = "/v1/tenants/{tenant}",
    params(("tenant" = String, Path)),
    responses((status = 200, body = DeleteReport), (status = 404, body = crate::error::ErrorBody, description = "tenant has no memory")))]
pub async fn delete_tenant(
    State(st): State<AppState>,
    tenant: Result<Path<String>, PathRejection>,
) -> ApiResult<DeleteReport> {
    let tenant = path(tenant)?;
    delete(st, DeleteTarget::Tenant { tenant }).await
}

async fn delete(st: AppState, target: DeleteTarget) -> ApiResult<DeleteReport> {
    Ok(Json(st.memory.delete_async(target).await?))
}

/// `POST /v1/admin/compact` (admin key): deleted rows removed from disk, small segments merged.
#[utoipa::path(post, path = "/v1/admin/compact",
    responses((status = 200, body = Object, description = "the compaction report")))]
pub async fn compact(State(st): State<AppState>) -> ApiResult<CompactReport> {
    Ok(Json(st.memory.compact_async().await?))
}

/// `POST /v1/embeddings`, OpenAI-compatible: `input` a string or an array of strings.
#[utoipa::path(post, path = "/v1/embeddings",
    request_body = EmbeddingsIn,
    responses((status = 200, body = Object, description = "{object: list, data: [{object, index, embedding}], model, usage}"),
              (status = 404, body = crate::error::ErrorBody, description = "another model was asked for")))]
pub async fn embeddings(State(st): State<AppState>, b: Result<Bytes, BytesRejection>) -> Response {
    match embed(&st, b).await {
        Ok(j) => j.into_response(),
        Err(EmbeddingsError { error, param }) => {
            // the field it is about: OpenAI's `param`
            let mut r = error.into_response();
            if let Some(info) = r.extensions_mut().get_mut::<crate::error::ErrorInfo>() {
                info.param = param;
            }
            r
        }
    }
}

async fn embed(
    st: &AppState,
    b: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, EmbeddingsError> {
    let (texts, base64) =
        crate::bodies::embeddings_fields(&body(b)?, st.memory.limits(), st.memory.model())?;
    let model = st.memory.model().name.clone();
    let e = st
        .memory
        .embed_async(texts, TextKind::Passage)
        .await
        .map_err(ApiError::from)?;
    let data: Vec<Value> = (0..e.len())
        .map(|i| {
            let row = e.row(i);
            let embedding = if base64 {
                let bytes: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
                serde_json::json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                serde_json::json!(row)
            };
            serde_json::json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    let tokens: usize = e.tokens.iter().sum();
    Ok(Json(serde_json::json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HealthOut {
    /// `ok`; `degraded` while store files found damaged are left out of searches (still
    /// 200: the others answer); or why the server cannot do its work (then the status is 503).
    pub status: String,
    pub model: String,
    pub dim: usize,
    pub device: String,
    pub manifest_version: u64,
    /// Store files found damaged (`POST /v1/admin/verify` says what they hold).
    pub damaged_files: usize,
}

/// `GET /healthz`: 200 while both engine threads run, 503 (with the reason) otherwise.
#[utoipa::path(get, path = "/healthz", security(()),
    responses((status = 200, body = HealthOut), (status = 503, body = HealthOut, description = "a thread stopped, or shutting down")))]
pub async fn healthz(State(st): State<AppState>) -> (StatusCode, Json<HealthOut>) {
    let memory = &st.memory;
    let damaged_files = memory.damage().len();
    let (code, status) = match memory.health() {
        Health::Ok if damaged_files > 0 => (StatusCode::OK, "degraded".to_string()),
        Health::Ok => (StatusCode::OK, "ok".to_string()),
        Health::Failed(why) => (StatusCode::SERVICE_UNAVAILABLE, why.to_string()),
        Health::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, "shutting down".into()),
    };
    let out = HealthOut {
        status,
        model: memory.model().name.clone(),
        dim: memory.model().dim,
        device: memory.device().to_string(),
        manifest_version: memory.snapshot().store().manifest().version,
        damaged_files,
    };
    (code, Json(out))
}

//! Request and response bodies and the handlers. Bodies are read as bytes and parsed here,
//! so every parse failure (syntax, unknown field, wrong type, bad UTF-8) goes through the
//! one error mapping; unknown fields are rejected by name.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use base64::Engine as _;
use memdex_core::{Role, Session, TextKind, Turn};
use memdex_engine::{
    contextual_query, fit_to_store, reading_context, DeleteTarget, Query, RankOptions, Stages,
    Ticket,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{bad_json, ApiError};
use crate::AppState;

type ApiResult = Result<Json<Value>, ApiError>;

fn body(b: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    b.map_err(|e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge(format!("request body too large: {e}"))
        } else {
            ApiError::BadRequest(format!("cannot read the body: {e}"))
        }
    })
}

fn parse<T: serde::de::DeserializeOwned>(b: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(b).map_err(|e| bad_json(&e))
}

/// Tenant names: 1–128 of `A-Z a-z 0-9 . _ - @`.
fn tenant_name(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    let Path(t) = p.map_err(|e| ApiError::BadRequest(e.to_string()))?;
    check_tenant(&t)?;
    Ok(t)
}

fn check_tenant(t: &str) -> Result<(), ApiError> {
    let ok = !t.is_empty()
        && t.len() <= 128
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "invalid tenant name {t:?}: 1 to 128 of A-Z a-z 0-9 . _ - @"
        )))
    }
}

async fn wait<T>(t: Ticket<T>) -> Result<T, ApiError> {
    t.await
        .map_err(|_| ApiError::Unavailable)?
        .map_err(ApiError::from)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionIn {
    tenant: Option<String>,
    session_id: String,
    date: Option<String>,
    turns: Vec<TurnIn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnIn {
    role: RoleIn,
    content: String,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RoleIn {
    User,
    Assistant,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendIn {
    sessions: Vec<SessionIn>,
}

/// `POST /v1/tenants/{tenant}/sessions`: a session object, an array of them, or
/// `{"sessions": [...]}` (the JSONL line format; `tenant` may be left out).
pub async fn append(
    State(st): State<AppState>,
    headers: HeaderMap,
    tenant: Result<Path<String>, PathRejection>,
    b: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let tenant = tenant_name(tenant)?;
    st.keys.for_tenant(&headers, &tenant)?;
    let b = body(b)?;
    let v: Value = parse(&b)?;
    let sessions: Vec<SessionIn> = match v {
        Value::Array(_) => serde_json::from_value(v).map_err(|e| bad_json(&e))?,
        Value::Object(ref o) if o.contains_key("sessions") => {
            serde_json::from_value::<AppendIn>(v)
                .map_err(|e| bad_json(&e))?
                .sessions
        }
        _ => vec![serde_json::from_value(v).map_err(|e| bad_json(&e))?],
    };
    let lim = &st.limits;
    if sessions.is_empty() {
        return Err(ApiError::BadRequest("no sessions".into()));
    }
    if sessions.len() > lim.max_sessions {
        return Err(ApiError::TooLarge(format!(
            "{} sessions in one request; the limit is {}",
            sessions.len(),
            lim.max_sessions
        )));
    }
    let turns: usize = sessions.iter().map(|s| s.turns.len()).sum();
    if turns > lim.max_turns {
        return Err(ApiError::TooLarge(format!(
            "{turns} turns in one request; the limit is {}",
            lim.max_turns
        )));
    }
    let now = chrono::Utc::now().timestamp_millis();
    let mut out = Vec::with_capacity(sessions.len());
    for s in sessions {
        if let Some(t) = &s.tenant {
            if *t != tenant {
                return Err(ApiError::BadRequest(format!(
                    "session {:?} names tenant {t:?} but the path names {tenant:?}",
                    s.session_id
                )));
            }
        }
        if s.turns.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "session {:?} has no turns",
                s.session_id
            )));
        }
        if s.session_id.is_empty() || s.session_id.len() > 256 {
            return Err(ApiError::BadRequest(
                "session_id must be 1 to 256 bytes".into(),
            ));
        }
        let timestamp_ms = match &s.date {
            Some(d) => memdex_ingest::parse_date(d).map_err(|e| {
                ApiError::BadRequest(format!("session {:?}: date {d:?}: {e}", s.session_id))
            })?,
            None => now,
        };
        if let Some(t) = s
            .turns
            .iter()
            .find(|t| t.content.len() > lim.max_text_bytes)
        {
            return Err(ApiError::TooLarge(format!(
                "session {:?}: a turn of {} bytes; the limit is {}",
                s.session_id,
                t.content.len(),
                lim.max_text_bytes
            )));
        }
        out.push(Session {
            tenant: tenant.clone(),
            session_id: s.session_id,
            timestamp_ms,
            turns: s
                .turns
                .into_iter()
                .map(|t| Turn {
                    role: match t.role {
                        RoleIn::User => Role::User,
                        RoleIn::Assistant => Role::Assistant,
                    },
                    content: t.content,
                })
                .collect(),
        });
    }
    let report = wait(st.engine.append(&tenant, out)?).await?;
    Ok(Json(json!({"tenant": tenant, "report": report})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchIn {
    query: String,
    date: Option<String>,
    #[serde(default)]
    recent_turns: Vec<String>,
    k: Option<usize>,
    stages: Option<Stages>,
    #[serde(default)]
    context: bool,
}

/// `POST /v1/tenants/{tenant}/search`.
pub async fn search(
    State(st): State<AppState>,
    headers: HeaderMap,
    tenant: Result<Path<String>, PathRejection>,
    b: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let tenant = tenant_name(tenant)?;
    st.keys.for_tenant(&headers, &tenant)?;
    let req: SearchIn = parse(&body(b)?)?;
    let lim = &st.limits;
    let k = req.k.unwrap_or(10);
    if k == 0 || k > lim.max_k {
        return Err(ApiError::BadRequest(format!(
            "k must be 1 to {}, got {k}",
            lim.max_k
        )));
    }
    if req.query.trim().is_empty() {
        return Err(ApiError::BadRequest("the query is empty".into()));
    }
    if req.query.len() > lim.max_text_bytes
        || req.recent_turns.len() > 16
        || req
            .recent_turns
            .iter()
            .any(|t| t.len() > lim.max_text_bytes)
    {
        return Err(ApiError::TooLarge(format!(
            "query and recent turns: at most {} bytes each, 16 recent turns",
            lim.max_text_bytes
        )));
    }
    let stages = req.stages.unwrap_or_default();
    let mut opts = stages
        .apply(RankOptions::default(), &|field| format!("stages.{field}"))
        .map_err(ApiError::BadRequest)?;
    // one committed view for the whole search: option fitting, tenant check, scan, ranking
    let snapshot = st.engine.snapshot();
    fit_to_store(&mut opts, &stages, snapshot.store());
    let date_ms = match &req.date {
        Some(d) => Some(
            memdex_ingest::parse_date(d)
                .map_err(|e| ApiError::BadRequest(format!("date {d:?}: {e}")))?,
        ),
        // a live service: relative time references ("last weekend") are relative to now
        None => Some(chrono::Utc::now().timestamp_millis()),
    };
    // unknown tenants answer before any model work
    if snapshot.live_slices(&tenant).is_empty() {
        return Err(ApiError::NotFound(format!(
            "tenant {tenant:?} has no memory"
        )));
    }
    let searched = contextual_query(&req.query, &req.recent_turns);
    // with the device scan the dense scores come back with the query vector, computed with
    // the other searches of the model batch
    let emb = wait(
        st.engine
            .embed_query(searched.clone(), &tenant, &snapshot)?,
    )
    .await?;
    let (t2, s2) = (tenant.clone(), searched.clone());
    let hits = tokio::task::spawn_blocking(move || {
        let q = Query {
            text: &s2,
            vector: emb.vectors.row(0),
            date_ms,
            dense: emb.dense.as_deref(),
        };
        snapshot.search(&t2, &q, k, &opts)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("search task failed: {e}")))??;
    if req.context {
        let now = date_ms.unwrap_or_else(|| chrono::Utc::now().timestamp_millis());
        return Ok(Json(reading_context(&req.query, now, &hits)));
    }
    Ok(Json(json!({
        "tenant": tenant,
        "query": req.query,
        "searched": searched,
        "hits": hits,
    })))
}

/// `DELETE /v1/tenants/{tenant}/items/{id}`.
pub async fn delete_item(
    State(st): State<AppState>,
    headers: HeaderMap,
    p: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult {
    let Path((tenant, id)) = p.map_err(|e| ApiError::BadRequest(e.to_string()))?;
    check_tenant(&tenant)?;
    st.keys.for_tenant(&headers, &tenant)?;
    let item_id: u64 = id
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("item id {id:?} is not a number")))?;
    delete(st, DeleteTarget::Item { tenant, item_id }).await
}

/// `DELETE /v1/tenants/{tenant}/sessions/{session_id}`.
pub async fn delete_session(
    State(st): State<AppState>,
    headers: HeaderMap,
    p: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult {
    let Path((tenant, session_id)) = p.map_err(|e| ApiError::BadRequest(e.to_string()))?;
    check_tenant(&tenant)?;
    st.keys.for_tenant(&headers, &tenant)?;
    delete(st, DeleteTarget::Session { tenant, session_id }).await
}

/// `DELETE /v1/tenants/{tenant}`.
pub async fn delete_tenant(
    State(st): State<AppState>,
    headers: HeaderMap,
    tenant: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let tenant = tenant_name(tenant)?;
    st.keys.for_tenant(&headers, &tenant)?;
    delete(st, DeleteTarget::Tenant { tenant }).await
}

async fn delete(st: AppState, target: DeleteTarget) -> ApiResult {
    let report = wait(st.engine.delete(target)?).await?;
    Ok(Json(json!(report)))
}

/// `POST /v1/admin/compact` (admin key): deleted rows removed from disk, small segments merged.
pub async fn compact(State(st): State<AppState>, headers: HeaderMap) -> ApiResult {
    st.keys.admin(&headers)?;
    let report = wait(st.engine.compact()?).await?;
    Ok(Json(json!(report)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EmbeddingsIn {
    input: InputIn,
    model: Option<String>,
    encoding_format: Option<FormatIn>,
    dimensions: Option<usize>,
    user: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum InputIn {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum FormatIn {
    Float,
    Base64,
}

/// `POST /v1/embeddings`, OpenAI-compatible: `input` a string or an array of strings.
pub async fn embeddings(
    State(st): State<AppState>,
    headers: HeaderMap,
    b: Result<Bytes, BytesRejection>,
) -> ApiResult {
    st.keys.caller(&headers)?;
    let req: EmbeddingsIn = parse(&body(b)?)?;
    let _ = &req.user;
    let model = st.engine.model().name.clone();
    if let Some(m) = &req.model {
        if *m != model && !model.ends_with(&format!("/{m}")) && !m.ends_with(&model) {
            return Err(ApiError::NotFound(format!(
                "model {m:?} is not served; this server runs {model:?}"
            )));
        }
    }
    if let Some(d) = req.dimensions {
        if d != st.engine.model().dim {
            return Err(ApiError::BadRequest(format!(
                "dimensions {d}: this model gives {}",
                st.engine.model().dim
            )));
        }
    }
    let texts = match req.input {
        InputIn::One(s) => vec![s],
        InputIn::Many(v) => v,
    };
    let lim = &st.limits;
    if texts.is_empty() || texts.len() > lim.max_embed_inputs {
        return Err(ApiError::BadRequest(format!(
            "input must hold 1 to {} strings, got {}",
            lim.max_embed_inputs,
            texts.len()
        )));
    }
    if let Some(t) = texts.iter().find(|t| t.len() > lim.max_text_bytes) {
        return Err(ApiError::TooLarge(format!(
            "an input of {} bytes; the limit is {}",
            t.len(),
            lim.max_text_bytes
        )));
    }
    let e = wait(st.engine.embed(texts, TextKind::Passage)?)
        .await?
        .vectors;
    let base64 = req.encoding_format == Some(FormatIn::Base64);
    let data: Vec<Value> = (0..e.len())
        .map(|i| {
            let row = e.row(i);
            let embedding = if base64 {
                let bytes: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(row)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    let tokens: usize = e.tokens.iter().sum();
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })))
}

/// `GET /healthz`.
pub async fn healthz(State(st): State<AppState>) -> Json<Value> {
    let s = st.engine.snapshot().summary();
    Json(json!({
        "status": "ok",
        "model": st.engine.model().name,
        "dim": st.engine.model().dim,
        "device": st.engine.device(),
        "manifest_version": s.manifest_version,
    }))
}

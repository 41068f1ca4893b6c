//! Request bodies → what the handlers act on, as pure functions (no engine, no I/O), so each
//! rule lives once and the fuzz harnesses drive exactly what the server runs. Every failure is
//! a 4xx naming the field. The request body types (`SearchIn`, `AppendIn`, `EmbeddingsIn`)
//! live here with their rules; `api` re-exports them for its handlers and the OpenAPI document.

use memdex_core::{clip, ModelInfo, Session};
use memdex_ingest::{Context, SessionIn, SessionLimits, WireError};
use memdex_rank::{RankOptions, Stages};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{bad_json, ApiError};
use crate::Limits;

/// An append body: a session, an array of sessions, or `{"sessions": [...]}` (the JSONL line
/// format; `tenant` may be left out, the path names it).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendIn {
    pub sessions: Vec<SessionIn>,
}

/// A search.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchIn {
    pub query: String,
    /// When the question is asked (time references and recency); default now.
    pub date: Option<String>,
    /// The conversation's last turns, oldest first: used when the query alone is ambiguous.
    #[serde(default)]
    pub recent_turns: Vec<String>,
    /// Hits to return, 1 to the server's `max_k` (1000 by default); default 10.
    #[schema(minimum = 1, maximum = 1000)]
    pub k: Option<usize>,
    /// Ranking stages over the search defaults.
    pub stages: Option<Stages>,
    /// Answer the reading-stage JSON (items by time, Chain-of-Note prompt) instead of hits.
    #[serde(default)]
    pub context: bool,
    /// Each hit with an `explain` object: its score after every stage and its rank before
    /// the time and update stages reordered it (ranked by the CPU pipeline, the reference).
    #[serde(default)]
    pub explain: bool,
}

/// Recent turns a search may carry (the rule every front end shares).
pub use memdex_memory::MAX_RECENT_TURNS;

/// OpenAI-compatible embeddings request.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsIn {
    pub input: InputIn,
    pub model: Option<String>,
    pub encoding_format: Option<FormatIn>,
    pub dimensions: Option<usize>,
    pub user: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum InputIn {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FormatIn {
    Float,
    Base64,
}

fn parse<T: serde::de::DeserializeOwned>(b: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(b).map_err(|e| bad_json(&e))
}

fn wire(e: WireError, session: &str) -> ApiError {
    let msg = format!("session {:?}: {e}", clip(session, 64));
    match e {
        WireError::TooLarge { .. } => ApiError::TooLarge(msg),
        WireError::Invalid { .. } | WireError::Date { .. } => ApiError::BadRequest(msg),
    }
}

/// An append body (a session, an array, or `{"sessions": [...]}`) for `tenant`: the sessions,
/// validated with the one wire validation; undated ones dated `now_ms`.
pub fn append_sessions(
    tenant: &str,
    body: &[u8],
    lim: &Limits,
    now_ms: i64,
) -> Result<Vec<Session>, ApiError> {
    let v: Value = parse(body)?;
    let sessions: Vec<SessionIn> = match v {
        Value::Array(_) => serde_json::from_value(v).map_err(|e| bad_json(&e))?,
        Value::Object(ref o) if o.contains_key("sessions") => {
            serde_json::from_value::<AppendIn>(v)
                .map_err(|e| bad_json(&e))?
                .sessions
        }
        _ => vec![serde_json::from_value(v).map_err(|e| bad_json(&e))?],
    };
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
    let cx = Context {
        tenant: Some(tenant),
        now_ms,
        limits: SessionLimits {
            max_turns: lim.max_turns,
            max_text_bytes: lim.max_text_bytes,
        },
    };
    sessions
        .into_iter()
        .map(|s| {
            let id = s.session_id.clone();
            s.into_session(&cx).map_err(|e| wire(e, &id))
        })
        .collect()
}

/// A search body, checked and turned into ranking options.
#[derive(Debug)]
pub struct SearchRequest {
    pub req: SearchIn,
    pub k: usize,
    /// The search defaults with the body's `stages` applied.
    pub opts: RankOptions,
    /// Whether the body set the time stage (then a store without event dates is an error,
    /// not a silent drop).
    pub time_asked: bool,
    /// When the question is asked: the body's `date`, or `now_ms`.
    pub date_ms: i64,
}

/// A search body: sizes, `k`, stages and date checked.
pub fn search_request(body: &[u8], lim: &Limits, now_ms: i64) -> Result<SearchRequest, ApiError> {
    let req: SearchIn = parse(body)?;
    if req.explain && req.context {
        return Err(ApiError::BadRequest(
            "explain and context cannot both be set (context answers no hits to explain)".into(),
        ));
    }
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
    memdex_memory::limits::check_search_texts(&req.query, &req.recent_turns, lim.max_text_bytes)
        .map_err(|e| ApiError::TooLarge(e.0))?;
    let stages = req.stages.clone().unwrap_or_default();
    let opts = stages
        .apply(RankOptions::default(), &|field| format!("stages.{field}"))
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let date_ms = match &req.date {
        Some(d) => memdex_ingest::parse_date(d)
            .map_err(|e| ApiError::BadRequest(format!("date {:?}: {e}", clip(d, 64))))?,
        // a live service: relative time references ("last weekend") are relative to now
        None => now_ms,
    };
    Ok(SearchRequest {
        k,
        opts,
        time_asked: stages.time.is_some(),
        date_ms,
        req,
    })
}

/// An OpenAI-style embeddings body for `model`: the texts, and whether to answer base64.
pub fn embeddings_request(
    body: &[u8],
    lim: &Limits,
    model: &ModelInfo,
) -> Result<(Vec<String>, bool), ApiError> {
    let req: EmbeddingsIn = parse(body)?;
    if let Some(m) = &req.model {
        let name = &model.name;
        if m != name && !name.ends_with(&format!("/{m}")) && !m.ends_with(name.as_str()) {
            return Err(ApiError::NotFound(format!(
                "model {:?} is not served; this server runs {name:?}",
                clip(m, 64)
            )));
        }
    }
    if let Some(d) = req.dimensions {
        if d != model.dim {
            return Err(ApiError::BadRequest(format!(
                "dimensions {d}: this model gives {}",
                model.dim
            )));
        }
    }
    let texts = match req.input {
        InputIn::One(s) => vec![s],
        InputIn::Many(v) => v,
    };
    if texts.is_empty() || texts.len() > lim.max_embed_inputs {
        return Err(ApiError::BadRequest(format!(
            "input must hold 1 to {} strings, got {}",
            lim.max_embed_inputs,
            texts.len()
        )));
    }
    memdex_memory::limits::check_embed_texts(&texts, lim.max_text_bytes)
        .map_err(|e| ApiError::TooLarge(e.0))?;
    Ok((texts, req.encoding_format == Some(FormatIn::Base64)))
}

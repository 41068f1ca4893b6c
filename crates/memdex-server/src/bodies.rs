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

/// OpenAI-compatible embeddings request, as documented ([`embeddings_fields`] reads it field by
/// field, for messages that name the field).
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

/// An embeddings request's failure, with the body field it is about (OpenAI's `param`).
#[derive(Debug)]
pub struct EmbeddingsError {
    pub error: ApiError,
    pub param: Option<String>,
}

impl From<ApiError> for EmbeddingsError {
    fn from(error: ApiError) -> Self {
        EmbeddingsError { error, param: None }
    }
}

/// The fields of an embeddings body ([`EmbeddingsIn`]).
const EMBEDDINGS_FIELDS: [&str; 5] = ["input", "model", "encoding_format", "dimensions", "user"];

/// An OpenAI-style embeddings body for `model`: the texts, and whether to answer base64.
pub fn embeddings_request(
    body: &[u8],
    lim: &Limits,
    model: &ModelInfo,
) -> Result<(Vec<String>, bool), ApiError> {
    embeddings_fields(body, lim, model).map_err(|e| e.error)
}

/// [`embeddings_request`] with the field each failure is about. Read field by field (not
/// with serde's derive), so a wrong type is a plain message naming the field, never a Rust
/// type name.
pub fn embeddings_fields(
    body: &[u8],
    lim: &Limits,
    model: &ModelInfo,
) -> Result<(Vec<String>, bool), EmbeddingsError> {
    let at = |param: &str, error: ApiError| EmbeddingsError {
        error,
        param: Some(param.to_string()),
    };
    let bad = |param: &str, m: String| at(param, ApiError::BadRequest(m));
    let mut o = match parse::<Value>(body) {
        Ok(Value::Object(o)) => o,
        Ok(_) => {
            return Err(EmbeddingsError {
                error: ApiError::BadRequest("the body must be a JSON object".into()),
                param: None,
            })
        }
        Err(error) => return Err(EmbeddingsError { error, param: None }),
    };
    if let Some(k) = o.keys().find(|k| !EMBEDDINGS_FIELDS.contains(&k.as_str())) {
        let k = clip(k, 64).into_owned();
        return Err(bad(
            &k,
            format!(
                "unknown field `{k}`, expected one of {}",
                EMBEDDINGS_FIELDS.join(", ")
            ),
        ));
    }
    let string = |o: &mut serde_json::Map<String, Value>, f: &str| match o.remove(f) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(bad(f, format!("{f} must be a string, not {}", kind(&v)))),
    };
    let req_model = string(&mut o, "model")?;
    string(&mut o, "user")?;
    let base64 = match string(&mut o, "encoding_format")?.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(f) => {
            return Err(bad(
                "encoding_format",
                format!(
                    "encoding_format must be \"float\" or \"base64\", not {:?}",
                    clip(f, 64)
                ),
            ))
        }
    };
    if let Some(m) = &req_model {
        let name = &model.name;
        if m != name && !name.ends_with(&format!("/{m}")) && !m.ends_with(name.as_str()) {
            return Err(at(
                "model",
                ApiError::NotFound(format!(
                    "model {:?} is not served; this server runs {name:?}",
                    clip(m, 64)
                )),
            ));
        }
    }
    match o.remove("dimensions") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_u64() == Some(model.dim as u64) => {}
        Some(v) => {
            return Err(bad(
                "dimensions",
                format!(
                    "dimensions {}: this model gives {}",
                    clip(&v.to_string(), 64),
                    model.dim
                ),
            ))
        }
    }
    let texts = match o.remove("input") {
        None => return Err(bad("input", "missing field `input`".into())),
        Some(v) => input_texts(v).map_err(|m| bad("input", m))?,
    };
    if texts.is_empty() || texts.len() > lim.max_embed_inputs {
        return Err(bad(
            "input",
            format!(
                "input must hold 1 to {} strings, got {}",
                lim.max_embed_inputs,
                texts.len()
            ),
        ));
    }
    memdex_memory::limits::check_embed_texts(&texts, lim.max_text_bytes)
        .map_err(|e| at("input", ApiError::TooLarge(e.0)))?;
    Ok((texts, base64))
}

/// `input`: a string or an array of strings (OpenAI's token arrays are not taken).
fn input_texts(v: Value) -> Result<Vec<String>, String> {
    const WANT: &str = "input must be a string or an array of strings";
    match v {
        Value::String(s) => Ok(vec![s]),
        Value::Array(a) => a
            .into_iter()
            .enumerate()
            .map(|(i, x)| match x {
                Value::String(s) => Ok(s),
                Value::Number(_) | Value::Array(_) => Err(format!(
                    "{WANT}: token ids are not supported, send the text (input[{i}] is {})",
                    kind(&x)
                )),
                x => Err(format!("{WANT}; input[{i}] is {}", kind(&x))),
            })
            .collect(),
        v => Err(format!("{WANT}, not {}", kind(&v))),
    }
}

/// A JSON value's kind, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

//! Request bodies → the front door's requests, as pure functions (no engine, no I/O): JSON
//! syntax and field types are checked here (400s naming the field); what the values may be
//! (sizes, `k`, stages, dates) is checked once, by `memdex-memory`, for every front end. The
//! request body types (`SearchIn`, `AppendIn`, `EmbeddingsIn`) live here; `api` re-exports
//! them for its handlers and the OpenAPI document.

use memdex_core::{clip, ModelInfo};
use memdex_ingest::SessionIn;
use memdex_memory::{Limits, SearchRequest, Stages, DEFAULT_K};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{bad_json, ApiError};

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

/// A search body as the front door's request (its values are checked there).
pub fn search_request(body: &[u8]) -> Result<SearchRequest, ApiError> {
    let b: SearchIn = parse(body)?;
    Ok(SearchRequest {
        query: b.query,
        k: b.k.unwrap_or(DEFAULT_K),
        date: b.date,
        recent_turns: b.recent_turns,
        stages: b.stages.unwrap_or_default(),
        explain: b.explain,
        context: b.context,
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
    // the front door's rule, checked here too so the failure names its field
    memdex_memory::check_embed(&texts, lim, false).map_err(|e| at("input", e.into()))?;
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

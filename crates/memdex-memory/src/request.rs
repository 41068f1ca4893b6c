//! What a caller asks, checked once for every front end: a [`SearchRequest`] becomes a
//! [`SearchPlan`] (sizes, `k`, stages, date), texts to embed are sized. Pure functions (no
//! model, no store), so the fuzz harnesses drive exactly what [`crate::Memory`] runs.

use std::borrow::Cow;

use memdex_core::clip;
use memdex_extract::question::first_person;
use memdex_rank::{contextual_query, RankOptions, Stages};

use crate::limits::{check_embed_texts, check_search_texts, Limits};
use crate::MemoryError;

/// A search.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    /// Hits to return, 1 to [`Limits::max_k`].
    pub k: usize,
    /// When the question is asked (any date `memdex` reads); None: now.
    pub date: Option<String>,
    /// The conversation's last turns, oldest first: searched with the query when the query
    /// alone is ambiguous ("and its age?").
    pub recent_turns: Vec<String>,
    /// Ranking stages over the search defaults (the `memdex search` flags).
    pub stages: Stages,
    /// Each hit with its per-stage scores (ranked by the CPU pipeline, the reference).
    pub explain: bool,
    /// The caller will answer the reading stage ([`crate::SearchAnswer::context`]) rather
    /// than the hits: it then cannot ask for `explain` too.
    pub context: bool,
}

impl SearchRequest {
    pub fn new(query: impl Into<String>, k: usize) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            k,
            date: None,
            recent_turns: Vec::new(),
            stages: Stages::default(),
            explain: false,
            context: false,
        }
    }
}

/// How a front end names a ranking stage in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StageNames {
    /// As the HTTP body and the MCP arguments name it: `stages.fragrel_alpha`.
    #[default]
    Body,
    /// As the command line names it: `--fragrel-alpha`.
    Flags,
}

impl StageNames {
    fn name(self, field: &str) -> String {
        match self {
            StageNames::Body => format!("stages.{field}"),
            StageNames::Flags => format!("--{}", field.replace('_', "-")),
        }
    }
}

/// A checked search: what the ranking runs.
#[derive(Debug, Clone)]
pub struct SearchPlan {
    /// The search defaults with the request's stages applied (not yet fitted to a store).
    pub opts: RankOptions,
    /// Whether the request set the time stage (then a store without event dates is an error,
    /// not a silent drop).
    pub time_asked: bool,
    /// When the question is asked (ms since the epoch, UTC): the request's date, else the
    /// caller's default (None: the ranking takes the tenant's newest item's date).
    pub date_ms: Option<i64>,
    /// The text searched: the query, or recent turns + query when the query is ambiguous,
    /// with an assistant's "the user" put in the first person ("What is the user's diet?" is
    /// searched as "What is my diet?": the history's statements are the user's own).
    pub searched: String,
}

/// The text a question is searched as, by every front door and by `memdex eval`: an
/// assistant's question about "the user" in the first person ("What is the user's diet?" →
/// "What is my diet?"), since the history's statements are the user's own; the question
/// itself otherwise.
pub fn searched_question(query: &str) -> Cow<'_, str> {
    first_person(query)
}

/// `req` checked against `limits`; `default_date` dates a request without a date (a live
/// memory: now, so "last weekend" is relative to now). Stages are named as `names` says.
pub fn plan_search(
    req: &SearchRequest,
    limits: &Limits,
    default_date: Option<i64>,
    names: StageNames,
) -> Result<SearchPlan, MemoryError> {
    if req.explain && req.context {
        return Err(MemoryError::Invalid(
            "explain and context cannot both be set (context answers no hits to explain)".into(),
        ));
    }
    if req.k == 0 || req.k > limits.max_k {
        return Err(MemoryError::Invalid(format!(
            "k must be 1 to {}, got {}",
            limits.max_k, req.k
        )));
    }
    if req.query.trim().is_empty() {
        return Err(MemoryError::Invalid("the query is empty".into()));
    }
    check_search_texts(&req.query, &req.recent_turns, limits)?;
    let opts = req
        .stages
        .apply(RankOptions::default(), &|field| names.name(field))
        .map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let date_ms = match &req.date {
        Some(d) => Some(
            memdex_ingest::parse_date(d)
                .map_err(|e| MemoryError::Invalid(format!("date {:?}: {e}", clip(d, 64))))?,
        ),
        None => default_date,
    };
    Ok(SearchPlan {
        opts,
        time_asked: req.stages.time.is_some(),
        date_ms,
        searched: contextual_query(&searched_question(&req.query), &req.recent_turns),
    })
}

/// Texts to embed: 1 to [`Limits::max_embed_inputs`] of them (none is fine for a library
/// call: `allow_empty`), each within the text limit.
pub fn check_embed(
    texts: &[String],
    limits: &Limits,
    allow_empty: bool,
) -> Result<(), MemoryError> {
    if (texts.is_empty() && !allow_empty) || texts.len() > limits.max_embed_inputs {
        return Err(MemoryError::Invalid(format!(
            "input must hold 1 to {} strings, got {}",
            limits.max_embed_inputs,
            texts.len()
        )));
    }
    check_embed_texts(texts, limits.max_text_bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_checks_every_field_once() {
        let lim = Limits::default();
        let now = 1_700_000_000_000;
        let plan = |r: &SearchRequest| plan_search(r, &lim, Some(now), StageNames::Body);
        let ok = plan(&SearchRequest::new("where do I live?", 5)).unwrap();
        assert_eq!(ok.date_ms, Some(now));
        assert_eq!(ok.searched, "where do I live?");
        let user = plan(&SearchRequest::new("Who is the user's manager?", 5)).unwrap();
        assert_eq!(user.searched, "Who is my manager?");
        let mut r = SearchRequest::new("q", 0);
        assert!(plan(&r).unwrap_err().to_string().contains("k must be"));
        r.k = 3;
        r.query = "  ".into();
        assert!(matches!(plan(&r), Err(MemoryError::Invalid(_))));
        r.query = "x".repeat(lim.max_text_bytes + 1);
        assert!(matches!(plan(&r), Err(MemoryError::TooLarge(_))));
        r.query = "q".into();
        r.date = Some("yesterday-ish".into());
        assert!(plan(&r).unwrap_err().to_string().contains("date"));
        r.date = None;
        r.explain = true;
        r.context = true;
        assert!(plan(&r).unwrap_err().to_string().contains("explain"));
        r.context = false;
        r.stages.time_boost = Some(0.5);
        let e = plan(&r).unwrap_err().to_string();
        assert!(e.contains("stages.time_boost"), "{e}");
        let e = plan_search(&r, &lim, None, StageNames::Flags).unwrap_err();
        assert!(e.to_string().contains("--time-boost"), "{e}");
    }

    #[test]
    fn embedding_inputs_are_counted_and_sized() {
        let lim = Limits::default();
        assert!(check_embed(&[], &lim, false).is_err());
        assert!(check_embed(&[], &lim, true).is_ok());
        let many = vec!["t".to_string(); lim.max_embed_inputs + 1];
        assert!(matches!(
            check_embed(&many, &lim, false),
            Err(MemoryError::Invalid(_))
        ));
        let big = vec!["x".repeat(lim.max_text_bytes + 1)];
        assert!(matches!(
            check_embed(&big, &lim, false),
            Err(MemoryError::TooLarge(_))
        ));
    }
}

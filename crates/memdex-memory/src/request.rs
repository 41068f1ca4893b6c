//! What a caller asks, checked once for every front end: a [`SearchRequest`] becomes a
//! [`SearchPlan`] (sizes, `k`, stages, date), texts to embed are sized. Pure functions (no
//! model, no store), so the fuzz harnesses drive exactly what [`crate::Memory`] runs.

use memdex_core::clip;
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

/// A checked search: what the ranking runs.
#[derive(Debug, Clone)]
pub struct SearchPlan {
    /// The search defaults with the request's stages applied (not yet fitted to a store).
    pub opts: RankOptions,
    /// Whether the request set the time stage (then a store without event dates is an error,
    /// not a silent drop).
    pub time_asked: bool,
    /// When the question is asked (ms since the epoch, UTC).
    pub date_ms: i64,
    /// The text searched: the query, or recent turns + query when the query is ambiguous.
    pub searched: String,
}

/// `req` checked against `limits`; `now_ms` dates a request without a date. A stage is named
/// as the server's body names it (`stages.fragrel`).
pub fn plan_search(
    req: &SearchRequest,
    limits: &Limits,
    now_ms: i64,
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
    check_search_texts(&req.query, &req.recent_turns, limits.max_text_bytes)?;
    let opts = req
        .stages
        .apply(RankOptions::default(), &|field| format!("stages.{field}"))
        .map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let date_ms = match &req.date {
        Some(d) => memdex_ingest::parse_date(d)
            .map_err(|e| MemoryError::Invalid(format!("date {:?}: {e}", clip(d, 64))))?,
        // a live memory: relative time references ("last weekend") are relative to now
        None => now_ms,
    };
    Ok(SearchPlan {
        opts,
        time_asked: req.stages.time.is_some(),
        date_ms,
        searched: contextual_query(&req.query, &req.recent_turns),
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
        let ok = plan_search(&SearchRequest::new("where do I live?", 5), &lim, now).unwrap();
        assert_eq!(ok.date_ms, now);
        assert_eq!(ok.searched, "where do I live?");
        let mut r = SearchRequest::new("q", 0);
        assert!(plan_search(&r, &lim, now)
            .unwrap_err()
            .to_string()
            .contains("k must be"));
        r.k = 3;
        r.query = "  ".into();
        assert!(matches!(
            plan_search(&r, &lim, now),
            Err(MemoryError::Invalid(_))
        ));
        r.query = "x".repeat(lim.max_text_bytes + 1);
        assert!(matches!(
            plan_search(&r, &lim, now),
            Err(MemoryError::TooLarge(_))
        ));
        r.query = "q".into();
        r.date = Some("yesterday-ish".into());
        assert!(plan_search(&r, &lim, now)
            .unwrap_err()
            .to_string()
            .contains("date"));
        r.date = None;
        r.explain = true;
        r.context = true;
        assert!(plan_search(&r, &lim, now)
            .unwrap_err()
            .to_string()
            .contains("explain"));
        r.context = false;
        r.stages.time_boost = Some(0.5);
        let e = plan_search(&r, &lim, now).unwrap_err().to_string();
        assert!(e.contains("stages.time_boost"), "{e}");
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

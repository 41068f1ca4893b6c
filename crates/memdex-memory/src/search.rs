//! One search path for both halves of the door: a request is checked against one
//! [`Snapshot`] (plan, fit to the store, tenant), then ranked over that snapshot (by the
//! engine's rank stage for a [`crate::Memory`], by the reader itself for a
//! [`crate::Reader`], through the same [`Snapshot::top`]) and answered the same way.

use std::sync::Arc;

use memdex_core::check_tenant_name;
use memdex_rank::{fit_to_store, reading_context, SearchHit, Snapshot, TopK};
use memdex_runtime::{SearchAsk, SearchJob, SearchTimings};
use serde::Serialize;

use crate::limits::Limits;
use crate::request::{plan_search, SearchPlan, SearchRequest, StageNames};
use crate::MemoryError;

/// A search's answer.
#[derive(Debug, Clone, Serialize)]
pub struct SearchAnswer {
    pub tenant: String,
    pub query: String,
    /// The text actually searched (the query, or recent turns + query when ambiguous; an
    /// assistant's "the user" put in the first person).
    pub searched: String,
    /// When the question was asked (ms since the epoch, UTC): the date it was ranked at (a
    /// request without one: now for a live memory, the tenant's newest item for a reader).
    pub date_ms: i64,
    pub hits: Vec<SearchHit>,
    /// Microseconds it spent in each serving stage (None: answered without ranking, a
    /// tenant with no memory). A reader has no queues and tokenizes inside `embed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<SearchTimings>,
}

impl SearchAnswer {
    /// The reading stage's JSON: the hits by time and a Chain-of-Note prompt.
    pub fn context(&self) -> serde_json::Value {
        reading_context(&self.query, self.date_ms, &self.hits)
    }
}

/// What the caller of a search decides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked<'a> {
    pub limits: &'a Limits,
    pub names: StageNames,
    /// The date of a request without one (a live memory: now; an offline reader: None, the
    /// tenant's newest item).
    pub default_date: Option<i64>,
    /// A tenant with no memory answers no hits instead of `NotFound`.
    pub unknown_is_empty: bool,
}

/// A search checked against a snapshot.
pub(crate) enum Checked {
    /// Answered already: a tenant with no memory, when that is allowed.
    Answered(SearchAnswer),
    Ready(Box<Ready>),
}

/// A search ready to rank.
#[derive(Debug)]
pub(crate) struct Ready {
    pub tenant: String,
    pub query: String,
    pub plan: SearchPlan,
    pub top: TopK,
    /// The date it is ranked at: the plan's, else the tenant's newest item's (what the
    /// ranking stages default to).
    pub ranked_at: i64,
}

/// `req` for `tenant`, checked against `snapshot`.
pub(crate) fn check(
    snapshot: &Snapshot,
    tenant: &str,
    req: &SearchRequest,
    asked: Asked<'_>,
) -> Result<Checked, MemoryError> {
    check_tenant_name(tenant).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let mut plan = plan_search(req, asked.limits, asked.default_date, asked.names)?;
    fit_to_store(&mut plan.opts, plan.time_asked, snapshot.store());
    let ranked_at = match plan.date_ms {
        Some(d) => d,
        None => newest_item(snapshot, tenant).unwrap_or_else(now_ms),
    };
    let ready = Ready {
        tenant: tenant.to_string(),
        query: req.query.clone(),
        plan,
        top: TopK {
            k: req.k,
            explain: req.explain,
        },
        ranked_at,
    };
    if snapshot.has_tenant(tenant) {
        return Ok(Checked::Ready(Box::new(ready)));
    }
    if !asked.unknown_is_empty {
        return Err(MemoryError::NotFound(format!(
            "tenant {tenant:?} has no memory"
        )));
    }
    Ok(Checked::Answered(ready.answer(Vec::new(), None)))
}

/// The date of the tenant's newest live item (what a ranking without a date is asked at).
fn newest_item(snapshot: &Snapshot, tenant: &str) -> Option<i64> {
    let slices = snapshot.store().tenant_slices(tenant);
    (slices.iter().flat_map(|s| s.timestamps()).copied()).max()
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Ready {
    /// The engine's job for this search over `snapshot`.
    pub fn job(&self, snapshot: Arc<Snapshot>) -> SearchJob {
        SearchJob {
            snapshot,
            tenant: self.tenant.clone(),
            text: self.plan.searched.clone(),
            ask: SearchAsk {
                date_ms: self.plan.date_ms,
                top: self.top,
                opts: self.plan.opts,
            },
        }
    }

    /// The answer with `hits`, ranked in `timings`.
    pub fn answer(self, hits: Vec<SearchHit>, timings: Option<SearchTimings>) -> SearchAnswer {
        SearchAnswer {
            tenant: self.tenant,
            query: self.query,
            date_ms: self.ranked_at,
            searched: self.plan.searched,
            hits,
            timings,
        }
    }
}

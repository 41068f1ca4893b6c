//! One search path for both halves of the door: a request is checked against one
//! [`Snapshot`] (plan, fit to the store, tenant), then ranked over that snapshot (by the
//! engine's rank stage for a [`crate::Memory`], by the reader itself for a
//! [`crate::Reader`], through the same [`Snapshot::top`]) and answered the same way.

use std::sync::Arc;

use memdex_core::check_tenant_name;
use memdex_rank::{fit_to_store, reading_context, SearchHit, Snapshot, TopK};
use memdex_runtime::{SearchAsk, SearchJob};
use serde::Serialize;

use crate::limits::Limits;
use crate::request::{plan_search, SearchPlan, SearchRequest, StageNames};
use crate::MemoryError;

/// A search's answer.
#[derive(Debug, Clone, Serialize)]
pub struct SearchAnswer {
    pub tenant: String,
    pub query: String,
    /// The text actually searched (the query, or recent turns + query when ambiguous).
    pub searched: String,
    /// When the question was asked (ms since the epoch, UTC).
    pub date_ms: i64,
    pub hits: Vec<SearchHit>,
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
    let ready = Ready {
        tenant: tenant.to_string(),
        query: req.query.clone(),
        plan,
        top: TopK {
            k: req.k,
            explain: req.explain,
        },
    };
    if snapshot.has_tenant(tenant) {
        return Ok(Checked::Ready(Box::new(ready)));
    }
    if !asked.unknown_is_empty {
        return Err(MemoryError::NotFound(format!(
            "tenant {tenant:?} has no memory"
        )));
    }
    Ok(Checked::Answered(ready.answer(Vec::new())))
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

    /// The answer with `hits`.
    pub fn answer(self, hits: Vec<SearchHit>) -> SearchAnswer {
        SearchAnswer {
            tenant: self.tenant,
            query: self.query,
            date_ms: self
                .plan
                .date_ms
                .unwrap_or_else(|| chrono::Utc::now().timestamp_millis()),
            searched: self.plan.searched,
            hits,
        }
    }
}

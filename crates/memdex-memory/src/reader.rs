//! [`Reader`]: the door's read-only half. One store opened for reading with the model it was
//! built with, searched with the same [`SearchRequest`] and the same checks as
//! [`crate::Memory`], but without the runtime's threads and without the writer lock, so it
//! reads a store that a `memdex serve` is writing (`memdex search` uses it).

use memdex_core::check_tenant_name;
use memdex_embed::Encoder;
use memdex_pipeline::Searcher;
use memdex_rank::{fit_to_store, TopK};
use memdex_store::Store;

use crate::limits::Limits;
use crate::request::{plan_search, SearchRequest, StageNames};
use crate::{MemoryError, SearchAnswer};

/// A store open for searches only.
#[derive(Debug)]
pub struct Reader {
    searcher: Searcher,
    limits: Limits,
    names: StageNames,
}

impl Reader {
    /// Pairs a store with its encoder (refused unless the store was built with this model);
    /// stage errors name stages as `names` says.
    pub fn new(
        store: Store,
        encoder: Box<dyn Encoder>,
        names: StageNames,
    ) -> Result<Reader, MemoryError> {
        Ok(Reader {
            searcher: Searcher::new(store, encoder)?,
            // an offline tool's own flags: no size bounds (a request is still checked)
            limits: Limits::offline(),
            names,
        })
    }

    pub fn store(&self) -> &Store {
        self.searcher.store()
    }

    /// The tenant's top items; `NotFound` when the tenant has no memory. A request without a
    /// date is asked at the tenant's newest item (an offline store has no "now").
    pub fn search(&self, tenant: &str, req: &SearchRequest) -> Result<SearchAnswer, MemoryError> {
        check_tenant_name(tenant).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        let mut plan = plan_search(req, &self.limits, None, self.names)?;
        fit_to_store(&mut plan.opts, plan.time_asked, self.store());
        let top = TopK {
            k: req.k,
            explain: req.explain,
        };
        let hits =
            self.searcher
                .search_with(tenant, &plan.searched, plan.date_ms, &plan.opts, top)?;
        Ok(SearchAnswer {
            tenant: tenant.to_string(),
            query: req.query.clone(),
            searched: plan.searched,
            date_ms: plan
                .date_ms
                .unwrap_or_else(|| chrono::Utc::now().timestamp_millis()),
            hits,
        })
    }
}

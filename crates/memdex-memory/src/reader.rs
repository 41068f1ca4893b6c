//! [`Reader`]: the door's read-only half. One store opened for reading with the model it was
//! built with, searched with the same [`SearchRequest`] and the same checks as
//! [`crate::Memory`], but without the runtime's threads and without the writer lock, so it
//! reads a store that a `memdex serve` is writing (`memdex search` uses it). Batch tools
//! (`memdex eval`, `memdex bench`) rank many queries at once through its batch calls, with the
//! ranker they choose.

use std::sync::Arc;

use memdex_core::{check_tenant_name, TextKind};
use memdex_embed::{Embeddings, Encoder};
use memdex_pipeline::Searcher;
use memdex_rank::{
    fit_to_store, Batch, BatchQuery, BatchRanker, CpuRanker, Query, RankOptions, Ranking,
    SearchHit, TopK,
};
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
        Self::with_ranker(store, encoder, Arc::new(CpuRanker::default()), names)
    }

    /// [`Self::new`] ranking through `ranker` (a device's, say).
    pub fn with_ranker(
        store: Store,
        encoder: Box<dyn Encoder>,
        ranker: Arc<dyn BatchRanker>,
        names: StageNames,
    ) -> Result<Reader, MemoryError> {
        Ok(Reader {
            searcher: Searcher::with_ranker(store, encoder, ranker)?,
            // an offline tool's own flags: no size bounds (a request is still checked)
            limits: Limits::offline(),
            names,
        })
    }

    pub fn store(&self) -> &Store {
        self.searcher.store()
    }

    /// The model the store was built with.
    pub fn encoder(&self) -> &dyn Encoder {
        self.searcher.encoder()
    }

    pub fn ranker(&self) -> &dyn BatchRanker {
        self.searcher.ranker()
    }

    /// The vectors of `queries`, with the model's query prefix.
    pub fn embed_queries(&self, queries: &[&str]) -> Result<Embeddings, MemoryError> {
        Ok(self.encoder().embed(queries, TextKind::Query)?)
    }

    /// All of the tenant's live items ranked for `query` (an embedded query); `NotFound` when
    /// the tenant has no memory.
    pub fn rank(
        &self,
        tenant: &str,
        query: &Query<'_>,
        opts: &RankOptions,
    ) -> Result<Ranking<'_>, MemoryError> {
        Ok(self.searcher.rank(tenant, query, opts)?)
    }

    /// Every query's whole ranking, in one call of the ranker; a query whose tenant has no
    /// memory fails alone (`NotFound`).
    pub fn rank_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Result<Vec<Result<Ranking<'_>, MemoryError>>, MemoryError> {
        let all = self.searcher.rank_batch(queries, opts)?;
        Ok(all
            .into_iter()
            .map(|r| r.map_err(MemoryError::from))
            .collect())
    }

    /// Every query's top `top.k`, in one call of the ranker; a query whose tenant has no
    /// memory fails alone (`NotFound`).
    pub fn top_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
        top: TopK,
    ) -> Result<Vec<Result<Vec<SearchHit>, MemoryError>>, MemoryError> {
        let all = self.searcher.top_batch(queries, opts, top)?;
        Ok(all
            .into_iter()
            .map(|r| r.map_err(MemoryError::from))
            .collect())
    }

    /// A batch over this reader's store and caches, for a caller that compares rankers.
    pub fn batch<'a, 's: 'a>(
        &'s self,
        queries: &'a [BatchQuery<'a>],
        opts: &'a RankOptions,
    ) -> Batch<'a, 's> {
        self.searcher.batch(queries, opts)
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

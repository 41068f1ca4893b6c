//! One-shot search over a store (the CLI's `search`, `eval`, `bench`): a store view, the
//! encoder it was built with, the ranker and the ranking's per-tenant caches.

use std::sync::Arc;

use memdex_core::TextKind;
use memdex_embed::Encoder;
use memdex_rank::{
    all_one, top_one, Batch, BatchHits, BatchQuery, BatchRanker, BatchRankings, CpuRanker, Query,
    RankOptions, Ranking, SearchHit, TenantCache, TopK,
};
use memdex_store::Store;

use crate::EngineError;

/// The CPU ranker for a model `encoder`: its dense scores on the model's device when `scan`
/// says so (None: when the model runs on an accelerator and has a device scorer), else the
/// CPU's own dot products.
pub fn cpu_ranker(encoder: &dyn Encoder, scan: Option<bool>) -> CpuRanker {
    let scan = scan.unwrap_or_else(|| encoder.is_accelerator());
    match scan.then(|| encoder.device_scorer()).flatten() {
        Some(scorer) => CpuRanker::with_scorer(scorer),
        None => CpuRanker::default(),
    }
}

/// Searches one store with the model it was built with.
#[derive(Debug)]
pub struct Searcher {
    store: Store,
    encoder: Box<dyn Encoder>,
    ranker: Arc<dyn BatchRanker>,
    cache: TenantCache,
}

impl Searcher {
    /// Pairs a store with an encoder; refused unless the store was built with this model.
    /// The CPU ranker ranks (see [`Self::with_ranker`]).
    pub fn new(store: Store, encoder: Box<dyn Encoder>) -> Result<Searcher, EngineError> {
        Self::with_ranker(store, encoder, Arc::new(CpuRanker::default()))
    }

    /// [`Self::new`] with another ranker (a device's, say).
    pub fn with_ranker(
        store: Store,
        encoder: Box<dyn Encoder>,
        ranker: Arc<dyn BatchRanker>,
    ) -> Result<Searcher, EngineError> {
        store.check_model(encoder.info())?;
        Ok(Searcher {
            store,
            encoder,
            ranker,
            cache: TenantCache::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn encoder(&self) -> &dyn Encoder {
        self.encoder.as_ref()
    }

    pub fn cache(&self) -> &TenantCache {
        &self.cache
    }

    pub fn ranker(&self) -> &dyn BatchRanker {
        self.ranker.as_ref()
    }

    /// Embeds `query` (with the model's query prefix) and returns the tenant's top `k` items.
    /// `date_ms` is when the question is asked (recency, time references; default: the newest
    /// item's date).
    pub fn search(
        &self,
        tenant: &str,
        query: &str,
        date_ms: Option<i64>,
        k: usize,
        opts: &RankOptions,
    ) -> Result<Vec<SearchHit>, EngineError> {
        self.search_with(tenant, query, date_ms, opts, TopK { k, explain: false })
    }

    /// [`Self::search`], the top `top.k`, each hit with its per-stage scores when
    /// `top.explain` is set.
    pub fn search_with(
        &self,
        tenant: &str,
        query: &str,
        date_ms: Option<i64>,
        opts: &RankOptions,
        top: TopK,
    ) -> Result<Vec<SearchHit>, EngineError> {
        if query.trim().is_empty() {
            return Err(EngineError::EmptyQuery);
        }
        let q = self.encoder.embed(&[query], TextKind::Query)?;
        let query = BatchQuery {
            tenant,
            query: Query {
                text: query,
                vector: q.row(0),
                date_ms,
            },
        };
        let (store, cache) = (&self.store, &self.cache);
        Ok(top_one(self.ranker(), store, cache, query, opts, top)?)
    }

    /// Ranks all of the tenant's live items for a query.
    pub fn rank(
        &self,
        tenant: &str,
        query: &Query<'_>,
        opts: &RankOptions,
    ) -> Result<Ranking<'_>, EngineError> {
        let q = BatchQuery {
            tenant,
            query: *query,
        };
        Ok(all_one(self.ranker(), &self.store, &self.cache, q, opts)?)
    }

    /// The top `top.k` of every query of a batch, through the ranker.
    pub fn top_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
        top: TopK,
    ) -> Result<BatchHits, EngineError> {
        Ok(self.ranker.top(&self.batch(queries, opts), top)?)
    }

    /// Every query's whole ranking, through the ranker.
    pub fn rank_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Result<BatchRankings<'_>, EngineError> {
        Ok(self.ranker.all(&self.batch(queries, opts))?)
    }

    /// A batch over this searcher's store and caches.
    pub fn batch<'a, 's: 'a>(
        &'s self,
        queries: &'a [BatchQuery<'a>],
        opts: &'a RankOptions,
    ) -> Batch<'a, 's> {
        Batch {
            store: &self.store,
            cache: &self.cache,
            queries,
            opts,
        }
    }
}

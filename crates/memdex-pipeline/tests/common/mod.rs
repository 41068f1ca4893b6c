//! A one-shot searcher for these tests: a store snapshot, the encoder it was built with and a
//! ranker (the CPU reference unless told otherwise).

#![allow(dead_code)]

use std::sync::Arc;

use memdex_core::TextKind;
use memdex_embed::Encoder;
use memdex_pipeline::PipelineError;
use memdex_rank::{
    all_one, top_one, Batch, BatchHits, BatchQuery, BatchRanker, BatchRankings, CpuRanker, Query,
    RankOptions, Ranking, SearchHit, Snapshot, TenantCache, TopK,
};
use memdex_store::Store;

/// Searches one store with the model it was built with.
#[derive(Debug)]
pub struct Searcher {
    snapshot: Snapshot,
    encoder: Box<dyn Encoder>,
    ranker: Arc<dyn BatchRanker>,
}

impl Searcher {
    /// Pairs a store with an encoder; refused unless the store was built with this model.
    /// The CPU ranker ranks (see [`Self::with_ranker`]).
    pub fn new(store: Store, encoder: Box<dyn Encoder>) -> Result<Searcher, PipelineError> {
        Self::with_ranker(store, encoder, Arc::new(CpuRanker::default()))
    }

    /// [`Self::new`] with another ranker (a device's, say).
    pub fn with_ranker(
        store: Store,
        encoder: Box<dyn Encoder>,
        ranker: Arc<dyn BatchRanker>,
    ) -> Result<Searcher, PipelineError> {
        store.check_model(encoder.info())?;
        Ok(Searcher {
            snapshot: Snapshot::new(store, memdex_rank::DEFAULT_CACHE_BYTES),
            encoder,
            ranker,
        })
    }

    pub fn store(&self) -> &Store {
        self.snapshot.store()
    }

    pub fn encoder(&self) -> &dyn Encoder {
        self.encoder.as_ref()
    }

    pub fn cache(&self) -> &TenantCache {
        self.snapshot.cache()
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
    ) -> Result<Vec<SearchHit>, PipelineError> {
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
    ) -> Result<Vec<SearchHit>, PipelineError> {
        if query.trim().is_empty() {
            return Err(PipelineError::EmptyQuery);
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
        let (store, cache) = (self.store(), self.cache());
        Ok(top_one(self.ranker(), store, cache, query, opts, top)?)
    }

    /// Ranks all of the tenant's live items for a query.
    pub fn rank(
        &self,
        tenant: &str,
        query: &Query<'_>,
        opts: &RankOptions,
    ) -> Result<Ranking<'_>, PipelineError> {
        let q = BatchQuery {
            tenant,
            query: *query,
        };
        Ok(all_one(self.ranker(), self.store(), self.cache(), q, opts)?)
    }

    /// The top `top.k` of every query of a batch, through the ranker.
    pub fn top_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
        top: TopK,
    ) -> Result<BatchHits, PipelineError> {
        Ok(self.ranker.top(&self.batch(queries, opts), top)?)
    }

    /// Every query's whole ranking, through the ranker.
    pub fn rank_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Result<BatchRankings<'_>, PipelineError> {
        Ok(self.ranker.all(&self.batch(queries, opts))?)
    }

    /// A batch over this searcher's store and caches.
    pub fn batch<'a, 's: 'a>(
        &'s self,
        queries: &'a [BatchQuery<'a>],
        opts: &'a RankOptions,
    ) -> Batch<'a, 's> {
        self.snapshot.batch(queries, opts)
    }
}

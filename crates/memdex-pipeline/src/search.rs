//! One-shot search over a store (the CLI's `search`, `eval`, `bench`): a store view, the
//! encoder it was built with, a dense scorer and the ranking's per-tenant caches.

use memdex_core::TextKind;
use memdex_embed::Encoder;
use memdex_rank::{
    rank, top_hits, Dense, Query, RankOptions, Ranking, SearchHit, TenantCache, TopK,
};
use memdex_score::{CpuScorer, DenseScorer};
use memdex_store::Store;

use crate::EngineError;

/// Searches one store with the model it was built with.
#[derive(Debug)]
pub struct Searcher {
    store: Store,
    encoder: Box<dyn Encoder>,
    scorer: Box<dyn DenseScorer>,
    cache: TenantCache,
}

impl Searcher {
    /// Pairs a store with an encoder; refused unless the store was built with this model.
    /// Dense scores come from the CPU scorer (see [`Self::with_scorer`]).
    pub fn new(store: Store, encoder: Box<dyn Encoder>) -> Result<Searcher, EngineError> {
        Self::with_scorer(store, encoder, Box::new(CpuScorer))
    }

    /// [`Self::new`] with another dense scorer (the encoder's device, say).
    pub fn with_scorer(
        store: Store,
        encoder: Box<dyn Encoder>,
        scorer: Box<dyn DenseScorer>,
    ) -> Result<Searcher, EngineError> {
        store.check_model(encoder.info())?;
        Ok(Searcher {
            store,
            encoder,
            scorer,
            cache: TenantCache::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn encoder(&self) -> &dyn Encoder {
        self.encoder.as_ref()
    }

    pub(crate) fn cache(&self) -> &TenantCache {
        &self.cache
    }

    pub fn scorer(&self) -> &dyn DenseScorer {
        self.scorer.as_ref()
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
        let query = Query {
            text: query,
            vector: q.row(0),
            date_ms,
        };
        let dense = Dense::Scorer(self.scorer.as_ref());
        Ok(top_hits(
            &self.store,
            tenant,
            &query,
            dense,
            opts,
            &self.cache,
            top,
        )?)
    }

    /// Ranks all of the tenant's live items for a query.
    pub fn rank(
        &self,
        tenant: &str,
        query: &Query<'_>,
        opts: &RankOptions,
    ) -> Result<Ranking<'_>, EngineError> {
        let dense = Dense::Scorer(self.scorer.as_ref());
        Ok(rank(&self.store, tenant, query, dense, opts, &self.cache)?)
    }

    /// [`Self::rank`] of every query of `queries` at once, on all cores: how many items each
    /// ranking holds. The CPU pipeline's throughput on a batch (what benchmarks compare with).
    pub fn rank_parallel(
        &self,
        queries: &[crate::BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Vec<Result<usize, EngineError>> {
        use rayon::prelude::*;
        let (store, scorer, cache) = (&self.store, self.scorer.as_ref(), &self.cache);
        queries
            .par_iter()
            .map(|q| {
                let dense = Dense::Scorer(scorer);
                Ok(rank(store, q.tenant, &q.query, dense, opts, cache)?.len())
            })
            .collect()
    }

    /// [`Self::rank`] with the dense scores computed already (by [`Self::dense_batch`]): one
    /// per live row of the tenant, in timeline order.
    pub fn rank_scored(
        &self,
        tenant: &str,
        query: &Query<'_>,
        dense: &[f32],
        opts: &RankOptions,
    ) -> Result<Ranking<'_>, EngineError> {
        let dense = Dense::Scores(dense);
        Ok(rank(&self.store, tenant, query, dense, opts, &self.cache)?)
    }

    /// Dense scores of a batch of queries, `(tenant, vector)` each, in one call of the scorer
    /// (one launch sequence on a device): query `q`'s scores cover its tenant's live rows in
    /// timeline order (none for a tenant the store does not hold).
    pub fn dense_batch(&self, queries: &[(&str, &[f32])]) -> Result<Vec<Vec<f32>>, EngineError> {
        let dim = self.store.dim();
        let mut vectors = Vec::with_capacity(queries.len() * dim);
        for (_, v) in queries {
            if v.len() != dim {
                return Err(memdex_rank::RankError::DenseMismatch {
                    what: "query vector values",
                    expected: dim,
                    got: v.len(),
                }
                .into());
            }
            vectors.extend_from_slice(v);
        }
        let slices: Vec<_> = queries
            .iter()
            .map(|(t, _)| self.store.tenant_slices(t))
            .collect();
        let slices: Vec<&[_]> = slices.iter().map(Vec::as_slice).collect();
        let (blocks, runs) = memdex_rank::dense_batch_request(&slices);
        let scores = self.scorer.score(dim, &vectors, &blocks, &runs);
        Ok(scores.map_err(memdex_rank::RankError::from)?)
    }
}

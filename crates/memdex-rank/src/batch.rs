//! The ranking seam: [`BatchRanker`] ranks a batch of queries (each over its tenant's live
//! rows of one store view) and answers each query's top-k or whole ranking. Every caller
//! (serving, `memdex search`, `eval`, `bench rank`, the Python package and MCP through the
//! front door) holds one.
//!
//! [`CpuRanker`] is the reference: [`crate::rank`] per query, the batch's queries on all
//! cores. An accelerated ranker (memdex-kernels' `KernelRanker`) answers the same calls on a
//! device and must agree with it on every top-k, ties aside.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use memdex_score::{CpuScorer, DenseScorer};
use memdex_store::Store;

use crate::pipeline::{dense_batch_request, rank, rank_explained};
use crate::{Dense, Query, RankError, RankOptions, Ranking, SearchHit, TenantCache, TopK};

/// One query of a batch: the tenant whose rows it ranks, and the query.
#[derive(Debug, Clone, Copy)]
pub struct BatchQuery<'a> {
    pub tenant: &'a str,
    pub query: Query<'a>,
}

/// A batch to rank: one store view, its ranking caches, the queries and the options they
/// share.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a, 's> {
    pub store: &'s Store,
    pub cache: &'a TenantCache,
    pub queries: &'a [BatchQuery<'a>],
    pub opts: &'a RankOptions,
}

/// Per query of a batch: its hits, or why it has none (a tenant the store does not hold).
pub type BatchHits = Vec<Result<Vec<SearchHit>, RankError>>;

/// Per query of a batch: its whole ranking, or why it has none.
pub type BatchRankings<'s> = Vec<Result<Ranking<'s>, RankError>>;

/// Batches a ranker ran on one device, and the queries in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCount {
    /// `cpu` or `cuda:N`.
    pub device: String,
    pub batches: u64,
    pub queries: u64,
}

/// Ranks batches of queries. An error of the whole call is one no query of the batch can get
/// past (options the store cannot serve, a malformed query vector); a tenant the store does
/// not hold fails only its own queries.
pub trait BatchRanker: Send + Sync + std::fmt::Debug {
    /// Where it ranks, in words (`cpu`, `cpu, dense on candle-cuda`, `auto: cuda:0 or cpu`).
    fn describe(&self) -> String;

    /// The top `top.k` hits of every query, each with its per-stage scores when
    /// `top.explain` is set.
    fn top(&self, batch: &Batch<'_, '_>, top: TopK) -> Result<BatchHits, RankError>;

    /// Every query's whole ranking (what evaluation metrics read).
    fn all<'s>(&self, batch: &Batch<'_, 's>) -> Result<BatchRankings<'s>, RankError>;

    /// Batches and queries ranked so far, per device (for `/metrics` and `eval`'s report).
    fn counts(&self) -> Vec<DeviceCount>;
}

/// A shared ranker.
pub type SharedRanker = Arc<dyn BatchRanker>;

/// The reference ranker: [`crate::rank`] per query, a batch's queries on all cores, dense
/// scores from its [`DenseScorer`] (the CPU's dot products unless told otherwise; a batching
/// scorer — a device scan — scores the whole batch in one call first).
#[derive(Debug)]
pub struct CpuRanker {
    scorer: Box<dyn DenseScorer>,
    batches: AtomicU64,
    queries: AtomicU64,
}

impl Default for CpuRanker {
    fn default() -> Self {
        CpuRanker::with_scorer(Box::new(CpuScorer))
    }
}

impl CpuRanker {
    /// The reference with its dense scores from `scorer`.
    pub fn with_scorer(scorer: Box<dyn DenseScorer>) -> CpuRanker {
        CpuRanker {
            scorer,
            batches: AtomicU64::new(0),
            queries: AtomicU64::new(0),
        }
    }

    pub fn scorer(&self) -> &dyn DenseScorer {
        self.scorer.as_ref()
    }

    /// Runs `f` on every query with its dense scores' source: one query on this thread, more
    /// on all cores.
    fn each<T: Send>(
        &self,
        batch: &Batch<'_, '_>,
        f: impl Fn(&BatchQuery<'_>, Dense<'_>) -> Result<T, RankError> + Sync,
    ) -> Result<Vec<Result<T, RankError>>, RankError> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        let n = batch.queries.len() as u64;
        self.queries.fetch_add(n, Ordering::Relaxed);
        let scored = self.scan(batch)?;
        let dense = |i: usize| match &scored {
            Some(s) => Dense::Scores(&s[i]),
            None => Dense::Scorer(self.scorer.as_ref()),
        };
        if batch.queries.len() == 1 {
            return Ok(vec![f(&batch.queries[0], dense(0))]);
        }
        Ok(batch
            .queries
            .par_iter()
            .enumerate()
            .map(|(i, q)| f(q, dense(i)))
            .collect())
    }

    /// With a batching scorer, every query's dense scores in one call (a tenant the store
    /// does not hold scores nothing; its ranking reports it).
    fn scan(&self, batch: &Batch<'_, '_>) -> Result<Option<Vec<Vec<f32>>>, RankError> {
        if !self.scorer.batched() {
            return Ok(None);
        }
        let dim = batch.store.dim();
        let mut vectors = Vec::with_capacity(batch.queries.len() * dim);
        for q in batch.queries {
            check_vector(q.query.vector, dim)?;
            vectors.extend_from_slice(q.query.vector);
        }
        let slices: Vec<_> = (batch.queries.iter())
            .map(|q| batch.store.tenant_slices(q.tenant))
            .collect();
        let slices: Vec<&[_]> = slices.iter().map(Vec::as_slice).collect();
        let (blocks, runs) = dense_batch_request(&slices);
        Ok(Some(self.scorer.score(dim, &vectors, &blocks, &runs)?))
    }
}

/// A query vector must be as wide as the store's embeddings.
pub fn check_vector(vector: &[f32], dim: usize) -> Result<(), RankError> {
    if vector.len() != dim {
        return Err(RankError::DenseMismatch {
            what: "query vector values",
            expected: dim,
            got: vector.len(),
        });
    }
    Ok(())
}

impl BatchRanker for CpuRanker {
    fn describe(&self) -> String {
        match self.scorer.name() {
            "cpu" => "cpu".into(),
            other => format!("cpu, dense scores on {other}"),
        }
    }

    fn top(&self, b: &Batch<'_, '_>, top: TopK) -> Result<BatchHits, RankError> {
        let (store, cache, opts) = (b.store, b.cache, b.opts);
        self.each(b, |q, dense| {
            if top.explain {
                let (ranking, trace) =
                    rank_explained(store, q.tenant, &q.query, dense, opts, cache)?;
                return Ok(trace.hits(&ranking, top.k));
            }
            Ok(rank(store, q.tenant, &q.query, dense, opts, cache)?.hits(top.k))
        })
    }

    fn all<'s>(&self, b: &Batch<'_, 's>) -> Result<BatchRankings<'s>, RankError> {
        let (store, cache, opts) = (b.store, b.cache, b.opts);
        self.each(b, |q, dense| {
            rank(store, q.tenant, &q.query, dense, opts, cache)
        })
    }

    fn counts(&self) -> Vec<DeviceCount> {
        vec![DeviceCount {
            device: "cpu".into(),
            batches: self.batches.load(Ordering::Relaxed),
            queries: self.queries.load(Ordering::Relaxed),
        }]
    }
}

/// One query through `ranker`: its top `top.k` (the per-query error surfaced).
pub fn top_one(
    ranker: &dyn BatchRanker,
    store: &Store,
    cache: &TenantCache,
    query: BatchQuery<'_>,
    opts: &RankOptions,
    top: TopK,
) -> Result<Vec<SearchHit>, RankError> {
    let queries = [query];
    let batch = Batch {
        store,
        cache,
        queries: &queries,
        opts,
    };
    ranker.top(&batch, top)?.pop().unwrap_or(Ok(Vec::new()))
}

/// One query's whole ranking through `ranker`.
pub fn all_one<'s>(
    ranker: &dyn BatchRanker,
    store: &'s Store,
    cache: &TenantCache,
    query: BatchQuery<'_>,
    opts: &RankOptions,
) -> Result<Ranking<'s>, RankError> {
    let queries = [query];
    let batch = Batch {
        store,
        cache,
        queries: &queries,
        opts,
    };
    let mut out = ranker.all(&batch)?;
    out.pop()
        .unwrap_or_else(|| Err(RankError::no_rows(store, query.tenant)))
}

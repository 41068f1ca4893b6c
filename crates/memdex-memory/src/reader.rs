//! [`Reader`]: the door's read-only half. One store [`Snapshot`] with the model it was built
//! with and a ranker, searched with the same [`SearchRequest`], the same checks and the same
//! ranking call as [`crate::Memory`] (`crate::search`), but without the runtime's threads and
//! without the writer lock, so it reads a store that a `memdex serve` is writing (`memdex
//! search` uses it). Batch tools (`memdex eval`, `memdex bench`) rank many queries at once
//! through its batch calls.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memdex_core::TextKind;
use memdex_embed::{Embeddings, Encoder};
use memdex_rank::{
    Batch, BatchQuery, BatchRanker, CpuRanker, Query, RankOptions, Ranking, SearchHit, Snapshot,
    TopK,
};
use memdex_runtime::SearchTimings;
use memdex_store::Store;

use crate::limits::Limits;
use crate::rankers::ranker;
use crate::request::{SearchRequest, StageNames};
use crate::search::{check, Asked, Checked};
use crate::{MemoryError, OpenOptions, SearchAnswer};

/// A store open for searches only.
#[derive(Debug)]
pub struct Reader {
    snapshot: Snapshot,
    encoder: Box<dyn Encoder>,
    ranker: Arc<dyn BatchRanker>,
    limits: Limits,
    names: StageNames,
}

impl Reader {
    /// Opens the store in `dir` for reading with the model and the ranker (`opts.rank`)
    /// `opts` name (the store's recorded model by default; `opts.engine` and `opts.limits` do
    /// not apply).
    pub fn open(dir: &Path, opts: &OpenOptions, names: StageNames) -> Result<Reader, MemoryError> {
        let store = Store::open(dir)?;
        let (encoder, _) = crate::memory::open_model(dir, opts)?;
        let ranker = ranker(opts.rank, opts.device, &encoder)?;
        Self::with_ranker(store, Box::new(encoder), ranker, names)
    }

    /// Pairs a store with its encoder (refused unless the store was built with this model),
    /// ranked by the CPU ranker; stage errors name stages as `names` says.
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
        store.check_model(encoder.info())?;
        Ok(Reader {
            snapshot: Snapshot::new(store, memdex_rank::DEFAULT_CACHE_BYTES),
            encoder,
            ranker,
            // an offline tool's own flags: no size bounds (a request is still checked)
            limits: Limits::offline(),
            names,
        })
    }

    pub fn store(&self) -> &Store {
        self.snapshot.store()
    }

    /// The model the store was built with.
    pub fn encoder(&self) -> &dyn Encoder {
        self.encoder.as_ref()
    }

    pub fn ranker(&self) -> &dyn BatchRanker {
        self.ranker.as_ref()
    }

    /// The vectors of `queries`, with the model's query prefix.
    pub fn embed_queries(&self, queries: &[&str]) -> Result<Embeddings, MemoryError> {
        Ok(self.encoder.embed(queries, TextKind::Query)?)
    }

    /// All of the tenant's live items ranked for `query` (an embedded query); `NotFound` when
    /// the tenant has no memory.
    pub fn rank(
        &self,
        tenant: &str,
        query: &Query<'_>,
        opts: &RankOptions,
    ) -> Result<Ranking<'_>, MemoryError> {
        let q = [BatchQuery {
            tenant,
            query: *query,
        }];
        let mut all = self.snapshot.all(self.ranker(), &q, opts)?;
        Ok(all.pop().ok_or_else(no_answer)??)
    }

    /// Every query's whole ranking, in one call of the ranker; a query whose tenant has no
    /// memory fails alone (`NotFound`).
    pub fn rank_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Result<Vec<Result<Ranking<'_>, MemoryError>>, MemoryError> {
        let all = self.snapshot.all(self.ranker(), queries, opts)?;
        Ok(all.into_iter().map(|r| Ok(r?)).collect())
    }

    /// Every query's top `top.k`, in one call of the ranker; a query whose tenant has no
    /// memory fails alone (`NotFound`).
    pub fn top_batch(
        &self,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
        top: TopK,
    ) -> Result<Vec<Result<Vec<SearchHit>, MemoryError>>, MemoryError> {
        let all = self.snapshot.top(self.ranker(), queries, opts, top)?;
        Ok(all.into_iter().map(|r| Ok(r?)).collect())
    }

    /// A batch over this reader's snapshot, for a caller that compares rankers.
    pub fn batch<'a, 's: 'a>(
        &'s self,
        queries: &'a [BatchQuery<'a>],
        opts: &'a RankOptions,
    ) -> Batch<'a, 's> {
        self.snapshot.batch(queries, opts)
    }

    /// The tenant's top items; `NotFound` when the tenant has no memory. A request without a
    /// date is asked at the tenant's newest item (an offline store has no "now"), and its
    /// answer carries that date. Its timings: `embed` (tokenizing included) and `rank`; an
    /// offline search has no queues.
    pub fn search(&self, tenant: &str, req: &SearchRequest) -> Result<SearchAnswer, MemoryError> {
        let asked = Asked {
            limits: &self.limits,
            names: self.names,
            default_date: None,
            unknown_is_empty: false,
        };
        let ready = match check(&self.snapshot, tenant, req, asked)? {
            Checked::Answered(answer) => return Ok(answer),
            Checked::Ready(ready) => ready,
        };
        let started = Instant::now();
        let vector = self.embed_queries(&[&ready.plan.searched])?;
        let embedded = Instant::now();
        let q = [BatchQuery {
            tenant,
            query: Query {
                text: &ready.plan.searched,
                vector: vector.row(0),
                date_ms: ready.plan.date_ms,
            },
        }];
        let mut top = self
            .snapshot
            .top(self.ranker(), &q, &ready.plan.opts, ready.top)?;
        let hits = top.pop().ok_or_else(no_answer)??;
        let us = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let timings = SearchTimings {
            embed_us: us(embedded - started),
            rank_us: us(embedded.elapsed()),
            ..SearchTimings::default()
        };
        Ok(ready.answer(hits, Some(timings)))
    }
}

/// A ranker that answered no result for a query it was given (a broken ranker).
fn no_answer() -> MemoryError {
    MemoryError::Internal("the ranker answered no result for the query".into())
}

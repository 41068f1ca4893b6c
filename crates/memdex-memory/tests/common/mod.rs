//! The ranking tests' one helper: a store's top items for a query with given ranking
//! options, through the door's offline half ([`Reader`]: its embedding, its snapshot, its
//! ranker), as `memdex search` ranks.

#![allow(dead_code, clippy::unwrap_used)]

use memdex_memory::{MemoryError, Reader, SearchHit, StageNames};
use memdex_rank::{BatchQuery, Query, RankOptions, TopK};
use memdex_store::Store;
use memdex_testkit::HashEncoder;

/// The store in `dir` open for reading with the test-double encoder of `dim`.
pub fn reader(dir: &std::path::Path, dim: usize) -> Reader {
    let store = Store::open(dir).unwrap();
    Reader::new(store, Box::new(HashEncoder::new(dim)), StageNames::Flags).unwrap()
}

/// Searches with ranking options (not a request's stages).
pub trait Ranked {
    /// The tenant's top `k` items for `query` asked at `date_ms` (None: at the newest item).
    fn ranked(
        &self,
        tenant: &str,
        query: &str,
        date_ms: Option<i64>,
        k: usize,
        opts: &RankOptions,
    ) -> Result<Vec<SearchHit>, MemoryError> {
        self.ranked_with(tenant, query, date_ms, opts, TopK { k, explain: false })
    }

    /// [`Ranked::ranked`], the top `top.k`, explained when `top.explain` is set.
    fn ranked_with(
        &self,
        tenant: &str,
        query: &str,
        date_ms: Option<i64>,
        opts: &RankOptions,
        top: TopK,
    ) -> Result<Vec<SearchHit>, MemoryError>;
}

impl Ranked for Reader {
    fn ranked_with(
        &self,
        tenant: &str,
        query: &str,
        date_ms: Option<i64>,
        opts: &RankOptions,
        top: TopK,
    ) -> Result<Vec<SearchHit>, MemoryError> {
        let v = self.embed_queries(&[query])?;
        let q = [BatchQuery {
            tenant,
            query: Query {
                text: query,
                vector: v.row(0),
                date_ms,
            },
        }];
        self.top_batch(&q, opts, top)?.pop().unwrap()
    }
}

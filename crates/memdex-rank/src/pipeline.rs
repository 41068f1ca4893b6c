//! The ranking pipeline over one tenant: its live rows (timeline order) and dense scores,
//! then the options' [`Plan`] — first stage (dense, BM25 or their fusion, or a structure's
//! retrieval) → FragRel → structures' lift → signals → supersession → order → time stage →
//! update stage; each stage is one file of `stage`.

use std::collections::HashMap;

use memdex_score::{Block, Run};
use memdex_store::{Store, TenantSlice};

use crate::cache::TenantCache;
use crate::explain::Trace;
use crate::options::RankOptions;
use crate::query::{Dense, Query};
use crate::rows::Ranking;
use crate::stage::{At, Plan};
use crate::RankError;

/// The blocks and runs a dense scorer reads for `slices` (one block per vector block touched:
/// a segment's own vectors, or a content file's).
fn dense_request<'s>(slices: &[TenantSlice<'s>]) -> (Vec<Block<'s>>, Vec<Run>) {
    let (blocks, mut runs) = dense_batch_request(&[slices]);
    (blocks, runs.pop().unwrap_or_default())
}

/// [`dense_request`] for a batch of queries, query `q` over `slices[q]` (its tenant's live
/// rows): one block per vector block touched by any query, shared, and each query's runs.
pub(crate) fn dense_batch_request<'s>(
    slices: &[&[TenantSlice<'s>]],
) -> (Vec<Block<'s>>, Vec<Vec<Run>>) {
    let mut blocks: Vec<Block<'s>> = Vec::new();
    let mut block_of: HashMap<u64, usize> = HashMap::new();
    let mut runs = Vec::with_capacity(slices.len());
    for query_slices in slices {
        let mut mine = Vec::new();
        for v in query_slices.iter().flat_map(|s| s.vector_runs()) {
            let block = *block_of.entry(v.block.id).or_insert_with(|| {
                blocks.push(Block {
                    id: v.block.id,
                    data: v.block.data,
                });
                blocks.len() - 1
            });
            mine.push(Run {
                block,
                start: v.start,
                rows: v.rows,
            });
        }
        runs.push(mine);
    }
    (blocks, runs)
}

/// Ranks every live item of `tenant` in `store` for `query`.
pub fn rank<'s>(
    store: &'s Store,
    tenant: &str,
    query: &Query<'_>,
    dense: Dense<'_>,
    opts: &RankOptions,
    cache: &TenantCache,
) -> Result<Ranking<'s>, RankError> {
    run(store, tenant, query, dense, opts, cache, None)
}

/// How many hits a search answers, and whether each carries its per-stage scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopK {
    pub k: usize,
    pub explain: bool,
}

/// [`rank`], keeping every stage's scores: [`Trace::hits`] explains the top items.
pub fn rank_explained<'s>(
    store: &'s Store,
    tenant: &str,
    query: &Query<'_>,
    dense: Dense<'_>,
    opts: &RankOptions,
    cache: &TenantCache,
) -> Result<(Ranking<'s>, Trace), RankError> {
    let mut trace = Trace::default();
    let ranking = run(store, tenant, query, dense, opts, cache, Some(&mut trace))?;
    Ok((ranking, trace))
}

fn run<'s>(
    store: &'s Store,
    tenant: &str,
    query: &Query<'_>,
    dense: Dense<'_>,
    opts: &RankOptions,
    cache: &TenantCache,
    trace: Option<&mut Trace>,
) -> Result<Ranking<'s>, RankError> {
    let plan = Plan::of(opts);
    let rows = plan.rows(store, tenant)?;
    let dense_scores = match opts.needs_dense() {
        true => dense_scores(store, &rows.slices, query, dense, rows.len())?,
        false => Vec::new(),
    };
    let mut at = At::new(store, tenant, &rows, query, opts, cache);
    at.dense = &dense_scores;
    at.explain = trace.is_some();
    let (scores, order) = plan.run(&at, trace)?;
    Ok(Ranking {
        rows,
        scores,
        order,
    })
}

fn dense_scores(
    store: &Store,
    slices: &[TenantSlice<'_>],
    query: &Query<'_>,
    dense: Dense<'_>,
    n: usize,
) -> Result<Vec<f64>, RankError> {
    let scores = match dense {
        Dense::Scores(s) => s.to_vec(),
        Dense::Scorer(scorer) => {
            if query.vector.len() != store.dim() {
                return Err(RankError::DenseMismatch {
                    what: "query vector values",
                    expected: store.dim(),
                    got: query.vector.len(),
                });
            }
            let (blocks, runs) = dense_request(slices);
            scorer
                .score(store.dim(), query.vector, &blocks, &[runs])?
                .pop()
                .unwrap_or_default()
        }
    };
    if scores.len() != n {
        return Err(RankError::DenseMismatch {
            what: "dense scores",
            expected: n,
            got: scores.len(),
        });
    }
    Ok(scores.into_iter().map(f64::from).collect())
}

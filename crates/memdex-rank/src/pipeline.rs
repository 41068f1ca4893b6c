//! The ranking pipeline: a tenant's live rows (timeline order) → first-stage scores (dense,
//! BM25 or their fusion, or a structure's retrieval) → FragRel environments → structure
//! stages (TiM thoughts, MemTree) → recency and importance → order → time stage → update
//! stage (linked statements at the top ordered by time). Each stage
//! is a function of plain score vectors in `score`, `structures` and `time`.

use std::collections::HashMap;

use memdex_score::{Block, Run};
use memdex_store::{Store, TenantSlice};

use crate::cache::TenantCache;
use crate::columns::check_columns;
use crate::explain::Trace;
use crate::options::{FragRelScope, RankOptions, Retriever};
use crate::query::{Dense, Query};
use crate::rows::{Ranking, TenantRows};
use crate::score::{environment, first_stage, signals, Environment, FirstStage, Signals};
use crate::{time, update, RankError};

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
    mut trace: Option<&mut Trace>,
) -> Result<Ranking<'s>, RankError> {
    check_columns(store, opts)?;
    let slices = store.tenant_slices(tenant);
    if slices.is_empty() {
        return Err(RankError::no_rows(store, tenant));
    }
    let rows = TenantRows::new(slices);
    let (slices, n) = (rows.slices.as_slice(), rows.len());
    let dense_scores = match opts.retriever {
        Retriever::Bm25 => Vec::new(),
        _ => dense_scores(store, slices, query, dense, n)?,
    };
    let found = crate::structure_stages::retrieve(store, tenant, slices, query, opts, cache)?;
    let (mut scores, expansion) = match (&found, opts.retriever) {
        (Some(f), Retriever::Thoughts | Retriever::Tree) => (
            crate::structure_stages::first_stage(f, &dense_scores, opts),
            None,
        ),
        _ => {
            let at = FirstStage {
                slices,
                store,
                tenant,
                cache,
            };
            first_stage(&at, query, &dense_scores, opts)
        }
    };
    keep(&mut trace, |t| {
        t.sparse = match opts.retriever {
            Retriever::Bm25 | Retriever::Hybrid => {
                crate::score::sparse_scores(slices, query.text, opts, tenant, cache)
            }
            _ => Vec::new(),
        };
        t.dense = dense_scores.clone();
        t.expansion = expansion.clone();
        t.first = scores.clone();
    });
    if opts.fragrel.is_some() || opts.semantic.is_some() {
        let positions: Vec<u64> = slices.iter().flat_map(|s| s.positions()).copied().collect();
        let groups = opts.fragrel.map(|f| match f.scope {
            FragRelScope::Session => cache.groups(tenant, slices),
            FragRelScope::History => std::sync::Arc::new(vec![0; n]),
        });
        let adjacency = opts.semantic.map(|_| cache.semantic(tenant, slices));
        let env = Environment {
            positions: &positions,
            groups: groups.as_deref().map(Vec::as_slice),
            adjacency: adjacency.as_deref().map(Vec::as_slice),
        };
        scores = environment(&scores, &env, opts);
        keep(&mut trace, |t| t.fragrel = Some(scores.clone()));
    }
    if let Some(f) = &found {
        crate::structure_stages::lift(f, opts, &mut scores);
        keep(&mut trace, |t| t.structures = Some(scores.clone()));
    }
    if opts.recency.is_some() || opts.importance.is_some() {
        let times: Vec<i64> = slices
            .iter()
            .flat_map(|s| s.timestamps())
            .copied()
            .collect();
        let importance = opts.importance.map(|_| cache.importance(tenant, slices));
        let input = Signals {
            times: &times,
            importance: importance.as_deref().map(Vec::as_slice),
            date_ms: query.date_ms,
        };
        signals(&mut scores, &input, opts);
        keep(&mut trace, |t| t.signals = Some(scores.clone()));
    }
    if let Some(f) = &found {
        crate::structure_stages::supersede(f, &mut scores);
        keep(&mut trace, |t| t.superseded = Some(scores.clone()));
    }
    let mut order = memdex_score::fusion::rank_desc(&scores);
    keep(&mut trace, |t| t.score_order = order.clone());
    if let Some(stage) = opts.time {
        keep(&mut trace, |t| {
            t.time_flags = time::flags(slices, query, stage);
        });
        time::apply(slices, query, stage, &mut scores, &mut order);
    }
    keep(&mut trace, |t| t.time_order = order.clone());
    if let Some(stage) = opts.update {
        let at = (rows.len(), |i| rows.item(i));
        let moves = update::update_order(&mut order, &at, |i| scores[i], query, stage);
        keep(&mut trace, |t| t.update = Some(moves));
    }
    Ok(Ranking {
        rows,
        scores,
        order,
    })
}

/// Runs `f` on the trace when one is kept.
fn keep(trace: &mut Option<&mut Trace>, f: impl FnOnce(&mut Trace)) {
    if let Some(t) = trace.as_deref_mut() {
        f(t);
    }
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

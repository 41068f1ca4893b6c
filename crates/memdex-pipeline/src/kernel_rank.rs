//! The default ranking of a batch of queries in one fused kernel call (memdex-kernels'
//! `rank_topk`: dense cosine, hybrid fusion, FragRel, importance, time stage and top-k per
//! query; the CPU reference on the CPU, memdex's CUDA kernel on a GPU). The CPU computes
//! what needs the text (BM25 scores, the time stage's flags); each tenant's live rows come
//! from the ranking cache as one keyed part (f16, built once per version of its rows), so a
//! device keeps them resident between batches and each query's range lies in its tenant's part.

use std::collections::HashMap;

use rayon::prelude::*;

use memdex_kernels::{
    FragRelParams, KernelError, Kernels, RankParams, RankPart, RankQueries, TimeRule,
};
use memdex_rank::{
    flagged_first, fused_depth, update_order, FusedParams, FusedQuery, FusedTenant, FusedTime,
    Query, RankError, RankOptions, SearchHit, TenantCache,
};
use memdex_store::{ItemRef, Store};

use crate::{EngineError, Searcher};

/// memdex's kernels on some device, shared between threads (the fused ranking on the serving
/// model thread, TiM bucket ids at index time).
#[derive(Clone)]
pub struct KernelHandle(pub std::sync::Arc<dyn Kernels + Send + Sync>);

impl std::fmt::Debug for KernelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelHandle({})", self.0.device())
    }
}

/// One query of a batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchQuery<'a> {
    pub tenant: &'a str,
    pub query: Query<'a>,
}

/// Per query of a batch: its hits, or why it has none (an unknown tenant).
pub type BatchHits = Vec<Result<Vec<SearchHit>, EngineError>>;

/// The batch's per-query inputs, host-side.
#[derive(Default)]
struct Gathered {
    vectors: Vec<f32>,
    ranges: Vec<[u32; 2]>,
    sparse: Vec<f32>,
    flags: Vec<u8>,
    time: Vec<TimeRule>,
}

impl Searcher {
    /// The top `k` hits of every query of `queries` under `opts` (which the fused kernel must
    /// support: [`FusedParams::from_options`]) through `kernels`, in one kernel call.
    pub fn search_fused(
        &self,
        kernels: &dyn Kernels,
        queries: &[BatchQuery<'_>],
        k: usize,
        opts: &RankOptions,
    ) -> Result<BatchHits, EngineError> {
        rank_fused(self.store(), self.cache(), kernels, queries, k, opts)
    }

    /// Every query's whole ranking through the fused kernel ([`rank_fused_all`]).
    pub fn rank_fused_all(
        &self,
        kernels: &dyn Kernels,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Result<Vec<Result<FusedRanking<'_>, EngineError>>, EngineError> {
        rank_fused_all(self.store(), self.cache(), kernels, queries, opts)
    }
}

/// [`Searcher::search_fused`] over any store view and its ranking caches (the serving
/// runtime's views).
pub fn rank_fused(
    store: &Store,
    cache: &TenantCache,
    kernels: &dyn Kernels,
    queries: &[BatchQuery<'_>],
    k: usize,
    opts: &RankOptions,
) -> Result<BatchHits, EngineError> {
    let p = Prepared::new(store, cache, queries, opts)?;
    let top = p.gathered.run(
        kernels,
        &p.parts(store.dim()),
        &p.params,
        fused_depth(k, opts),
    )?;
    let mut out = p.unknown;
    for (j, &(qi, t)) in p.asked.iter().enumerate() {
        let ranked: Vec<(f32, usize)> = top
            .hits(j)
            .into_iter()
            .map(|(s, r)| (s, r as usize - p.starts[t]))
            .collect();
        out[qi] = Ok(p.tenants[t].hits(&ranked, &queries[qi].query, opts, k));
    }
    Ok(out)
}

/// One query's whole ranking from the fused kernel: its tenant's live items in timeline
/// order, their final scores, and the order (best first; the time stage's `front` applied).
#[derive(Debug)]
pub struct FusedRanking<'s> {
    pub items: Vec<ItemRef<'s>>,
    pub scores: Vec<f64>,
    pub order: Vec<usize>,
}

/// Every query's whole ranking through `kernels.rank_scores` (one kernel call): what
/// evaluation metrics need, which read every item's position. Per query as [`rank_fused`].
pub fn rank_fused_all<'s>(
    store: &'s Store,
    cache: &TenantCache,
    kernels: &dyn Kernels,
    queries: &[BatchQuery<'_>],
    opts: &RankOptions,
) -> Result<Vec<Result<FusedRanking<'s>, EngineError>>, EngineError> {
    let p = Prepared::new(store, cache, queries, opts)?;
    let all = p
        .gathered
        .run_scores(kernels, &p.parts(store.dim()), &p.params)?;
    let mut out: Vec<Result<FusedRanking<'s>, EngineError>> = p
        .unknown
        .into_iter()
        .map(|r| {
            r.map(|_| FusedRanking {
                items: Vec::new(),
                scores: Vec::new(),
                order: Vec::new(),
            })
        })
        .collect();
    let mut off = 0;
    for (j, &(qi, t)) in p.asked.iter().enumerate() {
        let tenant = &p.tenants[t];
        let n = tenant.rows();
        let scores: Vec<f64> = all[off..off + n].iter().map(|&v| f64::from(v)).collect();
        let mut order = memdex_score::fusion::rank_desc(&scores);
        let flags = &p.gathered.flags[off..off + n];
        if p.gathered.time[j] == TimeRule::Front && flags.iter().any(|&f| f != 0) {
            flagged_first(&mut order, |i| flags[i] != 0);
        }
        if let Some(stage) = opts.update {
            update_order(&mut order, |i| tenant.item(i), &queries[qi].query, stage);
        }
        off += n;
        out[qi] = Ok(FusedRanking {
            items: (0..n).map(|i| tenant.item(i)).collect(),
            scores,
            order,
        });
    }
    Ok(out)
}

/// A batch gathered for the kernel: its tenants' rows once each, its queries' inputs.
struct Prepared<'s> {
    params: FusedParams,
    tenants: Vec<FusedTenant<'s>>,
    starts: Vec<usize>,
    gathered: Gathered,
    /// (query, tenant) of every query whose tenant the store holds, in batch order.
    asked: Vec<(usize, usize)>,
    /// Per query: the unknown-tenant error, or a placeholder to fill.
    unknown: BatchHits,
}

impl<'s> Prepared<'s> {
    fn new(
        store: &'s Store,
        cache: &TenantCache,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Result<Prepared<'s>, EngineError> {
        let params = FusedParams::from_options(opts)?;
        let dim = store.dim();
        let mut tenants: Vec<FusedTenant<'s>> = Vec::new();
        let mut index: HashMap<&str, Option<usize>> = HashMap::new(); // None: unknown tenant
        let mut unknown: BatchHits = Vec::with_capacity(queries.len());
        let mut gathered = Gathered::default();
        let mut asked: Vec<(usize, usize)> = Vec::new();
        for (qi, bq) in queries.iter().enumerate() {
            if bq.query.vector.len() != dim {
                return Err(RankError::DenseMismatch {
                    what: "query vector values",
                    expected: dim,
                    got: bq.query.vector.len(),
                }
                .into());
            }
            let slot = match index.get(bq.tenant) {
                Some(s) => *s,
                None => {
                    let s = match FusedTenant::gather(store, bq.tenant, opts, cache) {
                        Ok(t) => {
                            tenants.push(t);
                            Some(tenants.len() - 1)
                        }
                        Err(RankError::UnknownTenant { .. }) => None,
                        Err(e) => return Err(e.into()),
                    };
                    index.insert(bq.tenant, s);
                    s
                }
            };
            match slot {
                Some(t) => {
                    asked.push((qi, t));
                    unknown.push(Ok(Vec::new()));
                }
                None => unknown.push(Err(RankError::UnknownTenant {
                    tenant: bq.tenant.to_string(),
                    store: store.dir().display().to_string(),
                }
                .into())),
            }
        }
        let starts = tenant_starts(&tenants);
        // BM25 and time flags need the text: the CPU's share, query by query on all cores
        let inputs: Vec<FusedQuery> = asked
            .par_iter()
            .map(|&(qi, t)| tenants[t].query(&queries[qi].query, opts, cache))
            .collect();
        for (&(qi, t), q) in asked.iter().zip(inputs) {
            gathered.add_query(queries[qi].query.vector, starts[t], tenants[t].rows(), q);
        }
        Ok(Prepared {
            params,
            tenants,
            starts,
            gathered,
            asked,
            unknown,
        })
    }
}

fn tenant_starts(tenants: &[FusedTenant<'_>]) -> Vec<usize> {
    tenants
        .iter()
        .scan(0, |acc, t| {
            let s = *acc;
            *acc += t.rows();
            Some(s)
        })
        .collect()
}

impl Prepared<'_> {
    /// The batch's tenants as the kernels' parts, in the order of `starts`.
    fn parts(&self, dim: usize) -> Parts<'_> {
        Parts {
            dim,
            parts: (self.tenants.iter())
                .map(|t| RankPart {
                    key: t.key(),
                    embeddings: t.embeddings(),
                    positions: t.positions(),
                    groups: t.groups(),
                    importance: &t.importance,
                })
                .collect(),
        }
    }
}

/// The batch's rows as the kernels take them.
struct Parts<'a> {
    dim: usize,
    parts: Vec<RankPart<'a>>,
}

impl Gathered {
    fn add_query(&mut self, vector: &[f32], start: usize, rows: usize, q: FusedQuery) {
        self.vectors.extend_from_slice(vector);
        self.ranges.push([start as u32, (start + rows) as u32]);
        self.sparse.extend(q.sparse);
        self.flags.extend(q.flags);
        self.time.push(match q.time {
            FusedTime::None => TimeRule::None,
            FusedTime::Front => TimeRule::Front,
            FusedTime::Boost(b) => TimeRule::Boost(b as f32),
        });
    }

    fn run(
        &self,
        kernels: &dyn Kernels,
        rows: &Parts<'_>,
        p: &FusedParams,
        k: usize,
    ) -> Result<memdex_kernels::TopKResult, EngineError> {
        self.call(kernels, p, |q, params| {
            kernels.rank_topk_parts(rows.dim, &rows.parts, q, params, k)
        })
    }

    fn run_scores(
        &self,
        kernels: &dyn Kernels,
        rows: &Parts<'_>,
        p: &FusedParams,
    ) -> Result<Vec<f32>, EngineError> {
        self.call(kernels, p, |q, params| {
            kernels.rank_scores_parts(rows.dim, &rows.parts, q, params)
        })
    }

    /// Calls `f` with the batch's queries and weights as the kernels take them.
    fn call<T>(
        &self,
        kernels: &dyn Kernels,
        p: &FusedParams,
        f: impl FnOnce(&RankQueries<'_>, &RankParams) -> Result<T, KernelError>,
    ) -> Result<T, EngineError> {
        let queries = RankQueries {
            vectors: &self.vectors,
            ranges: &self.ranges,
            sparse: &self.sparse,
            flags: &self.flags,
            time: &self.time,
        };
        let params = RankParams {
            w_dense: p.w_dense as f32,
            w_sparse: p.w_sparse as f32,
            // the scope is in the groups (FusedTenant::groups)
            fragrel: p.fragrel.map(|(alpha, w, _scope)| FragRelParams {
                alpha: alpha as f32,
                w: w as f32,
            }),
            importance: p.importance.map(|w| w as f32),
        };
        f(&queries, &params).map_err(|source| match source {
            // shapes are built here, so what is invalid is the caller's k or weights
            KernelError::Invalid(message) => EngineError::Invalid { message },
            source => EngineError::Kernel {
                device: kernels.device(),
                source,
            },
        })
    }
}

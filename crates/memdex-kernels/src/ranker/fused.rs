//! One batch through the fused kernel (`rank_topk` / `rank_scores`: dense cosine, hybrid
//! fusion, FragRel, importance, the time stage's `boost` and top-k per query, in one call).
//! The CPU computes what needs the text (BM25 scores, the time stage's flags, on all cores);
//! each tenant's live rows come from the ranking cache as one keyed part (f16, built once per
//! version of its rows), so a device keeps them resident between batches and each query's
//! range lies in its tenant's part.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use memdex_rank::{
    check_vector, fused_depth, Batch, BatchHits, BatchQuery, BatchRankings, Expand, FusedParams,
    FusedQuery, FusedTenant, FusedText, FusedTextQuery, FusedTime, FusedVocab, Plan, RankError,
    TimeWindow,
};

use super::timings::{Part, Timings};
use crate::{
    FragRelParams, KernelError, PartText, RankKernels, RankParams, RankPart, RankQueries,
    TextExpand, TextQueries, TimeRule, MAX_TEXT_EXPAND_TERMS,
};

/// The batch's per-query inputs, host-side.
#[derive(Default)]
struct Gathered {
    vectors: Vec<f32>,
    ranges: Vec<[u32; 2]>,
    sparse: Vec<f32>,
    flags: Vec<u8>,
    time: Vec<TimeRule>,
}

/// Why a fused call gave no answer: the batch itself (every ranker would refuse it), or the
/// kernels (the CPU ranker answers instead).
pub(crate) enum FusedError {
    Batch(RankError),
    Kernel(KernelError),
}

impl From<RankError> for FusedError {
    fn from(e: RankError) -> Self {
        FusedError::Batch(e)
    }
}

impl From<KernelError> for FusedError {
    fn from(e: KernelError) -> Self {
        FusedError::Kernel(e)
    }
}

/// The top `k` of every query of `b` through `kernels` in one call (the options must be
/// ones the kernel runs: [`Plan::fused`]).
pub(crate) fn top(
    kernels: &dyn RankKernels,
    b: &Batch<'_, '_>,
    k: usize,
    time: &Timings,
) -> Result<BatchHits, FusedError> {
    let p = time.add(Part::Prepare, || Prepared::new(b, Want::TopK))?;
    let host = p.how == Inputs::Host;
    if !host {
        time.text_batch();
    }
    let depth = fused_depth(k, b.opts);
    let top = time.add(Part::Kernel, || {
        p.gathered.call(&p.params, p.sparse_fused(), |q, params| {
            let parts = p.parts();
            if host {
                return kernels.rank_topk_parts(b.store.dim(), &parts, q, params, depth);
            }
            let (texts, tq) = (p.text.part_texts(), p.text.queries());
            kernels.rank_topk_text(b.store.dim(), &parts, &texts, &tq, q, params, depth)
        })
    })?;
    let _finish = time.start(Part::Finish);
    // the stages after the kernel (update) and the hits, query by query on all cores
    let asked: Vec<(usize, usize)> = (p.slots.iter().enumerate())
        .filter_map(|(qi, s)| s.map(|t| (qi, t)))
        .collect();
    let mut hits: Vec<_> = (asked.par_iter().enumerate())
        .map(|(j, &(qi, t))| {
            let ranked: Vec<(f32, usize)> = (top.hits(j).into_iter())
                .map(|(s, r)| (s, r as usize - p.starts[t]))
                .collect();
            Some(p.tenants[t].hits(&ranked, &b.queries[qi].query, b.opts, b.cache, k))
        })
        .collect();
    let mut j = 0;
    Ok(p.answers(b, |_, _| {
        j += 1;
        hits[j - 1].take().unwrap_or_default()
    }))
}

/// Every query's whole ranking through `kernels.rank_scores_parts` (one call).
pub(crate) fn all<'s>(
    kernels: &dyn RankKernels,
    b: &Batch<'_, 's>,
    time: &Timings,
) -> Result<BatchRankings<'s>, FusedError> {
    let p = time.add(Part::Prepare, || Prepared::new(b, Want::Whole))?;
    let scores = time.add(Part::Kernel, || {
        p.gathered.call(&p.params, p.sparse_fused(), |q, params| {
            kernels.rank_scores_parts(b.store.dim(), &p.parts(), q, params)
        })
    })?;
    let _finish = time.start(Part::Finish);
    let (mut off, mut j) = (0, 0);
    Ok(p.answers(b, |t, qi| {
        let tenant = &p.tenants[t];
        let n = tenant.rows();
        let s: Vec<f64> = scores[off..off + n].iter().map(|&v| f64::from(v)).collect();
        off += n;
        j += 1;
        tenant.ranking(s, &p.inputs[j - 1], &b.queries[qi].query, b.opts, b.cache)
    }))
}

/// What a batch is prepared for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Each query's top hits: the kernels compute the keyword side (BM25, query expansion)
    /// from the tenants' text columns, unless the expansion is one they do not run.
    TopK,
    /// Each query's whole ranking: host inputs.
    Whole,
}

/// Where a batch's BM25 scores and time flags are computed.
#[derive(Clone, Copy, PartialEq)]
enum Inputs {
    /// On the host, per query and row (what whole rankings need: the flags order them; and a
    /// query expansion the kernels do not run).
    Host,
    /// By the kernels, from each tenant's text columns and each query's terms and window
    /// (with `expand`: picking the expansion terms and fusing the keyword side too).
    Text { expand: Option<Expand> },
}

/// The text side of a batch for [`RankKernels::rank_topk_text`].
#[derive(Default)]
struct TextBatch {
    /// Per tenant (in `Prepared::tenants` order).
    texts: Vec<Arc<FusedText>>,
    /// Per tenant, with query expansion: its candidates.
    vocabs: Vec<Arc<FusedVocab>>,
    expand: Option<TextExpand>,
    part: Vec<u32>,
    term_offsets: Vec<u32>,
    terms: Vec<u32>,
    windows: Vec<Option<TimeWindow>>,
}

impl TextBatch {
    fn add(&mut self, part: usize, q: FusedTextQuery) {
        if self.term_offsets.is_empty() {
            self.term_offsets.push(0);
        }
        self.part.push(part as u32);
        self.terms.extend_from_slice(&q.terms);
        self.term_offsets.push(self.terms.len() as u32);
        self.windows.push(q.window);
    }

    fn part_texts(&self) -> Vec<PartText<'_>> {
        (self.texts.iter().enumerate())
            .map(|(i, t)| {
                let vocab = self.vocabs.get(i);
                // with candidates, the part is keyed apart from its text alone (text keys
                // are even: `key + 1` is free)
                let key = match vocab {
                    Some(_) if t.key != 0 => t.key + 1,
                    _ => t.key,
                };
                (t, key, vocab)
            })
            .map(|(t, key, vocab)| PartText {
                key,
                term_offsets: &t.postings.offsets,
                term_rows: &t.postings.docs,
                term_weights: &t.postings.weights,
                timestamps: &t.timestamps,
                event_offsets: &t.event_offsets,
                event_lo: &t.event_lo,
                event_hi: &t.event_hi,
                vocab_terms: vocab.map_or(&[], |v| &v.term_ids),
                vocab_vectors: vocab.map_or(&[], |v| v.vectors()),
            })
            .collect()
    }

    fn queries(&self) -> TextQueries<'_> {
        TextQueries {
            part: &self.part,
            term_offsets: if self.term_offsets.is_empty() {
                &[0]
            } else {
                &self.term_offsets
            },
            terms: &self.terms,
            windows: &self.windows,
            expand: self.expand,
        }
    }
}

/// A batch gathered for the kernel: its tenants' rows once each, its queries' inputs.
struct Prepared<'s> {
    params: FusedParams,
    how: Inputs,
    tenants: Vec<FusedTenant<'s>>,
    /// Each tenant's first row in the parts concatenated.
    starts: Vec<usize>,
    /// Per query: its tenant's index in `tenants` (None: a tenant the store does not hold).
    slots: Vec<Option<usize>>,
    /// With [`Inputs::Host`]: the host-computed inputs of the queries with a tenant, in
    /// batch order.
    inputs: Vec<FusedQuery>,
    /// With [`Inputs::Text`]: the tenants' text columns and the queries' terms and windows.
    text: TextBatch,
    gathered: Gathered,
}

impl<'s> Prepared<'s> {
    fn new(b: &Batch<'_, 's>, want: Want) -> Result<Prepared<'s>, RankError> {
        let params = Plan::of(b.opts).fused()?;
        let text = params.device_expansion(b.opts, MAX_TEXT_EXPAND_TERMS);
        let how = match (want, text) {
            (Want::TopK, Some(expand)) => Inputs::Text { expand },
            _ => Inputs::Host,
        };
        let mut tenants: Vec<FusedTenant<'s>> = Vec::new();
        let mut index: HashMap<&str, Option<usize>> = HashMap::new(); // None: unknown tenant
        let mut slots = Vec::with_capacity(b.queries.len());
        for bq in b.queries {
            check_vector(bq.query.vector, b.store.dim())?;
            let slot = match index.get(bq.tenant) {
                Some(s) => *s,
                None => {
                    let s = match FusedTenant::gather(b.store, bq.tenant, b.opts, b.cache) {
                        Ok(t) => {
                            tenants.push(t);
                            Some(tenants.len() - 1)
                        }
                        Err(RankError::UnknownTenant { .. } | RankError::Damaged { .. }) => None,
                        Err(e) => return Err(e),
                    };
                    index.insert(bq.tenant, s);
                    s
                }
            };
            slots.push(slot);
        }
        let starts = tenant_starts(&tenants);
        let asked: Vec<(&BatchQuery<'_>, usize)> = (b.queries.iter().zip(&slots))
            .filter_map(|(q, s)| s.map(|t| (q, t)))
            .collect();
        let mut gathered = Gathered::default();
        let (mut inputs, mut text) = (Vec::new(), TextBatch::default());
        if how == Inputs::Host {
            // BM25 and time flags per row: the CPU's share, query by query on all cores
            inputs = (asked.par_iter())
                .map(|&(q, t)| tenants[t].query(&q.query, b.opts, b.cache))
                .collect();
            for (&(q, t), i) in asked.iter().zip(&inputs) {
                gathered.add_query(q.query.vector, starts[t], tenants[t].rows(), i.time);
                gathered.add_host_inputs(i);
            }
        } else if let Inputs::Text { expand } = how {
            text.texts = (tenants.iter()).map(|t| t.text(b.opts, b.cache)).collect();
            if let Some(x) = expand {
                text.vocabs = tenants.iter().map(|t| t.vocab(b.cache)).collect();
                text.expand = Some(TextExpand {
                    terms: x.terms,
                    weight: x.weight as f32,
                });
            }
            // each query's terms and window (its text analysed), on all cores
            let tqs: Vec<FusedTextQuery> = (asked.par_iter())
                .map(|&(q, t)| tenants[t].text_query(&text.texts[t], &q.query, b.opts))
                .collect();
            for (&(q, t), tq) in asked.iter().zip(tqs) {
                gathered.add_query(q.query.vector, starts[t], tenants[t].rows(), tq.time);
                text.add(t, tq);
            }
        }
        Ok(Prepared {
            params,
            how,
            tenants,
            starts,
            slots,
            inputs,
            text,
            gathered,
        })
    }

    /// Whether the kernels add the queries' keyword side as it is (fused already: by the host
    /// with query expansion, or by the kernels' own expansion).
    fn sparse_fused(&self) -> bool {
        match self.how {
            Inputs::Host => self.params.expand.is_some(),
            Inputs::Text { expand } => expand.is_some(),
        }
    }

    /// The batch's tenants as the kernels' parts, in the order of `starts`.
    fn parts(&self) -> Vec<RankPart<'_>> {
        (self.tenants.iter())
            .map(|t| RankPart {
                key: t.key(),
                embeddings: t.embeddings(),
                positions: t.positions(),
                groups: t.groups(),
                importance: &t.importance,
            })
            .collect()
    }

    /// Every query's answer in batch order: `answer(tenant, query)` for those with a tenant
    /// (called in batch order), the unknown-tenant error for the others.
    fn answers<T>(
        &self,
        b: &Batch<'_, '_>,
        mut answer: impl FnMut(usize, usize) -> T,
    ) -> Vec<Result<T, RankError>> {
        (self.slots.iter().enumerate())
            .map(|(qi, slot)| match slot {
                Some(t) => Ok(answer(*t, qi)),
                None => Err(RankError::no_rows(b.store, b.queries[qi].tenant)),
            })
            .collect()
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

impl Gathered {
    fn add_query(&mut self, vector: &[f32], start: usize, rows: usize, time: FusedTime) {
        self.vectors.extend_from_slice(vector);
        self.ranges.push([start as u32, (start + rows) as u32]);
        self.time.push(match time {
            FusedTime::None => TimeRule::None,
            FusedTime::Front => TimeRule::Front,
            FusedTime::Boost(b) => TimeRule::Boost(b as f32),
        });
    }

    fn add_host_inputs(&mut self, q: &FusedQuery) {
        self.sparse.extend_from_slice(&q.sparse);
        self.flags.extend_from_slice(&q.flags);
    }

    /// Calls `f` with the batch's queries and weights as the kernels take them.
    fn call<T>(
        &self,
        p: &FusedParams,
        sparse_fused: bool,
        f: impl FnOnce(&RankQueries<'_>, &RankParams) -> Result<T, KernelError>,
    ) -> Result<T, KernelError> {
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
            sparse_fused,
            // the scope is in the groups (FusedTenant::groups)
            fragrel: p.fragrel.map(|(alpha, w, _scope)| FragRelParams {
                alpha: alpha as f32,
                w: w as f32,
            }),
            importance: p.importance.map(|w| w as f32),
        };
        f(&queries, &params)
    }
}

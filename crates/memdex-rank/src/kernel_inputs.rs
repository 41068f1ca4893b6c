//! The CPU side of the fused default ranking (memdex-kernels' `rank_topk`, one kernel per batch
//! of queries on a device): which options it can run ([`crate::Plan::fused`]), each
//! tenant's live rows gathered once ([`FusedTenant`]: embeddings, timeline, importance) and
//! each query's CPU-computed inputs ([`FusedTenant::query`]: BM25 scores, time-stage flags).
//! The stages it stands for are [`crate::rank`]'s with the same options; the kernels' CPU
//! reference states them exactly.

use std::collections::HashMap;
use std::sync::Arc;

use half::f16;
use memdex_store::{ItemRef, Store};

use crate::cache::TenantCache;
use crate::kernel_rows::{FusedRows, FusedText, FusedVocab};
use crate::options::{FragRelScope, RankOptions, TimeMode, TimeStage};
use crate::query::Query;
use crate::rows::{Ranking, TenantRows};
use crate::stage::time::{self, TimeWindow};
use crate::stage::{At, Plan};
use crate::{score, RankError, SearchHit};

/// How many hits to ask the kernel for when `k` are wanted: the most a stage after the
/// kernel reads (the update stage reads its bar, `2 × window`): [`Plan::depth`].
pub fn fused_depth(k: usize, opts: &RankOptions) -> usize {
    Plan::of(opts).depth(k)
}

/// How the time stage treats one query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FusedTime {
    None,
    /// Flagged rows first.
    Front,
    /// Flagged rows' scores × (1 + factor).
    Boost(f64),
}

/// One query's inputs computed on the CPU, one entry per live row of its tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedQuery {
    pub sparse: Vec<f32>,
    pub flags: Vec<u8>,
    pub time: FusedTime,
}

/// One query's inputs when the device computes BM25 and the time flags itself from the
/// tenant's [`FusedText`]: no per-row work on the CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedTextQuery {
    /// The query's terms as the tenant's term ids (repeats kept, unknown terms dropped).
    pub terms: Vec<u32>,
    /// The rows the time stage prefers (None: it does nothing).
    pub window: Option<TimeWindow>,
    pub time: FusedTime,
}

/// The kernel's rule for a query whose time stage prefers `window`'s rows.
fn time_rule(window: Option<TimeWindow>, stage: Option<TimeStage>) -> FusedTime {
    match (window, stage) {
        (Some(TimeWindow::Range { .. }), Some(s)) => match s.mode {
            TimeMode::Front => FusedTime::Front,
            TimeMode::Boost(b) => FusedTime::Boost(b),
        },
        (Some(TimeWindow::Dated), Some(s)) => FusedTime::Boost(s.when_boost),
        _ => FusedTime::None,
    }
}

/// One tenant's live rows in timeline order, as the fused kernel reads them.
#[derive(Debug)]
pub struct FusedTenant<'s> {
    name: String,
    store: &'s Store,
    rows: TenantRows<'s>,
    /// The cache's rows for the kernels (shared, not copied).
    fused: Arc<FusedRows>,
    /// FragRel's scope is the session (else the whole history is one group).
    session: bool,
    /// The tenant cache's importance values (shared, not copied).
    pub importance: Arc<Vec<u8>>,
}

impl<'s> FusedTenant<'s> {
    /// Gathers `tenant`'s live rows of `store` (refused like [`crate::rank`]: unknown tenant,
    /// columns the options need but the store lacks).
    pub fn gather(
        store: &'s Store,
        tenant: &str,
        opts: &RankOptions,
        cache: &TenantCache,
    ) -> Result<FusedTenant<'s>, RankError> {
        let rows = Plan::of(opts).rows(store, tenant)?;
        Ok(FusedTenant {
            name: tenant.to_string(),
            store,
            importance: cache.importance(tenant, &rows.slices, opts.asking),
            fused: cache.fused_rows(tenant, &rows.slices, store.dim()),
            session: opts.fragrel.map(|f| f.scope) == Some(FragRelScope::Session),
            rows,
        })
    }

    /// Names these rows with these groups for as long as they do not change (see
    /// [`FusedRows::key`]).
    pub fn key(&self) -> u64 {
        self.fused.key + u64::from(!self.session)
    }

    /// The rows' embeddings, `rows × dim` f16, timeline order.
    pub fn embeddings(&self) -> &[f16] {
        &self.fused.embeddings
    }

    pub fn positions(&self) -> &[u32] {
        &self.fused.positions
    }

    /// FragRel scope groups: runs of one session, or one group for the whole history.
    pub fn groups(&self) -> &[u32] {
        if self.session {
            &self.fused.session_groups
        } else {
            &self.fused.one_group
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Live rows.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// The item at timeline index `i` (< [`Self::rows`]).
    pub fn item(&self, i: usize) -> ItemRef<'s> {
        self.rows.item(i)
    }

    /// The `k` hits of `query` from the kernel's `(score, timeline index)` pairs, best first
    /// (it was asked for [`fused_depth`] of them), after the stages the host runs after the
    /// kernel.
    pub fn hits(
        &self,
        ranked: &[(f32, usize)],
        query: &Query<'_>,
        opts: &RankOptions,
        cache: &TenantCache,
        k: usize,
    ) -> Vec<SearchHit> {
        let score: HashMap<usize, f32> = ranked.iter().map(|&(s, i)| (i, s)).collect();
        let score_of = |i| f64::from(score.get(&i).copied().unwrap_or(0.0));
        let mut order: Vec<usize> = ranked.iter().map(|&(_, i)| i).collect();
        self.after_kernel(query, opts, cache, &score_of, &mut order);
        (order.iter().take(k).enumerate())
            .map(|(r, &i)| SearchHit::new(r + 1, score_of(i) as f32, self.item(i)))
            .collect()
    }

    /// The whole ranking of `query` from the kernel's final `scores` (one per row, timeline
    /// order; the time stage's `boost` applied, its `front` not — the kernel's top-k applies it,
    /// its whole scores leave it to this order), then the stages the host runs after the kernel.
    pub fn ranking(
        &self,
        scores: Vec<f64>,
        inputs: &FusedQuery,
        query: &Query<'_>,
        opts: &RankOptions,
        cache: &TenantCache,
    ) -> Ranking<'s> {
        let mut order = memdex_score::fusion::rank_desc(&scores);
        let flags = &inputs.flags;
        if inputs.time == FusedTime::Front && flags.iter().any(|&f| f != 0) {
            crate::flagged_first(&mut order, |i| flags[i] != 0);
        }
        self.after_kernel(query, opts, cache, &|i| scores[i], &mut order);
        Ranking {
            rows: self.rows.clone(),
            scores,
            order,
        }
    }

    /// The options' stages that run after the kernel (the update stage), over `order`.
    fn after_kernel(
        &self,
        query: &Query<'_>,
        opts: &RankOptions,
        cache: &TenantCache,
        score: &dyn Fn(usize) -> f64,
        order: &mut Vec<usize>,
    ) {
        let at = At::new(self.store, &self.name, &self.rows, query, opts, cache);
        Plan::of(opts).after_kernel(&at, score, order);
    }

    /// A query's BM25 scores (with query expansion: the whole keyword share, see
    /// [`FusedParams::expand`]) and time-stage flags over these rows.
    pub fn query(&self, query: &Query<'_>, opts: &RankOptions, cache: &TenantCache) -> FusedQuery {
        let slices = &self.rows.slices;
        let mut sparse = score::sparse_scores(slices, query.text, opts, &self.name, cache);
        if let Some(x) = opts.expand {
            let at = score::FirstStage {
                slices,
                store: self.store,
                tenant: &self.name,
                cache,
            };
            sparse = score::keyword_share(&at, query, &sparse, opts.weights.1, &x);
        }
        let sparse = sparse.into_iter().map(|s| s as f32).collect();
        let newest = self.rows.newest();
        let window = opts.time.and_then(|st| time::window(newest, query, st));
        let flags = match window {
            None => vec![0; self.rows()],
            Some(w) => (self.rows.slices.iter())
                .flat_map(|s| (0..s.rows).map(move |i| w.flags(s.timestamps()[i], s.events(i))))
                .map(u8::from)
                .collect(),
        };
        FusedQuery {
            sparse,
            flags,
            time: time_rule(window, opts.time),
        }
    }

    /// These rows' text side for a device that computes BM25 and the time flags itself.
    pub fn text(&self, opts: &RankOptions, cache: &TenantCache) -> Arc<FusedText> {
        cache.fused_text(&self.name, opts.bm25, &self.rows.slices)
    }

    /// These rows' query-expansion candidates for a device that picks the expansion terms
    /// itself (over the memdex-flavour [`Self::text`]: see [`FusedParams::device_expansion`]).
    pub fn vocab(&self, cache: &TenantCache) -> Arc<FusedVocab> {
        cache.fused_vocab(&self.name, &self.rows.slices, self.store)
    }

    /// A query's inputs for a device computing BM25 and the time flags from `text` (these
    /// rows' [`Self::text`]): its term ids and time window, no per-row work.
    pub fn text_query(
        &self,
        text: &FusedText,
        query: &Query<'_>,
        opts: &RankOptions,
    ) -> FusedTextQuery {
        let window = opts
            .time
            .and_then(|st| time::window(text.newest, query, st));
        FusedTextQuery {
            terms: score::query_term_ids(query.text, text.flavour, &text.postings),
            window,
            time: time_rule(window, opts.time),
        }
    }
}

//! The score stages of the pipeline, each a function over plain vectors in timeline order:
//! first stage (dense, BM25, fusion), FragRel environments (context and semantic relation),
//! Mimir's signals (recency, importance).

use memdex_score::bm25::Bm25Postings;
use memdex_score::fragrel::{relation_scores, FragRel};
use memdex_score::fusion::{hybrid, min_max, rrf};
use memdex_score::signals::recency_factor;
use memdex_score::text::Analyzer;
use memdex_store::{Store, TenantSlice};

use crate::cache::TenantCache;
use crate::expand::expansion_terms;
use crate::options::{Bm25Flavour, Expand, Fusion, RankOptions, Retriever};
use crate::query::Query;

/// What the first stage reads besides the options: the tenant's live rows, its caches and
/// the store (the word table).
pub(crate) struct FirstStage<'a, 's> {
    pub slices: &'a [TenantSlice<'s>],
    pub store: &'s Store,
    pub tenant: &'a str,
    pub cache: &'a TenantCache,
}

/// First-stage scores: `dense` (one per row, empty when the retriever is BM25), BM25 over the
/// tenant's keys, or their fusion (with query expansion's signal when it is on), and the
/// expansion signal when it took part.
pub(crate) fn first_stage(
    at: &FirstStage<'_, '_>,
    query: &Query<'_>,
    dense: &[f64],
    opts: &RankOptions,
) -> (Vec<f64>, Option<Vec<f64>>) {
    let (slices, tenant, cache) = (at.slices, at.tenant, at.cache);
    let sparse = || sparse_scores(slices, query.text, opts, tenant, cache);
    match opts.retriever {
        // the structures' retrievers are scored in `structures`; dense is their fallback
        Retriever::Dense | Retriever::Thoughts | Retriever::Tree => (dense.to_vec(), None),
        Retriever::Bm25 => (sparse(), None),
        Retriever::Hybrid => {
            let mut fused = fuse(dense, &sparse(), opts);
            let expansion = opts.expand.and_then(|x| {
                let e = expansion_scores(slices, at.store, query, &x, tenant, cache)?;
                add_expansion(&mut fused, &e, x.weight);
                Some(e)
            });
            (fused, expansion)
        }
    }
}

/// The expansion signal of every live row (timeline order): BM25 of the expansion terms, each
/// weighted by its cosine (None: no candidate term; the signal would be flat).
fn expansion_scores(
    slices: &[TenantSlice<'_>],
    store: &Store,
    query: &Query<'_>,
    x: &Expand,
    tenant: &str,
    cache: &TenantCache,
) -> Option<Vec<f64>> {
    let bm25 = cache.bm25(tenant, Bm25Flavour::Memdex, slices);
    let vocab = cache.vocab(tenant, &bm25, store);
    let terms = expansion_terms(&vocab, query.text, query.vector, x);
    if terms.is_empty() {
        return None;
    }
    Some(bm25.scores_weighted(terms.iter().map(|(t, w)| (t.as_str(), *w))))
}

/// `scores + weight · minmax(expansion)`: query expansion's share of the fusion.
fn add_expansion(scores: &mut [f64], expansion: &[f64], weight: f64) {
    for (f, v) in scores.iter_mut().zip(min_max(expansion)) {
        *f += weight * v;
    }
}

/// The hybrid's keyword share with query expansion: `w_sparse · minmax(sparse) + weight ·
/// minmax(expansion)`, what the fused kernels add to their dense share when the host
/// computes the keyword side (the first stage's min-max fusion, less its dense share).
pub(crate) fn keyword_share(
    at: &FirstStage<'_, '_>,
    query: &Query<'_>,
    sparse: &[f64],
    w_sparse: f64,
    x: &Expand,
) -> Vec<f64> {
    let mut share: Vec<f64> = min_max(sparse).into_iter().map(|s| w_sparse * s).collect();
    let (slices, tenant, cache) = (at.slices, at.tenant, at.cache);
    if let Some(e) = expansion_scores(slices, at.store, query, x, tenant, cache) {
        add_expansion(&mut share, &e, x.weight);
    }
    share
}

/// BM25 scores of the tenant's live rows (timeline order) for `text`, in the options' flavour.
pub(crate) fn sparse_scores(
    slices: &[TenantSlice<'_>],
    text: &str,
    opts: &RankOptions,
    tenant: &str,
    cache: &TenantCache,
) -> Vec<f64> {
    let bm = cache.bm25(tenant, opts.bm25, slices);
    match opts.bm25 {
        Bm25Flavour::Official => bm.scores(text),
        Bm25Flavour::Memdex => {
            let terms = Analyzer::english().terms(text);
            bm.scores_terms(terms.iter().map(String::as_str))
        }
    }
}

/// A query's terms as `postings`' term ids, analysed as the flavour's index was (repeats
/// kept, terms the index lacks dropped): [`sparse_scores`] is the sum of their postings.
pub(crate) fn query_term_ids(
    text: &str,
    flavour: Bm25Flavour,
    postings: &Bm25Postings,
) -> Vec<u32> {
    match flavour {
        Bm25Flavour::Official => postings.term_ids(memdex_score::bm25::split_space(text)),
        Bm25Flavour::Memdex => {
            let terms = Analyzer::english().terms(text);
            postings.term_ids(terms.iter().map(String::as_str))
        }
    }
}

/// The hybrid's fusion of dense and sparse scores.
fn fuse(dense: &[f64], sparse: &[f64], opts: &RankOptions) -> Vec<f64> {
    match opts.fusion {
        Fusion::MinMax => hybrid(dense, sparse, opts.weights.0, opts.weights.1),
        Fusion::Rrf { k } => rrf(&[dense, sparse], k),
    }
}

/// What FragRel's relations read, per row in timeline order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Environment<'a> {
    pub positions: &'a [u64],
    /// Scope groups of the context relation (None: that relation is off).
    pub groups: Option<&'a [u64]>,
    /// Symmetric semantic adjacency (None: that relation is off).
    pub adjacency: Option<&'a [Vec<(u32, f32)>]>,
}

/// FragRel: `s + α·context environment` and/or `+ β·semantic environment`, both computed
/// from the same first-stage scores.
pub(crate) fn environment(scores: &[f64], env: &Environment<'_>, opts: &RankOptions) -> Vec<f64> {
    let context = match (opts.fragrel, env.groups) {
        (Some(f), Some(groups)) => {
            let p = FragRel {
                alpha: f.alpha,
                w: f.w,
            };
            Some(relation_scores(scores, env.positions, groups, p))
        }
        _ => None,
    };
    let semantic = match (opts.semantic, env.adjacency) {
        (Some(beta), Some(adj)) => Some(semantic_env(scores, adj, beta)),
        _ => None,
    };
    match (context, semantic) {
        (Some(c), Some(sem)) => c
            .iter()
            .zip(&sem)
            .zip(scores)
            .map(|((c, sem), s)| c + sem - s)
            .collect(),
        (Some(c), None) => c,
        (None, Some(sem)) => sem,
        (None, None) => scores.to_vec(),
    }
}

/// `s_i + beta · Σ_j w_ij s_j / Σ_j w_ij` over the semantic adjacency (FragRel, semantic
/// relation); items without neighbours keep their score.
fn semantic_env(scores: &[f64], adj: &[Vec<(u32, f32)>], beta: f64) -> Vec<f64> {
    scores
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let (num, den) = adj.get(i).map_or((0.0, 0.0), |a| {
                a.iter().fold((0.0, 0.0), |(n, d), &(j, w)| {
                    let sj = scores.get(j as usize).copied().unwrap_or(0.0);
                    (n + f64::from(w) * sj, d + f64::from(w))
                })
            });
            if den > 0.0 {
                s + beta * num / den
            } else {
                s
            }
        })
        .collect()
}

/// What Mimir's signals read, per row in timeline order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signals<'a> {
    /// Session dates (ms).
    pub times: &'a [i64],
    /// Importance 1..10 (None: that signal is off).
    pub importance: Option<&'a [u8]>,
    /// When the question is asked (default: the newest row's date).
    pub date_ms: Option<i64>,
}

/// Recency and importance: multiplicative, so negative scores (cosines can be) are first
/// shifted up by the minimum, which keeps the order.
pub(crate) fn signals(scores: &mut [f64], input: &Signals<'_>, opts: &RankOptions) {
    let lo = scores.iter().copied().fold(f64::INFINITY, f64::min);
    if lo < 0.0 {
        scores.iter_mut().for_each(|s| *s -= lo);
    }
    if let Some(max) = opts.recency {
        let first = input.times.iter().copied().min().unwrap_or(0);
        let newest = input.times.iter().copied().max().unwrap_or(0);
        let now = input.date_ms.unwrap_or(newest).max(first);
        let span = now.saturating_sub(first).max(1) as f64;
        for (s, &t) in scores.iter_mut().zip(input.times) {
            *s *= recency_factor(now.saturating_sub(t) as f64 / span, max);
        }
    }
    if let (Some(w), Some(imp)) = (opts.importance, input.importance) {
        // one factor per importance value (1..=10 from the heuristic), not a log10 per row
        let weigh = |i: u8| 1.0 + w * f64::from(i).log10();
        let table: [f64; 11] = std::array::from_fn(|i| weigh(i as u8));
        for (s, &i) in scores.iter_mut().zip(imp) {
            *s *= table
                .get(usize::from(i))
                .copied()
                .unwrap_or_else(|| weigh(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{FragRelScope, FragRelStage};

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn semantic_environment_is_the_weighted_mean_of_neighbours() {
        let scores = [1.0, 0.0, 0.5, 0.2];
        // 0–1 (w 1.0), 0–2 (w 0.5); item 3 has no neighbours
        let adj = vec![
            vec![(1, 1.0), (2, 0.5)],
            vec![(0, 1.0)],
            vec![(0, 0.5)],
            vec![],
        ];
        let want = [
            1.0 + 0.5 * (0.0 + 0.25) / 1.5,
            0.0 + 0.5 * 1.0,
            0.5 + 0.5 * 1.0,
            0.2,
        ];
        close(&semantic_env(&scores, &adj, 0.5), &want);
    }

    #[test]
    fn both_relations_add_their_environments_to_the_same_first_stage() {
        let scores = [1.0, 0.0, 0.5];
        let positions = [0, 1, 2];
        let groups = [0, 0, 1];
        let adj = vec![vec![(2, 1.0)], vec![], vec![(0, 1.0)]];
        let opts = RankOptions {
            fragrel: Some(FragRelStage {
                alpha: 0.5,
                w: 0.8,
                scope: FragRelScope::Session,
            }),
            semantic: Some(0.1),
            ..RankOptions::dense()
        };
        let env = Environment {
            positions: &positions,
            groups: Some(&groups),
            adjacency: Some(&adj),
        };
        // context: items 0 and 1 share a session (one step apart), item 2 is alone
        let want = [
            1.0 + 0.5 * 0.0 + 0.1 * 0.5,
            0.0 + 0.5 * 1.0,
            0.5 + 0.1 * 1.0,
        ];
        close(&environment(&scores, &env, &opts), &want);
        let ctx_only = RankOptions {
            semantic: None,
            ..opts
        };
        close(&environment(&scores, &env, &ctx_only), &[1.0, 0.5, 0.5]);
    }

    #[test]
    fn signals_shift_negatives_then_weigh_recency_and_importance() {
        let opts = RankOptions {
            recency: Some(0.5),
            importance: Some(1.0),
            ..RankOptions::dense()
        };
        let mut scores = vec![-1.0, 1.0, 0.0];
        let input = Signals {
            times: &[0, 50, 100],
            importance: Some(&[1, 10, 1]),
            date_ms: Some(100),
        };
        signals(&mut scores, &input, &opts);
        let r = |age: f64| recency_factor(age, 0.5);
        // shifted by +1: [0, 2, 1]; importance ×1 or ×2
        close(&scores, &[0.0, 2.0 * r(0.5) * 2.0, 1.0 * r(0.0)]);
        // extreme dates saturate instead of overflowing
        let mut s = vec![1.0, 1.0];
        let extreme = Signals {
            times: &[i64::MIN, i64::MAX],
            importance: None,
            date_ms: Some(i64::MAX),
        };
        signals(&mut s, &extreme, &opts);
        assert!(s.iter().all(|v| v.is_finite()), "{s:?}");
    }

    #[test]
    fn rrf_and_minmax_fusion_follow_the_options() {
        let dense = [0.9, 0.1, 0.5];
        let sparse = [0.0, 3.0, 1.0];
        let minmax = RankOptions {
            retriever: Retriever::Hybrid,
            ..RankOptions::dense()
        };
        close(
            &fuse(&dense, &sparse, &minmax),
            &hybrid(&dense, &sparse, 0.5, 0.5),
        );
        let by_rank = RankOptions {
            fusion: Fusion::Rrf { k: 60.0 },
            ..minmax
        };
        let fused = fuse(&dense, &sparse, &by_rank);
        // each item is first on one side or in the middle on both: 1/61+1/63 vs 2/62
        close(
            &fused,
            &[1.0 / 61.0 + 1.0 / 63.0, 1.0 / 63.0 + 1.0 / 61.0, 2.0 / 62.0],
        );
    }
}

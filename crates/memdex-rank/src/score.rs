//! The keyword side of the first stage, shared by the CPU pipeline and the fused kernels'
//! host inputs: BM25 over a tenant's keys, query expansion's signal and their share of the
//! hybrid fusion.

use memdex_score::bm25::Bm25Postings;
use memdex_score::fusion::min_max;
use memdex_score::text::Analyzer;
use memdex_store::{Store, TenantSlice};

use crate::cache::TenantCache;
use crate::expand::expansion_terms;
use crate::options::{Bm25Flavour, Expand, RankOptions};
use crate::query::Query;

/// What the first stage reads besides the options: the tenant's live rows, its caches and
/// the store (the word table).
pub(crate) struct FirstStage<'a, 's> {
    pub slices: &'a [TenantSlice<'s>],
    pub store: &'s Store,
    pub tenant: &'a str,
    pub cache: &'a TenantCache,
}

/// The expansion signal of every live row (timeline order): BM25 of the expansion terms, each
/// weighted by its cosine (None: no candidate term; the signal would be flat).
pub(crate) fn expansion_scores(
    at: &FirstStage<'_, '_>,
    query: &Query<'_>,
    x: &Expand,
) -> Option<Vec<f64>> {
    let bm25 = at.cache.bm25(at.tenant, Bm25Flavour::Memdex, at.slices);
    let vocab = at.cache.vocab(at.tenant, &bm25, at.store);
    let terms = expansion_terms(&vocab, query.text, query.vector, x);
    if terms.is_empty() {
        return None;
    }
    Some(bm25.scores_weighted(terms.iter().map(|(t, w)| (t.as_str(), *w))))
}

/// `scores + weight · minmax(expansion)`: query expansion's share of the fusion.
pub(crate) fn add_expansion(scores: &mut [f64], expansion: &[f64], weight: f64) {
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
    if let Some(e) = expansion_scores(at, query, x) {
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

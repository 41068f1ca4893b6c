//! Query expansion by embedding neighbours (Kuzi, Shtok & Kurland, CIKM 2016), for evidence
//! that shares no word with the question ("outdoor activities" → a turn about surfing): the
//! tenant's terms whose word vectors (the store's word table, from the same model) lie
//! nearest the question's vector are scored by BM25 over the tenant's keys, each weighted by
//! its cosine, and that third signal joins the hybrid's fusion at a small weight.
//!
//! Candidates are the tenant's own terms that are rare in its history (in at most
//! [`MAX_DF`] of its rows: a term in every other turn says nothing), at least three letters
//! long, and not already a term of the question.

use std::collections::HashSet;

use memdex_score::bm25::Bm25;
use memdex_score::text::{Analyzer, MIN_EXPANSION_CHARS};
use memdex_store::{Store, TenantSlice};

use crate::cache::TenantCache;
use crate::options::{Bm25Flavour, Expand};
use crate::query::Query;

/// The largest share of a tenant's rows a candidate term may occur in (the replay's 10 %).
pub(crate) const MAX_DF: f64 = 0.1;

/// A tenant's expansion candidates: its rare terms that have a vector in the word table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Vocab {
    /// (term, where its vector is in the word table)
    pub terms: Vec<(Box<str>, (u32, u32))>,
}

impl Vocab {
    /// The candidates of the tenant whose memdex BM25 index is `bm25`.
    pub(crate) fn build(bm25: &Bm25, store: &Store) -> Vocab {
        let table = store.words();
        let most = ((bm25.len() as f64 * MAX_DF).floor() as usize).max(1);
        let mut terms: Vec<(Box<str>, (u32, u32))> = bm25
            .document_frequencies()
            .filter(|&(t, df)| df <= most && t.chars().count() >= MIN_EXPANSION_CHARS)
            .filter_map(|(t, _)| Some((t.into(), table.locate(t)?)))
            .collect();
        // a fixed order: ties between equal cosines break the same way in every process
        terms.sort_unstable();
        Vocab { terms }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.terms.iter().map(|(t, _)| 32 + t.len()).sum()
    }
}

/// The expansion terms of a query: the `x.terms` candidates nearest to `vector` (positive
/// cosine only), each with its cosine, nearest first.
pub(crate) fn expansion_terms(
    vocab: &Vocab,
    store: &Store,
    text: &str,
    vector: &[f32],
    x: &Expand,
) -> Vec<(String, f64)> {
    let own: HashSet<String> = Analyzer::english().terms(text).into_iter().collect();
    let table = store.words();
    let mut scored: Vec<(f32, usize)> = (vocab.terms.iter().enumerate())
        .filter(|(_, (t, _))| !own.contains(&**t))
        .map(|(i, (_, at))| (dot(vector, table.vector_at(*at)), i))
        .filter(|(c, _)| *c > 0.0)
        .collect();
    let m = x.terms.min(scored.len());
    if m == 0 {
        return Vec::new();
    }
    let by_cosine = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    scored.select_nth_unstable_by(m - 1, by_cosine);
    scored.truncate(m);
    scored.sort_unstable_by(by_cosine);
    (scored.into_iter())
        .map(|(c, i)| (vocab.terms[i].0.to_string(), f64::from(c)))
        .collect()
}

/// The expansion signal of every live row (timeline order): BM25 of the expansion terms, each
/// weighted by its cosine (None: no candidate term; the signal would be flat).
pub(crate) fn expansion_scores(
    slices: &[TenantSlice<'_>],
    store: &Store,
    query: &Query<'_>,
    x: &Expand,
    tenant: &str,
    cache: &TenantCache,
) -> Option<Vec<f64>> {
    let bm25 = cache.bm25(tenant, Bm25Flavour::Memdex, slices);
    let vocab = cache.vocab(tenant, slices, store);
    let terms = expansion_terms(&vocab, store, query.text, query.vector, x);
    if terms.is_empty() {
        return None;
    }
    Some(bm25.scores_weighted(terms.iter().map(|(t, w)| (t.as_str(), *w))))
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

//! Query expansion on the kernels' text path (memdex-rank's `expand` and `keyword_share`):
//! each query's expansion terms are its part's candidate terms ([`PartText::vocab_terms`])
//! whose word vectors lie nearest its own vector (positive cosine, not a term of the query),
//! each weighted by its cosine; their BM25 is a second keyword column, and the query's keyword
//! share is `w_sparse · minmax(bm25) + weight · minmax(expansion)` (`w_sparse · minmax(bm25)`
//! when no candidate qualifies). This module states it on the CPU; `query_inputs.cu` does the
//! same on the device (the cosines summed in another order: a near tie between two
//! candidates may pick the other one, so the checks compare by tolerance).

use memdex_score::fusion::min_max;

use crate::text::{add_postings, PartText, TextExpand};

/// The query's expansion terms: `(term id, cosine)`, nearest first (ties: the earlier
/// candidate), at most `x.terms`, cosine > 0, none of `own` (the query's term ids).
pub fn expansion_terms(
    t: &PartText<'_>,
    own: &[u32],
    vector: &[f32],
    x: TextExpand,
) -> Vec<(u32, f32)> {
    let dim = vector.len();
    let mut found: Vec<(f32, usize)> = (t.vocab_terms.iter().enumerate())
        .filter(|(_, term)| !own.contains(term))
        .map(|(i, _)| {
            let row = &t.vocab_vectors[i * dim..(i + 1) * dim];
            let c: f32 = (vector.iter().zip(row)).map(|(a, b)| a * b.to_f32()).sum();
            (c, i)
        })
        .filter(|&(c, _)| c > 0.0)
        .collect();
    found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    found.truncate(x.terms);
    (found.into_iter())
        .map(|(c, i)| (t.vocab_terms[i], c))
        .collect()
}

/// Turns `qs` (the query's BM25 over the rows of its range, from part row `base`) into its
/// keyword share with expansion (see the module docs).
pub(crate) fn expand_reference(
    t: &PartText<'_>,
    own: &[u32],
    vector: &[f32],
    x: TextExpand,
    w_sparse: f32,
    base: usize,
    qs: &mut [f32],
) {
    let terms = expansion_terms(t, own, vector, x);
    // min-max as the fusion's (a constant column gives 0), over f32 values
    let normalised = |v: &[f32]| min_max(&v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>());
    let bm25 = normalised(qs);
    let expansion = (!terms.is_empty()).then(|| {
        let mut e = vec![0f32; qs.len()];
        add_postings(t, terms.into_iter(), base, &mut e);
        normalised(&e)
    });
    let (w_sparse, weight) = (f64::from(w_sparse), f64::from(x.weight));
    for (i, s) in qs.iter_mut().enumerate() {
        *s = (w_sparse * bm25[i] + expansion.as_ref().map_or(0.0, |e| weight * e[i])) as f32;
    }
}

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

use half::f16;
use half::slice::HalfFloatSliceExt;
use memdex_score::bm25::Bm25;
use memdex_score::dot;
use memdex_score::text::{Analyzer, MIN_EXPANSION_CHARS};
use memdex_store::Store;

use crate::options::Expand;

/// The largest share of a tenant's rows a candidate term may occur in (the replay's 10 %).
pub(crate) const MAX_DF: f64 = 0.1;

/// A tenant's expansion candidates: its rare terms that have a vector in the word table,
/// with their vectors copied side by side in f16 (one scan per query over half the bytes:
/// the scan is bound by memory, and a cosine needs no more precision to pick ten terms).
#[derive(Debug, Clone, Default)]
pub(crate) struct Vocab {
    pub terms: Vec<Box<str>>,
    /// `terms.len() × dim`, row-major.
    pub vectors: Vec<f16>,
    pub dim: usize,
}

impl Vocab {
    /// The candidates of the tenant whose memdex BM25 index is `bm25`.
    pub(crate) fn build(bm25: &Bm25, store: &Store) -> Vocab {
        let table = store.words();
        let most = ((bm25.len() as f64 * MAX_DF).floor() as usize).max(1);
        let mut found: Vec<(Box<str>, (u32, u32))> = bm25
            .document_frequencies()
            .filter(|&(t, df)| df <= most && t.chars().count() >= MIN_EXPANSION_CHARS)
            .filter_map(|(t, _)| Some((t.into(), table.locate(t)?)))
            .collect();
        // a fixed order: ties between equal cosines break the same way in every process
        found.sort_unstable();
        let dim = store.dim();
        let mut vectors = Vec::with_capacity(found.len() * dim);
        for (_, at) in &found {
            vectors.extend(table.vector_at(*at).iter().map(|&v| f16::from_f32(v)));
        }
        Vocab {
            terms: found.into_iter().map(|(t, _)| t).collect(),
            vectors,
            dim,
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        let terms: usize = self.terms.iter().map(|t| 16 + t.len()).sum();
        terms + 2 * self.vectors.capacity()
    }
}

/// The expansion terms of a query: the `x.terms` candidates nearest to `vector` (positive
/// cosine only), each with its cosine, nearest first.
pub(crate) fn expansion_terms(
    vocab: &Vocab,
    text: &str,
    vector: &[f32],
    x: &Expand,
) -> Vec<(String, f64)> {
    if vocab.dim != vector.len() || x.terms == 0 {
        return Vec::new();
    }
    let own: HashSet<String> = Analyzer::english().terms(text).into_iter().collect();
    // the best `x.terms` so far, nearest first (ties: the earlier term)
    let mut best: Vec<(f32, usize)> = Vec::with_capacity(x.terms + 1);
    let mut row = vec![0f32; vocab.dim];
    for (i, v) in vocab.vectors.chunks_exact(vocab.dim).enumerate() {
        v.convert_to_f32_slice(&mut row);
        let c = dot(vector, &row);
        let full = best.len() == x.terms;
        if c <= 0.0 || (full && c <= best[x.terms - 1].0) || own.contains(&*vocab.terms[i]) {
            continue;
        }
        let at = best.partition_point(|&(b, _)| b >= c);
        best.insert(at, (c, i));
        best.truncate(x.terms);
    }
    (best.into_iter())
        .map(|(c, i)| (vocab.terms[i].to_string(), f64::from(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocab {
        let terms = ["book", "hike", "novel", "read"];
        let vectors = [
            0.9, 0.1, // book
            0.0, 1.0, // hike
            0.8, 0.6, // novel
            1.0, 0.0, // read
        ];
        Vocab {
            terms: terms.iter().map(|t| Box::from(*t)).collect(),
            vectors: vectors.iter().map(|&v| f16::from_f32(v)).collect(),
            dim: 2,
        }
    }

    #[test]
    fn nearest_terms_first_without_the_questions_own() {
        let x = |terms| Expand { terms, weight: 0.1 };
        let v = vocab();
        let got = expansion_terms(&v, "Which books has Tim read?", &[1.0, 0.0], &x(2));
        // "book" and "read" are the question's own terms: the nearest others follow
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "novel");
        assert!((got[0].1 - 0.8).abs() < 1e-3, "{got:?}");
        let got = expansion_terms(&v, "What does he do outside?", &[0.6, 0.8], &x(3));
        let names: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(names, ["novel", "hike", "book"]);
        assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "{got:?}");
        // a vector of another dimension, or no room: nothing
        assert!(expansion_terms(&v, "x", &[1.0, 0.0, 0.0], &x(3)).is_empty());
        assert!(expansion_terms(&v, "x", &[1.0, 0.0], &x(0)).is_empty());
        // only terms on the question's side (positive cosine)
        assert!(expansion_terms(&v, "x", &[-1.0, -1.0], &x(3)).is_empty());
    }
}

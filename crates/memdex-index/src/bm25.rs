//! BM25 Okapi over term lists, in two flavours:
//! * [`Bm25::whitespace`]: exactly `rank_bm25.BM25Okapi` (the flavour LongMemEval's official
//!   retrieval code uses): documents and queries split on single spaces (`str.split(" ")`,
//!   empty strings included), k1 = 1.5, b = 0.75, idf floored at `epsilon · mean idf`
//!   (epsilon = 0.25) for terms in more than half of the documents.
//! * [`Bm25::new`] with [`Idf::Lucene`] over analysed terms ([`crate::text::Analyzer`]):
//!   memdex's own, with the always-positive `ln(1 + (N − n + 0.5)/(n + 0.5))`.

use std::collections::HashMap;

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    pub k1: f64,
    pub b: f64,
    pub epsilon: f64,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self {
            k1: 1.5,
            b: 0.75,
            epsilon: 0.25,
        }
    }
}

/// How inverse document frequency is computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Idf {
    /// `ln((N − n + 0.5)/(n + 0.5))`, negatives replaced by `epsilon · mean idf` (rank_bm25).
    RankBm25,
    /// `ln(1 + (N − n + 0.5)/(n + 0.5))` (Lucene): never negative.
    Lucene,
}

/// An Okapi BM25 index over term lists (in memory; one per tenant).
#[derive(Debug, Clone)]
pub struct Bm25 {
    params: Bm25Params,
    doc_freqs: Vec<HashMap<String, u32>>,
    doc_len: Vec<f64>,
    avgdl: f64,
    idf: HashMap<String, f64>,
}

/// `str.split(" ")`: single spaces only, empty pieces kept.
pub fn split_space(text: &str) -> impl Iterator<Item = &str> {
    text.split(' ')
}

impl Bm25 {
    /// The official flavour: `rank_bm25.BM25Okapi([d.split(" ") for d in docs])`.
    pub fn whitespace(docs: &[&str], params: Bm25Params) -> Self {
        Self::new(docs.iter().map(|d| split_space(d)), params, Idf::RankBm25)
    }

    /// An index over documents given as term sequences.
    pub fn new<'a, D, T>(docs: D, params: Bm25Params, idf_rule: Idf) -> Self
    where
        D: IntoIterator<Item = T>,
        T: IntoIterator<Item = &'a str>,
    {
        let mut doc_freqs = Vec::new();
        let mut doc_len = Vec::new();
        let mut nd: HashMap<String, u32> = HashMap::new();
        for d in docs {
            let mut f: HashMap<String, u32> = HashMap::new();
            let mut n = 0usize;
            for w in d {
                *f.entry(w.to_string()).or_insert(0) += 1;
                n += 1;
            }
            for w in f.keys() {
                *nd.entry(w.clone()).or_insert(0) += 1;
            }
            doc_freqs.push(f);
            doc_len.push(n as f64);
        }
        let corpus = doc_len.len() as f64;
        let avgdl = if doc_len.is_empty() {
            0.0
        } else {
            doc_len.iter().sum::<f64>() / corpus
        };
        let mut idf = HashMap::with_capacity(nd.len());
        let mut idf_sum = 0.0;
        let mut negative = Vec::new();
        for (w, &freq) in &nd {
            let ratio = (corpus - freq as f64 + 0.5) / (freq as f64 + 0.5);
            let v = match idf_rule {
                Idf::RankBm25 => (corpus - freq as f64 + 0.5).ln() - (freq as f64 + 0.5).ln(),
                Idf::Lucene => ratio.ln_1p(),
            };
            idf_sum += v;
            if v < 0.0 {
                negative.push(w.clone());
            }
            idf.insert(w.clone(), v);
        }
        let average = if nd.is_empty() {
            0.0
        } else {
            idf_sum / nd.len() as f64
        };
        for w in negative {
            idf.insert(w, params.epsilon * average);
        }
        Self {
            params,
            doc_freqs,
            doc_len,
            avgdl,
            idf,
        }
    }

    /// Official flavour: score of every document for a space-split `query`.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        self.scores_terms(split_space(query))
    }

    /// Score of every document for query terms (repeated terms count repeatedly).
    pub fn scores_terms<'a>(&self, query: impl IntoIterator<Item = &'a str>) -> Vec<f64> {
        let Bm25Params { k1, b, .. } = self.params;
        let mut out = vec![0.0; self.doc_len.len()];
        for q in query {
            let Some(&idf) = self.idf.get(q) else {
                continue;
            };
            for (i, f) in self.doc_freqs.iter().enumerate() {
                let tf = f.get(q).copied().unwrap_or(0) as f64;
                let norm = k1 * (1.0 - b + b * self.doc_len[i] / self.avgdl);
                out[i] += idf * (tf * (k1 + 1.0) / (tf + norm));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_rank_bm25_by_hand() {
        // rank_bm25.BM25Okapi([d.split(" ") for d in docs]).get_scores("dog cat".split(" "))
        let docs = ["the dog", "the cat sat", "a dog and a dog"];
        let bm = Bm25::whitespace(&docs, Bm25Params::default());
        let s = bm.scores("dog cat");
        // N = 3, avgdl = 10/3; idf(dog) = ln(1.5/2.5) < 0 → epsilon · mean idf;
        // idf(cat) = ln(2.5/1.5); mean over {the, dog, cat, sat, a, and}
        let l = |n: f64| ((3.0 - n + 0.5) / (n + 0.5)).ln();
        let mean = (l(2.0) + l(2.0) + l(1.0) + l(1.0) + l(1.0) + l(1.0)) / 6.0;
        let idf_dog = 0.25 * mean;
        let idf_cat = l(1.0);
        let avgdl = 10.0 / 3.0;
        let term = |tf: f64, dl: f64| tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * dl / avgdl));
        let want = [
            idf_dog * term(1.0, 2.0),
            idf_cat * term(1.0, 3.0),
            idf_dog * term(2.0, 5.0),
        ];
        assert_eq!(s.len(), want.len(), "one score per document");
        for (g, w) in s.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{g} vs {w}");
        }
    }

    #[test]
    fn empty_corpus_and_unknown_terms() {
        let bm = Bm25::whitespace(&[], Bm25Params::default());
        assert!(bm.scores("x").is_empty());
        let bm = Bm25::whitespace(&["a b"], Bm25Params::default());
        assert_eq!(bm.scores("zzz"), vec![0.0]);
    }

    #[test]
    fn lucene_idf_is_positive_for_common_terms() {
        let docs = [vec!["dog", "run"], vec!["dog"], vec!["dog", "cat"]];
        let bm = Bm25::new(
            docs.iter().map(|d| d.iter().copied()),
            Bm25Params::default(),
            Idf::Lucene,
        );
        let s = bm.scores_terms(["dog"]);
        assert!(s.iter().all(|&x| x > 0.0), "{s:?}");
        assert!(s[1] > s[0], "shorter document ranks higher for the same tf");
        let c = bm.scores_terms(["cat", "cat"]);
        assert!(c[2] > 0.0 && c[0] == 0.0);
    }
}

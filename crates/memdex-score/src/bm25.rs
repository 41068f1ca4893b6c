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

/// An Okapi BM25 index over term lists (in memory; one per tenant): an inverted index, each
/// term's postings (document, term frequency) in document order. A query touches only the
/// postings of its terms; scores are those of the per-document formula, bit for bit (a
/// document without the term adds `idf · 0`, which changes no sum), and the mean idf of
/// rank_bm25's floor sums in rank_bm25's order (terms as first seen).
#[derive(Debug, Clone)]
pub struct Bm25 {
    params: Bm25Params,
    terms: HashMap<Box<str>, Term>,
    /// Per document: `k1 · (1 − b + b · len / avgdl)`.
    norm: Vec<f64>,
}

#[derive(Debug, Clone)]
struct Term {
    idf: f64,
    /// (document, term frequency), documents ascending.
    postings: Vec<(u32, u32)>,
}

/// [`Bm25::postings`]: term `ids[w]`'s postings are `docs[offsets[id]..offsets[id + 1]]`
/// (documents ascending, each once) with their `weights`.
#[derive(Debug, Clone, Default)]
pub struct Bm25Postings {
    pub ids: HashMap<Box<str>, u32>,
    pub offsets: Vec<u32>,
    pub docs: Vec<u32>,
    pub weights: Vec<f32>,
    /// Documents in the index (each doc id is below it).
    pub docs_indexed: usize,
}

impl Bm25Postings {
    /// The term ids of `query`'s terms the index holds, in order (repeats kept).
    pub fn term_ids<'a>(&self, query: impl IntoIterator<Item = &'a str>) -> Vec<u32> {
        query
            .into_iter()
            .filter_map(|q| self.ids.get(q).copied())
            .collect()
    }

    /// Every document's score for term ids `terms` (the reference of a device's sums).
    pub fn scores(&self, terms: &[u32]) -> Vec<f32> {
        let mut out = vec![0f32; self.docs_indexed];
        for &t in terms {
            let (a, b) = (self.offsets[t as usize], self.offsets[t as usize + 1]);
            for j in a as usize..b as usize {
                out[self.docs[j] as usize] += self.weights[j];
            }
        }
        out
    }

    pub fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 32
            + 4 * (self.offsets.capacity() + self.docs.capacity())
            + 4 * self.weights.capacity()
    }
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
        // terms numbered in first-seen order (documents in order, terms in order): the order
        // rank_bm25's dict iterates, so the mean idf sums in the same order
        let mut ids: HashMap<&'a str, u32> = HashMap::new();
        let mut words: Vec<&'a str> = Vec::new();
        let mut postings: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut doc_len: Vec<u64> = Vec::new();
        let (mut order, mut tf): (Vec<u32>, HashMap<u32, u32>) = Default::default();
        for (doc, terms) in docs.into_iter().enumerate() {
            let mut n = 0u64;
            for w in terms {
                let id = *ids.entry(w).or_insert_with(|| {
                    words.push(w);
                    postings.push(Vec::new());
                    words.len() as u32 - 1
                });
                let f = tf.entry(id).or_insert(0);
                if *f == 0 {
                    order.push(id);
                }
                *f += 1;
                n += 1;
            }
            for id in order.drain(..) {
                let f = tf.remove(&id).unwrap_or(0);
                postings[id as usize].push((doc as u32, f));
            }
            doc_len.push(n);
        }
        let corpus = doc_len.len() as f64;
        let avgdl = if doc_len.is_empty() {
            0.0
        } else {
            doc_len.iter().map(|&n| n as f64).sum::<f64>() / corpus
        };
        let Bm25Params { k1, b, epsilon } = params;
        let norm = doc_len
            .iter()
            .map(|&n| k1 * (1.0 - b + b * n as f64 / avgdl))
            .collect();
        let idf_of = |freq: usize| {
            let (n, freq) = (corpus, freq as f64);
            match idf_rule {
                Idf::RankBm25 => (n - freq + 0.5).ln() - (freq + 0.5).ln(),
                Idf::Lucene => ((n - freq + 0.5) / (freq + 0.5)).ln_1p(),
            }
        };
        let mut idf_sum = 0.0;
        let mut terms: HashMap<Box<str>, Term> = words
            .into_iter()
            .zip(postings)
            .map(|(w, postings)| {
                let idf = idf_of(postings.len());
                idf_sum += idf;
                (Box::from(w), Term { idf, postings })
            })
            .collect();
        // rank_bm25: a negative idf becomes epsilon times the mean idf
        let average = if terms.is_empty() {
            0.0
        } else {
            idf_sum / terms.len() as f64
        };
        for t in terms.values_mut() {
            if t.idf < 0.0 {
                t.idf = epsilon * average;
            }
            t.postings.shrink_to_fit();
        }
        Self {
            params,
            terms,
            norm,
        }
    }

    /// Documents indexed.
    pub fn len(&self) -> usize {
        self.norm.len()
    }

    pub fn is_empty(&self) -> bool {
        self.norm.is_empty()
    }

    /// Approximate heap bytes of the index (postings, terms, per-document norms).
    pub fn heap_bytes(&self) -> usize {
        let terms: usize = self
            .terms
            .iter()
            .map(|(w, t)| w.len() + t.postings.capacity() * 8 + 64)
            .sum();
        terms + self.norm.capacity() * 8
    }

    /// The index as postings by term id, each posting carrying its score contribution (`idf ·
    /// tf·(k1+1) / (tf + norm)`, rounded to f32): what a device sums per query term. A query's
    /// scores are the sums, over its terms (repeats repeating), of their postings' weights —
    /// [`Self::scores_terms`] to f32 rounding.
    pub fn postings(&self) -> Bm25Postings {
        let k1 = self.params.k1;
        let mut out = Bm25Postings {
            ids: HashMap::with_capacity(self.terms.len()),
            offsets: Vec::with_capacity(self.terms.len() + 1),
            docs: Vec::new(),
            weights: Vec::new(),
            docs_indexed: self.norm.len(),
        };
        out.offsets.push(0);
        for (word, t) in &self.terms {
            out.ids.insert(word.clone(), out.ids.len() as u32);
            for &(doc, f) in &t.postings {
                let tf = f as f64;
                let w = t.idf * (tf * (k1 + 1.0) / (tf + self.norm[doc as usize]));
                out.docs.push(doc);
                out.weights.push(w as f32);
            }
            out.offsets.push(out.docs.len() as u32);
        }
        out
    }

    /// Official flavour: score of every document for a space-split `query`.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        self.scores_terms(split_space(query))
    }

    /// Score of every document for query terms (repeated terms count repeatedly).
    pub fn scores_terms<'a>(&self, query: impl IntoIterator<Item = &'a str>) -> Vec<f64> {
        self.scores_weighted(query.into_iter().map(|q| (q, 1.0)))
    }

    /// Score of every document for weighted query terms: each term's BM25 share times its
    /// weight (weight 1 for every term: [`Self::scores_terms`]).
    pub fn scores_weighted<'a>(&self, query: impl IntoIterator<Item = (&'a str, f64)>) -> Vec<f64> {
        let k1 = self.params.k1;
        let mut out = vec![0.0; self.norm.len()];
        for (q, weight) in query {
            let Some(t) = self.terms.get(q) else {
                continue;
            };
            for &(doc, f) in &t.postings {
                let (i, tf) = (doc as usize, f as f64);
                out[i] += weight * t.idf * (tf * (k1 + 1.0) / (tf + self.norm[i]));
            }
        }
        out
    }

    /// Every indexed term with its document frequency (in no particular order).
    pub fn document_frequencies(&self) -> impl Iterator<Item = (&str, usize)> {
        self.terms.iter().map(|(t, v)| (&**t, v.postings.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_sum_to_the_scores() {
        let docs = ["the dog", "the cat sat", "a dog and a dog", "cat cat dog"];
        let bm = Bm25::whitespace(&docs, Bm25Params::default());
        let p = bm.postings();
        for q in ["dog cat", "the the sat", "nothing here", "dog dog"] {
            let want = bm.scores(q);
            let got = p.scores(&p.term_ids(split_space(q)));
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (f64::from(*g) - w).abs() < 1e-6 * (1.0 + w.abs()),
                    "{q}: {g} vs {w}"
                );
            }
        }
        assert_eq!(p.term_ids(["zebra", "dog", "dog"]).len(), 2);
    }

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

    /// The per-document formula, document by document (what the inverted index replaces).
    fn brute_force(docs: &[Vec<&str>], query: &[&str], idf: impl Fn(&str) -> f64) -> Vec<f64> {
        let avgdl = docs.iter().map(|d| d.len() as f64).sum::<f64>() / docs.len() as f64;
        docs.iter()
            .map(|d| {
                let norm = 1.5 * (0.25 + 0.75 * d.len() as f64 / avgdl);
                query
                    .iter()
                    .map(|q| {
                        let tf = d.iter().filter(|w| *w == q).count() as f64;
                        idf(q) * (tf * 2.5 / (tf + norm))
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn inverted_index_matches_the_per_document_formula() {
        let vocab = ["dog", "cat", "sat", "the", "a", "ran", "", "mat", "dog's"];
        let docs: Vec<Vec<&str>> = (0..60usize)
            .map(|d| {
                (0..(d * 7 % 13))
                    .map(|i| vocab[(d * 31 + i * i * 17) % vocab.len()])
                    .collect()
            })
            .collect();
        let n = docs.len() as f64;
        let df = |q: &str| docs.iter().filter(|d| d.contains(&q)).count() as f64;
        let bm = Bm25::new(
            docs.iter().map(|d| d.iter().copied()),
            Bm25Params::default(),
            Idf::Lucene,
        );
        assert_eq!(bm.len(), 60);
        let query = ["dog", "mat", "dog", "zebra", ""];
        let want = brute_force(&docs, &query, |q| {
            if df(q) == 0.0 {
                0.0
            } else {
                ((n - df(q) + 0.5) / (df(q) + 0.5)).ln_1p()
            }
        });
        let got = bm.scores_terms(query);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "doc {i}: {g} vs {w}"
            );
        }
        assert!(got.iter().any(|&x| x > 0.0) && got.contains(&0.0));
        assert!(bm.heap_bytes() > 0);
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

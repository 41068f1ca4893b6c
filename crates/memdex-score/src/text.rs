//! Text analysis for memdex's own BM25: Unicode word segmentation (UAX #29), lower-casing,
//! English stop words, Snowball (Porter 2) stemming.

use std::collections::HashSet;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Common English function words (articles, pronouns, auxiliaries, prepositions,
/// conjunctions): frequent everywhere, so they carry no ranking signal.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "s",
    "t",
    "d",
    "ll",
    "m",
    "re",
    "ve",
];

/// Turns text into index terms.
pub struct Analyzer {
    stemmer: Stemmer,
    stop: HashSet<&'static str>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("stop_words", &self.stop.len())
            .finish()
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::english()
    }
}

impl Analyzer {
    pub fn english() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            stop: STOP_WORDS.iter().copied().collect(),
        }
    }

    /// Terms of `text`, in order (duplicates kept).
    pub fn terms(&self, text: &str) -> Vec<String> {
        text.unicode_words()
            .filter_map(|w| {
                let lower = w.to_lowercase();
                // possessive and contraction tails: "Caroline's" → "caroline"
                let base = lower
                    .strip_suffix("'s")
                    .or_else(|| lower.strip_suffix("’s"))
                    .unwrap_or(&lower);
                if self.stop.contains(base) {
                    return None;
                }
                Some(self.stemmer.stem(base).into_owned())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_lowercases_drops_stop_words_and_stems() {
        let a = Analyzer::english();
        assert_eq!(
            a.terms("When did Caroline's friends go running? She RAN 10km!"),
            ["carolin", "friend", "go", "run", "ran", "10km"]
        );
        assert_eq!(a.terms("Café naïve — 東京"), ["café", "naïv", "東", "京"]);
        assert!(a.terms("the and of").is_empty());
        assert!(a.terms("").is_empty());
    }
}

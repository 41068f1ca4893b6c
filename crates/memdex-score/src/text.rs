//! Text analysis for memdex's own BM25: Unicode word segmentation (UAX #29), lower-casing,
//! English stop words, Snowball (Porter 2) stemming.

use std::collections::HashSet;
use std::sync::OnceLock;

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

static STOP: OnceLock<HashSet<&'static str>> = OnceLock::new();

/// Turns text into index terms.
pub struct Analyzer {
    stemmer: Stemmer,
    /// Built once per process: an analyzer per call costs nothing but the stemmer's choice.
    stop: &'static HashSet<&'static str>,
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
            stop: STOP.get_or_init(|| STOP_WORDS.iter().copied().collect()),
        }
    }

    /// Terms of `text`, in order (duplicates kept).
    pub fn terms(&self, text: &str) -> Vec<String> {
        text.unicode_words()
            .filter_map(|w| self.base(w))
            .map(|base| self.stemmer.stem(&base).into_owned())
            .collect()
    }

    /// The words of `text` a query can be expanded with, each as (its term, the word itself),
    /// each word once, first seen first (two words may share a term): alphabetic words of at least [`MIN_EXPANSION_CHARS`]
    /// letters that are not stop words. `seen` holds the lower-cased words already taken (by
    /// this call or earlier ones), which are skipped without stemming.
    pub fn expansion_words(&self, text: &str, seen: &mut HashSet<String>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for w in text.unicode_words() {
            let Some(base) = self.base(w) else { continue };
            let letters = base.chars().count() >= MIN_EXPANSION_CHARS
                && base.chars().all(char::is_alphabetic);
            if !letters || seen.contains(&base) {
                continue;
            }
            let term = self.stemmer.stem(&base).into_owned();
            seen.insert(base.clone());
            out.push((term, base));
        }
        out
    }

    /// `w` lower-cased without a possessive tail ("Caroline's" → "caroline"); None for a stop
    /// word.
    fn base(&self, w: &str) -> Option<String> {
        let lower = w.to_lowercase();
        let base = lower
            .strip_suffix("'s")
            .or_else(|| lower.strip_suffix("’s"))
            .unwrap_or(&lower);
        (!self.stop.contains(base)).then(|| base.to_string())
    }
}

/// The shortest word query expansion adds.
pub const MIN_EXPANSION_CHARS: usize = 3;

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

    #[test]
    fn expansion_words_are_letters_once_each_with_their_term() {
        let a = Analyzer::english();
        let mut seen = HashSet::new();
        let w = a.expansion_words(
            "Caroline's hiking, hiking again in 2023 at the Lake! ok",
            &mut seen,
        );
        assert_eq!(
            w,
            [
                ("carolin", "caroline"),
                ("hike", "hiking"),
                ("lake", "lake")
            ]
            .map(|(t, w)| (t.to_string(), w.to_string()))
        );
        // words seen in an earlier text are not repeated; a new form of a term is
        let w = a.expansion_words("the lake and hikes", &mut seen);
        assert_eq!(w, [("hike".to_string(), "hikes".to_string())]);
        for (term, _) in a.expansion_words("Café naïve walking", &mut HashSet::new()) {
            assert!(a.terms("Café naïve walking").contains(&term), "{term}");
        }
    }
}

//! Text that costs what chat costs: sentences of common English words, each one WordPiece
//! token in the BERT/MiniLM vocabulary (the lexicon is the 8,192 most frequent whole-word
//! entries of that vocabulary, by id), drawn with a Zipf-like skew, so a turn of `n` target
//! tokens tokenises to about `n` tokens, and distinct turns are distinct texts (no templated
//! dedup: two 30-word turns from 8,192 words never coincide in practice).

use memdex_core::rng::SplitMix64;

const LEXICON: &str = include_str!("lexicon.txt");

/// The lexicon's words, most frequent first.
pub(crate) fn lexicon() -> Vec<&'static str> {
    LEXICON.split_whitespace().collect()
}

/// A word index skewed toward the frequent end: `⌊N·u³⌋` (half the draws come from the first
/// eighth of the list), so words average 6.6 bytes with the space.
fn word<'a>(words: &[&'a str], rng: &mut SplitMix64) -> &'a str {
    let u = rng.unit();
    words[((u * u * u) * words.len() as f64) as usize % words.len()]
}

/// About `tokens` tokens of text: sentences of 6–20 words ending with a period (one token),
/// some with a comma (one token). The first word is capitalised.
pub(crate) fn turn(words: &[&str], rng: &mut SplitMix64, tokens: usize) -> String {
    let mut out = String::with_capacity(tokens * 7);
    let mut left = tokens.max(2);
    while left > 1 {
        let n = (6 + rng.below(15)).min(left - 1);
        for i in 0..n {
            if !out.is_empty() {
                out.push(' ');
            }
            let w = word(words, rng);
            if i == 0 {
                let mut c = w.chars();
                if let Some(f) = c.next() {
                    out.extend(f.to_uppercase());
                    out.push_str(c.as_str());
                }
            } else {
                out.push_str(w);
            }
            if i + 1 < n && n > 8 && rng.below(12) == 0 && left > n + 2 {
                out.push(',');
                left -= 1;
            }
        }
        out.push('.');
        left -= n + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_hit_their_token_budget_and_differ() {
        let words = lexicon();
        assert_eq!(words.len(), 8192);
        assert!(words
            .iter()
            .all(|w| w.chars().all(|c| c.is_ascii_lowercase())));
        let mut rng = SplitMix64::new(7);
        for target in [2usize, 7, 30, 256, 2000] {
            let t = turn(&words, &mut rng, target);
            // words and punctuation marks: each a token for a WordPiece tokenizer
            let pieces = t.split_whitespace().count() + t.matches(['.', ',']).count();
            assert!(
                pieces <= target.max(2) && pieces + 1 >= target.max(2),
                "{target}: {pieces} in {t:?}"
            );
        }
        let a = turn(&words, &mut rng, 30);
        let b = turn(&words, &mut rng, 30);
        assert_ne!(a, b);
    }
}

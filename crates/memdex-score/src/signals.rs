//! Mimir's recency and importance signals.
//!
//! * Recency: a Gaussian over the item's age within `[first item date, query date]`: the
//!   newest item keeps its score, the oldest is multiplied by `1 − max_penalty` (default 0.3).
//! * Importance: a local heuristic in 1..=10 (numbers, dates, names, first-person life events,
//!   emotions), boosting a score by `1 + weight · log10(importance)`.

use memdex_core::MONTH_NAMES;

/// Multiplier for an item of age fraction `x` (0 newest … 1 oldest): `1 − max · g(x)` with a
/// Gaussian-shaped `g` rising from 0 to 1 (σ = 0.5). Always in `[1 − max, 1]`, finite: `x`
/// is clamped to `[0, 1]` (NaN counts as the oldest), `max_penalty` to `[0, 1]` (NaN as 0).
pub fn recency_factor(x: f64, max_penalty: f64) -> f64 {
    let x = if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) };
    let max_penalty = if max_penalty.is_nan() {
        0.0
    } else {
        max_penalty.clamp(0.0, 1.0)
    };
    let s2 = 2.0 * 0.5f64 * 0.5;
    let g = (1.0 - (-x * x / s2).exp()) / (1.0 - (-1.0 / s2).exp());
    1.0 - max_penalty * g
}

/// Words of time besides the month names ([`memdex_core::MONTH_NAMES`]).
const TIME_WORDS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "yesterday",
    "tomorrow",
    "today",
    "tonight",
    "week",
    "weekend",
    "month",
    "year",
    "ago",
];
const LIFE: &[&str] = &[
    "bought",
    "moved",
    "started",
    "adopted",
    "married",
    "graduated",
    "lost",
    "won",
    "joined",
    "quit",
    "finished",
    "visited",
    "went",
    "got",
    "born",
    "hired",
    "promoted",
    "retired",
    "wife",
    "husband",
    "son",
    "daughter",
    "mom",
    "dad",
    "mother",
    "father",
    "sister",
    "brother",
    "dog",
    "cat",
    "job",
    "boss",
    "birthday",
    "wedding",
    "house",
    "apartment",
    "car",
];
const EMOTION: &[&str] = &[
    "love", "hate", "happy", "sad", "excited", "worried", "afraid", "proud", "angry", "scared",
    "thrilled", "upset", "grateful", "stressed", "nervous", "lonely",
];

/// Whether `text` (an item's own words) mostly asks: more than half of its words (after a
/// `Name: ` or `user: ` line prefix; `assistant: ` lines left out) are in questions. A
/// question states no fact, the turn that answers it does; a message that states something
/// and then asks ("I sold the Civic, so now I drive a Prius. How often should …?") states.
pub fn asks_only(text: &str) -> bool {
    let (mut asked, mut all) = (0usize, 0usize);
    for line in text.lines() {
        let body = match line.split_once(": ") {
            Some((who, _)) if who.eq_ignore_ascii_case("assistant") => continue,
            Some((who, rest)) if who.len() <= 40 && !who.contains(['.', '?', '!']) => rest,
            _ => line,
        };
        for s in body.split_inclusive(['.', '!', '?']) {
            let words = s.split_whitespace().count();
            all += words;
            if s.trim_end().ends_with('?') {
                asked += words;
            }
        }
    }
    2 * asked > all
}

/// Heuristic importance of a text, 1 (small talk) to 10 (dense personal facts).
pub fn importance(text: &str) -> u8 {
    let mut score = 1i32;
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    if words.iter().any(|w| w.chars().any(|c| c.is_ascii_digit())) {
        score += 2;
    }
    if (lower.iter()).any(|w| MONTH_NAMES.contains(&w.as_str()) || TIME_WORDS.contains(&w.as_str()))
    {
        score += 2;
    }
    let first_person = lower
        .iter()
        .any(|w| w == "i" || w == "my" || w == "me" || w == "i'm");
    if first_person && lower.iter().any(|w| LIFE.contains(&w.as_str())) {
        score += 2;
    }
    if lower.iter().any(|w| EMOTION.contains(&w.as_str())) {
        score += 1;
    }
    // capitalised words not at a sentence start: names and places
    let names = words
        .windows(2)
        .filter(|p| {
            p[1].chars().next().is_some_and(char::is_uppercase)
                && p[1] != "I"
                && !p[0].ends_with(['.', '!', '?'])
        })
        .count();
    score += names.min(2) as i32;
    score.clamp(1, 10) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recency_runs_from_none_to_max() {
        assert_eq!(recency_factor(0.0, 0.3), 1.0);
        assert!((recency_factor(1.0, 0.3) - 0.7).abs() < 1e-12);
        let mid = recency_factor(0.5, 0.3);
        assert!(mid < 1.0 && mid > 0.7);
        assert!(recency_factor(0.25, 0.3) > mid, "monotone");
        // out-of-range ages (items newer than the query, spans that overflowed) stay bounded
        assert_eq!(recency_factor(-5.0, 0.3), 1.0);
        assert!((recency_factor(f64::INFINITY, 0.3) - 0.7).abs() < 1e-12);
        assert!((recency_factor(f64::NAN, 0.3) - 0.7).abs() < 1e-12);
        assert_eq!(recency_factor(0.5, f64::NAN), 1.0);
        assert!(
            (recency_factor(1.0, 7.0)).abs() < 1e-12,
            "penalty at most 1"
        );
    }

    #[test]
    fn a_text_mostly_of_questions_asks() {
        assert!(asks_only(
            "Melanie: Sounds great! What kind of counseling do you want to pursue?"
        ));
        assert!(asks_only(
            "user: What's the best way to learn touch typing?"
        ));
        assert!(!asks_only(
            "user: I sold the Civic, so now I drive a used Prius. Any tips?"
        ));
        assert!(!asks_only(
            "user: I adopted a dog.\nassistant: What is her name? And her age?"
        ));
        assert!(!asks_only(""));
    }

    #[test]
    fn importance_ranks_personal_facts_over_small_talk() {
        let small = importance("ok, thanks!");
        let fact = importance("I adopted a dog named Luna in March 2023 and I love her");
        assert_eq!(small, 1);
        assert!(fact >= 7, "{fact}");
        assert!((1..=10).contains(&importance(&"Paris London Rome 12 May ".repeat(20))));
    }
}

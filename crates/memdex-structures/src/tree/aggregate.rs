//! A parent's content without an LLM: the salient sentences of its children's contents
//! (SumBasic: sentences scored by the mean frequency of their content terms, the chosen
//! sentence's terms discounted by squaring so the next choice covers something else) and
//! their key phrases (the most frequent content words), within a character budget.
//!
//! Content layout: sentences, then one line `Topics: a, b, c`. Children's topic lines count
//! as evidence for term frequencies, so a parent's topics summarise its whole subtree.

use std::collections::HashMap;

use memdex_score::text::Analyzer;
use unicode_segmentation::UnicodeSegmentation;

const TOPICS: &str = "Topics: ";
/// Key phrases per node.
const MAX_TOPICS: usize = 6;
/// A sentence longer than this is cut (at a word) before it competes.
const MAX_SENTENCE: usize = 240;

/// One candidate sentence: its text and content terms.
struct Sentence {
    text: String,
    terms: Vec<String>,
    order: usize,
}

/// Aggregates `children` (their contents, in child order) into at most `budget` characters.
pub fn aggregate(children: &[&str], budget: usize, analyzer: &Analyzer) -> String {
    let mut candidates: Vec<Sentence> = Vec::new();
    let mut freq: HashMap<String, f64> = HashMap::new();
    let mut surface: HashMap<String, (usize, String)> = HashMap::new();
    let mut seen = 0usize;
    for content in children {
        for line in content.lines() {
            let (is_topics, body) = match line.strip_prefix(TOPICS) {
                Some(t) => (true, t),
                None => (false, line),
            };
            for w in body.unicode_words() {
                let terms = analyzer.terms(w);
                if let Some(t) = terms.into_iter().next() {
                    *freq.entry(t.clone()).or_default() += 1.0;
                    surface.entry(t).or_insert_with(|| {
                        seen += 1;
                        (seen, w.to_lowercase())
                    });
                }
            }
            if is_topics {
                continue;
            }
            for s in split_sentences(body) {
                let text = clip(s, MAX_SENTENCE);
                let terms = analyzer.terms(&text);
                if !terms.is_empty() && !candidates.iter().any(|c| c.text == text) {
                    let order = candidates.len();
                    candidates.push(Sentence { text, terms, order });
                }
            }
        }
    }
    let total: f64 = freq.values().sum::<f64>().max(1.0);
    let p0: HashMap<String, f64> = freq.iter().map(|(k, v)| (k.clone(), v / total)).collect();
    let topics = topics(&p0, &surface);
    let topic_line = if topics.is_empty() {
        String::new()
    } else {
        format!("{TOPICS}{}", topics.join(", "))
    };
    let room = budget.saturating_sub(topic_line.len() + 1);
    let chosen = sum_basic(&mut candidates, p0, room);
    let mut body: Vec<&str> = chosen.iter().map(|c| c.text.as_str()).collect();
    if body.is_empty() {
        // nothing fits: the best sentence, cut to the room left
        if let Some(c) = candidates.first() {
            body.push(&c.text);
        }
    }
    let mut out = clip(&body.join(" "), room.max(1));
    if !topic_line.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&topic_line);
    }
    clip(&out, budget)
}

/// SumBasic: repeatedly the sentence with the highest mean term probability that still fits;
/// its terms' probabilities are squared. Returned in their original order.
fn sum_basic(
    candidates: &mut Vec<Sentence>,
    mut p: HashMap<String, f64>,
    room: usize,
) -> Vec<Sentence> {
    let mut chosen: Vec<Sentence> = Vec::new();
    let mut used = 0usize;
    loop {
        let score = |s: &Sentence| {
            s.terms
                .iter()
                .map(|t| p.get(t).copied().unwrap_or(0.0))
                .sum::<f64>()
                / s.terms.len() as f64
        };
        let best = candidates
            .iter()
            .enumerate()
            .filter(|(_, s)| used + s.text.len() + usize::from(used > 0) <= room)
            .max_by(|(_, a), (_, b)| score(a).total_cmp(&score(b)).then(b.order.cmp(&a.order)))
            .map(|(i, _)| i);
        let Some(i) = best else { break };
        let s = candidates.remove(i);
        used += s.text.len() + usize::from(used > 0);
        for t in &s.terms {
            if let Some(v) = p.get_mut(t) {
                *v *= *v;
            }
        }
        chosen.push(s);
    }
    chosen.sort_by_key(|s| s.order);
    chosen
}

/// The most frequent content words (first seen first among equals).
fn topics(p: &HashMap<String, f64>, surface: &HashMap<String, (usize, String)>) -> Vec<String> {
    let mut terms: Vec<(&String, f64, usize)> = p
        .iter()
        .filter_map(|(t, &v)| {
            let (first, word) = surface.get(t)?;
            (word.chars().count() > 2 && !word.chars().all(|c| c.is_ascii_digit()))
                .then_some((t, v, *first))
        })
        .collect();
    terms.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    terms
        .into_iter()
        .take(MAX_TOPICS)
        .filter_map(|(t, _, _)| surface.get(t).map(|(_, w)| w.clone()))
        .collect()
}

fn split_sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(['.', '!', '?'])
        .map(str::trim)
        .filter(|s| s.chars().any(char::is_alphanumeric))
}

/// `s` cut to at most `max` bytes at a word boundary (with `…` when cut).
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    let cut = s[..end].rfind(' ').filter(|&i| i > end / 2).unwrap_or(end);
    format!("{}…", s[..cut].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_salient_sentences_within_budget() {
        let a = Analyzer::english();
        let kids = [
            "Caroline adopted a dog named Luna. The weather was fine.",
            "Caroline walks Luna the dog every morning.",
            "Luna the dog loves the beach.",
        ];
        let out = aggregate(&kids, 160, &a);
        assert!(out.len() <= 160, "{out}");
        // the most central sentence first; SumBasic's squaring then favours uncovered terms
        // (the weather), and what does not fit is left out whole, never cut
        assert!(
            out.starts_with("Caroline adopted a dog named Luna."),
            "{out}"
        );
        assert!(!out.contains('…'), "{out}");
        assert!(!out.contains("every morning"), "{out}");
        let topics = out.lines().last().unwrap_or_default();
        assert!(
            topics.starts_with("Topics: dog, luna, caroline"),
            "most frequent first: {out}"
        );
        // deterministic
        assert_eq!(out, aggregate(&kids, 160, &a));
    }

    #[test]
    fn parents_of_parents_read_their_childrens_topics() {
        let a = Analyzer::english();
        let p1 = aggregate(&["I play guitar.", "Guitar lessons on Monday."], 200, &a);
        let p2 = aggregate(&["I bake bread.", "Bread with rye flour."], 200, &a);
        let top = aggregate(&[&p1, &p2], 200, &a);
        assert!(top.contains("guitar") && top.contains("bread"), "{top}");
        assert!(top.len() <= 200);
    }

    #[test]
    fn clip_cuts_at_words_and_never_inside_a_character() {
        assert_eq!(clip("short", 10), "short");
        let c = clip("one two three four five", 12);
        assert!(c.len() <= 12 && c.ends_with('…'), "{c}");
        let c = clip("ééééééééé", 7);
        assert!(c.len() <= 7, "{c}");
        assert_eq!(aggregate(&[], 100, &Analyzer::english()), "");
        assert_eq!(aggregate(&["", "   "], 100, &Analyzer::english()), "");
    }
}

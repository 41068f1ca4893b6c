//! Key expansion (LongMemEval §5.3, "K = V + facts"): facts extracted from an item are
//! prepended to its key before embedding and BM25, so one row carries both (key merging, which
//! the paper prefers to separate fact rows).
//!
//! [`FactExtractor`] is the seam for a model-based extractor; [`HeuristicFacts`] is the local
//! default:
//! * user-fact sentences: first-person statements with a fact cue (possessions, preferences,
//!   plans, life events, work, places, numbers), rewritten in the third person when the text
//!   names its speaker (`Caroline: I adopted…` → `Caroline adopted…`);
//! * dated events: every sentence with a time expression, prefixed with the resolved date
//!   (`[2023-05-07] …`), so "when" questions meet an absolute date;
//! * key phrases: runs of capitalised words inside sentences (names, places, titles).

use std::fmt::Debug;

use chrono::NaiveDate;

use crate::lexicon::{tokens, Token, WordFilter};
use crate::sentences::sentences;
use crate::time::events_in;

/// Extracts short fact strings from an item's text. `anchor` is the session date (for
/// resolving relative time expressions), when known.
pub trait FactExtractor: Send + Sync + Debug {
    /// A stable name, recorded in the store's manifest.
    fn name(&self) -> &str;
    fn extract(&self, text: &str, anchor: Option<NaiveDate>) -> Vec<String>;

    /// True when the extractor wants its items in one [`Self::extract_batch`] call on the
    /// caller's thread (a model that owns a device), not spread over a thread pool.
    fn batched(&self) -> bool {
        false
    }

    /// The facts of each `(text, anchor)`, in order.
    fn extract_batch(&self, items: &[(&str, Option<NaiveDate>)]) -> Vec<Vec<String>> {
        items.iter().map(|&(t, a)| self.extract(t, a)).collect()
    }
}

/// The key actually embedded: the facts, then the original key.
pub fn expand_key(facts: &[String], key: &str) -> String {
    if facts.is_empty() {
        return key.to_string();
    }
    format!("{}\n{key}", facts.join(" "))
}

/// The rule-based extractor (see the module docs). Bounded: at most `max_facts` sentences of
/// at most 60 words each.
#[derive(Debug, Clone)]
pub struct HeuristicFacts {
    pub max_facts: usize,
    /// Stamp sentences whose time expression is relative (`yesterday`) with the date
    /// resolved against the session date. Off by default: the stamp then depends on the
    /// session date, so a session stored under several dates (LongMemEval haystacks) gets a
    /// different key each time and is re-embedded instead of reused. The resolved dates are
    /// in the `events` column either way; explicit dates (`on 8 May 2023`) are always stamped.
    pub relative_dates: bool,
}

impl Default for HeuristicFacts {
    fn default() -> Self {
        Self {
            max_facts: 6,
            relative_dates: false,
        }
    }
}

const CUES: &[&str] = &[
    "have",
    "has",
    "had",
    "own",
    "owns",
    "bought",
    "buy",
    "got",
    "adopted",
    "love",
    "loved",
    "like",
    "liked",
    "enjoy",
    "enjoyed",
    "prefer",
    "hate",
    "favorite",
    "favourite",
    "plan",
    "planning",
    "plans",
    "going",
    "want",
    "wanted",
    "will",
    "moved",
    "move",
    "live",
    "lived",
    "started",
    "start",
    "joined",
    "graduated",
    "married",
    "engaged",
    "born",
    "work",
    "working",
    "job",
    "visited",
    "visit",
    "went",
    "trip",
    "travel",
    "traveled",
    "travelled",
    "learned",
    "learning",
    "finished",
    "named",
    "birthday",
    "allergic",
    "studying",
    "study",
    "play",
    "playing",
    "won",
    "lost",
    "made",
    "painted",
    "wrote",
    "read",
    "watched",
    "signed",
    "applied",
    "received",
    "decided",
    "took",
    "volunteer",
    "volunteered",
    "kids",
    "children",
    "son",
    "daughter",
    "wife",
    "husband",
    "partner",
    "mom",
    "dad",
    "mother",
    "father",
    "sister",
    "brother",
    "dog",
    "cat",
    "pet",
    "car",
    "house",
    "apartment",
    "hobby",
];

const FIRST_PERSON: &[&str] = &["i", "my", "me", "we", "our", "i'm", "i've", "mine"];

/// Pass every cue word and first-person word (a fast reject before the exact lookup).
const CUE_FILTER: WordFilter = WordFilter::EMPTY.with(CUES);
const FIRST_PERSON_FILTER: WordFilter = WordFilter::EMPTY.with(FIRST_PERSON);

impl FactExtractor for HeuristicFacts {
    fn name(&self) -> &str {
        "heuristic-v1"
    }

    fn extract(&self, text: &str, anchor: Option<NaiveDate>) -> Vec<String> {
        let (speaker, body) = split_speaker(text);
        let mut facts = Vec::new();
        let mut phrases: Vec<String> = Vec::new();
        for sentence in sentences(body) {
            let toks = tokens(sentence);
            if toks.len() < 3 || toks.len() > 60 {
                continue;
            }
            collect_phrases(sentence, &toks, &mut phrases);
            if facts.len() >= self.max_facts {
                continue;
            }
            let event = anchor.and_then(|a| events_in(&toks, a).into_iter().next());
            let dated = event.as_ref().map(|e| e.range);
            let stamp = event
                .filter(|e| self.relative_dates || !e.relative)
                .map(|e| e.range);
            if !(dated.is_some() || first_person_fact(&toks)) {
                continue;
            }
            let mut fact = match speaker {
                Some(name) => third_person(sentence, name),
                None => sentence.to_string(),
            };
            if let Some(r) = stamp {
                let when = if r.start == r.end {
                    r.start.format("%Y-%m-%d %B %Y").to_string()
                } else {
                    format!(
                        "{} to {}",
                        r.start.format("%Y-%m-%d"),
                        r.end.format("%Y-%m-%d")
                    )
                };
                fact = format!("[{when}] {fact}");
            }
            facts.push(fact);
        }
        if !phrases.is_empty() {
            facts.push(phrases.join(", "));
        }
        facts
    }
}

/// A first-person sentence with a fact cue (a cue word or a number).
fn first_person_fact(toks: &[Token<'_>]) -> bool {
    let listed =
        |filter: &WordFilter, list: &[&str], w: &str| filter.may_contain(w) && list.contains(&w);
    let first_person = toks
        .iter()
        .any(|t| listed(&FIRST_PERSON_FILTER, FIRST_PERSON, &t.lower));
    first_person
        && toks.iter().any(|t| {
            listed(&CUE_FILTER, CUES, &t.lower) || t.lower.bytes().any(|b| b.is_ascii_digit())
        })
}

/// `Caroline: text` → (`Caroline`, `text`) when the prefix looks like a name.
fn split_speaker(text: &str) -> (Option<&str>, &str) {
    if let Some((name, rest)) = text.split_once(": ") {
        let plausible = !name.is_empty()
            && name.len() <= 40
            && name.split(' ').count() <= 3
            && name.chars().next().is_some_and(char::is_uppercase);
        if plausible {
            return (Some(name), rest);
        }
    }
    (None, text)
}

/// First-person pronouns → the speaker's name (`I` → `Caroline`, `my` → `Caroline's`).
fn third_person(sentence: &str, name: &str) -> String {
    let mut out = String::with_capacity(sentence.len() + 16);
    for (i, word) in sentence.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let core = word.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '\'');
        let tail = &word[core.len()..];
        let replaced = match core {
            "I" => Some(name.to_string()),
            "my" | "My" => Some(format!("{name}'s")),
            "I'm" => Some(format!("{name} is")),
            "I've" => Some(format!("{name} has")),
            "me" => Some(name.to_string()),
            _ => None,
        };
        match replaced {
            Some(r) => {
                out.push_str(&r);
                out.push_str(tail);
            }
            None => out.push_str(word),
        }
    }
    out
}

/// Runs of capitalised words that do not start the sentence (names, places, titles).
fn collect_phrases(sentence: &str, toks: &[Token<'_>], out: &mut Vec<String>) {
    let mut run: Vec<&str> = Vec::new();
    let flush = |run: &mut Vec<&str>, out: &mut Vec<String>| {
        if !run.is_empty() {
            let p = run.join(" ");
            if !out.contains(&p) && out.len() < 12 {
                out.push(p);
            }
            run.clear();
        }
    };
    for (i, t) in toks.iter().enumerate() {
        let word = &sentence[t.start..t.end];
        if i > 0 && t.capital && word != "I" && word.chars().count() > 1 {
            run.push(word);
        } else {
            flush(&mut run, out);
        }
    }
    flush(&mut run, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor() -> Option<NaiveDate> {
        NaiveDate::from_ymd_opt(2023, 5, 8)
    }

    #[test]
    fn dated_first_person_fact_in_third_person() {
        let text = "Caroline: I went to a LGBTQ support group yesterday and it was powerful.";
        // by default a relative date is not stamped: the key must not depend on the session date
        let f = HeuristicFacts::default().extract(text, anchor());
        assert_eq!(
            f[0],
            "Caroline went to a LGBTQ support group yesterday and it was powerful."
        );
        let other_day = NaiveDate::from_ymd_opt(2024, 1, 2);
        assert_eq!(HeuristicFacts::default().extract(text, other_day), f);
        let stamped = HeuristicFacts {
            relative_dates: true,
            ..HeuristicFacts::default()
        };
        let f = stamped.extract(text, anchor());
        assert_eq!(
            f[0],
            "[2023-05-07 May 2023] Caroline went to a LGBTQ support group yesterday and it was powerful."
        );
        assert!(f.last().is_some_and(|p| p.contains("LGBTQ")), "{f:?}");
        // explicit dates are stamped either way
        let f = HeuristicFacts::default().extract("I moved to Lisbon on 3 March 2021.", anchor());
        assert!(f[0].starts_with("[2021-03-03 March 2021] I moved"), "{f:?}");
    }

    #[test]
    fn chit_chat_yields_no_facts() {
        let f = HeuristicFacts::default().extract("Melanie: Wow, that is so cool!", anchor());
        assert!(f.is_empty(), "{f:?}");
        assert!(HeuristicFacts::default().extract("", anchor()).is_empty());
    }

    #[test]
    fn preferences_and_numbers_are_facts() {
        let f = HeuristicFacts::default().extract(
            "I have two dogs. The weather is nice. My favorite band is Muse.",
            None,
        );
        assert_eq!(f.len(), 3, "{f:?}");
        assert_eq!(f[0], "I have two dogs.");
        assert_eq!(f[1], "My favorite band is Muse.");
        assert_eq!(f[2], "Muse");
    }

    #[test]
    fn expansion_is_bounded_and_prepended() {
        let text = "I bought a car. ".repeat(50);
        let f = HeuristicFacts::default().extract(&text, None);
        assert!(f.len() <= 6);
        let k = expand_key(&f, "key");
        assert!(k.starts_with("I bought a car.") && k.ends_with("\nkey"));
        assert_eq!(expand_key(&[], "key"), "key");
    }
}

//! Parsing a small model's output into facts, trusting none of it: each line must be
//! `subject | relation | object` (extra `|`s inside the object are tolerated), short, no
//! question, and grounded in the item's text (every word but a few function words occurs in
//! the text, up to inflection); a first-person subject becomes the speaker the text names
//! (`Ann: I …`). Anything else is dropped; no valid line at all means the caller falls back
//! to the rules.

use std::collections::HashSet;

/// At most this many facts per item.
pub const MAX_FACTS: usize = 4;
/// Longest accepted subject or predicate (relation and object), in words.
const MAX_PART_WORDS: usize = 16;
/// Two words match when equal or sharing this many leading characters (`paint`/`painted`).
const STEM_CHARS: usize = 5;

/// Lower-cased words of `s` (letters and digits; a possessive `'s` dropped).
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .map(|w| {
            let w = w.trim_matches(|c| c == '\'' || c == '’');
            let w = w
                .strip_suffix("'s")
                .or_else(|| w.strip_suffix("’s"))
                .unwrap_or(w);
            w.to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The speaker a turn names (`Ann: …` → `Ann`; a round's `user: …` → `user`), if it does.
pub fn speaker(text: &str) -> Option<&str> {
    let (head, _) = text.split_once(':')?;
    let head = head.trim();
    if head == "user" {
        return Some(head);
    }
    let ok = !head.is_empty()
        && head.split_whitespace().count() <= 3
        && head.chars().next().is_some_and(char::is_uppercase)
        && head
            .chars()
            .all(|c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '.' || c == '\'');
    ok.then_some(head)
}

struct Grounding {
    words: HashSet<String>,
}

impl Grounding {
    fn new(text: &str) -> Self {
        Grounding {
            words: words(text).into_iter().collect(),
        }
    }

    fn has(&self, w: &str) -> bool {
        if self.words.contains(w) {
            return true;
        }
        let stem: String = w.chars().take(STEM_CHARS).collect();
        stem.chars().count() == STEM_CHARS
            && self
                .words
                .iter()
                .any(|t| t.chars().take(STEM_CHARS).eq(stem.chars()))
    }

    /// Every word of `part` is in the text or a function word, and one at least is a
    /// grounded content word.
    fn all(&self, part: &str) -> bool {
        let ws = words(part);
        let content = || ws.iter().filter(|w| !FUNCTION_WORDS.contains(&w.as_str()));
        ws.len() <= MAX_PART_WORDS && content().count() > 0 && content().all(|w| self.has(w))
    }
}

/// Words a fact may add without the text having them.
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "with", "and", "his", "her", "their",
    "is", "was", "are", "were", "be", "been", "has", "have", "had",
];

const FIRST_PERSON: &[&str] = &["i", "me", "my", "myself", "user", "speaker"];

/// The facts in `output` grounded in `text`, rendered `subject relation object`.
pub fn parse_facts(output: &str, text: &str) -> Vec<String> {
    let ground = Grounding::new(text);
    let who = speaker(text);
    let mut out: Vec<String> = Vec::new();
    for line in output.lines() {
        let Some(fact) = parse_line(line, &ground, who) else {
            continue;
        };
        if !out.contains(&fact) {
            out.push(fact);
        }
        if out.len() == MAX_FACTS {
            break;
        }
    }
    out
}

fn parse_line(line: &str, ground: &Grounding, who: Option<&str>) -> Option<String> {
    let line = line
        .trim()
        .trim_start_matches(|c: char| c == '-' || c == '*' || c == '•' || c.is_ascii_digit())
        .trim_start_matches(['.', ')'])
        .trim();
    if line.contains('?') {
        return None; // a question is no fact
    }
    // small models split the object over extra `|`s (`Jon | started | a | dance | studio`):
    // everything after the subject is the predicate
    let mut parts = line.split('|').map(str::trim).filter(|p| !p.is_empty());
    let subject = parts.next()?;
    let predicate = parts.collect::<Vec<_>>().join(" ");
    if !line.contains('|') || predicate.split_whitespace().count() < 2 || !ground.all(&predicate) {
        return None;
    }
    let subject = if FIRST_PERSON.contains(&subject.to_lowercase().as_str()) {
        who?
    } else if ground.all(subject) {
        subject
    } else {
        return None;
    };
    Some(format!("{subject} {predicate}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TURN: &str =
        "Caroline: I adopted two puppies last week, and my sister Anna loves hiking.";

    #[test]
    fn grounded_triples_become_facts() {
        let out = "Caroline | adopted | two puppies\n- I | has sister | Anna\n\
                   2. Caroline's sister | loves | hiking";
        assert_eq!(
            parse_facts(out, TURN),
            [
                "Caroline adopted two puppies",
                "Caroline has sister Anna",
                "Caroline's sister loves hiking"
            ]
        );
        let jon = "Jon: I'm starting a dance studio 'cause I'm passionate about dancing.";
        assert_eq!(
            parse_facts(
                "Jon | started | a | dance | studio\nJon | is | passionate",
                jon
            ),
            ["Jon started a dance studio", "Jon is passionate"]
        );
    }

    #[test]
    fn ungrounded_and_malformed_lines_are_dropped() {
        let out = "Caroline | adopted | three kittens\n\
                   Caroline adopted puppies\n\
                   Caroline | adopted\n\
                   Caroline |  | puppies\n\
                   Caroline | 1234 | puppies\n\
                   Caroline | adopted | puppies?\n\
                   Bob | adopted | puppies\n\
                   Caroline | likes | \n\
                   Caroline | likes | the a of\n\
                   NONE";
        assert!(
            parse_facts(out, TURN).is_empty(),
            "{:?}",
            parse_facts(out, TURN)
        );
        assert!(parse_facts("", TURN).is_empty());
        assert!(parse_facts("|||\n||\n|", TURN).is_empty());
    }

    #[test]
    fn inflections_match_and_duplicates_and_excess_are_cut() {
        let out = "Caroline | adopts | puppy dogs\nCaroline | adopted | puppies";
        // "puppy" and "puppies" share no 5-letter stem and "dogs" is not in the text: dropped
        // (the relation, "adopts", is not checked against the text)
        assert!(parse_facts(out, TURN)
            .iter()
            .all(|f| f == "Caroline adopted puppies"));
        let many = "Caroline | adopted | puppies\n".repeat(3)
            + "Anna | loves | hiking\nCaroline | adopted | two puppies\n\
               Caroline | has | a sister\nCaroline | went | hiking";
        let got = parse_facts(&many, TURN);
        assert_eq!(got.len(), MAX_FACTS, "{got:?}");
        assert_eq!(got[0], "Caroline adopted puppies");
    }

    #[test]
    fn first_person_needs_a_named_speaker() {
        assert!(parse_facts("I | adopted | puppies", "I adopted puppies.").is_empty());
        assert_eq!(
            parse_facts("me | adopted | puppies", "Jo Lee: I adopted puppies."),
            ["Jo Lee adopted puppies"]
        );
        assert_eq!(speaker("Ann: hi"), Some("Ann"));
        assert_eq!(speaker("note: this is lower case"), None);
        assert_eq!(speaker("A very long speaker name here: x"), None);
        assert_eq!(speaker("no colon"), None);
        assert_eq!(
            parse_facts(
                "user | adopted | a dog",
                "user: I adopted a dog!\nassistant: Nice."
            ),
            ["user adopted a dog"]
        );
    }
}

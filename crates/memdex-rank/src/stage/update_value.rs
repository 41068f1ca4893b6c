//! The update stage's value test: two statements give the same attribute of the question's
//! subject, and the newer one gives it another value, whether or not it says that anything
//! changed ("I live in Bristol" … "I live in Glasgow, in a top-floor flat").
//!
//! The statements are the clauses [`memdex_extract::change::ChangeTest::facts_in`] reads as
//! the subject's own (whose fact), stated (not asked, planned, wished or denied). The newer
//! one gives the **same attribute** as the older one when it holds every term of the
//! question's that the older one holds, and at least one (the question's analysed terms,
//! stemmed, without the subject's names: `live`, `size`, `sertraline`; "a four-bedroom
//! cabin" does not give the `bedroom`s of "our two-bedroom apartment", nor "a debit card"
//! the "credit card"); a term right after `to` does not count ("asked me to sing"), and two
//! terms are the same when equal or when one is a prefix of the other of at least five
//! letters (`member` / `membership`). The newer one gives **another value** when both give a
//! specific value (a name or a number: `Glasgow`, `$23`, `five`; [`Fact::values`]) and the
//! newer one gives one the older does not: "I live in Bristol, by the harbour" and "I love
//! living by the sea" give no value to compare, and chat about likes and doings rarely does. A question asking a
//! name ("What is my girlfriend's name?") is answered by the names the statements give their
//! kin noun (`my girlfriend Chloe` / `my girlfriend Aisha`).
//!
//! The test reads the two statements and the question only, so it means the same on a
//! five-item tenant as on a 30,000-item one.

use memdex_extract::change::{Fact, Subject};
use memdex_score::text::Analyzer;

/// The question's side of the value test.
pub(crate) struct ValueTest {
    /// The question's terms, without its subject's names.
    attributes: Vec<String>,
    /// The question asks a name (`name`, `called`).
    asks_name: bool,
    /// The question asks a place (`Where …?`).
    asks_place: bool,
    analyzer: Analyzer,
}

/// Shortest term that matches a longer one as its prefix.
const PREFIX_LETTERS: usize = 5;

fn same_term(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.len() >= PREFIX_LETTERS && long.starts_with(short))
}

impl ValueTest {
    pub(crate) fn new(question: &str, subject: &Subject) -> ValueTest {
        let analyzer = Analyzer::english();
        let names: Vec<String> = match subject {
            Subject::User => Vec::new(),
            Subject::Other(n) => n.iter().flat_map(|w| analyzer.terms(w)).collect(),
        };
        let mut attributes = analyzer.terms(question);
        attributes.retain(|t| !names.contains(t));
        attributes.dedup();
        let asks_name = (question.split(|c: char| !c.is_alphanumeric()))
            .any(|w| w.eq_ignore_ascii_case("name") || w.eq_ignore_ascii_case("called"));
        let asks_place =
            (question.split_whitespace().next()).is_some_and(|w| w.eq_ignore_ascii_case("where"));
        ValueTest {
            attributes,
            asks_name,
            asks_place,
            analyzer,
        }
    }

    /// Whether `text` may hold a statement the test reads: a cheap filter before any
    /// session is read (it may pass a text the test then finds nothing in, never the other
    /// way): for a name or place question any text, otherwise one holding the start of one of the
    /// question's terms (a stem without its last letter, as `studi` is of "study").
    pub(crate) fn mentions(&self, text: &str) -> bool {
        if self.asks_name || self.asks_place {
            return true;
        }
        let lower = text.to_lowercase();
        (self.attributes.iter()).any(|a| {
            let n = a.chars().count();
            let start: String = a.chars().take(n.saturating_sub(1).max(n.min(3))).collect();
            lower.contains(&start)
        })
    }

    /// The newer statement that gives an older one's attribute with another value, if any.
    pub(crate) fn changed<'f>(&self, older: &[Fact], newer: &'f [Fact]) -> Option<&'f Fact> {
        newer.iter().find(|n| {
            older
                .iter()
                .any(|o| self.renamed(o, n) || self.revalued(o, n))
        })
    }

    /// Whether `sentence` (a newer statement of a change) names a value an older statement
    /// gave ([`Fact::values`]: "Kieran swapped **the Audi** for a Leaf" after "my brother
    /// Kieran drives an old Audi"). Then the pair decides, whatever the newer one's rank.
    pub(crate) fn names_value(older: &[Fact], sentence: &str) -> bool {
        let words: Vec<String> = (sentence.split(|c: char| !c.is_alphanumeric()))
            .map(str::to_lowercase)
            .collect();
        (older.iter().flat_map(|o| &o.values)).any(|v| words.contains(v))
    }

    /// A name question, and the two statements give their kin noun different names.
    fn renamed(&self, older: &Fact, newer: &Fact) -> bool {
        self.asks_name && matches!((&older.kin_name, &newer.kin_name), (Some(a), Some(b)) if a != b)
    }

    /// The newer clause holds every term of the question's that the older one holds (at
    /// least one), or, for a place question, both give a place; both give a specific value,
    /// and the newer one a value the older lacks.
    fn revalued(&self, older: &Fact, newer: &Fact) -> bool {
        let (o, n) = (self.asked(&older.clause), self.asked(&newer.clause));
        // a place question is answered by where the subject is: a place each gives
        let placed = self.asks_place && !older.places.is_empty() && !newer.places.is_empty();
        let attribute = placed || !o.is_empty() && o.iter().all(|a| n.contains(a));
        let new_value = newer.values.iter().any(|v| !older.values.contains(v));
        attribute && !older.values.is_empty() && new_value
    }

    /// The question's terms `clause` holds, each as the question has it; a word right after
    /// `to` does not count (an infinitive is not a statement: "asked me to sing").
    fn asked(&self, clause: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut prev = String::new();
        for raw in clause.split_whitespace() {
            let word = raw
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            if prev != "to" {
                for t in self.terms(&word) {
                    let hit = self.attributes.iter().find(|a| same_term(a, &t));
                    if let Some(a) = hit.filter(|a| !out.contains(&a.as_str())) {
                        out.push(a);
                    }
                }
            }
            prev = word;
        }
        out
    }

    fn terms(&self, text: &str) -> Vec<String> {
        self.analyzer.terms(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fact with the values its capitalised words and digits give (as `facts_in` reads
    /// them, near enough for these tests).
    fn fact(clause: &str, sentence: &str) -> Fact {
        let values = (clause.split_whitespace().skip(1))
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| w.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit()))
            .filter(|w| *w != "I")
            .map(str::to_lowercase)
            .collect();
        Fact {
            clause: clause.into(),
            sentence: sentence.into(),
            values,
            places: Vec::new(),
            kin_name: None,
        }
    }

    #[test]
    fn the_same_attribute_with_another_value_is_a_change() {
        let t = ValueTest::new("Where do I live?", &Subject::User);
        let old = [fact(
            "I live in Bristol",
            "I live in Bristol, by the harbour.",
        )];
        let new = [fact("I live in Glasgow", "I live in Glasgow, in a flat.")];
        assert!(t.changed(&old, &new).is_some());
        // the same value again is no change
        let same = [fact("I live in Bristol", "I live in Bristol.")];
        assert!(t.changed(&old, &same).is_none());
        // another attribute is no change
        let other = [fact("I work in Leeds", "I work in Leeds.")];
        assert!(t.changed(&old, &other).is_none());
        // an infinitive states nothing
        let wish = [fact(
            "I'd love to live in Glasgow",
            "I'd love to live in Glasgow.",
        )];
        assert!(t.changed(&old, &wish).is_none());
        // no specific value to compare
        let vague = [fact("I love where I live now", "I love where I live now.")];
        assert!(t.changed(&old, &vague).is_none());
    }

    #[test]
    fn the_newer_statement_gives_every_question_term_the_older_one_gave() {
        let t = ValueTest::new("Which credit card do I use?", &Subject::User);
        let old = [fact(
            "I put it all on my Sapphire credit card",
            "… credit card.",
        )];
        let debit = [fact(
            "I'm setting up a debit card",
            "I'm setting up a debit card.",
        )];
        assert!(t.changed(&old, &debit).is_none());
        let new = [fact(
            "now my credit card is an Amex",
            "now my credit card is an Amex.",
        )];
        assert!(t.changed(&old, &new).is_some());
    }

    #[test]
    fn the_cheap_filter_passes_every_text_the_test_may_read() {
        let t = ValueTest::new("What am I studying these days?", &Subject::User);
        assert!(t.mentions("I'm doing a study of Birkbeck's history MA"));
        assert!(t.mentions("My Studies are going well"));
        assert!(!t.mentions("What's a good lasagna recipe?"));
        let name = ValueTest::new("What is my dog called?", &Subject::User);
        assert!(name.mentions("anything at all"));
    }

    #[test]
    fn terms_share_a_stem_or_a_long_prefix() {
        assert!(same_term("member", "membership"));
        assert!(!same_term("car", "cardio"));
        let t = ValueTest::new("Which gym am I a member of?", &Subject::User);
        let old = [fact("I'm a member at PureGym", "I'm a member at PureGym.")];
        let new = [fact(
            "I have my membership at Better",
            "I have my membership at Better, by the pool.",
        )];
        assert!(t.changed(&old, &new).is_some());
    }

    #[test]
    fn a_name_question_compares_the_names_given() {
        let subject = Subject::Other(vec!["girlfriend".into()]);
        let t = ValueTest::new("What is my girlfriend's name?", &subject);
        let named = |n: &str| Fact {
            kin_name: Some(n.into()),
            ..fact("my girlfriend", "my girlfriend")
        };
        assert!(t.changed(&[named("chloe")], &[named("aisha")]).is_some());
        assert!(t.changed(&[named("chloe")], &[named("chloe")]).is_none());
    }
}

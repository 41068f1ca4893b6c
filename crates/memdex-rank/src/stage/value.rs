//! The update stage's value test: whether a newer statement gives an older one's attribute
//! with another value ([`ValueTest`]; the stage's rule 2, see [`super::update`]).

use memdex_extract::change::Fact;
use memdex_extract::kinds::{kinds, Kind};
use memdex_extract::question::{asked_head, asked_kind, measured, Subject};
use memdex_score::text::Analyzer;

/// Verbs of ending a state that name what ended as their object: the past forms of Levin's
/// (1993) verbs of leaving (51.2: `left`) and of stopping (55.2: `quit`, `stopped`, `gave
/// up`), and the everyday `dropped`, `ditched` and `packed in`. As cues on their own, `left`
/// and `dropped` are as often a direction, a remainder or a fall ("turn left", "none left",
/// "dropped my phone"); with what an older statement gave as their object they end it.
const ENDINGS: &[&str] = &[
    "left",
    "quit",
    "stopped",
    "gave up",
    "given up",
    "dropped",
    "ditched",
    "packed in",
];

/// Words between a verb of ending and its object's head ("left **the** council job").
const DETERMINERS: &[&str] = &["the", "a", "an", "my", "our", "his", "her", "their", "its"];

/// The update stage's value test: two statements give the same attribute of the question's
/// subject, and the newer one gives it another value, whether or not it says that anything
/// changed ("I live in Bristol" … "I live in Glasgow, in a top-floor flat").
///
/// The statements are the clauses [`memdex_extract::change::ChangeTest::facts_in`] reads as
/// the subject's own (whose fact), stated (not asked, planned, wished or denied). The newer
/// one gives the **same attribute** as the older one when it holds every term of the
/// question's that the older one holds, and at least one (the question's analysed terms,
/// stemmed, without the subject's names and light verbs: `live`, `size`, `sertraline`; "a four-bedroom
/// cabin" does not give the `bedroom`s of "our two-bedroom apartment", nor "a debit card"
/// the "credit card"); a term right after `to` does not count ("asked me to sing"), and two
/// terms are the same when equal or when one is a prefix of the other of at least five
/// letters (`member` / `membership`). For a `Where …?` question, two statements that each
/// give a place ([`Fact::places`]) give the same attribute whatever their words. The newer
/// one gives **another value** when both give a specific value (a name or a number:
/// `Glasgow`, `$23`, `five`; [`Fact::values`]) and the newer one gives one the older does
/// not: "I love living by the sea" gives none to compare, and chat about likes and doings
/// rarely does. A question asking a name ("What is my girlfriend's name?") is answered by
/// the names the statements give their kin noun (`my girlfriend Chloe` / `my girlfriend
/// Aisha`).
///
/// The test reads the two statements and the question only, so it means the same on a
/// five-item tenant as on a 30,000-item one. This is the question's side of it.
pub(crate) struct ValueTest {
    /// The question's terms, without its subject's names.
    attributes: Vec<String>,
    /// Those of its terms that are names (capitalised): what a near pair's one shared term
    /// may not be.
    named: Vec<String>,
    /// The question's term for what a `How much N …?` question measures (`rent`), or for
    /// the head of what a copular question asks ("What's my daily step **goal**?"): a newer
    /// statement gives the attribute only if it names it too, when the older one does.
    measured: Option<String>,
    /// The question asks a name (`name`, `called`, `Who …?`).
    asks_name: bool,
    /// The question asks a place (`Where …?`, `Which city …?`).
    asks_place: bool,
    /// The question asks which day or what time (`Which days …?`, `What time …?`).
    asks_time: bool,
    /// The kind of thing the question asks for, when WordNet knows it ("What **sport** does
    /// my son play?"): then the things of that kind a statement names are its values.
    kind: Option<Kind>,
    /// The question's terms it has right after `to` ("get to work").
    after_to: Vec<String>,
    /// The subject's names (analysed), with those the history gives it.
    names: Vec<String>,
    analyzer: Analyzer,
}

/// The words of `text`, lower case, without their punctuation.
fn words(text: &str) -> Vec<String> {
    (text.split_whitespace())
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect()
}

/// Light verbs (analysed): they carry little of an attribute's meaning ("I go to the gym" /
/// "I hit the gym"), so a statement need not repeat them.
const LIGHT_VERBS: &[&str] = &[
    "go", "get", "have", "do", "make", "take", "give", "put", "keep",
];

/// Kinds of time a `Which …?` / `What …?` question may ask for: then days and times are
/// values.
const TIME_KINDS: &[&str] = &[
    "day", "days", "time", "times", "night", "nights", "evening", "evenings", "morning",
    "mornings", "month", "months", "weekday", "weekdays",
];

/// Kinds of place a `Which …?` question may ask for, as `Where …?` does.
const PLACE_KINDS: &[&str] = &[
    "city",
    "town",
    "country",
    "village",
    "suburb",
    "state",
    "county",
    "area",
    "neighbourhood",
    "neighborhood",
];

/// Shortest term that matches a longer one as its prefix.
const PREFIX_LETTERS: usize = 5;

pub(crate) fn same_term(a: &str, b: &str) -> bool {
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
        attributes.retain(|t| !names.contains(t) && !LIGHT_VERBS.contains(&t.as_str()));
        attributes.dedup();
        let lower = words(question);
        let asks_name = (lower.iter()).any(|w| w == "name" || w == "called")
            || lower.first().is_some_and(|w| w == "who");
        // "Where …?", "Where's …?", "Which city …?"
        let asks_place = (lower.first())
            .is_some_and(|w| w.split(['\'', '’']).next() == Some("where"))
            || (lower.windows(2)).any(|w| {
                matches!(w[0].as_str(), "which" | "what") && PLACE_KINDS.contains(&w[1].as_str())
            });
        let after_to = (lower.windows(2))
            .filter(|w| w[0] == "to")
            .flat_map(|w| analyzer.terms(&w[1]))
            .collect();
        let asks_time = (lower.windows(2)).any(|w| {
            matches!(w[0].as_str(), "which" | "what") && TIME_KINDS.contains(&w[1].as_str())
        });
        // the question's names (capitalised past its first word) name a thing, not an
        // attribute: "What memory does "Harry Potter" bring to Tim?"
        let named = (question.split_whitespace().skip(1))
            .filter(|w| {
                w.trim_start_matches(|c: char| !c.is_alphanumeric())
                    .starts_with(char::is_uppercase)
            })
            .flat_map(|w| analyzer.terms(w))
            .collect();
        // a place, a time and a name have values of their own
        let kind = (asked_kind(question))
            .filter(|_| !(asks_place || asks_time || asks_name))
            .and_then(|noun| kinds().kind(&noun));
        let measured = (measured(question).or_else(|| asked_head(question)))
            .and_then(|n| analyzer.terms(&n).into_iter().next())
            .filter(|t| attributes.contains(t));
        ValueTest {
            kind,
            measured,
            attributes,
            named,
            after_to,
            names,
            asks_time,
            asks_name,
            asks_place,
            analyzer,
        }
    }

    /// Whether `text` holds the first word of a verb of [`ENDINGS`]: then every item of the
    /// window is read, as when one carries a cue ([`ValueTest::ended`]).
    pub(crate) fn may_end(text: &str) -> bool {
        let w = words(text);
        ENDINGS
            .iter()
            .any(|e| w.iter().any(|x| e.split(' ').next() == Some(x)))
    }

    /// Adds the names the history gives the subject (`my son Felix`): what a statement says
    /// of the subject, not what it ended.
    pub(crate) fn name(&mut self, subject: &Subject) {
        if let Subject::Other(names) = subject {
            let terms: Vec<String> = names.iter().flat_map(|w| self.terms(w)).collect();
            self.names.extend(terms);
        }
    }

    /// Whether `text` may hold a statement the test reads: a cheap filter before any
    /// session is read (it may pass a text the test then finds nothing in, never the other
    /// way): for a name or place question any text, otherwise one holding the start of one of
    /// the question's terms (a stem without its last letter, as `studi` is of "study") or,
    /// for a kind question, a thing of its kind ("my natural dark brown" for "What colour …?").
    pub(crate) fn mentions(&self, text: &str) -> bool {
        if self.asks_name || self.asks_place {
            return true;
        }
        let lower = text.to_lowercase();
        let termed = (self.attributes.iter()).any(|a| {
            let n = a.chars().count();
            let start: String = a.chars().take(n.saturating_sub(1).max(n.min(3))).collect();
            lower.contains(&start)
        });
        termed || self.names_kind(text)
    }

    /// The newer statement that gives an older one's attribute with another value, if any
    /// (`near`: the two items' key vectors clear [`PAIR_COSINE`]).
    pub(crate) fn changed<'f>(
        &self,
        older: &[Fact],
        newer: &'f [Fact],
        near: bool,
    ) -> Option<&'f Fact> {
        // the things of the question's kind each statement names, read once per statement
        let kinds_of = |f: &[Fact]| -> Vec<Vec<String>> {
            f.iter().map(|x| self.of_kind(&x.clause)).collect()
        };
        let (ko, kn) = (kinds_of(older), kinds_of(newer));
        let found = (newer.iter().zip(&kn)).find(|(n, nk)| {
            (older.iter().zip(&ko))
                .any(|(o, ok)| self.renamed(o, n) || self.revalued((o, ok), (n, nk), near))
        });
        found.map(|(n, _)| n)
    }

    /// Whether `sentence` (a newer statement of a change) names a value an older statement
    /// gave ([`Fact::values`]: "Kieran swapped **the Audi** for a Leaf" after "my brother
    /// Kieran drives an old Audi"). Then the pair decides, whatever the newer one's rank.
    pub(crate) fn names_value(older: &[Fact], sentence: &str) -> bool {
        let words: Vec<String> = (sentence.split(|c: char| !c.is_alphanumeric()))
            .map(str::to_lowercase)
            .collect();
        // a number with a separator ("4.1", "8,000") is one value, but several words
        let number = |v: &str| v.contains(['.', ',']) && sentence.contains(v);
        (older.iter().flat_map(|o| &o.values)).any(|v| words.contains(v) || number(v))
    }

    /// The newer statement that ends what an older one gave, with its verb: a verb of
    /// [`ENDINGS`] whose object's first word (after determiners) is a value of the older
    /// statement or a word of its clause ("Gareth left Tesco for Aldi" after "Gareth works at
    /// Tesco"; "Felix dropped football" after "Felix plays football"; "he packed in the
    /// council job" after "my dad works for the council"). The pair decides, whatever the
    /// newer one's rank, as for a cue that names the older value.
    pub(crate) fn ended<'f>(
        &self,
        older: &[Fact],
        newer: &'f [Fact],
    ) -> Option<(&'static str, &'f Fact)> {
        let was = self.was_words(older);
        newer.iter().find_map(|n| {
            let w = words(&n.clause);
            let verb = ENDINGS.iter().find(|e| {
                let parts: Vec<&str> = e.split(' ').collect();
                (0..w.len()).any(|i| {
                    let at = w[i..].iter().zip(&parts).filter(|(a, b)| a == b).count();
                    let object = (w[i..].iter().skip(parts.len()))
                        .find(|y| !DETERMINERS.contains(&y.as_str()));
                    at == parts.len() && object.is_some_and(|y| self.was(&was, y))
                })
            })?;
            Some((*verb, n))
        })
    }

    /// The values and the analysed terms (without the subject's names and light verbs) of
    /// the older statements: what a verb of ending may name as its object.
    fn was_words(&self, older: &[Fact]) -> Vec<String> {
        let mut was: Vec<String> = older.iter().flat_map(|o| o.values.clone()).collect();
        for o in older {
            let mut t = self.terms(&o.clause);
            t.retain(|x| !self.names.contains(x) && !LIGHT_VERBS.contains(&x.as_str()));
            was.extend(t);
        }
        was
    }

    /// Whether the word `object` is one of `was` (values, or analysed terms of a clause).
    fn was(&self, was: &[String], object: &str) -> bool {
        was.iter().any(|v| v == object)
            || (self.terms(object).iter()).any(|t| was.iter().any(|v| same_term(v, t)))
    }

    /// A name question, and the two statements give one person noun different names.
    fn renamed(&self, older: &Fact, newer: &Fact) -> bool {
        self.asks_name
            && matches!((&older.person_name, &newer.person_name),
                (Some((a, x)), Some((b, y))) if a == b && x != y)
    }

    /// The newer clause holds every term of the question's that the older one holds (at
    /// least one; when the items are `near`, one of them that is a common word, not a name
    /// the question gives, is enough), or, for a place question, both give a place, or, for
    /// a question asking a kind of thing, both name a thing of that kind; both give a
    /// specific value, and the newer one a value the older lacks (for a place question, a
    /// place; for a kind, a thing of the kind; for a question asking which day or what time,
    /// days and times count).
    /// Each statement comes with the things of the question's kind it names
    /// ([`ValueTest::of_kind`]).
    fn revalued(
        &self,
        (older, ko): (&Fact, &[String]),
        (newer, kn): (&Fact, &[String]),
        near: bool,
    ) -> bool {
        let (o, n) = (self.asked(&older.clause), self.asked(&newer.clause));
        // a place question is answered by where the subject is: a place each gives
        let placed = self.asks_place && !older.places.is_empty() && !newer.places.is_empty();
        // a kind question by the thing of the kind each names ("plays rugby" / "plays
        // basketball" for "What sport …?")
        let kinded = !placed && !ko.is_empty() && !kn.is_empty();
        let shared = o.iter().filter(|a| n.contains(a)).count();
        // near items share one term of the question's, a common word, not a name
        let common = o
            .iter()
            .any(|a| n.contains(a) && !self.named.iter().any(|x| x == a));
        // what an amount question measures, the older statement names and the newer must
        // ("£142 a month" of council tax is no rent)
        let measures = (self.measured.as_deref()).is_none_or(|m| !o.contains(&m) || n.contains(&m));
        let termed = shared > 0 && (near && common || shared == o.len()) && measures;
        let attribute = placed || kinded || termed;
        let values = |f: &Fact, k: &[String]| match (placed, kinded, self.asks_time) {
            (true, _, _) => f.places.clone(),
            (false, true, _) => k.to_vec(),
            (false, false, true) => [&f.values[..], &f.times[..]].concat(),
            (false, false, false) => f.values.clone(),
        };
        let (was, now) = (values(older, ko), values(newer, kn));
        attribute && !was.is_empty() && now.iter().any(|v| !was.contains(v))
    }

    /// The things of the question's kind `clause` names (WordNet: `rugby` for `sport`), a
    /// word, or two words where neither alone is one ("flat white"); none when the question
    /// asks no kind.
    fn of_kind(&self, clause: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.kind_words(clause, |x| {
            out.push(x.to_string());
            false
        });
        out
    }

    /// Whether `text` names a thing of the question's kind ([`ValueTest::of_kind`]), read
    /// up to the first.
    fn names_kind(&self, text: &str) -> bool {
        self.kind_words(text, |_| true)
    }

    /// Calls `found` with each thing of the question's kind `text` names, until it answers
    /// true (then returns true).
    fn kind_words(&self, text: &str, mut found: impl FnMut(&str) -> bool) -> bool {
        let Some(kind) = &self.kind else {
            return false;
        };
        let is = |x: &str| x.len() > 2 && kinds().is_a(x, kind);
        let w = words(text);
        let single: Vec<bool> = w.iter().map(|x| is(x)).collect();
        for (x, _) in w.iter().zip(&single).filter(|(_, &s)| s) {
            if found(x) {
                return true;
            }
        }
        let mut both = String::new();
        for (k, pair) in w.windows(2).enumerate() {
            if single[k] || single[k + 1] {
                continue;
            }
            both.clear();
            both.push_str(&pair[0]);
            both.push('_');
            both.push_str(&pair[1]);
            if is(&both) && found(&both) {
                return true;
            }
        }
        false
    }

    /// The question's terms `clause` holds, each as the question has it; a word right after
    /// `to` does not count (an infinitive is not a statement: "asked me to sing") unless the
    /// question has it after `to` too ("How do I get to work?": "I cycle to work").
    fn asked(&self, clause: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut prev = String::new();
        for word in words(clause) {
            for t in self.terms(&word) {
                let hit = self.attributes.iter().find(|a| same_term(a, &t));
                let hit = hit.filter(|a| prev != "to" || self.after_to.contains(a));
                if let Some(a) = hit.filter(|a| !out.contains(&a.as_str())) {
                    out.push(a);
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

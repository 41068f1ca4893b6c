//! Post-thinking without an LLM: (subject, relation, object) triples from a turn's text.
//!
//! [`ThoughtExtractor`] is the seam (a model extractor can implement it, or any
//! [`FactExtractor`] can be adapted with [`FromFacts`]); [`RuleThoughts`] is the local
//! default. The rules, per sentence (questions skipped):
//! * subject: `I`/`we` (the speaker: the `Name:` prefix of the turn, else `User`), `my X`
//!   (`User's sister`), `he`/`she`/`they` (the latest third party of matching gender, from
//!   this tenant's earlier thoughts), or a capitalised name;
//! * relation: a canonical relation ([`super::lexicon::RELATIONS`]: `lives in` ← "live in",
//!   "moved to", …), a relationship status, an age, or else the verb itself (`adopted`,
//!   `went to`);
//! * object: the words after it up to a clause boundary or a time phrase, at most 8;
//! * polarity: a negation (`don't`, `no longer`, `not … anymore`) makes it a retraction, and
//!   `forget that …` an instruction to forget the clause's thought.

use std::fmt::Debug;

use chrono::NaiveDate;
use memdex_extract::{sentences, FactExtractor};

use super::lexicon::{
    is_verbish, AUX, DETERMINERS, FEMALE, FILLERS, MALE, NEGATIONS, OBJECT_STOPS, OPENERS,
    RELATIONS, STATUS,
};

/// What a triple asks of the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polarity {
    /// A statement: insert (or merge, or contradict older values).
    Assert,
    /// A negated statement ("I don't live in Porto anymore"): forget the matching thought.
    Negate,
    /// "Forget that …": forget the matching thought.
    ForgetThat,
}

/// One extracted relation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triple {
    pub subject: String,
    pub relation: String,
    pub object: String,
    pub polarity: Polarity,
    /// The relation holds one value at a time (a new object contradicts the old one).
    pub functional: bool,
}

impl Triple {
    /// The thought's short sentence (what is embedded).
    pub fn sentence(&self) -> String {
        format!("{} {} {}", self.subject, self.relation, self.object)
    }

    /// Lower-cased subject: what contradictions and merges compare.
    pub fn subject_key(&self) -> String {
        self.subject.to_lowercase()
    }

    /// Lower-cased object without determiners (`a dog` = `the dog`).
    pub fn object_key(&self) -> String {
        object_key(&self.object)
    }
}

/// The comparison form of an object.
pub fn object_key(object: &str) -> String {
    object
        .split_whitespace()
        .map(|w| w.to_lowercase())
        .filter(|w| !DETERMINERS.contains(&w.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One text to think about.
#[derive(Debug, Clone, Copy)]
pub struct ThoughtInput<'a> {
    pub text: &'a str,
    /// Who speaks (None: the text's `Name:` prefix, else `User`).
    pub speaker: Option<&'a str>,
    /// The session date, when known.
    pub anchor: Option<NaiveDate>,
}

/// Whom a pronoun can refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gender {
    Female,
    Male,
    Unknown,
}

/// Third parties mentioned lately (newest last): what `he`/`she`/`they` resolve to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    recent: Vec<(String, Gender)>,
}

impl Context {
    /// Notes a third party (a possessive subject or a name that is not the speaker).
    pub fn mention(&mut self, subject: &str) {
        let head = subject.rsplit(' ').next().unwrap_or(subject).to_lowercase();
        let gender = if FEMALE.contains(&head.as_str()) {
            Gender::Female
        } else if MALE.contains(&head.as_str()) {
            Gender::Male
        } else {
            Gender::Unknown
        };
        self.recent.retain(|(s, _)| s != subject);
        self.recent.push((subject.to_string(), gender));
        if self.recent.len() > 8 {
            self.recent.remove(0);
        }
    }

    /// The latest third party a pronoun fits: its gender first, else someone of unknown
    /// gender; `they` takes the latest anyone.
    pub fn resolve(&self, pronoun: &str) -> Option<&str> {
        let want = match pronoun {
            "she" | "her" => Gender::Female,
            "he" | "him" => Gender::Male,
            _ => return self.recent.last().map(|(s, _)| s.as_str()),
        };
        let newest = |g: Gender| self.recent.iter().rev().find(|(_, x)| *x == g);
        newest(want)
            .or_else(|| newest(Gender::Unknown))
            .map(|(s, _)| s.as_str())
    }
}

/// Extracts thoughts from a text. `context` carries the third parties mentioned so far (the
/// extractor reads and extends it).
pub trait ThoughtExtractor: Send + Sync + Debug {
    /// A stable name, recorded in the store's manifest.
    fn name(&self) -> &str;
    fn extract(&self, input: &ThoughtInput<'_>, context: &mut Context) -> Vec<Triple>;
}

/// The rule-based extractor (see the module docs). At most `max_triples` per text.
#[derive(Debug, Clone)]
pub struct RuleThoughts {
    pub max_triples: usize,
    /// Accept any capitalised name as a subject (facts written in the third person). Off
    /// for raw turns, where a capitalised opener ("Thanks", "Great") is rarely a person: then
    /// only the speaker's own name is.
    pub names: bool,
}

impl Default for RuleThoughts {
    fn default() -> Self {
        Self {
            max_triples: 8,
            names: false,
        }
    }
}

/// The name of [`RuleThoughts`] in manifests.
pub const RULES_NAME: &str = "rules-v1";

impl ThoughtExtractor for RuleThoughts {
    fn name(&self) -> &str {
        RULES_NAME
    }

    fn extract(&self, input: &ThoughtInput<'_>, context: &mut Context) -> Vec<Triple> {
        let (prefix, body) = split_speaker(input.text);
        let speaker = input.speaker.or(prefix).unwrap_or("User");
        let mut out = Vec::new();
        for sentence in sentences(body) {
            if out.len() >= self.max_triples {
                break;
            }
            if let Some(t) = parse_sentence(sentence, speaker, self.names, context) {
                if t.subject != speaker {
                    context.mention(&t.subject);
                }
                out.push(t);
            }
        }
        out
    }
}

/// Any [`FactExtractor`] (a model extractor, say) as a thought extractor: its fact sentences
/// are parsed into triples by the same rules (sentences it returns that state no relation
/// are dropped).
#[derive(Debug)]
pub struct FromFacts<F: FactExtractor> {
    facts: F,
    name: String,
    rules: RuleThoughts,
}

impl<F: FactExtractor> FromFacts<F> {
    pub fn new(facts: F) -> Self {
        let name = format!("facts:{}", facts.name());
        Self {
            facts,
            name,
            rules: RuleThoughts {
                names: true,
                ..RuleThoughts::default()
            },
        }
    }
}

impl<F: FactExtractor> ThoughtExtractor for FromFacts<F> {
    fn name(&self) -> &str {
        &self.name
    }

    fn extract(&self, input: &ThoughtInput<'_>, context: &mut Context) -> Vec<Triple> {
        let (prefix, _) = split_speaker(input.text);
        let speaker = input.speaker.or(prefix);
        let mut out = Vec::new();
        for fact in self.facts.extract(input.text, input.anchor) {
            let one = ThoughtInput {
                text: &fact,
                speaker,
                anchor: input.anchor,
            };
            out.extend(self.rules.extract(&one, context));
        }
        out.truncate(self.rules.max_triples);
        out
    }
}

/// `Caroline: text` → (`Caroline`, `text`) when the prefix looks like a name.
pub fn split_speaker(text: &str) -> (Option<&str>, &str) {
    if let Some((name, rest)) = text.split_once(": ") {
        // every word capitalised: "Mary Ann: …" is a speaker, "Big news: …" is not
        let plausible = !name.is_empty()
            && name.len() <= 40
            && name.split(' ').count() <= 3
            && name
                .split(' ')
                .all(|w| w.chars().next().is_some_and(char::is_uppercase))
            && !name.eq_ignore_ascii_case("user")
            && !name.eq_ignore_ascii_case("assistant");
        if plausible {
            return (Some(name), rest);
        }
    }
    (None, text)
}

/// One word: as written and lower-cased, and whether a clause ends after it (`,` `;` `:`).
#[derive(Debug, Clone)]
struct Tok {
    orig: String,
    lower: String,
    end: bool,
}

fn tokens(text: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    for raw in text.split_whitespace() {
        let raw = raw.replace('’', "'");
        let end = raw.ends_with([',', ';', ':']);
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
        if word.is_empty() {
            if let Some(last) = out.last_mut() {
                let last: &mut Tok = last;
                last.end |= end;
            }
            continue;
        }
        let lower = word.to_lowercase();
        // contractions split off: "I'm" → "I" "'m", "she's" → "she" "'s"
        let split = ["'m", "'ve", "'re", "'s", "'d", "'ll"]
            .iter()
            .find(|t| lower.ends_with(*t) && lower.len() > t.len());
        match split {
            Some(t)
                if matches!(
                    &lower[..lower.len() - t.len()],
                    "i" | "we" | "she" | "he" | "they" | "it"
                ) =>
            {
                let cut = word.len() - t.len();
                out.push(Tok {
                    orig: word[..cut].to_string(),
                    lower: lower[..lower.len() - t.len()].to_string(),
                    end: false,
                });
                out.push(Tok {
                    orig: t.to_string(),
                    lower: t.to_string(),
                    end,
                });
            }
            _ => out.push(Tok {
                orig: word.to_string(),
                lower,
                end,
            }),
        }
    }
    out
}

/// The triple one sentence states, if any.
fn parse_sentence(sentence: &str, speaker: &str, names: bool, context: &Context) -> Option<Triple> {
    if sentence.ends_with('?') {
        return None;
    }
    let lower = sentence.to_lowercase();
    let (clause, polarity) = match ["forget that ", "forget about "]
        .iter()
        .find_map(|p| lower.find(p).map(|i| i + p.len()))
    {
        Some(at) => (sentence.get(at..)?, Polarity::ForgetThat),
        None => (sentence, Polarity::Assert),
    };
    // "Big news: Ioana moved to Lisbon": a short lead-in before a colon is not the subject
    let clause = match clause.split_once(": ") {
        Some((lead, rest)) if lead.split_whitespace().count() <= 3 => rest,
        _ => clause,
    };
    let toks = tokens(clause);
    let mut i = 0;
    while i < toks.len() && (OPENERS.contains(&toks[i].lower.as_str()) || toks[i].end) {
        i += 1;
    }
    let s = subject(&toks, i, speaker, names, context)?;
    predicate(&toks, s, polarity)
}

/// A sentence's subject: who, where the predicate starts, and whether the subject phrase
/// ended in `name` ("my dog's name is Max": the dog is named Max).
#[derive(Debug)]
struct Subject {
    who: String,
    rest: usize,
    named: bool,
}

/// The subject at `i` and where the predicate starts.
fn subject(
    toks: &[Tok],
    i: usize,
    speaker: &str,
    names: bool,
    context: &Context,
) -> Option<Subject> {
    let first = toks.get(i)?;
    let plain = |who: String, rest| Subject {
        who,
        rest,
        named: false,
    };
    match first.lower.as_str() {
        "i" | "we" => Some(plain(speaker.to_string(), i + 1)),
        "my" | "our" => possessive(toks, i + 1, speaker),
        "his" | "her" | "their" => possessive(toks, i + 1, context.resolve(&first.lower)?),
        "she" | "he" | "they" => Some(plain(context.resolve(&first.lower)?.to_string(), i + 1)),
        _ => {
            let capital = first.orig.chars().next().is_some_and(char::is_uppercase);
            if !capital || first.orig.len() < 2 || OPENERS.contains(&first.lower.as_str()) {
                return None;
            }
            let mut j = i + 1;
            let mut name = vec![first.orig.as_str()];
            while j < toks.len()
                && name.len() < 3
                && toks[j].orig.chars().next().is_some_and(char::is_uppercase)
                && !toks[j - 1].end
            {
                name.push(&toks[j].orig);
                j += 1;
            }
            let name = name.join(" ");
            // a capitalised opener ("Thanks", "Great") is rarely followed by a relation: a
            // name that is ("Ioana moved to Lisbon") is a person, whatever `names` says
            let person = names || name.eq_ignore_ascii_case(speaker) || states_relation(toks, j);
            person.then(|| plain(name, j))
        }
    }
}

/// Whether the words from `j` on (auxiliaries and fillers such as `now`, `just` skipped)
/// start with a phrase of a canonical relation (`moved to`, `lives in`, `works at`).
fn states_relation(toks: &[Tok], j: usize) -> bool {
    let words: Vec<&str> = toks[j.min(toks.len())..]
        .iter()
        .map(|t| t.lower.as_str())
        .skip_while(|w| AUX.contains(w) || FILLERS.contains(w))
        .take(6)
        .collect();
    let text = format!("{} ", words.join(" "));
    RELATIONS
        .iter()
        .any(|r| r.phrases.iter().any(|p| text.starts_with(p)))
}

/// `my X` / `her X`: `owner's X` (at most 3 words, up to the first verb-like word).
fn possessive(toks: &[Tok], mut j: usize, owner: &str) -> Option<Subject> {
    let mut np: Vec<&str> = Vec::new();
    // "name" after a possessive is the noun ("my dog's name"), not a verb
    let noun = |j: usize, np: &[&str]| {
        toks[j].lower == "name" && np.last().is_some_and(|w| w.ends_with("'s"))
    };
    while j < toks.len() && np.len() < 3 && (!is_verbish(&toks[j].lower) || noun(j, &np)) {
        np.push(&toks[j].orig);
        let end = toks[j].end;
        j += 1;
        // a relative is a whole noun phrase ("my brother plays…"), unless a name follows
        let kin = FEMALE.contains(&toks[j - 1].lower.as_str())
            || MALE.contains(&toks[j - 1].lower.as_str());
        if end || (kin && toks.get(j).is_none_or(|t| t.lower != "name")) {
            break;
        }
    }
    let np = np.join(" ");
    // "my dog's name is Max": the dog is the subject, "is named" the relation
    let (np, named) = match np
        .strip_suffix("'s name")
        .or_else(|| np.strip_suffix(" name"))
    {
        Some(head) => (head.to_string(), true),
        None if np == "name" => (String::new(), true),
        None => (np, false),
    };
    let who = if np.is_empty() {
        owner.to_string()
    } else {
        format!("{owner}'s {np}")
    };
    (!np.is_empty() || named).then_some(Subject {
        who,
        rest: j,
        named,
    })
}

/// The relation and object after the subject.
fn predicate(toks: &[Tok], s: Subject, polarity: Polarity) -> Option<Triple> {
    let Subject {
        who: subject,
        rest: start,
        named,
    } = s;
    let mut negated = false;
    let mut copula = false;
    let mut pred: Vec<Tok> = Vec::new();
    for (k, t) in toks.iter().enumerate().skip(start) {
        let w = t.lower.as_str();
        // "have"/"has" before a determiner or number is the verb, not an auxiliary
        let owns = matches!(w, "have" | "has" | "had" | "'ve")
            && toks.get(k + 1).is_some_and(|n| {
                DETERMINERS.contains(&n.lower.as_str()) || n.lower.parse::<u32>().is_ok()
            });
        if pred.is_empty() && !owns && (AUX.contains(&w) || FILLERS.contains(&w)) {
            copula |= matches!(
                w,
                "am" | "is" | "are" | "was" | "were" | "'m" | "'s" | "'re"
            );
            continue;
        }
        if NEGATIONS.contains(&w) {
            negated = true;
            continue;
        }
        if owns && w == "'ve" {
            pred.push(Tok {
                orig: "have".into(),
                lower: "have".into(),
                end: false,
            });
            continue;
        }
        pred.push(t.clone());
    }
    let polarity = match (polarity, negated) {
        (Polarity::ForgetThat, _) => Polarity::ForgetThat,
        (_, true) => Polarity::Negate,
        _ => Polarity::Assert,
    };
    let words: Vec<&str> = pred.iter().map(|t| t.lower.as_str()).collect();
    let text = format!("{} ", words.join(" "));
    let make = |relation: &str, functional: bool, at: usize| -> Option<Triple> {
        let object = object(&pred[at.min(pred.len())..])?;
        Some(Triple {
            subject: subject.clone(),
            relation: relation.to_string(),
            object,
            polarity,
            functional,
        })
    };
    if copula && words.first().is_some_and(|w| STATUS.contains(w)) {
        return make("relationship status is", true, 0);
    }
    if let Some(age) = age(&words) {
        return Some(Triple {
            subject,
            relation: "is aged".into(),
            object: age,
            polarity,
            functional: true,
        });
    }
    if named {
        return make("is named", true, 0);
    }
    for r in RELATIONS {
        let copular_only = matches!(r.name, "is" | "is named");
        if copular_only && !copula {
            continue;
        }
        if let Some(p) = r.phrases.iter().find(|p| text.starts_with(*p)) {
            let skip = p.split_whitespace().count();
            // "a"/"an" of `is a` and `have a` belong to the object
            let skip = if p.ends_with(" a ") || p.ends_with(" an ") || r.name == "is" {
                skip - 1
            } else {
                skip
            };
            return make(r.name, r.functional, skip);
        }
    }
    generic(&pred, &words, make)
}

/// The verb itself as the relation (`adopted`, `went to`), when it looks like one.
fn generic(
    pred: &[Tok],
    words: &[&str],
    make: impl Fn(&str, bool, usize) -> Option<Triple>,
) -> Option<Triple> {
    let verb = *words.first()?;
    let verbal = verb.len() >= 3
        && verb.chars().all(|c| c.is_ascii_alphabetic())
        && !OBJECT_STOPS.contains(&verb)
        && !DETERMINERS.contains(&verb)
        && !pred
            .first()
            .is_some_and(|t| t.orig.chars().next().is_some_and(char::is_uppercase));
    if !verbal {
        return None;
    }
    let prep = words.get(1).filter(|w| {
        matches!(
            **w,
            "to" | "at" | "in" | "on" | "for" | "with" | "about" | "from" | "into" | "up"
        )
    });
    match prep {
        Some(p) => make(&format!("{verb} {p}"), false, 2),
        None => make(verb, false, 1),
    }
}

/// `N years old` / `turned N` → N.
fn age(words: &[&str]) -> Option<String> {
    let num = |w: &str| w.parse::<u32>().ok().filter(|n| (1..=130).contains(n));
    match words {
        [n, "years", "old", ..] | ["turned", n, ..] => num(n).map(|n| n.to_string()),
        _ => None,
    }
}

/// The object's words: up to a clause end, a new clause or a time phrase; at most 8.
fn object(toks: &[Tok]) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let w = t.lower.as_str();
        let time_phrase = matches!(w, "in" | "on" | "since")
            && toks.get(k + 1).is_some_and(|n| {
                n.lower.chars().all(|c| c.is_ascii_digit())
                    || memdex_core::MONTH_NAMES.contains(&n.lower.as_str())
            });
        if !out.is_empty() && (OBJECT_STOPS.contains(&w) || time_phrase) {
            break;
        }
        if out.is_empty() && (NEGATIONS.contains(&w) || time_phrase) {
            return None;
        }
        out.push(&t.orig);
        if t.end || out.len() >= 8 {
            break;
        }
    }
    let s = out.join(" ");
    let s = s
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_string();
    (!object_key(&s).is_empty()).then_some(s)
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;

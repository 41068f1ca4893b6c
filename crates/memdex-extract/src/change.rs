//! Statements of change, for the update stage: who a question is about, and whether a
//! later session says that something about that subject changed.
//!
//! Two statements are of the same thing only when they are about the same **subject**. The
//! subject comes from the question alone, by its grammar ([`crate::question`]):
//! * the user (`Where do I work?`, `Who is my manager?`, `What is my diet?`): a question
//!   about the user's own slot, a role they have filled included;
//! * a person or pet of the user's (`Where does my sister live?`, `What is my dog's name?`,
//!   `Who coaches my son's team?`): a kin noun from a closed list, with its synonyms
//!   (`grandma` / `grandmother`) and the names the history gives it (`my sister Maya`);
//! * someone named (`What is Priya's job now?`, `Where does Caroline live?`).
//!
//! A later session **states a change** of it when one of its sentences both carries a cue
//! of change (a closed list of change-of-state words: `no longer`, `anymore`, `used to`,
//! `instead`, `now`, `new`, `moved`, `switched`, `sold`, `quit`, …) and is about the subject:
//! it names the subject (or a pronoun refers to it: the last person the item named, or, when
//! it named none yet, someone its session names), or, for the user, it speaks in the first
//! person or of no one else (`the landlord bumped it to $2,100`), not of a third party (`my
//! son needs new cleats`). A speaker's own first-person line (`Caroline: I moved to …`) is
//! about that speaker. A cue in the clause a question asks is none, unless the question takes
//! it as done (a past form, a definite noun phrase: "now I've moved in?", "my new manager").
//!
//! Precision first, as the time extractor: a cue in another sense than a change is not one
//! (`raised $3,000` for a charity, against `raised my rent`), a change stated only implicitly
//! ("Neovim is my daily tool") is not found, and a change of another slot of the same subject ("my brother
//! Luis moved desks") is found (the caller's relevance test is what guards that).

use crate::lexicon::tokens;
use crate::question::{counted, question_subject, Subject};
use crate::sentences::sentences;
use crate::whose::{clauses, is_kin, is_person, person_noun, Clause, Who, HEDGES};

/// The evidence that a text states a change of a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The cue of change, as listed (`no longer`).
    pub cue: &'static str,
    /// The sentence that carries it.
    pub sentence: String,
}

/// Cues that a state changed: that an earlier state ended or was replaced (`no longer`,
/// `switched`, `sold`), or the point it changed (`as of`), as token sequences. `instead`
/// counts when it replaces something earlier ("we booked Iceland instead"), not as `instead
/// of` (a choice within the sentence); `used to` when the sentence contrasts it with now
/// (`but`, `now`, `anymore`, …), not in a memory ("I used to ride with my dad as a kid").
///
/// The verbs are classes, not phrases: Levin's (1993) English verb classes of exchange
/// (13.6: `switch`, `swap`, `trade`, `exchange`, `substitute`, `replace`), of stopping
/// (55.1–55.2: `stop`, `quit`, `cease`, `discontinue`, `end`, `give up`), of leaving
/// (51.2: `withdraw`, `drop out`; `leave` is left out, as it is as often a direction or a
/// remainder), of calibratable change of state (45.6: `increase`, `decrease`, `rise`,
/// `fall`, `go up`, `go down`, `raise`, `lower`, `reduce`), and `move`, `relocate`,
/// `transfer`, `sell`, `retire`, `divorce`, `break up`, each in its finite and past
/// participle forms (an `-ing` form is as often an adjective or a noun: "a moving
/// experience", "trading cards"), and 45.6's nouns after a determiner or a noun of pay or
/// price ("a pay rise", "the rent increase").
const CUES: &[&str] = &[
    "no longer",
    "anymore",
    "any more",
    "any longer",
    "no more",
    "used to",
    "instead",
    "after all",
    "for good",
    "as of",
    "officially",
    "change of plans",
    "changed",
    "switched",
    "switch",
    "switching",
    "moved",
    "relocated",
    "relocating",
    "transferred",
    "replaced",
    "sold",
    "quit",
    "stopped",
    "ended",
    "retired",
    "broke up",
    "gave up",
    "divorced",
    "took a job",
    "increased",
    "decreased",
    "raised",
    "goes up",
    "went up",
    "goes down",
    "went down",
    "swap",
    "swapped",
    "traded",
    "exchanged",
    "substituted",
    "ceased",
    "discontinued",
    "given up",
    "withdrew",
    "withdrawn",
    "dropped out",
    "broken up",
    "rose",
    "risen",
    "fell",
    "lowered",
    "reduced",
    "increase",
    "decrease",
    "rise",
    "raise",
];

/// Cues that only mark a present or beginning state (`now`, `new`, `started`, `lately`):
/// chat is full of them ("I met new people", "writing is a huge part of me now"), so they
/// count only in `my new …` / `our new …`, or when the question itself asks for the state
/// now (`now`, `currently`, `still`, `these days`, `anymore`).
const WEAK_CUES: &[&str] = &[
    "new",
    "now",
    "started",
    "starting",
    "became",
    "lately",
    "nowadays",
    "these days",
];

/// The present-time adverbials of a question that asks for the state now, against an
/// earlier one (as token sequences).
const ASKS_NOW: &[&str] = &[
    "now",
    "currently",
    "still",
    "nowadays",
    "anymore",
    "these days",
    "at the moment",
    "at present",
    "presently",
];

/// Words that mark a contrast with an earlier state, for `used to`.
const CONTRAST: &[&str] = &[
    "but", "now", "anymore", "since", "until", "instead", "no", "longer",
];

const FIRST_PERSON: &[&str] = &["i", "me", "we", "us", "our", "my", "mine"];
const POSSESSIVES: &[&str] = &["my", "our", "his", "her", "their"];
const PRONOUNS: &[&str] = &["she", "he", "they", "her", "him", "his", "them", "their"];
/// The question's side of the test: its subject and, for a count question, what it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeTest {
    pub subject: Subject,
    pub counted: Option<Vec<String>>,
    /// The question asks for the state now (`now`, `currently`, `still`): weak cues count.
    pub asks_now: bool,
    /// The question asks who fills a slot of a person's or pet's ("Who walks our dog?",
    /// "Who coaches my son's team?"): a change of whoever fills it counts when its sentence
    /// names the subject.
    pub slot: bool,
    /// The person nouns not kin (`landlord`, `manager`, `flatmate`) the question names: a
    /// clause of `my landlord …` speaks of the user's slot for "Who is my landlord?", and of
    /// someone else otherwise.
    pub roles: Vec<String>,
}

/// Whether `question` asks for the state now (`now`, `currently`, `still`): then weak cues
/// count ([`ChangeTest::asks_now`]).
pub fn asks_now(question: &str) -> bool {
    let words = words_of(question);
    ASKS_NOW.iter().any(|now| find(&words, now).is_some())
}

/// Whether some sentence of `item` (its lines as [`ChangeTest::stated_in`] reads them)
/// carries a cue of change, whoever it is about: what `stated_in` needs before it looks at
/// the subject, so an item without one states no change for any question (`asks_now`: the
/// question's, for the weak cues). Cheap: no session text, no subject.
pub fn carries_cue(item: &str, asks_now: bool) -> bool {
    (item.lines().filter_map(speaker_line))
        .any(|(_, body)| sentences(body).any(|s| !cues_in(&words_of(s), asks_now).is_empty()))
}

impl ChangeTest {
    /// The test for `question`, with the names `texts` give its subject.
    pub fn new<'t>(question: &str, texts: impl IntoIterator<Item = &'t str>) -> ChangeTest {
        let asks_now = asks_now(question);
        let subject = question_subject(question).with_aliases(texts);
        let who = (tokens(question).first()).is_some_and(|t| t.lower.as_str() == "who");
        let roles = (words_of(question).into_iter())
            .filter(|w| is_person(w) && !is_kin(w))
            .collect();
        ChangeTest {
            slot: who && subject != Subject::User,
            roles,
            subject,
            counted: counted(question),
            asks_now,
        }
    }

    /// Where `item` (an item's text; `Name: ` line prefixes mark speakers, `assistant: `
    /// lines are skipped) states a change of the subject: the first cue in a sentence whose
    /// clause holding the cue is about it ([`crate::whose`]), naming what a count question
    /// counts. A pronoun refers to the subject when `session` (the text of the item's whole
    /// session) names it.
    pub fn stated_in(&self, item: &str, session: Session) -> Option<Change> {
        let mut last = None;
        for (speaker, body) in item.lines().filter_map(speaker_line) {
            for sentence in sentences(body) {
                let words = words_of(sentence);
                let mut r = Reading {
                    roles: &self.roles,
                    speaker: speaker.as_deref(),
                    words: &words,
                    session_names: session.names,
                    slot: self.slot,
                    referent: None,
                };
                let parts = clauses(sentence);
                let referents = self.referents(&parts, &r, &mut last);
                let stating = stating(sentence, &parts);
                let found = cues_in(&words, self.asks_now);
                let uncounted =
                    (self.counted.as_ref()).is_some_and(|c| !words.iter().any(|w| c.contains(w)));
                if found.is_empty() || uncounted {
                    continue;
                }
                for (cue, at) in found {
                    let Some(k) = parts.iter().rposition(|c| c.first <= at) else {
                        continue;
                    };
                    if k >= stating && !past(cue) && !definite(&words, at) {
                        continue; // asked, not stated: "Should I ask for a raise?"
                    }
                    if planned(&parts[k], false) {
                        continue; // "Thinking about moving to EDF before the cap goes up"
                    }
                    // the object of a verb of change is what changed: "she switched me to …"
                    let object = self.subject == Subject::User
                        && speaker.is_none()
                        && words
                            .get(at + 1)
                            .is_some_and(|w| matches!(w.as_str(), "me" | "us"));
                    r.referent = referents[k];
                    if object || about(&self.subject, &parts[k], &r) {
                        return Some(Change {
                            cue,
                            sentence: sentence.to_string(),
                        });
                    }
                }
            }
        }
        None
    }

    /// The person a pronoun of each of `parts` refers to, as whether it is the subject (None:
    /// no one named yet in the item, so the session decides): the last third person a
    /// clause of the item took as its own subject before it ("Sam's friend Connor stayed
    /// with us. He's just moved …" is Connor). `last` carries it from sentence to sentence.
    fn referents(
        &self,
        parts: &[Clause],
        r: &Reading<'_>,
        last: &mut Option<bool>,
    ) -> Vec<Option<bool>> {
        parts
            .iter()
            .map(|c| {
                let before = *last;
                let own = c.from == c.first;
                if own && matches!(c.who, Who::Person { .. } | Who::Named(_)) {
                    *last = Some(about(&self.subject, c, r));
                }
                before
            })
            .collect()
    }

    /// The statements of `item` (read as [`ChangeTest::stated_in`] reads it) about the
    /// subject: the clauses about it that do not ask (in a question, those before the clause
    /// that asks: one that opens with a question word or an auxiliary), and that neither plan,
    /// wish, suppose nor deny ([`Fact`]), each up to where someone else's verb starts
    /// ("I went to hear | Hilary Hahn play …").
    pub fn facts_in(&self, item: &str, session: Session) -> Vec<Fact> {
        let mut out = Vec::new();
        let mut last = None;
        for (speaker, body) in item.lines().filter_map(speaker_line) {
            for sentence in sentences(body) {
                let words = words_of(sentence);
                let r = Reading {
                    roles: &self.roles,
                    speaker: speaker.as_deref(),
                    words: &words,
                    session_names: session.names,
                    slot: false,
                    referent: None,
                };
                let parts = clauses(sentence);
                let referents = self.referents(&parts, &r, &mut last);
                // the clauses that state, and those of a question that presuppose a count
                let keep = stating(sentence, &parts);
                let (parts, referents): (Vec<Clause>, Vec<Option<bool>>) = (parts.into_iter())
                    .zip(referents)
                    .enumerate()
                    .filter(|(k, (c, _))| *k < keep || self.presupposes_count(c))
                    .map(|(_, p)| p)
                    .unzip();
                out.extend(self.sentence_facts(sentence, parts, &referents, r));
            }
        }
        out
    }

    /// Whether `clause` gives a number of what a count question counts ("a feeder for three
    /// cats?" for "How many cats do I have?"): a question takes its numeral noun phrases as
    /// given, so the count is stated even in the clause that asks.
    fn presupposes_count(&self, clause: &Clause) -> bool {
        let Some(counted) = &self.counted else {
            return false;
        };
        (clause.words.windows(2))
            .any(|w| crate::lexicon::cardinal(&w[0]) && counted.contains(&w[1]))
    }

    /// The facts of one sentence; each gives the values of all of them (a value may sit in
    /// a clause of its own: "The pool at the Better leisure centre, where I have my
    /// membership, …").
    fn sentence_facts(
        &self,
        sentence: &str,
        parts: Vec<Clause>,
        referents: &[Option<bool>],
        mut r: Reading<'_>,
    ) -> Vec<Fact> {
        let names = match &self.subject {
            Subject::User => &[][..],
            Subject::Other(n) => &n[..],
        };
        let mut facts: Vec<Fact> = Vec::new();
        let mut values: Vec<String> = Vec::new();
        let mut places: Vec<String> = Vec::new();
        let mut times: Vec<String> = Vec::new();
        let mut naming: Vec<Fact> = Vec::new();
        for (c, &referent) in parts.into_iter().zip(referents) {
            r.referent = referent;
            let planned = planned(&c, true) || c.words.iter().any(|w| w == "used");
            let own = crate::whose::own_words(&c, names);
            if own == 0 || !about(&self.subject, &c, &r) {
                continue;
            }
            if planned {
                // a plan states no value, but "my landlord Priya wants to …" names her
                naming.extend(naming_fact(sentence, &c));
                continue;
            }
            for v in crate::whose::values(&c, own, names) {
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            places.extend(crate::whose::places(&c, own, names));
            times.extend(crate::whose::times(&c, own));
            facts.push(Fact {
                clause: sentence[c.spans[0].0..c.spans[own - 1].1].to_string(),
                values: Vec::new(),
                places: Vec::new(),
                times: Vec::new(),
                person_name: c.person_name,
            });
        }
        for f in &mut facts {
            f.values.clone_from(&values);
            f.places.clone_from(&places);
            f.times.clone_from(&times);
        }
        facts.extend(naming);
        facts
    }

    /// What the tests need of an item's session (`text`: its whole text): whether some line
    /// names the subject, so that a pronoun may refer to it. Read once per session.
    pub fn session(&self, text: &str) -> Session {
        let Subject::Other(names) = &self.subject else {
            return Session { names: false };
        };
        let names = (text.lines().filter_map(speaker_line)).any(|(speaker, body)| {
            let spoken = speaker
                .as_deref()
                .is_some_and(|s| names.iter().any(|n| n == s));
            spoken || sentences(body).any(|s| words_of(s).iter().any(|w| names.contains(w)))
        });
        Session { names }
    }
}

/// Words a clause that asks opens with (after `and`, `so`, `but`, …): the question words,
/// the auxiliaries and modals of an inverted question, and `any` ("any tips?").
const ASKING: &[&str] = &[
    "what", "who", "whom", "whose", "where", "when", "which", "why", "how", "is", "are", "am",
    "was", "were", "do", "does", "did", "has", "have", "had", "can", "could", "will", "would",
    "should", "shall", "may", "might", "any", "anything", "anyone",
];

/// Whether a cue is a past form: a question takes the change it names as done ("… now that
/// I've moved in?"), where it asks about a base form or an indefinite noun ("Should I ask
/// for a raise?").
fn past(cue: &str) -> bool {
    const IRREGULAR: &[&str] = &[
        "sold",
        "quit",
        "rose",
        "risen",
        "fell",
        "withdrew",
        "withdrawn",
        "gave",
        "given",
        "broke",
        "broken",
    ];
    let verb = cue.split(' ').next().unwrap_or(cue);
    verb.ends_with("ed") || has(IRREGULAR, verb)
}

/// Whether the cue at `at` is in a definite noun phrase (a possessive or `the` in the two
/// words before it): a question presupposes what it names ("How do I ask my new manager
/// …?", "Is the rent increase legal?"), where an indefinite one is asked about ("Should I
/// ask for a raise?").
fn definite(words: &[String], at: usize) -> bool {
    words[at.saturating_sub(2)..at]
        .iter()
        .any(|w| w == "the" || has(POSSESSIVES, w))
}

/// How many of a sentence's clauses state: all of a sentence that does not ask; of a question,
/// those before the clause that asks ("Wet Leg are my favourite band - who else sounds like
/// them?"), or, when no clause opens like a question, all but the last ("I live in Sydney -
/// whats a good time to call?"; "You moved?" states nothing).
fn stating(sentence: &str, parts: &[Clause]) -> usize {
    match sentence.ends_with('?') {
        true => (parts.iter().position(asking)).unwrap_or(parts.len().saturating_sub(1)),
        false => parts.len(),
    }
}

/// Whether `clause` asks: it opens, after a conjunction or an interjection, with one of
/// [`ASKING`].
fn asking(clause: &Clause) -> bool {
    const OPENERS: &[&str] = &[
        "and", "but", "so", "or", "then", "anyway", "well", "oh", "ok", "okay",
    ];
    let mut words = clause.words.iter().skip_while(|w| has(OPENERS, w));
    words.next().is_some_and(|w| has(ASKING, w))
}

/// The fact a clause states by naming a person noun ("my boyfriend Daniel", "my landlord
/// Priya"), whatever its verb does: the noun and the name, with no value.
fn naming_fact(sentence: &str, c: &Clause) -> Option<Fact> {
    let (noun, name) = c.person_name.as_ref()?;
    let k = c.words.iter().position(|w| w == noun)?;
    let at = (k + 1..c.words.len().min(k + 3)).find(|&i| &c.words[i] == name)?;
    Some(Fact {
        clause: sentence.get(c.spans[k].0..c.spans[at].1)?.to_string(),
        values: Vec::new(),
        places: Vec::new(),
        times: Vec::new(),
        person_name: c.person_name.clone(),
    })
}

/// An item's session as [`ChangeTest::stated_in`] and [`ChangeTest::facts_in`] read it
/// ([`ChangeTest::session`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    /// Some line names the subject.
    names: bool,
}

/// A statement of the question's subject: one clause, the specific values its sentence gives
/// the subject (names and numbers, lower case: `glasgow`, `23`,
/// `five`), the places among them (`in Cork`), and the name it gives a person noun, with
/// the noun (`my girlfriend Chloe` → `girlfriend`, `chloe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub clause: String,
    pub values: Vec<String>,
    pub places: Vec<String>,
    /// The days and times it gives (`monday`, `6am`): values only for a question that asks
    /// which day or what time.
    pub times: Vec<String>,
    pub person_name: Option<(String, String)>,
}

/// A line's speaker (lower case) and body; None for an assistant's line.
fn speaker_line(line: &str) -> Option<(Option<String>, &str)> {
    match line.split_once(": ") {
        Some((name, body)) if plausible_speaker(name) => {
            let lower = name.to_lowercase();
            (lower != "assistant").then(|| {
                let speaker = (lower != "user").then_some(lower);
                (speaker, body)
            })
        }
        _ => Some((None, line)),
    }
}

fn plausible_speaker(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name.split(' ').count() <= 3
        && name.chars().next().is_some_and(char::is_alphabetic)
}

/// A sentence's words, lower case, without its punctuation (as [`crate::whose`] counts them).
fn words_of(sentence: &str) -> Vec<String> {
    tokens(sentence)
        .into_iter()
        .map(|t| t.lower.to_string())
        .filter(|w| !matches!(w.as_str(), "." | "!" | "?" | ";"))
        .collect()
}

fn has(list: &[&str], word: &str) -> bool {
    list.contains(&word)
}

/// How a clause is read: who said its line, its sentence's words, and what else bears on
/// whom it is about.
struct Reading<'a> {
    speaker: Option<&'a str>,
    /// The words of the clause's sentence (as [`words_of`] gives them).
    words: &'a [String],
    /// The item's session names the subject, so a pronoun may refer to it.
    session_names: bool,
    /// Whether the person the item named last before the clause is the subject (None:
    /// nobody yet; then a pronoun may refer to the subject if `session_names`).
    referent: Option<bool>,
    /// The question asks who fills a slot of the subject's ("Who walks our dog?"): a change
    /// of whoever fills it is one of the subject's when the sentence names the subject.
    slot: bool,
    /// [`ChangeTest::roles`].
    roles: &'a [String],
}

/// Whether `clause` is about `subject` ([`crate::whose`]).
fn about(subject: &Subject, clause: &Clause, r: &Reading<'_>) -> bool {
    let words = &clause.words;
    match subject {
        Subject::User => {
            r.speaker.is_none()
                && match &clause.who {
                    Who::Me => true,
                    Who::Unknown => first_person_self(clause, r.roles) || !third_party(words),
                    // someone else's clause, unless the user's own thing is in it
                    // ("she raised my rent")
                    Who::Person { .. } | Who::Pronoun | Who::Named(_) => {
                        first_person_self(clause, r.roles)
                    }
                }
        }
        Subject::Other(names) => {
            let named = |w: &str| names.iter().any(|n| n == w);
            let holds = names
                .iter()
                .any(|n| crate::whose::names(clause, r.words, n))
                || r.slot && r.words.iter().any(|w| named(w));
            // the pronoun may be in the clause it takes its subject from ("she's with the
            // HSE, | doing admin at the hospital")
            let inherited = r.words.get(clause.from..clause.first).unwrap_or(&[]);
            let refers = r.speaker.is_none()
                && r.referent.unwrap_or(r.session_names)
                && (words.iter().chain(inherited)).any(|w| has(PRONOUNS, w));
            // a named speaker's own first-person clause ("Caroline: my new job …")
            let speaks = r.speaker.is_some_and(named) && words.iter().any(|w| has(FIRST_PERSON, w));
            match &clause.who {
                Who::Person { head, kin, chained } => {
                    (named(head) && !chained) || holds || (speaks && !kin)
                }
                Who::Named(w) => named(w) || holds,
                Who::Me | Who::Unknown => speaks || holds || refers,
                Who::Pronoun => holds || refers,
            }
        }
    }
}

/// The clause speaks of the user: `I` or `we`, or `my` + something not a person of the
/// user's (`my rent`), or + one of the `roles` the question asks ("my landlord Priya" for
/// "Who is my landlord?"); "my flatmate moved" is the flatmate's. `me` and `us` are objects,
/// so someone else's clause ("my colleague told me she's on …") is not the user's for them.
fn first_person_self(clause: &Clause, roles: &[String]) -> bool {
    let words = &clause.words;
    // "my cleaner Marta" is a person's: a name after the noun ([`person_noun`])
    let person = |i: usize, n: &str| person_noun(n, clause.capital.get(i + 1) == Some(&true));
    words.iter().enumerate().any(|(i, w)| match w.as_str() {
        "i" | "we" => true,
        "my" | "our" => (words.get(i + 1)).is_some_and(|n| !person(i + 1, n) || roles.contains(n)),
        _ => false,
    })
}

/// Whether a word of `clause` hedges it: then it plans, wishes, supposes, asks for or
/// (with `negation`) denies, and states no value and no change. A cue is denied only by the
/// words right before it ([`stated`]): "I don't smoke anymore" states a change.
fn planned(clause: &Clause, negation: bool) -> bool {
    let negates = |w: &str| matches!(w, "not" | "never" | "t");
    (0..clause.words.len())
        .any(|i| hedges(&clause.words, i) && (negation || !negates(&clause.words[i])))
}

/// Whether `words[i]` hedges (one of [`HEDGES`]): not an `-ing` form after an article, which
/// names or modifies a thing ("a planning officer", "the thinking behind it").
fn hedges(words: &[String], i: usize) -> bool {
    let article = i > 0 && matches!(words[i - 1].as_str(), "a" | "an" | "the");
    has(HEDGES, &words[i]) && !(article && words[i].ends_with("ing"))
}

/// The sentence speaks of someone else's: a possessive + kin (`my son`, `her husband`).
fn third_party(words: &[String]) -> bool {
    words
        .windows(2)
        .any(|w| has(POSSESSIVES, &w[0]) && is_kin(&w[1]))
}

/// The cues of change among `words` and where each is, strong ones first in the list's
/// order (a weak one only as `my new …`, or when the question `asks_now`).
fn cues_in(words: &[String], asks_now: bool) -> Vec<(&'static str, usize)> {
    let strong = CUES.iter().copied().filter_map(|cue| {
        let at = find(words, cue)?;
        let ok = match cue {
            // negations themselves
            "no longer" | "anymore" | "any more" | "any longer" | "no more" => true,
            "instead" => stated(words, at) && words.get(at + 1).is_none_or(|w| w != "of"),
            "used to" => stated(words, at) && words.iter().any(|w| has(CONTRAST, w)),
            "raised" => stated(words, at) && !fundraising(words, at),
            // the nouns of calibratable change, after a determiner or what changed: "a pay
            // rise", "the rent increase" (not "to raise the kids", "prices rise")
            "increase" | "decrease" | "rise" | "raise" => stated(words, at) && nominal(words, at),
            _ => stated(words, at),
        };
        ok.then_some((cue, at))
    });
    let weak = WEAK_CUES.iter().copied().filter_map(|cue| {
        let at = find(words, cue)?;
        let possessed = cue == "new" && at > 0 && matches!(words[at - 1].as_str(), "my" | "our");
        (stated(words, at) && (asks_now || possessed)).then_some((cue, at))
    });
    strong.chain(weak).collect()
}

/// The word at `at` is a noun: an article, a possessive or a noun of pay or price before it
/// (`a rise`, `my raise`, `pay rise`, `rent increase`).
fn nominal(words: &[String], at: usize) -> bool {
    const BEFORE: &[&str] = &[
        "a", "an", "the", "my", "our", "his", "her", "their", "pay", "salary", "wage", "rent",
        "price", "fee", "fees",
    ];
    at > 0 && has(BEFORE, &words[at - 1])
}

/// `raised` at `at` collects money (`raised almost $3,000`, `raised funds`) rather than
/// raising an amount of the subject's (`raised my rent`, `raised it to $2,100`): an amount or
/// money follows it directly, after at most an approximation (`almost`, `over`, …).
fn fundraising(words: &[String], at: usize) -> bool {
    const ABOUT: &[&str] = &[
        "almost", "nearly", "over", "about", "around", "roughly", "just", "more", "than",
    ];
    const MONEY: &[&str] = &["money", "funds", "donations", "thousands", "hundreds"];
    let next = words[at + 1..].iter().find(|w| !has(ABOUT, w));
    next.is_some_and(|w| has(MONEY, w) || w.starts_with(|c: char| c.is_ascii_digit()))
}

/// Where the token sequence `cue` starts in `words`.
fn find(words: &[String], cue: &str) -> Option<usize> {
    let parts: Vec<&str> = cue.split(' ').collect();
    words
        .windows(parts.len())
        .position(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
}

/// The cue at `at` is stated, not denied or supposed (`won't quit`, `might switch`): none of
/// the two words before it negates or hedges it.
fn stated(words: &[String], at: usize) -> bool {
    (at.saturating_sub(2)..at).all(|i| !hedges(words, i) && words[i] != "to")
}

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;

//! Statements of change, for the update stage: who a question is about, and whether a
//! later session says that something about that subject changed.
//!
//! Two statements are of the same thing only when they are about the same **subject**. The
//! subject comes from the question alone, by its grammar:
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
//! it names the subject (or a pronoun refers to it, in a session that names it), or, for
//! the user, it speaks in the first person or of no one else (`the landlord bumped it to
//! $2,100`), not of a third party (`my son needs new cleats`). A speaker's own first-person
//! line (`Caroline: I moved to …`) is about that speaker.
//!
//! Precision first, as the time extractor: a cue in another sense than a change is not one
//! (`raised $3,000` for a charity, against `raised my rent`), a change stated only implicitly
//! ("Neovim is my daily tool") is not found, and a change of another slot of the same subject ("my brother
//! Luis moved desks") is found (the caller's relevance test is what guards that).

use crate::lexicon::{tokens, Token};
use crate::sentences::sentences;

/// Who a question is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// The user (the speaker of the history).
    User,
    /// A person or pet: its lower-case names (a kin noun with its synonyms and the names the
    /// history gives it, or a name).
    Other(Vec<String>),
}

/// The evidence that a text states a change of a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The cue of change, as listed (`no longer`).
    pub cue: &'static str,
    /// The sentence that carries it.
    pub sentence: String,
}

/// People and animals of the user's that questions ask about. Roles the user fills with a
/// person (`manager`, `dentist`, `landlord`, `roommate`) are not here: "Who is my manager?"
/// asks about the user's slot.
const KIN: &[&str] = &[
    "sister",
    "brother",
    "son",
    "daughter",
    "wife",
    "husband",
    "partner",
    "mom",
    "mother",
    "mum",
    "dad",
    "father",
    "parents",
    "grandmother",
    "grandma",
    "grandfather",
    "grandpa",
    "friend",
    "boyfriend",
    "girlfriend",
    "fiance",
    "fiancee",
    "cousin",
    "aunt",
    "uncle",
    "niece",
    "nephew",
    "kids",
    "kid",
    "children",
    "child",
    "baby",
    "dog",
    "cat",
    "pet",
    "puppy",
    "kitten",
    "rabbit",
    "neighbor",
    "neighbour",
    "coworker",
    "colleague",
];

/// Words that name the same kin.
const SYNONYMS: &[&[&str]] = &[
    &["grandmother", "grandma", "granny", "nana"],
    &["grandfather", "grandpa"],
    &["mom", "mother", "mum", "mama"],
    &["dad", "father", "papa"],
    &["kids", "children", "kid", "child"],
    &["parents", "mom", "dad", "mother", "father"],
    &["dog", "puppy"],
    &["cat", "kitten"],
];

/// Cues that a state changed: that an earlier state ended or was replaced (`no longer`,
/// `switched`, `sold`), or the point it changed (`as of`), as token sequences. `instead`
/// counts when it replaces something earlier ("we booked Iceland instead"), not as `instead
/// of` (a choice within the sentence); `used to` when the sentence contrasts it with now
/// (`but`, `now`, `anymore`, …), not in a memory ("I used to ride with my dad as a kid").
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

/// Question words that ask for the state now, against an earlier one.
const ASKS_NOW: &[&str] = &["now", "currently", "still", "nowadays", "anymore"];

/// Words that mark a contrast with an earlier state, for `used to`.
const CONTRAST: &[&str] = &[
    "but", "now", "anymore", "since", "until", "instead", "no", "longer",
];

/// Words before a cue that deny or only suppose it (`won't quit`, `might switch`).
const NOT_STATED: &[&str] = &[
    "not", "never", "t", "will", "would", "might", "may", "could", "should", "if", "to",
];

const FIRST_PERSON: &[&str] = &["i", "me", "we", "us", "our", "my", "mine"];
const POSSESSIVES: &[&str] = &["my", "our", "his", "her", "their"];
const PRONOUNS: &[&str] = &["she", "he", "they", "her", "him", "his", "them", "their"];
const AUX: &[&str] = &[
    "is", "are", "am", "was", "were", "do", "does", "did", "has", "have", "had", "can", "will",
    "would", "should",
];

fn is_kin(word: &str) -> bool {
    KIN.contains(&word)
}

/// The subject of `question` (see the module docs).
pub fn question_subject(question: &str) -> Subject {
    let toks = tokens(question);
    let words: Vec<&str> = toks.iter().map(|t| t.lower.as_str()).collect();
    let Some(&first) = words.first() else {
        return Subject::User;
    };
    if first == "who" {
        // "Who coaches my son's team?" is about the son; "Who is my manager?" about the user
        return possessed_kin(&words, true).map_or(Subject::User, kin_subject);
    }
    let after_aux = words
        .iter()
        .position(|w| AUX.contains(w))
        .filter(|&i| i > 0)
        .map_or(1, |i| i + 1);
    let rest = &words[after_aux.min(words.len())..];
    match rest {
        ["i" | "we", ..] | [] => Subject::User,
        // "my sister lives in Porto; where does she live now?": the kin named before
        ["she" | "he" | "they", ..] => possessed_kin(&words, false)
            .map(kin_subject)
            .or_else(|| named(&toks).map(|n| Subject::Other(vec![n])))
            .unwrap_or(Subject::User),
        ["my" | "our", noun, ..] if is_kin(noun) => kin_subject(noun),
        ["my" | "our", ..] => Subject::User,
        _ => named(&toks[1..]).map_or(Subject::User, |n| Subject::Other(vec![n])),
    }
}

/// The first kin noun after `my`/`our` (with `possessed`: only one followed by `'s` or by a
/// verb, so "who is my friend" does not count).
fn possessed_kin<'w>(words: &[&'w str], possessed: bool) -> Option<&'w str> {
    words.windows(3).find_map(|w| {
        let ok = matches!(w[0], "my" | "our")
            && is_kin(w[1])
            && (!possessed || !matches!(w[2], "is" | "are"));
        ok.then_some(w[1])
    })
}

fn kin_subject(noun: &str) -> Subject {
    let mut names = vec![noun.to_string()];
    for group in SYNONYMS.iter().filter(|g| g.contains(&noun)) {
        names.extend(group.iter().map(|s| s.to_string()));
    }
    names.sort();
    names.dedup();
    Subject::Other(names)
}

/// Words a question may open with in capitals that name no one.
const OPENERS: &[&str] = &[
    "what", "where", "which", "who", "whom", "whose", "when", "how", "why", "does", "do", "did",
    "is", "are", "was", "were", "my", "our", "the", "a", "an", "i", "and", "so",
];

/// The first capitalised word that names someone (not a question word or an opener).
fn named(toks: &[Token<'_>]) -> Option<String> {
    toks.iter()
        .find(|t| t.capital && t.lower.len() > 1 && !has(OPENERS, t.lower.as_str()))
        .map(|t| t.lower.to_string())
}

impl Subject {
    /// The subject with the names `texts` give it: `my sister Maya`, `our dog Rocket`,
    /// `my husband, Omar` make `maya`, `rocket`, `omar` names of the kin.
    pub fn with_aliases<'t>(self, texts: impl IntoIterator<Item = &'t str>) -> Subject {
        let Subject::Other(mut names) = self else {
            return self;
        };
        let kin: Vec<String> = names.clone();
        for text in texts {
            let toks = tokens(text);
            for w in toks.windows(3) {
                let named_kin = matches!(w[0].lower.as_str(), "my" | "our")
                    && kin.iter().any(|k| k == w[1].lower.as_str())
                    && w[2].capital;
                if named_kin && !names.iter().any(|n| n == w[2].lower.as_str()) {
                    names.push(w[2].lower.to_string());
                }
            }
        }
        Subject::Other(names)
    }
}

/// What a count question counts (`How many kids do I have?` → `kids`, with its synonyms
/// and its singular or plural): a change of a count names what it counts ("we have four
/// kids now"), so a sentence of change that names something else ("now we have two cats")
/// is not one. None for any other question.
pub fn counted(question: &str) -> Option<Vec<String>> {
    let toks = tokens(question);
    let at = toks
        .windows(3)
        .find(|w| w[0].lower.as_str() == "how" && w[1].lower.as_str() == "many")?;
    let noun = at[2].lower.as_str();
    let mut names = vec![noun.to_string()];
    match noun.strip_suffix('s') {
        Some(one) => names.push(one.to_string()),
        None => names.push(format!("{noun}s")),
    }
    for group in SYNONYMS.iter().filter(|g| g.contains(&noun)) {
        names.extend(group.iter().map(|s| s.to_string()));
    }
    Some(names)
}

/// The question's side of the test: its subject and, for a count question, what it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeTest {
    pub subject: Subject,
    pub counted: Option<Vec<String>>,
    /// The question asks for the state now (`now`, `currently`, `still`): weak cues count.
    pub asks_now: bool,
}

/// Whether `question` asks for the state now (`now`, `currently`, `still`): then weak cues
/// count ([`ChangeTest::asks_now`]).
pub fn asks_now(question: &str) -> bool {
    tokens(question)
        .iter()
        .any(|t| has(ASKS_NOW, t.lower.as_str()))
}

/// Whether some sentence of `item` (its lines as [`ChangeTest::stated_in`] reads them)
/// carries a cue of change, whoever it is about: what `stated_in` needs before it looks at
/// the subject, so an item without one states no change for any question (`asks_now`: the
/// question's, for the weak cues). Cheap: no session text, no subject.
pub fn carries_cue(item: &str, asks_now: bool) -> bool {
    (item.lines().filter_map(speaker_line))
        .any(|(_, body)| sentences(body).any(|s| cue_in(&words_of(s), asks_now).is_some()))
}

impl ChangeTest {
    /// The test for `question`, with the names `texts` give its subject.
    pub fn new<'t>(question: &str, texts: impl IntoIterator<Item = &'t str>) -> ChangeTest {
        let asks_now = asks_now(question);
        ChangeTest {
            subject: question_subject(question).with_aliases(texts),
            counted: counted(question),
            asks_now,
        }
    }

    /// Where `item` (an item's text; `Name: ` line prefixes mark speakers, `assistant: `
    /// lines are skipped) states a change of the subject: the first cue in a sentence about
    /// it (naming what a count question counts). A pronoun refers to the subject when
    /// `session` (the text of the item's whole session) names it.
    pub fn stated_in(&self, item: &str, session: &str) -> Option<Change> {
        let subject = &self.subject;
        let session_names = session
            .lines()
            .filter_map(speaker_line)
            .any(|(speaker, body)| {
                sentences(body).any(|s| about(subject, speaker.as_deref(), &words_of(s)))
            });
        for (speaker, body) in item.lines().filter_map(speaker_line) {
            for sentence in sentences(body) {
                let words = words_of(sentence);
                let Some(cue) = cue_in(&words, self.asks_now) else {
                    continue;
                };
                if self
                    .counted
                    .as_ref()
                    .is_some_and(|c| !words.iter().any(|w| c.contains(w)))
                {
                    continue;
                }
                // in a conversation between named speakers, a pronoun may mean either
                let refers =
                    speaker.is_none() && session_names && words.iter().any(|w| has(PRONOUNS, w));
                let direct = about(subject, speaker.as_deref(), &words);
                if direct || (refers && subject != &Subject::User) {
                    return Some(Change {
                        cue,
                        sentence: sentence.to_string(),
                    });
                }
            }
        }
        None
    }
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

/// A sentence's words, lower case.
fn words_of(sentence: &str) -> Vec<String> {
    tokens(sentence)
        .into_iter()
        .map(|t| t.lower.to_string())
        .collect()
}

fn has(list: &[&str], word: &str) -> bool {
    list.contains(&word)
}

/// Whether a sentence (its `words`, said by `speaker`) is about `subject`.
fn about(subject: &Subject, speaker: Option<&str>, words: &[String]) -> bool {
    match subject {
        Subject::User => speaker.is_none() && (first_person_self(words) || !third_party(words)),
        Subject::Other(names) => {
            let named = |w: &str| names.iter().any(|n| n == w);
            let first_person = words.iter().any(|w| has(FIRST_PERSON, w));
            speaker.is_some_and(named) && first_person || words.iter().any(|w| named(w))
        }
    }
}

/// The sentence speaks of the user: `I`, `we`, or `my` + something not kin (`my rent`).
fn first_person_self(words: &[String]) -> bool {
    words.iter().enumerate().any(|(i, w)| match w.as_str() {
        "i" | "me" | "we" | "us" => true,
        "my" | "our" => words.get(i + 1).is_some_and(|n| !is_kin(n)),
        _ => false,
    })
}

/// The sentence speaks of someone else's: a possessive + kin (`my son`, `her husband`).
fn third_party(words: &[String]) -> bool {
    words
        .windows(2)
        .any(|w| has(POSSESSIVES, &w[0]) && is_kin(&w[1]))
}

/// The first cue of change among `words` (a weak one only as `my new …`, or when the
/// question `asks_now`).
fn cue_in(words: &[String], asks_now: bool) -> Option<&'static str> {
    let strong = CUES.iter().copied().find_map(|cue| {
        let at = find(words, cue)?;
        let ok = match cue {
            // negations themselves
            "no longer" | "anymore" | "any more" | "any longer" | "no more" => true,
            "instead" => stated(words, at) && words.get(at + 1).is_none_or(|w| w != "of"),
            "used to" => stated(words, at) && words.iter().any(|w| has(CONTRAST, w)),
            "raised" => stated(words, at) && !fundraising(words, at),
            _ => stated(words, at),
        };
        ok.then_some(cue)
    });
    strong.or_else(|| {
        WEAK_CUES.iter().copied().find(|cue| {
            find(words, cue).is_some_and(|at| {
                let possessed =
                    *cue == "new" && at > 0 && matches!(words[at - 1].as_str(), "my" | "our");
                stated(words, at) && (asks_now || possessed)
            })
        })
    })
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
    words[at.saturating_sub(2)..at]
        .iter()
        .all(|w| !has(NOT_STATED, w))
}

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;

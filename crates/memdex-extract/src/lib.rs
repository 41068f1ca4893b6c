//! Local, rule-based extractors (no model, no network) for two LongMemEval §5 techniques:
//!
//! * [`time`]: event dates mentioned in a turn, resolved against the session date
//!   (`yesterday`, `last Tuesday`, `two weeks ago`, `in March`, `on 8 May`, `2023-05-08`, …),
//!   and the time range a query refers to, resolved against the question date, padded ±2 days
//!   as the official code does. Precision first: an expression it is not sure of yields
//!   nothing, because a guessed range reorders results for the worse.
//! * [`change`]: who a question is about (the user, a person or pet of theirs, someone
//!   named) and whether a later text states that something about them changed (the update
//!   stage's test that two statements are of the same thing).
//! * [`kinds`]: WordNet 3.0's noun hierarchy, to tell a thing of the kind a question asks
//!   (`rugby` of "What sport …?") from any other word.
//! * [`facts`]: the [`FactExtractor`] trait and a heuristic implementation that keeps
//!   first-person fact sentences, key phrases and dated events; the engine prepends them to
//!   the key text before embedding (key = value + facts).

pub mod change;
pub mod facts;
pub mod kinds;
mod lexicon;
pub mod question;
mod sentences;
pub mod time;
mod whose;

pub use facts::{expand_key, FactExtractor, HeuristicFacts};
pub use sentences::sentences;
pub use time::{
    events_and_invalid_dates, extract_events, invalid_dates, parse_query, DayRange, QueryTime,
    TimeExpr,
};

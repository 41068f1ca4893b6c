//! memdex ingest: chat-history readers and the session → memory-item transform.
//!
//! Every input format is a [`SessionSource`]: an iterator of [`memdex_core::Session`]s with
//! positioned errors. [`itemize`] then cuts a session into items at the chosen granularity.
//! Format readers (JSONL, LongMemEval, LoCoMo) never embed or store. [`FORMATS`] is the one
//! registry of them (`format`): detect, open, read a JSON value, default itemizing.

mod benchmark;
mod date;
mod error;
mod format;
mod itemize;
mod jsonl;
mod locomo;
mod longmemeval;
mod wire;

pub use benchmark::{locomo_sessions, InstanceHook, LongMemEvalSessions};
pub use date::{parse_date, MAX_YEAR, MIN_YEAR};
pub use error::IngestError;
pub use format::{
    detect_file, detect_value, format, Format, ReadOptions, Record, RecordHook, Sessions,
    ValueError, FORMATS,
};
pub use itemize::{itemize, ItemizeOptions};
pub use jsonl::{JsonlOptions, JsonlSessions, DEFAULT_MAX_LINE_BYTES};
pub use locomo::{
    category_name, parse_locomo, parse_locomo_date, read_locomo, LocomoConversation, LocomoQa,
    TurnRef,
};
pub use longmemeval::{LmeInstance, LongMemEvalReader};
pub use wire::{
    check_session, session_to_wire, Context, SessionIn, SessionLimits, TurnIn, TurnRole, WireError,
    MAX_SESSION_ID_BYTES,
};

use memdex_core::Session;

/// A stream of sessions read from one input, in input order.
pub trait SessionSource: Iterator<Item = Result<Session, IngestError>> {
    /// Records skipped so far under `--on-error skip`, each with its position.
    fn skipped(&self) -> &[IngestError];

    /// (input bytes consumed, input bytes) when the source knows them: progress and ETA.
    fn position(&self) -> Option<(u64, u64)> {
        None
    }
}

/// Sessions already in memory (a parsed LoCoMo file, a test's history), as a source.
#[derive(Debug, Clone, Default)]
pub struct SessionList(std::vec::IntoIter<Session>);

impl SessionList {
    pub fn new(sessions: Vec<Session>) -> SessionList {
        SessionList(sessions.into_iter())
    }
}

impl Iterator for SessionList {
    type Item = Result<Session, IngestError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl SessionSource for SessionList {
    fn skipped(&self) -> &[IngestError] {
        &[]
    }
}

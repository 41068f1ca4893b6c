use std::path::PathBuf;
use thiserror::Error;

/// An input problem, always naming the file and the line (1-based) where it was found.
#[derive(Debug, Error)]
pub enum IngestError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: malformed JSON: {message}")]
    Json {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{path}:{line}: wrong schema: {message}")]
    Schema {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{path}:{line}: field `{field}`: bad date {value:?}: {message}")]
    Date {
        path: PathBuf,
        line: u64,
        field: &'static str,
        value: String,
        message: String,
    },
    #[error("{path}:{line}: line is {bytes} bytes, over the {limit}-byte limit (raise --max-line-bytes)")]
    TooLarge {
        path: PathBuf,
        line: u64,
        bytes: u64,
        limit: u64,
    },
    /// A structurally broken file (truncated, not the expected JSON shape): reading stops.
    #[error("{path}: byte {offset}: {message}")]
    Malformed {
        path: PathBuf,
        offset: u64,
        message: String,
    },
    /// One record of a multi-record file is unusable (wrong schema, inconsistent fields);
    /// `location` names it (question id, conversation, byte offset).
    #[error("{path}: {location}: {message}")]
    Record {
        path: PathBuf,
        location: String,
        message: String,
    },
    #[error("{path}:{line}: not valid UTF-8 (byte {offset} of the line)")]
    Utf8 {
        path: PathBuf,
        line: u64,
        offset: usize,
    },
}

use thiserror::Error;

/// Engine failures: the underlying crate's error, or a conflict the engine itself detects.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Ingest(#[from] memdex_ingest::IngestError),
    #[error(transparent)]
    Embed(#[from] memdex_embed::EmbedError),
    #[error(transparent)]
    Store(#[from] memdex_store::StoreError),
    #[error("tenant {tenant:?}, session {session_id:?}: already stored with different content ({origin}); give the new session another id, or delete the old one first")]
    SessionConflict {
        tenant: String,
        session_id: String,
        origin: String,
    },
    #[error("tenant {tenant:?} has no items in {store}")]
    UnknownTenant { tenant: String, store: String },
    #[error("the query is empty")]
    EmptyQuery,
    #[error("the {stage} stage needs {what}, which {store} was built without; re-index into a new store with {option}")]
    MissingColumns {
        stage: &'static str,
        what: &'static str,
        store: String,
        option: &'static str,
    },
    #[error("busy: {queue} queue is full; retry later")]
    Busy { queue: &'static str },
    #[error("shutting down")]
    ShuttingDown,
    #[error("{what} not found")]
    NotFound { what: String },
    #[error("invalid input: {message}")]
    Invalid { message: String },
    #[error("internal error: {message}")]
    Internal { message: String },
}

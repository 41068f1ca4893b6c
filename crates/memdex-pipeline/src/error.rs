use thiserror::Error;

/// Indexing and search failures: the underlying crate's error, or a conflict the append
/// pipeline detects.
#[derive(Debug, Error)]
pub enum PipelineError {
    #[error(transparent)]
    Ingest(#[from] memdex_ingest::IngestError),
    #[error(transparent)]
    Embed(#[from] memdex_embed::EmbedError),
    #[error(transparent)]
    Store(#[from] memdex_store::StoreError),
    #[error(transparent)]
    Rank(#[from] memdex_rank::RankError),
    #[error(transparent)]
    Structures(#[from] memdex_structures::StructuresError),
    #[error("tenant {tenant:?}, session {session_id:?}: already stored with different content; give the new session another id, or delete the old one first")]
    SessionConflict { tenant: String, session_id: String },
    #[error("tenant {tenant:?}, session {session_id:?}: no text (every turn is blank); nothing to remember")]
    EmptySession { tenant: String, session_id: String },
    #[error(
        "the store expands keys with fact extractor {name:?}, which is not loaded here (a model \
         extractor: append with `memdex index --extractor model:PATH.gguf`; the server and the \
         Python package cannot append to such a store)"
    )]
    UnknownExtractor { name: String },
    #[error("the model failed: {message}")]
    Model { message: String },
    #[error("fused ranking on {device}: {source}")]
    Kernel {
        device: String,
        source: memdex_kernels::KernelError,
    },
    #[error("the query is empty")]
    EmptyQuery,
    #[error("invalid input: {message}")]
    Invalid { message: String },
}

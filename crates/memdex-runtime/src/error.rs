use thiserror::Error;

/// Serving failures: the engine's, or what the runtime itself decides (queues, lookups).
#[derive(Debug, Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Engine(#[from] memdex_engine::EngineError),
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

impl From<memdex_rank::RankError> for RuntimeError {
    fn from(e: memdex_rank::RankError) -> Self {
        RuntimeError::Engine(e.into())
    }
}

use thiserror::Error;

/// Serving failures: the engine's, or what the runtime itself decides (queues, lookups).
#[derive(Debug, Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Pipeline(#[from] memdex_pipeline::PipelineError),
    /// A search could not be ranked (a tenant without memory, a stage the store cannot serve).
    #[error(transparent)]
    Rank(#[from] memdex_rank::RankError),
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
    /// A write that was not committed: nothing of it is stored, so retrying is safe.
    /// `disk_full`: the store's disk (or quota) is full.
    #[error("not committed: {message}")]
    NotCommitted { message: String, disk_full: bool },
}

impl RuntimeError {
    /// The same failure for another caller of a shared operation (a group commit).
    pub(crate) fn for_another_caller(&self) -> RuntimeError {
        match self {
            RuntimeError::NotCommitted { message, disk_full } => RuntimeError::NotCommitted {
                message: message.clone(),
                disk_full: *disk_full,
            },
            other => RuntimeError::Internal {
                message: other.to_string(),
            },
        }
    }

    /// The failure of a write that did not commit.
    pub(crate) fn not_committed(e: &memdex_pipeline::PipelineError) -> RuntimeError {
        RuntimeError::NotCommitted {
            message: e.to_string(),
            disk_full: matches!(e, memdex_pipeline::PipelineError::Store(s) if s.is_disk_full()),
        }
    }
}

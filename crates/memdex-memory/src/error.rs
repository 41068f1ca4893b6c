//! The one error type of the front door: every failure of every front end, classified once
//! (the HTTP server maps each class to its status, the Python package to an exception, the MCP
//! server to a tool error), each carrying memdex's own message.

use memdex_pipeline::PipelineError;
use memdex_rank::RankError;
use memdex_runtime::RuntimeError;
use memdex_store::StoreError;
use thiserror::Error;

/// What went wrong, with memdex's message.
#[derive(Debug, Error)]
pub enum MemoryError {
    /// Bad input: a malformed session, an unknown stage, a bad date, an empty query (HTTP 400).
    #[error("{0}")]
    Invalid(String),
    /// A text, a session or a call over a size limit (HTTP 413).
    #[error("{0}")]
    TooLarge(String),
    /// No such tenant, session or item (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The same session id is stored with other content (HTTP 409).
    #[error("{0}")]
    Conflict(String),
    /// A queue is full; retry later (HTTP 429).
    #[error("{0}")]
    Busy(String),
    /// A write that was not committed because the store's disk is full: nothing of it is
    /// stored; free space, then retry (HTTP 507).
    #[error("{0}; the store's disk is full: free space, then retry")]
    DiskFull(String),
    /// A write that was not committed (a store write failed): nothing of it is stored, so
    /// retrying it later is safe (HTTP 500).
    #[error("{0}")]
    NotCommitted(String),
    /// The memory was closed (HTTP 503).
    #[error("the memory is closed")]
    Closed,
    /// The model, the store or a thread failed (HTTP 500).
    #[error("{0}")]
    Internal(String),
}

impl MemoryError {
    /// A short name of the class, for protocols that carry one (`invalid`, `not_found`, …).
    pub fn code(&self) -> &'static str {
        match self {
            MemoryError::Invalid(_) => "invalid",
            MemoryError::TooLarge(_) => "too_large",
            MemoryError::NotFound(_) => "not_found",
            MemoryError::Conflict(_) => "conflict",
            MemoryError::Busy(_) => "busy",
            MemoryError::DiskFull(_) => "disk_full",
            MemoryError::NotCommitted(_) => "not_committed",
            MemoryError::Closed => "closed",
            MemoryError::Internal(_) => "internal",
        }
    }
}

impl From<RuntimeError> for MemoryError {
    fn from(e: RuntimeError) -> Self {
        let msg = e.to_string();
        match e {
            RuntimeError::Pipeline(e) => e.into(),
            RuntimeError::Rank(e) => e.into(),
            RuntimeError::NotFound { .. } => MemoryError::NotFound(msg),
            RuntimeError::Invalid { .. } => MemoryError::Invalid(msg),
            RuntimeError::Busy { .. } => MemoryError::Busy(msg),
            RuntimeError::ShuttingDown => MemoryError::Closed,
            RuntimeError::Internal { .. } => MemoryError::Internal(msg),
            RuntimeError::NotCommitted {
                disk_full: true, ..
            } => MemoryError::DiskFull(msg),
            RuntimeError::NotCommitted { .. } => MemoryError::NotCommitted(msg),
        }
    }
}

impl From<PipelineError> for MemoryError {
    fn from(e: PipelineError) -> Self {
        let msg = e.to_string();
        match e {
            PipelineError::Rank(e) => e.into(),
            PipelineError::EmptyQuery
            | PipelineError::EmptySession { .. }
            | PipelineError::Invalid { .. }
            | PipelineError::Ingest(_) => MemoryError::Invalid(msg),
            PipelineError::SessionConflict { .. } => MemoryError::Conflict(msg),
            PipelineError::Store(e) => e.into(),
            PipelineError::Embed(_)
            | PipelineError::Model { .. }
            | PipelineError::Structures(_)
            | PipelineError::Kernel { .. }
            | PipelineError::UnknownExtractor { .. } => MemoryError::Internal(msg),
        }
    }
}

impl From<RankError> for MemoryError {
    fn from(e: RankError) -> Self {
        match e {
            RankError::UnknownTenant { tenant, .. } => {
                MemoryError::NotFound(format!("tenant {tenant:?} has no memory"))
            }
            RankError::MissingColumns { .. } | RankError::NotFused { .. } => {
                MemoryError::Invalid(e.to_string())
            }
            e => MemoryError::Internal(e.to_string()),
        }
    }
}

impl From<StoreError> for MemoryError {
    fn from(e: StoreError) -> Self {
        let msg = e.to_string();
        match e {
            e if e.is_disk_full() => MemoryError::DiskFull(msg),
            StoreError::NotAStore { .. } => MemoryError::NotFound(msg),
            StoreError::ModelMismatch { .. } | StoreError::InvalidAppend { .. } => {
                MemoryError::Invalid(msg)
            }
            StoreError::Locked { .. } => MemoryError::Busy(msg),
            StoreError::Exists { .. } => MemoryError::Conflict(msg),
            _ => MemoryError::Internal(msg),
        }
    }
}

impl From<crate::limits::TooLarge> for MemoryError {
    fn from(e: crate::limits::TooLarge) -> Self {
        MemoryError::TooLarge(e.0)
    }
}

impl From<memdex_embed::EmbedError> for MemoryError {
    fn from(e: memdex_embed::EmbedError) -> Self {
        MemoryError::Internal(e.to_string())
    }
}

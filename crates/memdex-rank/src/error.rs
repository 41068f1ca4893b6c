use thiserror::Error;

/// Why a ranking could not run.
#[derive(Debug, Error)]
pub enum RankError {
    #[error("tenant {tenant:?} has no items in {store}")]
    UnknownTenant { tenant: String, store: String },
    #[error("the {stage} stage needs {what}, which {store} was built without; re-index into a new store with {option}")]
    MissingColumns {
        stage: &'static str,
        what: &'static str,
        store: String,
        option: &'static str,
    },
    /// Dense scores computed elsewhere do not fit the rows being ranked (never recomputed
    /// silently: a scorer that returns the wrong rows is a bug to surface).
    #[error("{what}: expected {expected}, got {got}")]
    DenseMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// The fused ranking (one kernel per batch) runs the default pipeline's stages only.
    #[error("the fused ranking does not run {stage}; rank without it (the CPU pipeline)")]
    NotFused { stage: &'static str },
    #[error(transparent)]
    Score(#[from] memdex_score::ScoreError),
    #[error(transparent)]
    Structures(#[from] memdex_structures::StructuresError),
}

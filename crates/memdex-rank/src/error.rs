use thiserror::Error;

/// Why a ranking could not run.
#[derive(Debug, Error)]
pub enum RankError {
    #[error("tenant {tenant:?} has no items in {store}")]
    UnknownTenant { tenant: String, store: String },
    /// The tenant has rows, but every one is in a store file found damaged (left out).
    #[error("tenant {tenant:?}: every row is in a damaged file of {store} ({files}); `memdex verify` says what they hold, docs/serving.md \"Damage\" how to restore them")]
    Damaged {
        tenant: String,
        store: String,
        files: String,
    },
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

impl RankError {
    /// Why `tenant` has no rows to rank in `store`: none live, or all in damaged files.
    pub fn no_rows(store: &memdex_store::Store, tenant: &str) -> RankError {
        let damage = store.damage();
        let (tenant, dir) = (tenant.to_string(), store.dir().display().to_string());
        if damage.is_empty() || !store.has_live_rows(&tenant) {
            return RankError::UnknownTenant { tenant, store: dir };
        }
        let files: Vec<&str> = damage.iter().map(|(f, _)| f.as_str()).collect();
        RankError::Damaged {
            tenant,
            store: dir,
            files: files.join(", "),
        }
    }

    /// The same failure again, for another query of a batch that failed as a whole; `None`
    /// for the wrapped errors of other crates (not `Clone`), which the caller reports in words.
    pub fn same_again(&self) -> Option<RankError> {
        Some(match self {
            RankError::UnknownTenant { tenant, store } => RankError::UnknownTenant {
                tenant: tenant.clone(),
                store: store.clone(),
            },
            RankError::Damaged {
                tenant,
                store,
                files,
            } => RankError::Damaged {
                tenant: tenant.clone(),
                store: store.clone(),
                files: files.clone(),
            },
            RankError::MissingColumns {
                stage,
                what,
                store,
                option,
            } => RankError::MissingColumns {
                stage,
                what,
                store: store.clone(),
                option,
            },
            &RankError::DenseMismatch {
                what,
                expected,
                got,
            } => RankError::DenseMismatch {
                what,
                expected,
                got,
            },
            &RankError::NotFused { stage } => RankError::NotFused { stage },
            RankError::Score(_) | RankError::Structures(_) => return None,
        })
    }
}

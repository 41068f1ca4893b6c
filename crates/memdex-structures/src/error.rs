use thiserror::Error;

/// Why the structures could not be kept or read.
#[derive(Debug, Error)]
pub enum StructuresError {
    #[error(transparent)]
    Store(#[from] memdex_store::StoreError),
    #[error("embedding the structures' texts failed: {message}")]
    Embed { message: String },
    #[error("the store's thoughts come from extractor {name:?}; this build has {have:?}")]
    UnknownExtractor { name: String, have: String },
    #[error("{store} keeps no {what}; build it with `memdex index --{what}` (into a new store, or one that keeps no structures yet)")]
    NotKept { what: &'static str, store: String },
    #[error("tenant {tenant:?} has no memory in {store}")]
    NoTenant { tenant: String, store: String },
}

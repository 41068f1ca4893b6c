use std::path::PathBuf;
use thiserror::Error;

/// Store failures; every variant names the file or directory involved.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{dir}: no memdex store here (no manifest.json)")]
    NotAStore { dir: PathBuf },
    #[error("{path}: corrupt manifest: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error(
        "{path}: store format version {found} is not supported (this build reads {supported})"
    )]
    FormatVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: segment is damaged or truncated: {message}")]
    Segment { path: PathBuf, message: String },
    /// A file's bytes no longer give the checksum its manifest entry records.
    #[error("{path}: damaged: {message}. `memdex verify` lists what it holds; restore it from a snapshot (docs/serving.md, \"Damage\")")]
    Damaged { path: PathBuf, message: String },
    #[error("{dir}: store was built with {stored}; refusing to use it with {requested} ({reason}). Use the same model, or index into a new store")]
    ModelMismatch {
        dir: PathBuf,
        stored: String,
        requested: String,
        reason: String,
    },
    #[error("{dir}: another writer holds the store lock ({lock})")]
    Locked { dir: PathBuf, lock: PathBuf },
    #[error("{dir}: already holds a store or other files; a snapshot or restore needs a new or empty directory")]
    Exists { dir: PathBuf },
    #[error("append rejected: {message}")]
    InvalidAppend { message: String },
    /// Too little free space to start a large rewrite (compaction); nothing was written.
    #[error("{dir}: not enough free disk space for {what}: needs about {needed} bytes, {available} available")]
    NoSpace {
        dir: PathBuf,
        what: String,
        needed: u64,
        available: u64,
    },
    #[error("arrow error writing {path}: {source}")]
    Arrow {
        path: PathBuf,
        #[source]
        source: arrow_schema::ArrowError,
    },
}

impl StoreError {
    /// The disk (or the store's quota) is full, or too full for a rewrite to start.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::NoSpace { .. })
            || matches!(self, StoreError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull
            || source.raw_os_error() == Some(28))
    }

    /// A file the manifest names is gone (a concurrent compaction unlinked it).
    pub fn is_missing_file(&self) -> bool {
        matches!(self, StoreError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.into();
    move |source| StoreError::Io { path, source }
}

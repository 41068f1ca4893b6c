//! Flags of `memdex verify`, `memdex snapshot` and `memdex restore`.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Store directory (may be served and written meanwhile).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Print the report as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Store directory (may be served and written while the copy runs).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// New (or empty) directory for the copy.
    #[arg(long, visible_alias = "output", env = "MEMDEX_OUTPUT")]
    pub to: PathBuf,
    /// Copy every byte instead of hard-linking the immutable files (a copy that shares no
    /// disk blocks with the store; a hard link is the same bytes on the same disk).
    #[arg(long)]
    pub copy: bool,
    /// Print the report as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The snapshot to restore from (a directory `memdex snapshot` wrote).
    #[arg(long)]
    pub from: PathBuf,
    /// Store directory (created if missing; no server may hold it).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Keep the store's own version and copy only its damaged or missing files from the
    /// snapshot (each only when the snapshot holds the same file). Without it the store
    /// becomes the snapshot's version and what was written after the snapshot is gone.
    #[arg(long)]
    pub repair: bool,
    /// Print the report as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

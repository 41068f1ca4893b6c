//! Upkeep of a store from outside a server: compaction (`memdex compact`, no server may hold
//! the store), verification (`memdex verify`) and snapshots (`memdex snapshot`; both also work
//! while a server writes) and restores (`memdex restore`, no server), through the door so
//! that their failures are the door's [`MemoryError`] classes. A served store is compacted,
//! verified and snapshotted by its server ([`crate::Memory::compact`],
//! [`crate::Memory::verify_store`], [`crate::Memory::snapshot_store`]).

use std::path::Path;

use memdex_store::{
    CompactOptions, CompactReport, Manifest, RestoreOptions, RestoreReport, SnapshotOptions,
    SnapshotReport, StoreWriter, VerifyReport,
};

use crate::MemoryError;

/// Compacts the store in `dir` (deleted rows', unreferenced contents' and unused terms' bytes
/// leave the disk); `Busy` while another writer (a server) holds it, `NotFound` when `dir`
/// holds no store.
pub fn compact(dir: &Path, opts: &CompactOptions) -> Result<CompactReport, MemoryError> {
    let m = Manifest::load(dir)?;
    let mut w = StoreWriter::open_or_create_with(
        dir,
        &m.model,
        m.granularity,
        m.model_source,
        &m.extraction,
    )?;
    Ok(w.compact(opts)?)
}

/// Copies the latest committed version of the store in `dir` to `out` (a new or empty
/// directory), without a lock: immutable files by hard link where the file system allows
/// (unless `opts.copy`), then the copy's files checked against their checksums.
pub fn snapshot(
    dir: &Path,
    out: &Path,
    opts: &SnapshotOptions,
) -> Result<SnapshotReport, MemoryError> {
    Ok(memdex_store::snapshot(dir, out, opts)?)
}

/// Reads every file of the store in `dir` and checks it (size, checksum, structure); what
/// each damaged file holds. `NotFound` when `dir` holds no store.
pub fn verify(dir: &Path) -> Result<VerifyReport, MemoryError> {
    Ok(memdex_store::verify(dir)?)
}

/// Restores the store in `dir` from the snapshot in `from` (whole, or with `opts.repair`
/// only its damaged files); `Busy` while a server holds the store.
pub fn restore(
    from: &Path,
    dir: &Path,
    opts: &RestoreOptions,
) -> Result<RestoreReport, MemoryError> {
    Ok(memdex_store::restore(from, dir, opts)?)
}

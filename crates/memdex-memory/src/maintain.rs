//! Offline upkeep of a store no server holds: compaction (`memdex compact`) and snapshots
//! (`memdex snapshot`, which also works while a server writes), through the door so that their
//! failures are the door's [`MemoryError`] classes. A served store is compacted by its server
//! ([`crate::Memory::compact`]).

use std::path::Path;

use memdex_store::{CompactOptions, CompactReport, Manifest, StoreWriter};

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

/// Copies the latest committed version of the store in `dir` to `out` (a new directory),
/// without a lock; returns the manifest version copied.
pub fn snapshot(dir: &Path, out: &Path) -> Result<u64, MemoryError> {
    Ok(memdex_store::snapshot(dir, out)?)
}

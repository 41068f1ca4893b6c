//! One of the two places in memdex-store that use `unsafe` (the other: `disk`, one `statvfs`):
//! mapping segment files into memory.
//!
//! # Safety
//!
//! `memmap2::Mmap::map` is unsafe because the mapped bytes may change (or vanish, raising
//! SIGBUS) if another process modifies or truncates the file while it is mapped. memdex maps
//! only segment and content files (`seg-N.arrow`, `cnt-N.arrow`), which are immutable by
//! construction:
//!
//! * a file is written under a temporary name, fsynced, and renamed into place; nothing in
//!   memdex opens a committed file for writing again;
//! * compaction (later) writes *new* segments and retires old ones by manifest swap; a retired
//!   file is unlinked, which keeps existing mappings valid on POSIX systems.
//!
//! The remaining hazard is an outside actor editing files inside a store directory while it is
//! open, which the store's documentation forbids (copy a store only while no writer commits,
//! or copy the manifest first and then the segments it names).
//!
//! The returned [`Buffer`] owns the mapping (through `bytes::Bytes::from_owner`), so Arrow
//! arrays sliced from it keep the mapping alive for as long as they exist.
#![allow(unsafe_code)]

use std::fs::File;
use std::path::Path;

use arrow_buffer::Buffer;

use crate::error::{io, StoreError};

/// Maps `path` read-only and wraps it as an Arrow buffer without copying.
pub(crate) fn map_file(path: &Path) -> Result<Buffer, StoreError> {
    let file = File::open(path).map_err(io(path))?;
    // SAFETY: see the module docs: committed segment files are never modified in place.
    let mmap = unsafe { memmap2::Mmap::map(&file) }.map_err(io(path))?;
    #[cfg(unix)]
    {
        // Search scans whole tenant ranges; let the kernel read ahead.
        let _ = mmap.advise(memmap2::Advice::WillNeed);
    }
    Ok(Buffer::from(bytes::Bytes::from_owner(mmap)))
}

//! memdex store: a memory-mapped Arrow column store.
//!
//! Layout of a store directory:
//!
//! ```text
//! DIR/manifest.json             versioned list of committed segments (atomically replaced)
//! DIR/LOCK                      held by the one writer
//! DIR/segments/seg-NNNNNNNN.arrow   immutable Arrow IPC files, one record batch each
//! ```
//!
//! Writes go [`StoreWriter`] → new immutable segment file (temp, fsync, rename) → new manifest
//! version (temp, fsync, rename, fsync dir). A crash at any point leaves the previous manifest,
//! which names only complete segments; orphan files are removed by the next writer.
//! Reads go [`Store`] → mmap of each segment → zero-copy Arrow arrays (see `mmap`).
//!
//! Inside a segment rows are grouped by tenant and ordered by position in the tenant's
//! history, so a tenant's embeddings are contiguous `&[f32]` slices.

mod compact;
mod error;
mod failpoint;
mod live;
mod lsh_column;
mod manifest;
mod mmap;
mod schema;
mod segment;
mod snapshot;
mod store;
mod writer;

pub use compact::{CompactOptions, CompactReport};
pub use error::StoreError;
pub use live::AliveBits;
pub use lsh_column::{LshMeta, LSH_BUCKETS};
pub use manifest::{Extraction, Manifest, SegmentMeta, TenantRange, FORMAT_VERSION};
pub use schema::columns;
pub use segment::{Derived, ItemRef, Segment};
pub use snapshot::snapshot;
pub use store::{session_hash, Store, TenantSlice};
pub use writer::{AppendReport, StoreWriter};

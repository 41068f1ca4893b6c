//! memdex store: a memory-mapped Arrow column store.
//!
//! Layout of a store directory:
//!
//! ```text
//! DIR/manifest.json             versioned list of committed segments (atomically replaced)
//! DIR/LOCK                      held by the one writer
//! DIR/segments/seg-NNNNNNNN.arrow   immutable Arrow IPC files, one record batch each
//! DIR/segments/cnt-NNNNNNNN.arrow   shared layout: each distinct content once (see `contents`)
//! DIR/structures/aux-NNNNNNNN.arrow derived structures (thoughts, tree), when enabled
//! ```
//!
//! Every file is checksummed (XXH3-64, `checksum`) when it is sealed, the manifest too; when
//! each is checked, and what happens to a damaged one, is `integrity`'s business; `verify`
//! reads a whole store, `snapshot` copies one version of a live store and `restore` puts one
//! back.
//!
//! Writes go [`StoreWriter`] → new immutable segment file (temp, fsync, rename) → new manifest
//! version (temp, fsync, rename, fsync dir). A crash at any point leaves the previous manifest,
//! which names only complete segments; orphan files are removed by the next writer.
//! Reads go [`Store`] → mmap of each segment → zero-copy Arrow arrays (see `mmap`).
//!
//! Inside a segment rows are grouped by tenant and ordered by position in the tenant's
//! history. In the inline layout (format 3) every row holds its own key, value, terms and
//! vector, so a tenant's vectors are one contiguous `&[f32]` per segment; in the shared layout
//! (format 4, the default) rows reference content files by `content_ref` and a tenant's vectors
//! are runs of consecutive content rows ([`VectorRun`]), one per stretch of its history first
//! stored together.

mod aux_rows;
mod checksum;
mod compact;
mod contents;
mod disk;
mod error;
mod failpoint;
mod integrity;
mod ipc;
mod live;
mod lsh_column;
mod manifest;
mod meta;
mod mmap;
mod restore;
mod schema;
mod segment;
mod snapshot;
mod store;
mod structure_segments;
mod verify;
mod words;
mod writer;

pub use aux_rows::{AuxKind, AuxTenantRange, ThoughtOp, ThoughtRow, TreeRow};
pub use checksum::Checksum;
pub use compact::{CompactOptions, CompactReport};
pub use contents::{ContentFile, Contents};
pub use error::StoreError;
pub use integrity::{Checks, Verdict, SMALL_FILE_BYTES};
pub use live::AliveBits;
pub use lsh_column::{LshMeta, LSH_BUCKETS};
pub use manifest::{Extraction, Layout, Manifest, FORMAT_VERSION, FORMAT_VERSION_SHARED};
pub use meta::{
    AuxSegmentMeta, ContentMeta, SegmentMeta, StructuresMeta, TenantRange, ThoughtsConfig,
    TreeConfig, WordsMeta,
};
pub use restore::{restore, RestoreOptions, RestoreReport};
pub use schema::{columns, content_ref};
pub use segment::{Derived, ItemRef, Segment, VectorBlock, VectorRun};
pub use snapshot::{snapshot, SnapshotOptions, SnapshotReport};
pub use store::{session_hash, Store, TenantSlice};
pub use structure_segments::Structures;
pub use verify::{verify, FileKind, FileReport, FileStatus, Holds, TenantHold, VerifyReport};
pub use words::WordTable;
pub use writer::{SegmentAppend, StoreSpec, StoreWriter};

//! memdex pipelines: indexing a store with an encoder, synchronous (no async runtime; the
//! serving runtime in `memdex-runtime` builds on this). Searches rank over a
//! [`memdex_rank::Snapshot`] through the door (`memdex-memory`).
//!
//! * [`AppendPipeline`]: the one append path — itemize → idempotency → extraction → key
//!   reuse → terms → vectors → segment — shared by [`index_sessions`] and the server.
//! * [`index_sessions`]: any [`memdex_ingest::SessionSource`] through the pipeline, one
//!   committed segment per flush; idempotent.
//! * [`lsh`]: TiM bucket ids at index time (stores that hash) and the bucketed dense top-k.
//! * `structures`: after each commit and delete, the store's TiM thoughts and MemTree (when
//!   it keeps them) are brought up to date ([`AppendPipeline::sync_structures`]).

mod append;
mod batch;
mod error;
mod extract;
mod index;
mod keys;
pub mod lsh;
mod structure_sync;
mod vectors;

pub use append::{
    session_hash_of, Admitted, AppendPipeline, Extracted, PrepareSeconds, SessionStatus,
};
pub use batch::{write_batch, Committed, EmbedFn, InFlight, ItemBatch, KeySource};
pub use error::PipelineError;
pub use extract::{derive_item, ExtractOptions, Extractors};
pub use index::{
    index_sessions, index_sessions_with, IndexOptions, IndexProgress, IndexReport, Throughput,
    DEFAULT_FLUSH_ITEMS,
};
pub use keys::KeyCache;
pub use lsh::KernelHandle;

//! memdex engine: the library façade used by the CLI and the server.
//!
//! * [`index_sessions`]: sessions from any [`memdex_ingest::SessionSource`] → items →
//!   embeddings (each distinct key embedded once per flush) → one committed segment per flush.
//!   Idempotent: sessions already stored with the same content are skipped.
//! * [`Searcher`]: a store reader plus the embedder → ranked items for a tenant, through the
//!   ranking pipeline in `rank` (dense, BM25, fusion, FragRel; each stage an option).
//! * [`Engine`]: the serving façade (model thread + token-budget queue, writer thread with
//!   group commit, deletes, compaction, snapshots for readers); see `engine`.
//! * [`lsh`]: TiM bucket ids at index time (stores that hash) and the bucketed dense top-k.

mod context;
mod engine;
mod error;
mod indexer;
pub mod lsh;
mod rank;
mod reading;
mod scan;
mod search;
mod stages;
mod worker;

pub use context::{contextual_query, is_ambiguous};
pub use engine::{
    AppendReport, DeleteReport, DeleteTarget, Engine, EngineOptions, EngineStats, SessionOutcome,
    Snapshot, StoreSummary, Ticket, BATCH_BUCKETS,
};
pub use error::EngineError;
pub use indexer::{
    derive_item, index_sessions, index_sessions_with, ExtractOptions, IndexOptions, IndexProgress,
    IndexReport,
};
pub use memdex_index::fragrel::FragRel;
pub use rank::{
    Bm25Flavour, FragRelScope, Fusion, Query, RankOptions, Ranking, Retriever, TimeMode, TimeStage,
};
pub use reading::{format_ms, reading_context};
pub use search::{fit_to_store, SearchHit, Searcher};
pub use stages::{FusionChoice, Stages, TimeChoice};
pub use worker::Embedded;

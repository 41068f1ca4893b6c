//! memdex engine: the library façade used by the CLI (and later the server).
//!
//! * [`index_sessions`]: sessions from any [`memdex_ingest::SessionSource`] → items →
//!   embeddings (each distinct key embedded once per flush) → one committed segment per flush.
//!   Idempotent: sessions already stored with the same content are skipped.
//! * [`Searcher`]: a store reader plus the embedder → ranked items for a tenant, through the
//!   ranking pipeline in `rank` (dense, BM25, fusion, FragRel; each stage an option).
//! * [`lsh`]: TiM bucket ids at index time (stores that hash) and the bucketed dense top-k.

mod context;
mod error;
mod indexer;
pub mod lsh;
mod rank;
mod search;

pub use context::{contextual_query, is_ambiguous};
pub use error::EngineError;
pub use indexer::{index_sessions, IndexOptions, IndexProgress, IndexReport};
pub use memdex_index::fragrel::FragRel;
pub use rank::{Bm25Flavour, FragRelScope, Fusion, Query, RankOptions, Ranking, Retriever};
pub use search::{SearchHit, Searcher};

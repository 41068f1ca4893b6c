//! memdex ranking: the one pipeline that orders a tenant's live items for a query, used by
//! `memdex search`, `eval`, `bench` and the server alike. Pure computation over a store view:
//! no candle, no async runtime, no model (dense scores come through the
//! [`memdex_score::DenseScorer`] seam or precomputed).
//!
//! * [`RankOptions`]: the stages and weights (serialisable, recorded whole in eval reports).
//! * [`Stages`]: the user's overrides — the CLI flags (feature `clap`), the server's `stages`
//!   object and its OpenAPI schema (feature `openapi`) — validated once in [`Stages::apply`].
//! * [`rank`]: the options' [`Plan`], one file per stage behind one trait (`stage`): first
//!   stage (dense, BM25, fusion; or a structure as retriever) → FragRel → structures' lift
//!   → signals → supersession → order → time stage → update stage.
//! * [`FusedTenant`] and [`FusedParams`]: the CPU side of the fused default ranking (one
//!   kernel per batch of queries, in memdex-kernels).
//! * [`TenantCache`]: per-tenant BM25 indexes, importance, session groups, adjacency;
//!   [`Snapshot`]: a committed store version with its caches, what every ranking reads.
//! * [`contextual_query`] (Mimir's query context) and [`reading_context`] (the reading stage).

mod batch;
mod cache;
mod columns;
mod context;
mod error;
mod expand;
mod explain;
mod hit;
mod kernel_inputs;
mod kernel_rows;
mod options;
mod pipeline;
mod query;
mod reading;
mod retrieved;
mod rows;
mod score;
mod snapshot;
mod stage;
mod stages;

use stage::update;

pub use stage::time::flagged_first;

pub use batch::{
    all_one, check_vector, top_one, Batch, BatchHits, BatchQuery, BatchRanker, BatchRankings,
    CpuRanker, DeviceCount, SharedRanker,
};
pub use cache::{CacheStats, TenantCache, DEFAULT_CACHE_BYTES};
pub use columns::{check_columns, fit_to_store};
pub use context::{contextual_query, is_ambiguous};
pub use error::RankError;
pub use explain::Trace;
pub use hit::{Explain, SearchHit, UpdateLink};
pub use kernel_inputs::{fused_depth, FusedQuery, FusedTenant, FusedTextQuery, FusedTime};
pub use kernel_rows::{FusedText, FusedVocab};
pub use options::{
    Bm25Flavour, Expand, FragRelScope, FragRelStage, Fusion, Preset, RankOptions, Retriever,
    ThoughtStage, TimeMode, TimeStage, TreeStage, UpdateStage, MAX_EXPAND_TERMS,
};
pub use pipeline::{rank, rank_explained, TopK};
pub use query::{Dense, Query};
pub use reading::{format_ms, reading_context, CON_PROMPT};
pub use rows::Ranking;
pub use snapshot::{Snapshot, StoreSummary};
pub use stage::time::TimeWindow;
pub use stage::{FusedParams, Plan};
pub use stages::{FusionChoice, StageError, Stages, Switch, TimeChoice};
pub use update::{update_order, UpdateDirection, UpdateMove, UpdateRows};

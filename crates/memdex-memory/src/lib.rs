//! memdex memory: the one way in. [`Memory`] is one store and its model behind blocking and
//! async calls, opened one way ([`Memory::open`], which also builds the ranker: [`rankers`]),
//! and every front end goes through it: the HTTP server (`memdex-server`, async), the MCP
//! server (`memdex-mcp`) and the Python package (`memdex-py`). It owns a
//! [`memdex_runtime::Engine`], which finishes every search, so appends, deletes, compactions
//! and searches all go the same way; `search` is the one search path of both halves; [`request`] checks what a caller asks against the memory's [`Limits`]; [`input`]
//! reads the session shapes callers hold (memdex's, LongMemEval's, LoCoMo's); [`MemoryError`]
//! is the one classification of failures, which each front end maps once to its protocol.
//! The offline tools use the door's two other halves: [`Builder`] for batch builds (`memdex
//! index`, `memdex eval`) and [`Reader`] for searches and batched rankings without the
//! runtime's threads (`memdex search`, `eval`, `bench`).

mod builder;
mod error;
pub mod input;
pub mod limits;
pub mod maintain;
mod memory;
mod memory_async;
mod model;
mod rankers;
mod reader;
pub mod request;
mod search;

pub use builder::{BuildSpec, Builder};
pub use error::MemoryError;
pub use limits::{Limits, DEFAULT_K, MAX_K, MAX_RECENT_TURNS, MAX_TEXT_BYTES, MAX_TURNS};
pub use memdex_core::{DeviceChoice, Granularity, TextKind};
pub use memdex_ingest::{format, session_to_wire, Format, FORMATS};
pub use memdex_pipeline::{
    ExtractOptions, IndexOptions, IndexProgress, IndexReport, KernelHandle, Throughput,
    DEFAULT_FLUSH_ITEMS,
};
pub use memdex_rank::{format_ms, Explain, SearchHit, Snapshot, Stages, StoreSummary};
pub use memdex_runtime::{
    AppendReport, DeleteReport, DeleteTarget, EngineOptions, EngineStats, Health, SearchTimings,
    StartVerify, BATCH_BUCKETS, SEARCH_STAGES, STAGES,
};
pub use memdex_store::{
    CompactOptions, CompactReport, RestoreOptions, RestoreReport, SnapshotOptions, SnapshotReport,
    VerifyReport,
};
pub use memory::{ItemInfo, Memory, OpenOptions, SessionInfo, TenantAppend};
pub use model::{load_model, model_spec, DEFAULT_MODEL_DIR};
pub use rankers::{cpu_ranker, kernels, ranker, RankChoice, RankDevice};
pub use reader::Reader;
pub use request::{
    check_embed, plan_search, searched_question, SearchPlan, SearchRequest, StageNames,
};
pub use search::SearchAnswer;

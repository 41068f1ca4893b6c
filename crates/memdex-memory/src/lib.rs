//! memdex memory: one store and its model behind blocking calls, for in-process callers
//! that are not the HTTP server — the Python package (`memdex-py`) and the MCP server
//! (`memdex-mcp`). [`Memory`] owns a [`memdex_runtime::Engine`], so it appends, deletes,
//! compacts and ranks exactly as `memdex serve` does; [`input`] reads the session shapes
//! callers hold (memdex's, LongMemEval's, LoCoMo's); [`MemoryError`] classifies failures as
//! the server's statuses do and keeps memdex's messages.

mod error;
pub mod input;
pub mod limits;
mod memory;

pub use error::MemoryError;
pub use limits::{MAX_K, MAX_RECENT_TURNS, MAX_TEXT_BYTES, MAX_TURNS, SESSION_LIMITS};
pub use memdex_core::{DeviceChoice, TextKind};
pub use memdex_rank::{format_ms, SearchHit, Stages};
pub use memdex_runtime::{AppendReport, DeleteReport, DeleteTarget, EngineOptions};
pub use memdex_store::CompactReport;
pub use memory::{
    ItemInfo, Memory, OpenOptions, SearchAnswer, SearchRequest, SessionInfo, TenantAppend,
    DEFAULT_MODEL_DIR,
};

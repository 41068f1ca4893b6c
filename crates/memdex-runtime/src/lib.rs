//! memdex runtime: the serving engine the HTTP server (and any long-running caller) uses —
//! one store, one model, many concurrent callers.
//!
//! * **Model workers** (one by default, [`EngineOptions::model_workers`]) each own an
//!   [`memdex_embed::Encoder`] (the first the one the engine is started with, the others its
//!   replicas): callers put embedding jobs on one bounded queue; a worker takes jobs until a
//!   token budget (TEI's queue), embeds them in one call per text kind and hands each job its
//!   rows through the job's own continuation (`job`: a texts job answers its caller, a search
//!   goes on to the rank stage), while another worker collects the next batch; the workers
//!   know nothing of ranking. A full queue answers [`RuntimeError::Busy`] at once (`model`).
//!   With [`EngineOptions::measure_model_workers`] the engine times warm-up batches with one
//!   worker, then two side by side, and keeps a further worker only when it is faster
//!   (`calibrate`).
//! * A **rank stage** (workers, one per core by default): the searches of each model batch,
//!   all tenants together, ranked through the engine's ranker (the CPU's or a device's) while
//!   the model workers embed the next batches (`rank_stage`). [`Engine::search`] takes a search
//!   and answers its hits with its timings per stage ([`SearchTimings`], what `/metrics`
//!   sums): the engine finishes every search.
//! * A **writer thread** owns the [`memdex_store::StoreWriter`] and the shared
//!   [`memdex_pipeline::AppendPipeline`]: appends are group-committed (one segment, one
//!   manifest), deletes commit tombstones, compaction runs on request and in the background
//!   (`writer`).
//! * At start, the store's files that opening did not hash are hashed in the background, or
//!   before the engine starts ([`StartVerify`], `verify`).
//! * Readers take an `Arc<`[`memdex_rank::Snapshot`]`>`: an immutable committed store
//!   version (which knows its live rows) with the ranking caches. The writer publishes a new
//!   snapshot after each commit, before it answers, so readers never wait and a deleted item
//!   is never ranked once its delete returned.
//!
//! Dependencies point one way: `engine` starts `model`, `rank_stage` and `writer` (and asks
//! `calibrate` how many model workers to keep); they share
//! `options`, `stats` and the job types, and neither knows `engine`.

mod calibrate;
mod delete;
mod engine;
mod error;
mod job;
mod model;
mod options;
mod rank_stage;
mod stats;
mod verify;
mod writer;

pub use calibrate::{WorkerMeasure, GAIN as WORKER_GAIN};
pub use delete::DeleteTarget;
pub use engine::{Engine, Health, Ticket};
pub use error::RuntimeError;
pub use job::{SearchAsk, SearchJob, Searched};
pub use memdex_rank::{Snapshot, StoreSummary};
pub use options::EngineOptions;
pub use rank_stage::default_workers;
pub use stats::{EngineStats, SearchTimings, BATCH_BUCKETS, SEARCH_STAGES, STAGES};
pub use verify::StartVerify;
pub use writer::{AppendReport, DeleteReport, SessionOutcome};

/// The text of a caught panic.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

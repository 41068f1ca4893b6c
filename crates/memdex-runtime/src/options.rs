//! How the engine queues and commits: read by `engine` and the threads it starts (a leaf, so
//! the writer does not import the engine).

use std::time::Duration;

use memdex_store::CompactOptions;

use crate::rank_stage::default_workers;

/// How the engine queues and commits.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Estimated tokens a model worker takes from the queue for one batch.
    pub token_budget: usize,
    /// Model workers: threads that take batches from the one embedding queue, each with its
    /// own encoder (the first the one `Engine::start` is given, the others its
    /// `Encoder::replica`s; on CUDA each on its own stream, so batches overlap on the GPU).
    /// At least 1; more than 1 is refused for an encoder that cannot be replicated.
    /// Default: 1.
    pub model_workers: usize,
    /// Measure at start how many of `model_workers` to keep (`memdex serve --model-workers
    /// auto`): on an accelerator, a further worker only while it raises the batch rate of
    /// query-sized warm-up batches by 10 % (`calibrate`); elsewhere one. A copy that cannot be
    /// made leaves fewer. Default: false (exactly `model_workers`).
    pub measure_model_workers: bool,
    /// Embedding jobs waiting at most; one more is refused with `Busy`.
    pub embed_queue: usize,
    /// Write jobs (appends, deletes) waiting at most.
    pub write_queue: usize,
    /// Texts per embedding job sent by the writer, so queries interleave with big appends.
    pub append_chunk: usize,
    /// Background compaction check interval (None: only on request).
    pub compact_every: Option<Duration>,
    /// Background compaction runs when this many segments are small (or any tombstone waits).
    pub compact_min_small: usize,
    pub compact: CompactOptions,
    /// Recorded in a new store's manifest: where the model came from.
    pub model_source: Option<String>,
    /// Bytes the per-tenant ranking caches (BM25 indexes, importance, session groups,
    /// adjacency, structures) hold at most; least recently used tenants are evicted past it.
    pub cache_bytes: usize,
    /// Rank stage workers (default: one per core).
    pub rank_workers: usize,
    /// Derived structures to keep (TiM thoughts, MemTree): turned on at start for a store
    /// that keeps none yet; a store that keeps them maintains them either way.
    pub structures: (
        Option<memdex_store::ThoughtsConfig>,
        Option<memdex_store::TreeConfig>,
    ),
    /// When the store's files that opening did not hash are hashed (default: in the
    /// background once the engine runs).
    pub verify: crate::verify::StartVerify,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            token_budget: 8192,
            model_workers: 1,
            measure_model_workers: false,
            embed_queue: 1024,
            write_queue: 1024,
            append_chunk: 64,
            compact_every: Some(Duration::from_secs(30)),
            compact_min_small: 16,
            compact: CompactOptions::default(),
            model_source: None,
            cache_bytes: memdex_rank::DEFAULT_CACHE_BYTES,
            rank_workers: default_workers(),
            structures: (None, None),
            verify: crate::verify::StartVerify::default(),
        }
    }
}

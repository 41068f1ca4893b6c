//! Counters and gauges the engine keeps for `/metrics`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Counters and gauges for `/metrics`.
#[derive(Debug, Default)]
pub struct EngineStats {
    pub embed_queue_depth: AtomicUsize,
    pub write_queue_depth: AtomicUsize,
    pub embed_batches: AtomicU64,
    /// Texts per model batch: counts per bucket of [`BATCH_BUCKETS`] (+ overflow).
    pub batch_size_buckets: [AtomicU64; BATCH_BUCKETS.len() + 1],
    pub batch_texts: AtomicU64,
    pub commits: AtomicU64,
    pub appends_grouped: AtomicU64,
    pub compactions: AtomicU64,
    pub busy_rejections: AtomicU64,
    /// Ranker calls of the rank stage (one per group of a model batch) and the searches they
    /// answered.
    pub rank_batches: AtomicU64,
    pub rank_queries: AtomicU64,
    /// Microseconds spent per serving stage: embedding (the model thread), ranking (the rank
    /// stage, when the ranker batches). Beside the batch counts they say where a batch's time
    /// goes and which stage bounds the throughput.
    pub stage_micros: [AtomicU64; STAGES.len()],
    /// Panics the model and writer threads recovered from (each failed its batch or round).
    pub panics: AtomicU64,
}

/// The serving stages, as [`EngineStats::stage_micros`] counts them.
pub const STAGES: [&str; 2] = ["embed", "rank"];

/// A stage of [`STAGES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Embed = 0,
    Rank = 1,
}

/// Upper bounds of the batch-size histogram buckets.
pub const BATCH_BUCKETS: [u64; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

impl EngineStats {
    /// Runs `f`, adding its wall time to `stage`'s counter.
    pub(crate) fn timed<T>(&self, stage: Stage, f: impl FnOnce() -> T) -> T {
        let t = std::time::Instant::now();
        let out = f();
        let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.stage_micros[stage as usize].fetch_add(us, Ordering::Relaxed);
        out
    }

    pub(crate) fn observe_batch(&self, texts: usize) {
        self.embed_batches.fetch_add(1, Ordering::Relaxed);
        self.batch_texts.fetch_add(texts as u64, Ordering::Relaxed);
        let i = BATCH_BUCKETS.partition_point(|&b| b < texts as u64);
        self.batch_size_buckets[i].fetch_add(1, Ordering::Relaxed);
    }
}

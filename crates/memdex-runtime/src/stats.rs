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
    /// Model batches whose searches were scored on the device, and those searches.
    pub scan_batches: AtomicU64,
    pub scan_queries: AtomicU64,
    /// Fused ranking calls (memdex-kernels' `rank_topk`, one per group of a model batch) and
    /// the searches they answered whole.
    pub fused_batches: AtomicU64,
    pub fused_queries: AtomicU64,
    /// Microseconds the model thread spent per stage: embedding, the device scan, the fused
    /// ranking (its CPU share included). Beside the batch counts they say where a batch's time
    /// goes and what bounds the thread's throughput.
    pub model_micros: [AtomicU64; MODEL_STAGES.len()],
    /// Panics the model and writer threads recovered from (each failed its batch or round).
    pub panics: AtomicU64,
}

/// The model thread's stages, as [`EngineStats::model_micros`] counts them.
pub const MODEL_STAGES: [&str; 3] = ["embed", "scan", "fused"];

/// A stage of [`MODEL_STAGES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelStage {
    Embed = 0,
    Scan = 1,
    Fused = 2,
}

/// Upper bounds of the batch-size histogram buckets.
pub const BATCH_BUCKETS: [u64; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

impl EngineStats {
    /// Runs `f`, adding its wall time to `stage`'s counter.
    pub(crate) fn timed<T>(&self, stage: ModelStage, f: impl FnOnce() -> T) -> T {
        let t = std::time::Instant::now();
        let out = f();
        let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.model_micros[stage as usize].fetch_add(us, Ordering::Relaxed);
        out
    }

    pub(crate) fn observe_batch(&self, texts: usize) {
        self.embed_batches.fetch_add(1, Ordering::Relaxed);
        self.batch_texts.fetch_add(texts as u64, Ordering::Relaxed);
        let i = BATCH_BUCKETS.partition_point(|&b| b < texts as u64);
        self.batch_size_buckets[i].fetch_add(1, Ordering::Relaxed);
    }
}

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
    /// Panics the model and writer threads recovered from (each failed its batch or round).
    pub panics: AtomicU64,
}

/// Upper bounds of the batch-size histogram buckets.
pub const BATCH_BUCKETS: [u64; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

impl EngineStats {
    pub(crate) fn observe_batch(&self, texts: usize) {
        self.embed_batches.fetch_add(1, Ordering::Relaxed);
        self.batch_texts.fetch_add(texts as u64, Ordering::Relaxed);
        let i = BATCH_BUCKETS.partition_point(|&b| b < texts as u64);
        self.batch_size_buckets[i].fetch_add(1, Ordering::Relaxed);
    }
}

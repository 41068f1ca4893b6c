//! Counters and gauges the engine keeps for `/metrics`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::Serialize;

/// Counters and gauges for `/metrics`.
#[derive(Debug, Default)]
pub struct EngineStats {
    pub embed_queue_depth: AtomicUsize,
    /// Model workers taking batches from the embedding queue (`EngineOptions::model_workers`).
    pub model_workers: AtomicUsize,
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
    /// Microseconds spent per serving stage, summed over the stage's threads: embedding (the
    /// model workers), ranking (the rank stage's workers). Beside the batch counts and the
    /// worker counts they say where a batch's time goes and which stage bounds the
    /// throughput (a stage is saturated when its seconds approach its workers × wall time).
    pub stage_micros: [AtomicU64; STAGES.len()],
    /// Microseconds the answered searches spent per stage of [`SEARCH_STAGES`], summed over
    /// searches (each counts its whole model batch and rank call): divided by
    /// `searches_answered`, a search's mean seconds in each stage.
    pub search_stage_micros: [AtomicU64; SEARCH_STAGES.len()],
    pub searches_answered: AtomicU64,
    /// Panics the model workers and the writer thread recovered from (each failed its batch
    /// or round).
    pub panics: AtomicU64,
}

/// The serving stages, as [`EngineStats::stage_micros`] counts them.
pub const STAGES: [&str; 2] = ["embed", "rank"];

/// The stages one search passes: tokenized in its caller's thread, waiting for a model
/// worker, embedded in a model batch, waiting for a rank worker, ranked.
pub const SEARCH_STAGES: [&str; 5] = ["tokenize", "model_queue", "embed", "rank_queue", "rank"];

/// Microseconds one search spent in each stage of [`SEARCH_STAGES`]: what every answer
/// carries, and what [`EngineStats::search_stage_micros`] sums over the answered searches.
/// A stage counts its whole model batch or rank call (a search shares them with the others
/// of its batch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchTimings {
    /// Tokenizing the query, in the caller's thread.
    pub tokenize_us: u64,
    /// Waiting for a model worker.
    pub model_queue_us: u64,
    /// The model call that embedded it (its whole batch).
    pub embed_us: u64,
    /// Waiting for a rank worker.
    pub rank_queue_us: u64,
    /// The ranker call that ranked it (its whole group).
    pub rank_us: u64,
}

impl SearchTimings {
    /// The microseconds in the order of [`SEARCH_STAGES`].
    pub fn micros(&self) -> [u64; SEARCH_STAGES.len()] {
        [
            self.tokenize_us,
            self.model_queue_us,
            self.embed_us,
            self.rank_queue_us,
            self.rank_us,
        ]
    }

    /// Each stage's name (of [`SEARCH_STAGES`]) and microseconds.
    pub fn stages(&self) -> impl Iterator<Item = (&'static str, u64)> {
        SEARCH_STAGES.into_iter().zip(self.micros())
    }
}

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

    /// Adds an answered search's microseconds per stage.
    pub(crate) fn observe_answer(&self, timings: &SearchTimings) {
        for (counter, us) in self.search_stage_micros.iter().zip(timings.micros()) {
            counter.fetch_add(us, Ordering::Relaxed);
        }
        self.searches_answered.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn observe_batch(&self, texts: usize) {
        self.embed_batches.fetch_add(1, Ordering::Relaxed);
        self.batch_texts.fetch_add(texts as u64, Ordering::Relaxed);
        let i = BATCH_BUCKETS.partition_point(|&b| b < texts as u64);
        self.batch_size_buckets[i].fetch_add(1, Ordering::Relaxed);
    }
}

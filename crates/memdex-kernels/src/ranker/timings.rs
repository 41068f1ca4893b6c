//! Where a kernel ranker's device batches spend their time, summed over batches: preparing
//! the batch on the host (each tenant's rows from the cache, BM25 and the time flags per query,
//! the batch's arrays), the kernel call (uploads, the kernel, the download), and finishing the
//! answers on the host (update stage, hits).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

/// A part of a device batch.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part {
    Prepare = 0,
    Kernel = 1,
    Finish = 2,
}

/// Microseconds per [`Part`], summed.
#[derive(Debug, Default)]
pub(crate) struct Timings {
    micros: [AtomicU64; 3],
    /// Batches whose keyword side the kernels computed from text columns.
    text_batches: AtomicU64,
}

/// Seconds a kernel ranker's device batches spent per part, summed over `batches`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BatchSeconds {
    pub batches: u64,
    /// Host: the batch's tenants from the cache, BM25 and time flags per query, its arrays.
    pub prepare: f64,
    /// The kernel call: uploads, the kernel, the download (on a GPU); the reference's work on
    /// the CPU.
    pub kernel: f64,
    /// Host: the stages after the kernel (update, time `front` for whole rankings), the hits.
    pub finish: f64,
    /// Of `batches`, those whose keyword side (BM25, query expansion) and time flags the
    /// kernels computed from the tenants' text columns; the others' came from the host.
    pub text_batches: u64,
    /// The host's share per batch, `(prepare + finish) / batches`, in milliseconds.
    pub host_ms_per_batch: f64,
}

impl BatchSeconds {
    /// What was added since `earlier` (a reading of the same ranker).
    pub fn since(&self, earlier: &BatchSeconds) -> BatchSeconds {
        BatchSeconds::new(
            self.batches.saturating_sub(earlier.batches),
            [
                self.prepare - earlier.prepare,
                self.kernel - earlier.kernel,
                self.finish - earlier.finish,
            ],
            self.text_batches.saturating_sub(earlier.text_batches),
        )
    }

    fn new(batches: u64, [prepare, kernel, finish]: [f64; 3], text_batches: u64) -> Self {
        BatchSeconds {
            batches,
            prepare,
            kernel,
            finish,
            text_batches,
            host_ms_per_batch: (prepare + finish) * 1e3 / batches.max(1) as f64,
        }
    }
}

/// Adds the time from its start to its drop to a part.
pub(crate) struct Started<'a> {
    timings: &'a Timings,
    part: Part,
    at: Instant,
}

impl Drop for Started<'_> {
    fn drop(&mut self) {
        self.timings.record(self.part, self.at);
    }
}

impl Timings {
    pub(crate) fn add<T>(&self, part: Part, f: impl FnOnce() -> T) -> T {
        let at = Instant::now();
        let out = f();
        self.record(part, at);
        out
    }

    pub(crate) fn start(&self, part: Part) -> Started<'_> {
        Started {
            timings: self,
            part,
            at: Instant::now(),
        }
    }

    /// Counts a batch ranked from the tenants' text columns.
    pub(crate) fn text_batch(&self) {
        self.text_batches.fetch_add(1, Ordering::Relaxed);
    }

    fn record(&self, part: Part, at: Instant) {
        let us = u64::try_from(at.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.micros[part as usize].fetch_add(us, Ordering::Relaxed);
    }

    pub(crate) fn seconds(&self, batches: u64) -> BatchSeconds {
        let s = |p: Part| self.micros[p as usize].load(Ordering::Relaxed) as f64 / 1e6;
        BatchSeconds::new(
            batches,
            [s(Part::Prepare), s(Part::Kernel), s(Part::Finish)],
            self.text_batches.load(Ordering::Relaxed),
        )
    }
}

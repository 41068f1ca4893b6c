//! The accelerated ranker: memdex-rank's [`BatchRanker`] on memdex's kernels. A batch whose
//! options the fused kernel runs is ranked in one kernel call (dense, fusion, FragRel,
//! importance, the time stage and top-k on the device; BM25 and the time flags on the CPU's
//! cores), the rest by the [`CpuRanker`] it holds: explained searches, options the kernel does
//! not run, `k` past [`crate::MAX_K`], a kernel failure (logged), and under
//! [`Placement::Auto`] every batch the cost model says the CPU ranks faster.

mod cost;
mod fused;
mod timings;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use memdex_rank::{
    fused_depth, Batch, BatchHits, BatchRanker, BatchRankings, CpuRanker, DeviceCount, Plan,
    RankError, TopK,
};

pub use cost::{CostModel, Side, PROBE_EVERY};
use fused::FusedError;
pub use timings::BatchSeconds;
use timings::Timings;

use crate::{RankKernels, MAX_K};

/// Where a [`KernelRanker`] ranks the batches the kernel can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Per batch, the side its cost model expects to be faster ([`CostModel`]).
    Auto,
    /// Always the kernels' device.
    Device,
}

/// memdex's default ranking on a device, behind the ranking seam.
pub struct KernelRanker {
    kernels: Arc<dyn RankKernels + Send + Sync>,
    cpu: CpuRanker,
    placement: Placement,
    top_cost: Mutex<CostModel>,
    all_cost: Mutex<CostModel>,
    batches: AtomicU64,
    queries: AtomicU64,
    timings: Timings,
}

impl std::fmt::Debug for KernelRanker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelRanker({})", self.describe())
    }
}

impl KernelRanker {
    /// Ranks through `kernels`, the CPU reference ranker beside it.
    pub fn new(kernels: Arc<dyn RankKernels + Send + Sync>, placement: Placement) -> KernelRanker {
        KernelRanker::with_cpu(kernels, placement, CpuRanker::default())
    }

    /// [`Self::new`] with the CPU ranker it falls back to.
    pub fn with_cpu(
        kernels: Arc<dyn RankKernels + Send + Sync>,
        placement: Placement,
        cpu: CpuRanker,
    ) -> KernelRanker {
        KernelRanker {
            kernels,
            cpu,
            placement,
            top_cost: Mutex::default(),
            all_cost: Mutex::default(),
            batches: AtomicU64::new(0),
            queries: AtomicU64::new(0),
            timings: Timings::default(),
        }
    }

    /// Where the device batches' time went so far (host preparation, the kernel call, host
    /// finish), summed.
    pub fn seconds(&self) -> BatchSeconds {
        self.timings.seconds(self.batches.load(Ordering::Relaxed))
    }

    /// The kernels' device (`cpu` for their reference, `cuda:N`).
    pub fn device(&self) -> String {
        self.kernels.device()
    }

    /// The kernels' device as [`BatchRanker::counts`] names it: `cuda:N`, or `kernels:cpu`
    /// for their CPU reference (`cpu` is the CPU ranker).
    pub fn label(&self) -> String {
        match self.kernels.device() {
            d if d == "cpu" => "kernels:cpu".into(),
            d => d,
        }
    }

    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The CPU side's and the device's running seconds per batch of `work` (rows × queries),
    /// for top-k batches, where measured.
    pub fn estimate(&self, work: u64) -> (Option<f64>, Option<f64>) {
        lock(&self.top_cost).estimate(work)
    }

    /// Where `b` runs, and its work when the cost model placed it: None when the kernel cannot
    /// rank it at all.
    fn side(
        &self,
        b: &Batch<'_, '_>,
        k: Option<usize>,
        cost: &Mutex<CostModel>,
    ) -> Option<(Side, Option<u64>)> {
        let fits = k.is_none_or(|k| fused_depth(k, b.opts) <= MAX_K);
        if let Err(e) = Plan::of(b.opts).fused() {
            static TOLD: std::sync::Once = std::sync::Once::new();
            if let RankError::NotFused { stage } = e {
                let say = || {
                    tracing::info!("the fused kernels do not run {stage}: such searches rank on the CPU ranker")
                };
                TOLD.call_once(say);
            }
            return None;
        }
        if !fits {
            return None;
        }
        Some(match self.placement {
            Placement::Device => (Side::Device, None),
            Placement::Auto => {
                let w = work(b);
                (lock(cost).choose(w), Some(w))
            }
        })
    }

    /// Runs `b` on the chosen side, timing it for the cost model when it placed the batch
    /// (`work`); a kernel failure is logged and the CPU ranker answers.
    fn run<T>(
        &self,
        b: &Batch<'_, '_>,
        (side, work): (Side, Option<u64>),
        cost: &Mutex<CostModel>,
        device: impl FnOnce() -> Result<T, FusedError>,
        cpu: impl FnOnce() -> Result<T, RankError>,
    ) -> Result<T, RankError> {
        let t = Instant::now();
        let out = match side {
            Side::Cpu => cpu(),
            Side::Device => match device() {
                Ok(v) => {
                    self.batches.fetch_add(1, Ordering::Relaxed);
                    let n = b.queries.len() as u64;
                    self.queries.fetch_add(n, Ordering::Relaxed);
                    Ok(v)
                }
                Err(FusedError::Batch(e)) => Err(e),
                Err(FusedError::Kernel(e)) => {
                    tracing::warn!(
                        "ranking {} searches on {} failed, the CPU ranks them: {e}",
                        b.queries.len(),
                        self.kernels.device()
                    );
                    return cpu();
                }
            },
        };
        if let (true, Some(w)) = (out.is_ok(), work) {
            lock(cost).observe(w, side, t.elapsed());
        }
        out
    }
}

/// A batch's work: rows ranked summed over its queries.
fn work(b: &Batch<'_, '_>) -> u64 {
    let mut rows: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    b.queries
        .iter()
        .map(|q| {
            *rows.entry(q.tenant).or_insert_with(|| {
                (b.store.tenant_slices(q.tenant).iter())
                    .map(|s| s.rows as u64)
                    .sum()
            })
        })
        .sum::<u64>()
        .max(1)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl BatchRanker for KernelRanker {
    fn describe(&self) -> String {
        match self.placement {
            Placement::Device => format!("kernels on {}", self.kernels.device()),
            Placement::Auto => format!("auto: kernels on {} or cpu", self.kernels.device()),
        }
    }

    fn top(&self, b: &Batch<'_, '_>, top: TopK) -> Result<BatchHits, RankError> {
        let side = (!top.explain)
            .then(|| self.side(b, Some(top.k), &self.top_cost))
            .flatten();
        let Some(side) = side else {
            return self.cpu.top(b, top);
        };
        let kernels = self.kernels.as_ref();
        self.run(
            b,
            side,
            &self.top_cost,
            || fused::top(kernels, b, top.k, &self.timings),
            || self.cpu.top(b, top),
        )
    }

    fn all<'s>(&self, b: &Batch<'_, 's>) -> Result<BatchRankings<'s>, RankError> {
        let Some(side) = self.side(b, None, &self.all_cost) else {
            return self.cpu.all(b);
        };
        let kernels = self.kernels.as_ref();
        self.run(
            b,
            side,
            &self.all_cost,
            || fused::all(kernels, b, &self.timings),
            || self.cpu.all(b),
        )
    }

    fn counts(&self) -> Vec<DeviceCount> {
        let mut out = self.cpu.counts();
        out.push(DeviceCount {
            device: self.label(),
            batches: self.batches.load(Ordering::Relaxed),
            queries: self.queries.load(Ordering::Relaxed),
        });
        out
    }
}

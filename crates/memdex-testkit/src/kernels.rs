//! [`SpyKernels`]: memdex's CPU reference kernels, recording what reached them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use memdex_kernels::cpu::Cpu;
use memdex_kernels::{
    Concatenated, HashKernels, KernelDevice, KernelError, Matrix, RankKernels, RankParams,
    RankPart, RankQueries, RankRows, TopKResult,
};

/// The CPU reference kernels ([`Cpu`]) for ranking and hashing (what memdex calls; not the
/// bench side's scans), counting the rows `lsh_project` hashed and recording the parts (key,
/// rows) of every `rank_topk_parts` call.
#[derive(Debug, Default)]
pub struct SpyKernels {
    hashed: AtomicUsize,
    parts: Mutex<Vec<Vec<(u64, usize)>>>,
}

impl SpyKernels {
    /// Rows hashed by `lsh_project` so far.
    pub fn hashed_rows(&self) -> usize {
        self.hashed.load(Ordering::SeqCst)
    }

    /// Per `rank_topk_parts` call so far: each part's key and rows.
    pub fn part_calls(&self) -> Vec<Vec<(u64, usize)>> {
        self.parts.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl KernelDevice for SpyKernels {
    fn device(&self) -> String {
        "spy".into()
    }
}

impl HashKernels for SpyKernels {
    fn lsh_project(
        &self,
        x: &[f32],
        dim: usize,
        proj: &[f32],
        tables: usize,
        buckets: usize,
    ) -> Result<Vec<u32>, KernelError> {
        self.hashed
            .fetch_add(x.len().checked_div(dim).unwrap_or(0), Ordering::SeqCst);
        Cpu.lsh_project(x, dim, proj, tables, buckets)
    }
}

impl RankKernels for SpyKernels {
    fn rank_topk(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        Cpu.rank_topk(m, rows, queries, params, k)
    }

    fn rank_scores(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        Cpu.rank_scores(m, rows, queries, params)
    }

    fn rank_topk_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let keys = parts.iter().map(|p| (p.key, p.rows())).collect();
        self.parts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(keys);
        let c = Concatenated::new(dim, parts, queries)?;
        self.rank_topk(&c.matrix(), &c.rows(), queries, params, k)
    }
}

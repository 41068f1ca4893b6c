//! CPU references of the ranking and hashing kernels: the exact semantics each GPU kernel must
//! reproduce (the scans' references are the bench side's, `scan`).
//!
//! - cosine: `dot / max(|q|·|r|, 1e-30)` with `r` widened from f16 and f32 accumulation (the
//!   GPU sums in a different order, so scores agree within tolerance, and bit for bit when every
//!   partial sum is exact, as in the tests' small-integer inputs);
//! - selection: score descending, then row ascending, NaN as −∞, empty slots (−∞, `NO_ROW`);
//! - LSH: `argmax([xR ; −xR])`, first maximum wins ([`memdex_score::lsh`]);
//! - FragRel: [`memdex_score::fragrel::relation_scores`] (f64) over the range's cosines.

use crate::rank::{rank_scores_reference, rank_topk_reference};
pub use crate::scoring::{better, cosine, select};
use crate::types::check_lsh;
use crate::{
    HashKernels, KernelDevice, KernelError, Matrix, RankKernels, RankParams, RankQueries, RankRows,
    TopKResult,
};

/// The reference implementations (single-threaded, straightforward).
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu;

impl KernelDevice for Cpu {
    fn device(&self) -> String {
        "cpu".into()
    }
}

impl HashKernels for Cpu {
    fn lsh_project(
        &self,
        x: &[f32],
        dim: usize,
        proj: &[f32],
        tables: usize,
        buckets: usize,
    ) -> Result<Vec<u32>, KernelError> {
        let n = check_lsh(x, dim, proj, tables, buckets)?;
        let half = buckets / 2;
        let mut out = Vec::with_capacity(n * tables);
        let mut v = vec![0f32; half];
        for row in x.chunks_exact(dim) {
            for t in 0..tables {
                for (j, vj) in v.iter_mut().enumerate() {
                    let p = &proj[(t * half + j) * dim..][..dim];
                    *vj = row.iter().zip(p).map(|(a, b)| a * b).sum();
                }
                let (mut best, mut best_v) = (0, v[0]);
                for j in 1..buckets {
                    let s = if j < half { v[j] } else { -v[j - half] };
                    if s > best_v {
                        (best, best_v) = (j, s);
                    }
                }
                out.push(best as u32);
            }
        }
        Ok(out)
    }
}

impl RankKernels for Cpu {
    fn rank_topk(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        rank_topk_reference(m, rows, queries, params, k)
    }

    fn rank_scores(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        rank_scores_reference(m, rows, queries, params)
    }
}

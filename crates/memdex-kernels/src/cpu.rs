//! CPU references of the kernels: the exact semantics each GPU kernel must reproduce.
//!
//! - cosine: `dot / max(|q|·|r|, 1e-30)` with `r` widened from f16 and f32 accumulation (the
//!   GPU sums in a different order, so scores agree within tolerance, and bit for bit when every
//!   partial sum is exact, as in the tests' small-integer inputs);
//! - selection: score descending, then row ascending, NaN as −∞, empty slots (−∞, `NO_ROW`);
//! - LSH: `argmax([xR ; −xR])`, first maximum wins ([`memdex_score::lsh`]);
//! - FragRel: [`memdex_score::fragrel::relation_scores`] (f64) over the range's cosines.

use memdex_score::fragrel::{relation_scores, FragRel};

use crate::rank::{rank_scores_reference, rank_topk_reference};
pub use crate::scoring::{better, cosine, select};
use crate::types::{check_lsh, check_scan, check_timeline};
use crate::{
    BucketMask, FragRelParams, KernelError, Kernels, Matrix, RankParams, RankQueries, RankRows,
    Timeline, TopKResult,
};

/// The reference implementations (single-threaded, straightforward).
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu;

fn collect(per_query: Vec<Vec<(f32, u32)>>, k: usize) -> TopKResult {
    let (scores, rows) = per_query.into_iter().flatten().unzip();
    TopKResult { k, scores, rows }
}

impl Kernels for Cpu {
    fn device(&self) -> String {
        "cpu".into()
    }

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

    fn segmented_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        check_scan(m, queries, ranges, mask, k)?;
        let per_query = ranges
            .iter()
            .enumerate()
            .map(|(qi, &[a, b])| {
                let q = &queries[qi * m.dim..(qi + 1) * m.dim];
                let cands = (a..b)
                    .filter(|&r| mask.is_none_or(|mk| mk.selects(qi, r as usize)))
                    .map(|r| (cosine(q, m.row(r as usize)), r))
                    .collect();
                select(cands, k)
            })
            .collect();
        Ok(collect(per_query, k))
    }

    fn fragrel_topk(
        &self,
        m: &Matrix<'_>,
        timeline: &Timeline<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
        params: FragRelParams,
    ) -> Result<TopKResult, KernelError> {
        check_scan(m, queries, ranges, mask, k)?;
        check_timeline(m, timeline, params)?;
        let p = FragRel {
            alpha: params.alpha as f64,
            w: params.w as f64,
        };
        let per_query = ranges
            .iter()
            .enumerate()
            .map(|(qi, &[a, b])| {
                let q = &queries[qi * m.dim..(qi + 1) * m.dim];
                let (a, b) = (a as usize, b as usize);
                let s: Vec<f64> = (a..b).map(|r| cosine(q, m.row(r)) as f64).collect();
                let pos: Vec<u64> = timeline.positions[a..b].iter().map(|&p| p as u64).collect();
                let grp: Vec<u64> = timeline.groups[a..b].iter().map(|&g| g as u64).collect();
                let fused = relation_scores(&s, &pos, &grp, p);
                let cands = (a..b)
                    .filter(|&r| mask.is_none_or(|mk| mk.selects(qi, r)))
                    .map(|r| (fused[r - a] as f32, r as u32))
                    .collect();
                select(cands, k)
            })
            .collect();
        Ok(collect(per_query, k))
    }

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

//! The bench side's kernels: the plain scans `segmented_topk` (cosine top-k per query over
//! its range, optionally masked by TiM's buckets) and `fragrel_topk` (the same with FragRel's
//! environment). memdex's ranking does not call them (the fused ranking, [`crate::RankKernels`],
//! does its own scans); `gpu_bench` times them and the device checks hold them to their CPU
//! reference, so only a device that is benchmarked or checked implements them.
//!
//! The CPU reference: cosine `dot / max(|q|·|r|, 1e-30)` with `r` widened from f16; selection
//! score descending, then row ascending, NaN as −∞; FragRel
//! [`memdex_score::fragrel::relation_scores`] (f64) over the range's cosines.

use memdex_score::fragrel::{relation_scores, FragRel};

use crate::cpu::{cosine, select, Cpu};
use crate::types::{check_scan, check_timeline};
use crate::{BucketMask, FragRelParams, KernelDevice, KernelError, Matrix, Timeline, TopKResult};

/// The scans of a device (see the module docs).
pub trait ScanKernels: KernelDevice {
    /// Per query (`queries`: `nq × dim` f32), the top `k` rows of its range of `m` by cosine,
    /// restricted to the rows passing `mask` when given. Order: score descending, then row
    /// ascending; NaN counts as −∞.
    fn segmented_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
    ) -> Result<TopKResult, KernelError>;

    /// [`ScanKernels::segmented_topk`] without a mask through the device's tensor-core scan
    /// where it has one (f16 products with f32 accumulation to pick candidates, then the kept
    /// ones re-scored exactly in f32: the same answer within the scan's tolerance). The CPU
    /// reference has none: it answers as `segmented_topk`.
    fn tensor_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        self.segmented_topk(m, queries, ranges, None, k)
    }

    /// As [`ScanKernels::segmented_topk`], ranking `s + α·env` (FragRel's environment along
    /// the range's timeline; the environment uses every row of the range, the mask only limits
    /// which rows are returned).
    #[allow(clippy::too_many_arguments)]
    fn fragrel_topk(
        &self,
        m: &Matrix<'_>,
        timeline: &Timeline<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
        params: FragRelParams,
    ) -> Result<TopKResult, KernelError>;
}

fn collect(per_query: Vec<Vec<(f32, u32)>>, k: usize) -> TopKResult {
    let (scores, rows) = per_query.into_iter().flatten().unzip();
    TopKResult { k, scores, rows }
}

impl ScanKernels for Cpu {
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
}

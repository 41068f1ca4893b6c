//! Host-side inputs and outputs shared by every device, with their validation.

use crate::{f16, KernelError, MAX_DIM, MAX_K};

/// Row index of an empty result slot (fewer than `k` candidates); its score is −∞.
pub const NO_ROW: u32 = u32::MAX;

/// The store's embedding matrix as the GPU holds it: `rows × dim` f16, row-major,
/// tenant-contiguous (each tenant's rows one range, in timeline order).
#[derive(Debug, Clone, Copy)]
pub struct Matrix<'a> {
    pub dim: usize,
    pub data: &'a [f16],
}

impl Matrix<'_> {
    pub fn rows(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    pub fn row(&self, r: usize) -> &[f16] {
        &self.data[r * self.dim..(r + 1) * self.dim]
    }
}

/// TiM LSH bucket mask: the stored bucket id of every row in every table, and per query one
/// bit set per table of the buckets it probes. A row is a candidate when, in some table, its
/// bucket is probed.
#[derive(Debug, Clone, Copy)]
pub struct BucketMask<'a> {
    pub tables: usize,
    pub buckets: usize,
    /// `rows × tables`.
    pub row_buckets: &'a [u16],
    /// `nq × tables × words(buckets)` bit sets.
    pub query_masks: &'a [u32],
}

impl BucketMask<'_> {
    /// u32 words per table in a query's bit set.
    pub fn words(buckets: usize) -> usize {
        buckets.div_ceil(32)
    }

    /// Bit sets for queries given, per query and table, the buckets to probe.
    pub fn query_bits(probes: &[Vec<Vec<u32>>], tables: usize, buckets: usize) -> Vec<u32> {
        let words = Self::words(buckets);
        let mut bits = vec![0u32; probes.len() * tables * words];
        for (q, per_table) in probes.iter().enumerate() {
            for (t, list) in per_table.iter().enumerate().take(tables) {
                for &b in list {
                    bits[(q * tables + t) * words + b as usize / 32] |= 1 << (b % 32);
                }
            }
        }
        bits
    }

    /// Whether row `r` is a candidate for query `q`.
    pub fn selects(&self, q: usize, r: usize) -> bool {
        let words = Self::words(self.buckets);
        (0..self.tables).any(|t| {
            let b = self.row_buckets[r * self.tables + t] as usize;
            self.query_masks[(q * self.tables + t) * words + b / 32] >> (b % 32) & 1 == 1
        })
    }
}

/// Where each row sits on its tenant's timeline: FragRel's position and scope group (session
/// or whole history). Within a query's range groups are contiguous and positions ascend.
#[derive(Debug, Clone, Copy)]
pub struct Timeline<'a> {
    pub positions: &'a [u32],
    pub groups: &'a [u32],
}

/// FragRel's α (weight of the environment) and w (decay per position step, in (0, 1]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FragRelParams {
    pub alpha: f32,
    pub w: f32,
}

/// `k` (score, row) pairs per query, best first; empty slots are (−∞, [`NO_ROW`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TopKResult {
    pub k: usize,
    pub scores: Vec<f32>,
    pub rows: Vec<u32>,
}

impl TopKResult {
    pub fn queries(&self) -> usize {
        self.rows.len().checked_div(self.k).unwrap_or(0)
    }

    /// The filled slots of query `q`.
    pub fn hits(&self, q: usize) -> Vec<(f32, u32)> {
        let (s, r) = (
            &self.scores[q * self.k..][..self.k],
            &self.rows[q * self.k..][..self.k],
        );
        s.iter()
            .zip(r)
            .filter(|(_, &r)| r != NO_ROW)
            .map(|(&s, &r)| (s, r))
            .collect()
    }
}

fn invalid(msg: String) -> KernelError {
    KernelError::Invalid(msg)
}

/// Checks shapes shared by the scanning kernels; returns the number of queries.
pub(crate) fn check_scan(
    m: &Matrix<'_>,
    queries: &[f32],
    ranges: &[[u32; 2]],
    mask: Option<&BucketMask<'_>>,
    k: usize,
) -> Result<usize, KernelError> {
    check_matrix(m)?;
    check_queries(m.dim, m.rows(), queries, ranges, mask, k)
}

/// The embedding dimension the kernels take (a multiple of 8 up to [`MAX_DIM`]).
pub(crate) fn check_dim(dim: usize) -> Result<(), KernelError> {
    if dim == 0 || !dim.is_multiple_of(8) || dim > MAX_DIM {
        return Err(invalid(format!(
            "dim {dim} must be a multiple of 8 in 8..={MAX_DIM}"
        )));
    }
    Ok(())
}

fn check_matrix(m: &Matrix<'_>) -> Result<(), KernelError> {
    check_dim(m.dim)?;
    if !m.data.len().is_multiple_of(m.dim) || m.rows() >= NO_ROW as usize {
        return Err(invalid(format!(
            "matrix of {} values is not rows × {}",
            m.data.len(),
            m.dim
        )));
    }
    Ok(())
}

/// The query side of [`check_scan`] over `rows` rows of `dim`.
pub(crate) fn check_queries(
    dim: usize,
    rows: usize,
    queries: &[f32],
    ranges: &[[u32; 2]],
    mask: Option<&BucketMask<'_>>,
    k: usize,
) -> Result<usize, KernelError> {
    if k == 0 || k > MAX_K {
        return Err(invalid(format!("k {k} must be in 1..={MAX_K}")));
    }
    let nq = ranges.len();
    if queries.len() != nq * dim {
        return Err(invalid(format!(
            "{} query values for {nq} ranges of dim {dim}",
            queries.len()
        )));
    }
    if let Some(bad) = ranges.iter().find(|[a, b]| a > b || *b as usize > rows) {
        return Err(invalid(format!(
            "range {bad:?} outside 0..{rows} or reversed"
        )));
    }
    if let Some(mask) = mask {
        let words = BucketMask::words(mask.buckets);
        if mask.tables == 0
            || mask.buckets == 0
            || mask.buckets > 1 << 16
            || mask.row_buckets.len() != rows * mask.tables
            || mask.query_masks.len() != nq * mask.tables * words
            || mask.row_buckets.iter().any(|&b| b as usize >= mask.buckets)
        {
            return Err(invalid(format!(
                "bucket mask shapes: {} tables, {} buckets, {} row ids, {} mask words",
                mask.tables,
                mask.buckets,
                mask.row_buckets.len(),
                mask.query_masks.len()
            )));
        }
    }
    Ok(nq)
}

pub(crate) fn check_timeline(
    m: &Matrix<'_>,
    t: &Timeline<'_>,
    p: FragRelParams,
) -> Result<(), KernelError> {
    if t.positions.len() != m.rows() || t.groups.len() != m.rows() {
        return Err(invalid(format!(
            "timeline of {} positions / {} groups for {} rows",
            t.positions.len(),
            t.groups.len(),
            m.rows()
        )));
    }
    check_fragrel(p)
}

pub(crate) fn check_fragrel(p: FragRelParams) -> Result<(), KernelError> {
    if !(p.w > 0.0 && p.w <= 1.0 && p.alpha.is_finite()) {
        return Err(invalid(format!("FragRel params {p:?}: need w in (0, 1]")));
    }
    Ok(())
}

pub(crate) fn check_lsh(
    x: &[f32],
    dim: usize,
    proj: &[f32],
    tables: usize,
    buckets: usize,
) -> Result<usize, KernelError> {
    if dim == 0 || !x.len().is_multiple_of(dim) {
        return Err(invalid(format!("{} values are not n × {dim}", x.len())));
    }
    if buckets < 2 || !buckets.is_multiple_of(2) || buckets > 1 << 16 || tables == 0 {
        return Err(invalid(format!(
            "{tables} tables of {buckets} buckets: need tables ≥ 1 and even buckets ≥ 2"
        )));
    }
    if proj.len() != tables * buckets / 2 * dim {
        return Err(invalid(format!(
            "projection of {} values, expected {tables} × {} × {dim}",
            proj.len(),
            buckets / 2
        )));
    }
    // the kernel keeps x and every dot product of one vector in shared memory (48 KiB)
    if (dim + tables * buckets / 2) * 4 > 48 * 1024 {
        return Err(invalid(format!(
            "dim {dim} + {tables} × {} projections exceed 48 KiB of shared memory",
            buckets / 2
        )));
    }
    Ok(x.len() / dim)
}

/// Most parts one query's range is cut into (the merge kernel's bound).
pub const MAX_SPLITS: usize = 1024;
/// Fewest rows worth a part of their own.
const MIN_PART_ROWS: usize = 256;

/// Parts each query's range is cut into for `segmented_topk`, given `slots` = blocks the GPU
/// runs at once (SMs × resident blocks per SM). Aims at ≥ 8 waves of equal blocks, so the last,
/// partial wave costs little; when parts run out first (few queries), it uses whole waves so
/// that no wave is a sliver. Parts keep ≥ 256 rows. `MEMDEX_TOPK_SPLITS` overrides it.
pub fn splits_for(nq: usize, max_len: usize, slots: usize) -> usize {
    if let Some(s) = std::env::var("MEMDEX_TOPK_SPLITS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return s.clamp(1, MAX_SPLITS);
    }
    let (nq, slots) = (nq.max(1), slots.max(1));
    let want = (8 * slots).div_ceil(nq);
    let by_len = max_len.div_ceil(MIN_PART_ROWS).max(1);
    let s = want.min(by_len).clamp(1, MAX_SPLITS);
    let total = s * nq;
    if total < 8 * slots && total > slots {
        return ((total / slots) * slots / nq).max(1);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::splits_for;

    #[test]
    fn splits_fill_the_gpu_in_whole_waves() {
        let slots = 132 * 6; // H100, 6 blocks of the narrow kernel per SM
        assert_eq!(splits_for(1000, 5000, slots), 7); // 7,000 blocks ≈ 8.8 waves
        assert_eq!(splits_for(10_000, 5000, slots), 1);
        assert_eq!(splits_for(1, 5_000_000, slots), slots); // exactly one wave
        assert_eq!(splits_for(1, 300, slots), 2); // parts keep ≥ 256 rows
        assert_eq!(splits_for(100, 5000, slots), 15); // 1,500 blocks: 1.9 waves, not 2.5
        assert_eq!(splits_for(5, 0, slots), 1);
    }
}

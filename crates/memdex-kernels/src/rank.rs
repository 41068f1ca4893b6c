//! The default ranking pipeline fused into one kernel per batch (`memdex_rank_topk`): its
//! inputs, their validation, and the CPU reference ([`rank_topk_reference`]).
//!
//! Semantics (those of `memdex_rank::rank` with the default options, over the rows of each
//! query's range, in timeline order; every row is live — the caller passes live rows only):
//! 1. dense `d` = cosine of the query with each row ([`crate::scoring::cosine`]);
//! 2. hybrid `f = w_d · minmax(d) + w_s · minmax(sparse)` (min-max over the range; a
//!    constant or empty column normalises to 0), or `f = w_d · minmax(d) + sparse` when the
//!    keyword side arrives fused ([`RankParams::sparse_fused`]: BM25 and query expansion,
//!    each min-max normalised and weighted, by the host or by the kernels' text inputs);
//! 3. FragRel: `e = f + α · env(f)` along the timeline;
//! 4. importance `w_i`: shift by the minimum when it is negative, then `e · (1 + w_i ·
//!    log10(importance))`;
//! 5. time stage, when some row is flagged: `Front` puts flagged rows first (each group
//!    in score order), `Boost(b)` rescales `(e − min(min e, 0)) · (1 + b)` for flagged rows;
//! 6. top-k: score descending, then row ascending (flagged rows first under `Front`).

use memdex_score::fragrel::{relation_scores, FragRel};
use memdex_score::fusion::{hybrid, min_max};

use crate::scoring::{cosine, select};
use crate::types::{check_fragrel, check_queries, check_scan, check_timeline};
use crate::{FragRelParams, KernelError, Matrix, Timeline, TopKResult, NO_ROW};

/// What the rows carry besides their embedding (one entry per matrix row).
#[derive(Debug, Clone, Copy)]
pub struct RankRows<'a> {
    pub timeline: Timeline<'a>,
    /// Importance 1..=10 (read when [`RankParams::importance`] is set).
    pub importance: &'a [u8],
}

/// The time stage of one query (computed on the CPU from its text and date).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeRule {
    None,
    /// Flagged rows first.
    Front,
    /// Flagged rows' scores × (1 + factor), after shifting negatives up.
    Boost(f32),
}

/// Per query: its vector and range, and what the CPU computed for it.
#[derive(Debug, Clone, Copy)]
pub struct RankQueries<'a> {
    /// `nq × dim`.
    pub vectors: &'a [f32],
    pub ranges: &'a [[u32; 2]],
    /// BM25 contributions, one per row of each range, the ranges concatenated in query order
    /// (see [`range_offsets`]).
    pub sparse: &'a [f32],
    /// Time-stage flags (0 or 1), laid out as `sparse`.
    pub flags: &'a [u8],
    pub time: &'a [TimeRule],
}

/// The pipeline's weights (the batch shares them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankParams {
    pub w_dense: f32,
    pub w_sparse: f32,
    /// `sparse` is the whole keyword share of the fusion, normalised and weighted (query
    /// expansion on: by the host, or by the kernels' text inputs, which then weight their BM25
    /// by `w_sparse`): added as it is.
    pub sparse_fused: bool,
    pub fragrel: Option<FragRelParams>,
    pub importance: Option<f32>,
}

/// Where each query's entries start in [`RankQueries::sparse`] and `flags` (and the total).
pub fn range_offsets(ranges: &[[u32; 2]]) -> (Vec<u32>, usize) {
    let mut offsets = Vec::with_capacity(ranges.len());
    let mut total = 0usize;
    for [a, b] in ranges {
        offsets.push(total as u32);
        total += b.saturating_sub(*a) as usize;
    }
    (offsets, total)
}

fn invalid(msg: String) -> KernelError {
    KernelError::Invalid(msg)
}

/// Checks every shape of a fused ranking call; returns the number of queries.
pub(crate) fn check_rank(
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    q: &RankQueries<'_>,
    p: &RankParams,
    k: usize,
) -> Result<usize, KernelError> {
    check_scan(m, &[], &[], None, 1)?;
    let fr = p.fragrel.unwrap_or(FragRelParams { alpha: 0.0, w: 1.0 });
    check_timeline(m, &rows.timeline, fr)?;
    let n = m.rows();
    if rows.importance.len() != n {
        return Err(invalid(format!(
            "{} importance values for {n} rows",
            rows.importance.len(),
        )));
    }
    check_rank_queries(m.dim, n, q, p, k, true)
}

/// The query side of [`check_rank`] over `rows` rows of `dim`, `sparse` and `flags` too when
/// the host computed them (`host_inputs`); returns the number of queries.
pub(crate) fn check_rank_queries(
    dim: usize,
    rows: usize,
    q: &RankQueries<'_>,
    p: &RankParams,
    k: usize,
    host_inputs: bool,
) -> Result<usize, KernelError> {
    let nq = check_queries(dim, rows, q.vectors, q.ranges, None, k)?;
    check_fragrel(p.fragrel.unwrap_or(FragRelParams { alpha: 0.0, w: 1.0 }))?;
    let (_, total) = range_offsets(q.ranges);
    let inputs_ok = !host_inputs || (q.sparse.len() == total && q.flags.len() == total);
    if !inputs_ok || q.time.len() != nq {
        return Err(invalid(format!(
            "{} sparse values, {} flags and {} time rules for {nq} ranges of {total} rows",
            q.sparse.len(),
            q.flags.len(),
            q.time.len()
        )));
    }
    if total > u32::MAX as usize {
        return Err(invalid(format!("{total} range rows exceed u32")));
    }
    let bad_boost = q
        .time
        .iter()
        .any(|t| matches!(t, TimeRule::Boost(b) if !b.is_finite()));
    let weights = [p.w_dense, p.w_sparse, p.importance.unwrap_or(0.0)];
    if bad_boost || weights.iter().any(|w| !w.is_finite()) {
        return Err(invalid(format!(
            "non-finite weight in {p:?} or a time boost"
        )));
    }
    Ok(nq)
}

/// Merges a kernel's two lists per query (`2k` slots: flagged rows' list first when the
/// time stage put them in front, else the only list) into `k` slots per query.
pub fn merge_lists(scores: &[f32], rows: &[u32], k: usize) -> TopKResult {
    let nq = rows.len() / (2 * k);
    let (mut out_s, mut out_r) = (Vec::with_capacity(nq * k), Vec::with_capacity(nq * k));
    for q in 0..nq {
        let (s, r) = (&scores[q * 2 * k..][..2 * k], &rows[q * 2 * k..][..2 * k]);
        let filled = s.iter().zip(r).filter(|(_, &r)| r != NO_ROW).take(k);
        let before = out_r.len();
        for (&s, &r) in filled {
            out_s.push(s);
            out_r.push(r);
        }
        let pad = k - (out_r.len() - before);
        out_s.extend(std::iter::repeat_n(f32::NEG_INFINITY, pad));
        out_r.extend(std::iter::repeat_n(NO_ROW, pad));
    }
    TopKResult {
        k,
        scores: out_s,
        rows: out_r,
    }
}

/// One query's final scores over the live rows of its range, before the selection.
struct Scored {
    /// Live rows (matrix rows), timeline order.
    live: Vec<usize>,
    scores: Vec<f64>,
    flags: Vec<bool>,
    /// The time stage puts flagged rows first.
    front: bool,
}

/// Stages 1–5 of the module docs for query `qi` (its entries at `off` in sparse and flags).
fn score_query(
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    q: &RankQueries<'_>,
    p: &RankParams,
    qi: usize,
    off: usize,
) -> Scored {
    let [a, b] = q.ranges[qi];
    let vector = &q.vectors[qi * m.dim..][..m.dim];
    let live: Vec<usize> = (a as usize..b as usize).collect();
    let at = |r: usize| off + r - a as usize;
    let dense: Vec<f64> = live
        .iter()
        .map(|&r| f64::from(cosine(vector, m.row(r))))
        .collect();
    let sparse: Vec<f64> = live.iter().map(|&r| f64::from(q.sparse[at(r)])).collect();
    let flags: Vec<bool> = live.iter().map(|&r| q.flags[at(r)] != 0).collect();
    let mut s = if p.sparse_fused {
        let d = min_max(&dense);
        (d.iter().zip(&sparse))
            .map(|(d, s)| f64::from(p.w_dense) * d + s)
            .collect()
    } else {
        hybrid(&dense, &sparse, f64::from(p.w_dense), f64::from(p.w_sparse))
    };
    if let Some(fr) = p.fragrel {
        let t = &rows.timeline;
        let pos: Vec<u64> = live.iter().map(|&r| u64::from(t.positions[r])).collect();
        let grp: Vec<u64> = live.iter().map(|&r| u64::from(t.groups[r])).collect();
        let fr = FragRel {
            alpha: f64::from(fr.alpha),
            w: f64::from(fr.w),
        };
        s = relation_scores(&s, &pos, &grp, fr);
    }
    if let Some(w) = p.importance {
        shift_negatives(&mut s, f64::INFINITY);
        for (v, &r) in s.iter_mut().zip(&live) {
            *v *= 1.0 + f64::from(w) * f64::from(rows.importance[r]).log10();
        }
    }
    let any = flags.iter().any(|&f| f);
    if let (true, TimeRule::Boost(b)) = (any, q.time[qi]) {
        shift_negatives(&mut s, 0.0);
        for (v, &f) in s.iter_mut().zip(&flags) {
            if f {
                *v *= 1.0 + f64::from(b);
            }
        }
    }
    Scored {
        live,
        scores: s,
        flags,
        front: any && q.time[qi] == TimeRule::Front,
    }
}

/// The CPU reference of `rank_topk` (see the module docs): f64 stages from `memdex-score`
/// over each query's live rows.
pub fn rank_topk_reference(
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    q: &RankQueries<'_>,
    p: &RankParams,
    k: usize,
) -> Result<TopKResult, KernelError> {
    check_rank(m, rows, q, p, k)?;
    let (offsets, _) = range_offsets(q.ranges);
    let mut out = TopKResult {
        k,
        scores: Vec::new(),
        rows: Vec::new(),
    };
    for (qi, &off) in offsets.iter().enumerate() {
        let sc = score_query(m, rows, q, p, qi, off as usize);
        let cands = |flagged: Option<bool>| -> Vec<(f32, u32)> {
            let keep = |i: usize| flagged.is_none_or(|want| sc.flags[i] == want);
            let c = (0..sc.live.len())
                .filter(|&i| keep(i))
                .map(|i| (sc.scores[i] as f32, sc.live[i] as u32))
                .collect();
            select(c, k)
        };
        let (first, second) = if sc.front {
            (cands(Some(true)), cands(Some(false)))
        } else {
            (cands(None), Vec::new())
        };
        let mut hits: Vec<(f32, u32)> = first
            .into_iter()
            .chain(second)
            .filter(|h| h.1 != NO_ROW)
            .collect();
        hits.truncate(k);
        hits.resize(k, (f32::NEG_INFINITY, NO_ROW));
        let (s, r): (Vec<f32>, Vec<u32>) = hits.into_iter().unzip();
        out.scores.extend(s);
        out.rows.extend(r);
    }
    Ok(out)
}

/// The CPU reference of `rank_scores`: every range row's final score (dead rows −∞).
pub fn rank_scores_reference(
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    q: &RankQueries<'_>,
    p: &RankParams,
) -> Result<Vec<f32>, KernelError> {
    check_rank(m, rows, q, p, 1)?;
    let (offsets, total) = range_offsets(q.ranges);
    let mut out = vec![f32::NEG_INFINITY; total];
    for (qi, &[a, _]) in q.ranges.iter().enumerate() {
        let off = offsets[qi] as usize;
        let sc = score_query(m, rows, q, p, qi, off);
        for (&r, &v) in sc.live.iter().zip(&sc.scores) {
            out[off + r - a as usize] = if v.is_nan() {
                f32::NEG_INFINITY
            } else {
                v as f32
            };
        }
    }
    Ok(out)
}

/// Subtracts `min(min s, cap)` from every score when that is negative (the pipeline's shift
/// before a multiplicative stage: `cap` ∞ shifts only negative minima, 0 as the time stage's
/// boost does).
fn shift_negatives(s: &mut [f64], cap: f64) {
    let lo = s.iter().copied().fold(f64::INFINITY, f64::min).min(cap);
    if lo < 0.0 {
        s.iter_mut().for_each(|v| *v -= lo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_lists_merge_flagged_first_and_pad() {
        let e = (f32::NEG_INFINITY, NO_ROW);
        // query 0: flagged [3], others [1, 2]; query 1: one list [7, 8]
        let slots = [
            (0.2, 3),
            e,
            e,
            (0.9, 1),
            (0.5, 2),
            e,
            (0.8, 7),
            (0.1, 8),
            e,
            e,
            e,
            e,
        ];
        let (s, r): (Vec<f32>, Vec<u32>) = slots.into_iter().unzip();
        let m = merge_lists(&s, &r, 3);
        assert_eq!(m.rows, [3, 1, 2, 7, 8, NO_ROW]);
        assert_eq!(m.scores[..3], [0.2, 0.9, 0.5]);
        assert_eq!(range_offsets(&[[5, 9], [3, 3], [0, 2]]), (vec![0, 4, 4], 6));
    }
}

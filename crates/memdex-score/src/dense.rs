//! The dense-scoring seam: every row's `query · row` score for a batch of queries, each over
//! its own runs of stored rows. The ranking needs every row's score (min-max fusion and
//! FragRel read them all), not a top-k, so that is the contract.
//!
//! Implementations: [`CpuScorer`] (dot products over the mapped rows, the default), the
//! candle device scan in `memdex-embed` (segments resident on the model's device), and the
//! CUDA kernels of `memdex-kernels`. They are chosen once, when a searcher or engine starts.

use rayon::prelude::*;

use crate::dot;

/// One block of stored vectors, row-major: a store segment's embedding column (inline
/// layout) or a content file's (shared layout).
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    /// Stable identity of the block (a segment or content file id, never reused): device
    /// scorers keep a resident copy under it.
    pub id: u64,
    pub data: &'a [f32],
}

/// Rows `start..start + rows` of block `block` (an index into the batch's blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub block: usize,
    pub start: usize,
    pub rows: usize,
}

/// A scorer's failure (a device error, a malformed request).
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("dense scorer {scorer}: {message}")]
    Device {
        scorer: &'static str,
        message: String,
    },
    #[error("dense scoring request: {message}")]
    Request { message: String },
}

/// Scores a batch of queries, each over its own runs of rows.
pub trait DenseScorer: Send + Sync + std::fmt::Debug {
    /// Short name for logs and reports (`cpu`, `candle-cuda`, …).
    fn name(&self) -> &'static str;

    /// Whether batching many queries into one call pays (a device) or each query is best
    /// scored where it is ranked (the CPU).
    fn batched(&self) -> bool {
        false
    }

    /// `out[q]` = query `q` (row `q` of `queries`, `dim` wide) dotted with every row of
    /// `runs[q]`, concatenated in run order.
    fn score(
        &self,
        dim: usize,
        queries: &[f32],
        blocks: &[Block<'_>],
        runs: &[Vec<Run>],
    ) -> Result<Vec<Vec<f32>>, ScoreError>;

    /// Drops whatever the scorer keeps for blocks not in `live` (retired by compaction).
    fn retain(&self, _live: &[u64]) {}
}

/// Checks a request's shape (every scorer calls it first): one query row per run list,
/// runs inside their blocks, blocks a whole number of rows.
pub fn check_request(
    dim: usize,
    queries: &[f32],
    blocks: &[Block<'_>],
    runs: &[Vec<Run>],
) -> Result<(), ScoreError> {
    let bad = |message: String| Err(ScoreError::Request { message });
    if dim == 0 || queries.len() != runs.len() * dim {
        return bad(format!(
            "{} query values for {} queries of dimension {dim}",
            queries.len(),
            runs.len()
        ));
    }
    if let Some(b) = blocks.iter().find(|b| b.data.len() % dim != 0) {
        return bad(format!("block {} is not a whole number of rows", b.id));
    }
    for r in runs.iter().flatten() {
        let fits = blocks
            .get(r.block)
            .is_some_and(|b| r.start.saturating_add(r.rows) * dim <= b.data.len());
        if !fits {
            return bad(format!("run {r:?} lies outside its block"));
        }
    }
    Ok(())
}

/// Dot products over the mapped rows, one query per rayon task, each row's cache lines
/// requested a few rows ahead.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuScorer;

impl DenseScorer for CpuScorer {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn score(
        &self,
        dim: usize,
        queries: &[f32],
        blocks: &[Block<'_>],
        runs: &[Vec<Run>],
    ) -> Result<Vec<Vec<f32>>, ScoreError> {
        check_request(dim, queries, blocks, runs)?;
        let one = |(q, runs): (&[f32], &Vec<Run>)| scan(dim, q, blocks, runs);
        Ok(if runs.len() == 1 {
            vec![one((queries, &runs[0]))]
        } else {
            queries.par_chunks(dim).zip(runs).map(one).collect()
        })
    }
}

/// Rows ahead of the one being scored whose cache lines are requested early.
const AHEAD: usize = 8;

/// One query's scores over `runs`, in run order. A tenant's rows are often scattered (the
/// shared layout stores a session once and every tenant holding it points there), which the
/// hardware prefetcher cannot follow, so each row's lines are requested [`AHEAD`] rows early.
fn scan(dim: usize, q: &[f32], blocks: &[Block<'_>], runs: &[Run]) -> Vec<f32> {
    let rows = || {
        runs.iter().flat_map(|r| {
            blocks[r.block].data[r.start * dim..(r.start + r.rows) * dim].chunks_exact(dim)
        })
    };
    let mut ahead = rows().skip(AHEAD);
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.rows).sum());
    for row in rows() {
        if let Some(next) = ahead.next() {
            prefetch(next);
        }
        out.push(dot(q, row));
    }
    out
}

/// Asks the CPU to start loading `row` into cache: a hint, which never faults and changes
/// nothing a program can observe.
#[inline(always)]
fn prefetch(row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for line in row.chunks(16) {
        // SAFETY: SSE is part of the x86-64 baseline, and the pointer is into a live slice
        // (a prefetch would not fault even if it were not).
        #[allow(unsafe_code)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(q: &[f32], rows: &[f32], dim: usize) -> Vec<f32> {
        rows.chunks(dim)
            .map(|r| {
                q.iter()
                    .zip(r)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum::<f64>() as f32
            })
            .collect()
    }

    /// Same length, and every score within 1e-4 (relative) of the f64 loop's.
    fn assert_close(got: &[f32], want: &[f32]) {
        assert_eq!(got.len(), want.len());
        for (x, y) in got.iter().zip(want) {
            assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    #[test]
    fn cpu_scorer_matches_naive_dot_products_and_refuses_bad_runs() {
        let dim = 5;
        let a: Vec<f32> = (0..dim * 7).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..dim * 3).map(|i| (i as f32 * 0.11).cos()).collect();
        let blocks = [Block { id: 4, data: &a }, Block { id: 9, data: &b }];
        let queries: Vec<f32> = (0..dim * 2).map(|i| i as f32 - 4.0).collect();
        let runs = vec![
            vec![
                Run {
                    block: 1,
                    start: 1,
                    rows: 2,
                },
                Run {
                    block: 0,
                    start: 0,
                    rows: 3,
                },
            ],
            vec![Run {
                block: 0,
                start: 5,
                rows: 2,
            }],
        ];
        let got = CpuScorer.score(dim, &queries, &blocks, &runs).unwrap();
        let q0 = &queries[..dim];
        let mut want0 = naive(q0, &b[dim..3 * dim], dim);
        want0.extend(naive(q0, &a[..3 * dim], dim));
        let want1 = naive(&queries[dim..], &a[5 * dim..7 * dim], dim);
        assert_eq!(got.len(), 2);
        assert_close(&got[0], &want0);
        assert_close(&got[1], &want1);
        // many short runs scattered over a block (the shared layout's shape), more rows than
        // the prefetch distance
        let big: Vec<f32> = (0..dim * 400).map(|i| (i as f32 * 0.013).sin()).collect();
        let blocks2 = [Block { id: 1, data: &big }];
        let starts = [390, 3, 200, 17, 151, 18, 0, 260, 77, 333];
        let scattered: Vec<Run> = starts
            .iter()
            .enumerate()
            .map(|(i, &start)| Run {
                block: 0,
                start,
                rows: 1 + i % 4,
            })
            .collect();
        let got = CpuScorer
            .score(dim, q0, &blocks2, std::slice::from_ref(&scattered))
            .unwrap();
        let want: Vec<f32> = scattered
            .iter()
            .flat_map(|r| naive(q0, &big[r.start * dim..(r.start + r.rows) * dim], dim))
            .collect();
        assert!(want.len() > AHEAD);
        assert_close(&got[0], &want);
        let outside = vec![vec![Run {
            block: 1,
            start: 2,
            rows: 2,
        }]];
        assert!(CpuScorer.score(dim, q0, &blocks, &outside).is_err());
        assert!(
            CpuScorer.score(dim, &queries, &blocks, &outside).is_err(),
            "2 queries, 1 run list"
        );
    }
}

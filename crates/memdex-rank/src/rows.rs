//! A tenant's live rows in timeline order, and a ranking of them.

use memdex_store::{ItemRef, TenantSlice};

use crate::SearchHit;

/// A tenant's live rows in timeline order: its slices and where each starts.
#[derive(Debug, Clone)]
pub(crate) struct TenantRows<'s> {
    pub slices: Vec<TenantSlice<'s>>,
    starts: Vec<usize>,
    rows: usize,
}

impl<'s> TenantRows<'s> {
    pub fn new(slices: Vec<TenantSlice<'s>>) -> TenantRows<'s> {
        let mut starts = Vec::with_capacity(slices.len());
        let mut rows = 0;
        for s in &slices {
            starts.push(rows);
            rows += s.rows;
        }
        TenantRows {
            slices,
            starts,
            rows,
        }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    /// The item at timeline index `i` (< [`Self::len`]).
    pub fn item(&self, i: usize) -> ItemRef<'s> {
        let s = self.starts.partition_point(|&st| st <= i) - 1;
        self.slices[s].item(i - self.starts[s])
    }

    /// The newest session date of the rows (0 without rows).
    pub fn newest(&self) -> i64 {
        newest(&self.slices)
    }
}

/// The newest session date of `slices`' rows (0 without rows).
pub(crate) fn newest(slices: &[TenantSlice<'_>]) -> i64 {
    (slices.iter().flat_map(|s| s.timestamps()).copied())
        .max()
        .unwrap_or(0)
}

/// A tenant's items with their final scores; `order` lists timeline indices best first.
#[derive(Debug)]
pub struct Ranking<'s> {
    pub(crate) rows: TenantRows<'s>,
    pub scores: Vec<f64>,
    pub order: Vec<usize>,
}

impl<'s> Ranking<'s> {
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The item at timeline index `i`.
    pub fn item(&self, i: usize) -> ItemRef<'s> {
        self.rows.item(i)
    }

    /// The best `k` items as hits.
    pub fn hits(&self, k: usize) -> Vec<SearchHit> {
        self.order
            .iter()
            .take(k)
            .enumerate()
            .map(|(rank, &i)| SearchHit::new(rank + 1, self.scores[i] as f32, self.item(i)))
            .collect()
    }
}

//! The fused ranking over rows given in parts (one per tenant of a batch), for
//! [`crate::Kernels::rank_topk_parts`]: each part carries a content key, so a device can keep
//! the parts it has seen resident and assemble a batch's matrix without uploading them again.
//! The queries' ranges index the parts concatenated in order; a range lies within one part.

use std::sync::{Mutex, MutexGuard};

use crate::rank::{RankQueries, RankRows};
use crate::types::check_dim;
use crate::{f16, KernelError, Matrix, Timeline, NO_ROW};

/// One part of a fused ranking call: a tenant's live rows in timeline order.
#[derive(Debug, Clone, Copy)]
pub struct RankPart<'a> {
    /// Names the content: parts with the same non-zero key hold the same rows (a device may
    /// reuse what it uploaded for that key). 0: no key, uploaded on every call.
    pub key: u64,
    /// `rows × dim`, row-major.
    pub embeddings: &'a [f16],
    pub positions: &'a [u32],
    /// FragRel scope groups (compared between neighbours of one range only).
    pub groups: &'a [u32],
    /// Importance 1..=10, one per row.
    pub importance: &'a [u8],
}

impl RankPart<'_> {
    pub fn rows(&self) -> usize {
        self.positions.len()
    }
}

/// Checks every part's shapes and that each range lies within one part; returns the total
/// rows and each part's first row.
pub(crate) fn check_parts(
    dim: usize,
    parts: &[RankPart<'_>],
    ranges: &[[u32; 2]],
) -> Result<(usize, Vec<usize>), KernelError> {
    check_dim(dim)?;
    let mut starts = Vec::with_capacity(parts.len());
    let mut total = 0usize;
    for (i, p) in parts.iter().enumerate() {
        let n = p.rows();
        if p.embeddings.len() != n * dim || p.groups.len() != n || p.importance.len() != n {
            return Err(KernelError::Invalid(format!(
                "part {i}: {} embedding values, {} groups and {} importance values for {n} \
                 positions of dim {dim}",
                p.embeddings.len(),
                p.groups.len(),
                p.importance.len()
            )));
        }
        starts.push(total);
        total += n;
    }
    if total >= NO_ROW as usize {
        return Err(KernelError::Invalid(format!(
            "{total} rows exceed the row ids"
        )));
    }
    for &[a, b] in ranges.iter().filter(|[a, b]| a < b) {
        // the part holding row a: the last start ≤ a
        let part = starts
            .partition_point(|&s| s <= a as usize)
            .saturating_sub(1);
        let end = starts.get(part).map_or(0, |&s| s + parts[part].rows());
        if b as usize > end {
            return Err(KernelError::Invalid(format!(
                "range [{a}, {b}) crosses the end of part {part} (row {end})"
            )));
        }
    }
    Ok((total, starts))
}

/// Parts concatenated on the host, as [`crate::Kernels::rank_topk`] takes them (every row
/// live; each part's groups shifted past the previous part's).
#[derive(Debug, Default)]
pub struct Concatenated {
    pub dim: usize,
    pub embeddings: Vec<f16>,
    pub positions: Vec<u32>,
    pub groups: Vec<u32>,
    pub importance: Vec<u8>,
}

impl Concatenated {
    /// Checks the parts and the queries' ranges ([`check_parts`]) and concatenates them.
    pub fn new(
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
    ) -> Result<Concatenated, KernelError> {
        check_parts(dim, parts, queries.ranges)?;
        let mut c = Concatenated {
            dim,
            ..Concatenated::default()
        };
        for p in parts {
            c.embeddings.extend_from_slice(p.embeddings);
            c.positions.extend_from_slice(p.positions);
            let base = c.groups.last().map_or(0, |&g| g.saturating_add(1));
            c.groups
                .extend(p.groups.iter().map(|&g| g.saturating_add(base)));
            c.importance.extend_from_slice(p.importance);
        }
        Ok(c)
    }

    pub fn matrix(&self) -> Matrix<'_> {
        Matrix {
            dim: self.dim,
            data: &self.embeddings,
        }
    }

    pub fn rows(&self) -> RankRows<'_> {
        RankRows {
            timeline: Timeline {
                positions: &self.positions,
                groups: &self.groups,
            },
            importance: &self.importance,
        }
    }
}

/// How a device builds its next batch from resident parts ([`AssemblyGate::next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assembly {
    /// The fast way (the CUDA `gather_parts` kernel): it built a batch as the reference did.
    Fast,
    /// The reference way (per-part copies): the fast way built other rows.
    Reference,
    /// Both, then [`AssemblyGate::record`] whether they agree (no batch compared yet).
    Compare,
}

/// The first-batch comparison of a fast way of assembling a batch against a reference way
/// (on CUDA: `gather_parts.cu` against four device-to-device copies per part). Until one batch
/// has been built both ways and compared, every batch is ([`Assembly::Compare`]); then the
/// fast way is kept if the two agreed bit for bit, else the reference builds every batch from
/// then on. A disagreement is a **fault** ([`AssemblyGate::faults`], surfaced as
/// [`crate::Kernels::faults`]): the answers stay right, so nothing else would notice, but a
/// kernel check run on the device fails (`checks::run`, `rank_parts_match_one_matrix`).
#[derive(Debug, Default)]
pub struct AssemblyGate {
    state: Mutex<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    /// Whether the fast way agreed (None: not compared yet). A disagreement is sticky.
    kept: Option<bool>,
    faults: Vec<String>,
}

impl AssemblyGate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How to build the next batch.
    pub fn next(&self) -> Assembly {
        match self.lock().kept {
            Some(true) => Assembly::Fast,
            Some(false) => Assembly::Reference,
            None => Assembly::Compare,
        }
    }

    /// The result of a comparison: whether both ways built the same bits. A disagreement
    /// (`what` describes it) is recorded as a fault and turns the fast way off for good; an
    /// agreement keeps it unless an earlier comparison disagreed.
    pub fn record(&self, same: bool, what: impl FnOnce() -> String) {
        let mut st = self.lock();
        if same {
            st.kept.get_or_insert(true);
        } else {
            st.kept = Some(false);
            st.faults.push(what());
        }
    }

    /// Whether the fast way is in use (None until a batch was compared).
    pub fn kept(&self) -> Option<bool> {
        self.lock().kept
    }

    /// Every disagreement recorded, oldest first.
    pub fn faults(&self) -> Vec<String> {
        self.lock().faults.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part<'a>(key: u64, e: &'a [f16], p: &'a [u32], g: &'a [u32], i: &'a [u8]) -> RankPart<'a> {
        RankPart {
            key,
            embeddings: e,
            positions: p,
            groups: g,
            importance: i,
        }
    }

    #[test]
    fn ranges_stay_within_a_part_and_shapes_are_checked() {
        let e = [f16::from_f32(0.5); 8 * 5];
        let (p2, p3) = ([0u32, 1], [0u32, 1, 2]);
        let (g2, g3) = ([0u32, 0], [0u32, 1, 1]);
        let (i2, i3) = ([1u8, 2], [3u8, 4, 5]);
        let parts = [
            part(1, &e[..16], &p2, &g2, &i2),
            part(2, &e[16..], &p3, &g3, &i3),
        ];
        let ok = check_parts(8, &parts, &[[0, 2], [2, 5], [3, 4], [4, 4], [5, 5]]);
        assert_eq!(ok.unwrap(), (5, vec![0, 2]));
        for bad in [[1, 3], [0, 5], [4, 6]] {
            let err = check_parts(8, &parts, &[bad]).unwrap_err().to_string();
            assert!(err.contains("crosses the end of part"), "{bad:?}: {err}");
        }
        let short = [part(1, &e[..8], &p2, &g2, &i2)];
        assert!(
            check_parts(8, &short, &[]).is_err(),
            "embeddings of one row for two"
        );
        assert!(
            check_parts(12, &parts, &[]).is_err(),
            "dim not a multiple of 8"
        );

        let q = RankQueries {
            vectors: &[],
            ranges: &[],
            sparse: &[],
            flags: &[],
            time: &[],
        };
        let c = Concatenated::new(8, &parts, &q).unwrap();
        assert_eq!(c.positions, [0, 1, 0, 1, 2]);
        assert_eq!(
            c.groups,
            [0, 0, 1, 2, 2],
            "the second part's groups follow the first's"
        );
        assert_eq!(c.importance, [1, 2, 3, 4, 5]);
        assert_eq!(c.matrix().rows(), 5);
    }

    #[test]
    fn the_gate_keeps_the_fast_way_only_after_an_agreement_and_records_a_disagreement() {
        let g = AssemblyGate::default();
        assert_eq!((g.next(), g.kept()), (Assembly::Compare, None));
        g.record(true, || unreachable!("no fault on an agreement"));
        assert_eq!((g.next(), g.kept()), (Assembly::Fast, Some(true)));
        assert!(g.faults().is_empty());

        let g = AssemblyGate::default();
        g.record(false, || "batch 1 differs".into());
        assert_eq!((g.next(), g.kept()), (Assembly::Reference, Some(false)));
        // a later agreement (a concurrent first batch) does not turn the fast way back on
        g.record(true, || unreachable!());
        assert_eq!(g.next(), Assembly::Reference);
        assert_eq!(g.faults(), ["batch 1 differs"]);
    }
}

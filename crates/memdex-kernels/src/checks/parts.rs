//! Checks of the fused ranking over parts (`rank_topk_parts`, `rank_scores_parts`): the same
//! answers as the brute force over the parts concatenated, on the first call and on later calls
//! that find the keyed parts resident; a part whose content changes under a new key is read
//! anew; a range across two parts is refused.

use super::rank::{brute_rank_topk, QueryInputs, DEFAULTS};
use super::{assert_close, assert_no_faults, random_unit, sanitizer_size, timeline, to_f16, Rng};
use crate::{
    f16, range_offsets, Concatenated, KernelError, Kernels, RankPart, RankQueries, TimeRule,
};

/// One tenant's columns.
pub(super) struct Tenant {
    key: u64,
    embeddings: Vec<f16>,
    positions: Vec<u32>,
    groups: Vec<u32>,
    importance: Vec<u8>,
}

impl Tenant {
    pub(super) fn new(key: u64, rows: usize, dim: usize, seed: u64) -> Tenant {
        let (positions, groups) = timeline(rows, seed);
        let mut rng = Rng(seed + 1);
        Tenant {
            key,
            embeddings: to_f16(&random_unit(rows, dim, seed + 2)),
            positions,
            groups,
            importance: (0..rows).map(|_| 1 + rng.below(10) as u8).collect(),
        }
    }

    pub(super) fn part(&self) -> RankPart<'_> {
        RankPart {
            key: self.key,
            embeddings: &self.embeddings,
            positions: &self.positions,
            groups: &self.groups,
            importance: &self.importance,
        }
    }
}

/// Per part: its whole range and, where it has rows, a slice inside it.
fn ranges(parts: &[RankPart<'_>]) -> Vec<[u32; 2]> {
    let mut out = Vec::new();
    let mut start = 0u32;
    for p in parts {
        let end = start + p.rows() as u32;
        out.push([start, end]);
        if end > start + 4 {
            out.push([start + 2, end - 1]);
        }
        start = end;
    }
    out
}

/// `rank_topk_parts` and `rank_scores_parts` against the brute force on the concatenation.
fn agree(k: &dyn Kernels, dim: usize, parts: &[RankPart<'_>], what: &str) {
    let inputs = QueryInputs::new(ranges(parts), dim, 41, 0.3);
    let q = inputs.view();
    let (_, total) = range_offsets(q.ranges);
    let c = Concatenated::new(dim, parts, &q).unwrap();
    let what = format!("{} parts {what}", k.device());
    for topk in [10, 50] {
        let got = k.rank_topk_parts(dim, parts, &q, &DEFAULTS, topk).unwrap();
        let want = brute_rank_topk(&c.matrix(), &c.rows(), &q, &DEFAULTS, topk);
        assert_close(&got, &want, 1e-4, &format!("{what} k {topk}"));
    }
    let got = k.rank_scores_parts(dim, parts, &q, &DEFAULTS).unwrap();
    let want = k
        .rank_scores(&c.matrix(), &c.rows(), &q, &DEFAULTS)
        .unwrap();
    assert_eq!(got.len(), total, "{what}: one score per range row");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g == w || (g - w).abs() <= 1e-4,
            "{what}: score {i}: {g} vs {w}"
        );
    }
}

/// A check (see the module docs).
pub fn rank_parts_match_one_matrix(k: &dyn Kernels) {
    let dim = 384;
    // a tenant with no rows, one with one, unkeyed, and ones past a kernel block
    let big = if sanitizer_size() { 1100 } else { 2500 };
    let sizes = [(11, 300), (12, 0), (13, 1), (0, 57), (14, big), (15, 700)];
    let mut tenants: Vec<Tenant> = (sizes.iter().enumerate())
        .map(|(i, &(key, rows))| Tenant::new(key, rows, dim, 100 + 10 * i as u64))
        .collect();
    let parts: Vec<RankPart<'_>> = tenants.iter().map(Tenant::part).collect();
    agree(k, dim, &parts, "first call");
    agree(k, dim, &parts, "again (resident)");
    // another batch: some of the same tenants, in another order
    let some = [parts[5], parts[0], parts[4]];
    agree(k, dim, &some, "a subset, reordered");
    // a tenant's rows change (an append): a new key, new content
    tenants[0] = Tenant::new(16, 320, dim, 999);
    let parts: Vec<RankPart<'_>> = tenants.iter().map(Tenant::part).collect();
    agree(k, dim, &parts, "after a change");

    // a range across two parts is refused
    let vectors = random_unit(1, dim, 43);
    let (sparse, flags) = (vec![0f32; 20], vec![0u8; 20]);
    let across = RankQueries {
        vectors: &vectors,
        ranges: &[[310, 330]],
        sparse: &sparse,
        flags: &flags,
        time: &[TimeRule::None],
    };
    let e = k.rank_topk_parts(dim, &parts, &across, &DEFAULTS, 5);
    assert!(matches!(e, Err(KernelError::Invalid(_))), "{e:?}");
    // the device assembled the first batch both ways (CUDA: gather_parts.cu and the copies)
    // and found them equal: a disagreement leaves the answers right (the copies take over),
    // so only this tells
    assert_no_faults(k, "parts");
}

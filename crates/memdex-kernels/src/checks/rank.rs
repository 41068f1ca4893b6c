//! Checks of the fused default ranking (`rank_topk`) against a brute force written here:
//! f64 cosines, min-max, FragRel's O(N²) definition over the live rows, then importance, the
//! time stage and a full sort.

use memdex_score::fragrel::{relation_scores_reference, FragRel};

use super::{
    against_cpu_kernels, assert_close, brute_cosine, random_unit, sanitizer_size, timeline, to_f16,
    Rng,
};
use crate::cpu::Cpu;
use crate::{
    range_offsets, FragRelParams, KernelError, Kernels, Matrix, RankKernels, RankParams,
    RankQueries, RankRows, TimeRule, Timeline, TopKResult, NO_ROW,
};

fn min_max(v: &[f64]) -> Vec<f64> {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = hi - lo;
    v.iter()
        .map(|x| if span > 0.0 { (x - lo) / span } else { 0.0 })
        .collect()
}

/// One query's final scores over `live` (rows in timeline order).
fn brute_scores(
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    vector: &[f32],
    live: &[usize],
    sparse: &[f64],
    p: &RankParams,
) -> Vec<f64> {
    let dense: Vec<f64> = live
        .iter()
        .map(|&r| brute_cosine(vector, m.row(r)))
        .collect();
    let (d, sp) = (min_max(&dense), min_max(sparse));
    let mut s: Vec<f64> = d
        .iter()
        .zip(&sp)
        .zip(sparse)
        .map(|((a, b), raw)| {
            let keyword = if p.sparse_fused {
                *raw
            } else {
                f64::from(p.w_sparse) * b
            };
            f64::from(p.w_dense) * a + keyword
        })
        .collect();
    if let Some(fr) = p.fragrel {
        let t = &rows.timeline;
        let pos: Vec<u64> = live.iter().map(|&r| u64::from(t.positions[r])).collect();
        let grp: Vec<u64> = live.iter().map(|&r| u64::from(t.groups[r])).collect();
        let fr = FragRel {
            alpha: f64::from(fr.alpha),
            w: f64::from(fr.w),
        };
        s = relation_scores_reference(&s, &pos, &grp, fr);
    }
    if let Some(w) = p.importance {
        let lo = s.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
        for (v, &r) in s.iter_mut().zip(live) {
            *v = (*v - lo) * (1.0 + f64::from(w) * f64::from(rows.importance[r]).log10());
        }
    }
    s
}

/// One query by brute force: its live rows, their final scores, flags, and whether flagged
/// rows go first.
fn brute_query(
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    q: &RankQueries<'_>,
    p: &RankParams,
    qi: usize,
    off: usize,
) -> (Vec<usize>, Vec<f64>, Vec<bool>, bool) {
    let [a, b] = q.ranges[qi];
    let (a, b) = (a as usize, b as usize);
    let live: Vec<usize> = (a..b).collect();
    let sparse: Vec<f64> = live
        .iter()
        .map(|&r| f64::from(q.sparse[off + r - a]))
        .collect();
    let flag: Vec<bool> = live.iter().map(|&r| q.flags[off + r - a] != 0).collect();
    let vector = &q.vectors[qi * m.dim..][..m.dim];
    let mut s = brute_scores(m, rows, vector, &live, &sparse, p);
    let any = flag.iter().any(|&f| f);
    if let (true, TimeRule::Boost(boost)) = (any, q.time[qi]) {
        let lo = s.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
        for (v, &f) in s.iter_mut().zip(&flag) {
            *v = (*v - lo) * if f { 1.0 + f64::from(boost) } else { 1.0 };
        }
    }
    let front = any && q.time[qi] == TimeRule::Front;
    (live, s, flag, front)
}

/// `rank_topk` by brute force.
pub fn brute_rank_topk(
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    q: &RankQueries<'_>,
    p: &RankParams,
    k: usize,
) -> TopKResult {
    let (offsets, _) = range_offsets(q.ranges);
    let (mut scores, mut out_rows) = (Vec::new(), Vec::new());
    for (qi, &off) in offsets.iter().enumerate() {
        let (live, s, flag, front) = brute_query(m, rows, q, p, qi, off as usize);
        let mut idx: Vec<usize> = (0..live.len()).collect();
        idx.sort_by(|&x, &y| {
            let first = |i: usize| front && flag[i];
            first(y)
                .cmp(&first(x))
                .then(s[y].total_cmp(&s[x]))
                .then(x.cmp(&y))
        });
        let hits = idx.iter().take(k).map(|&i| (s[i] as f32, live[i] as u32));
        let hits: Vec<(f32, u32)> = hits.collect();
        let pad = k - hits.len();
        scores.extend(hits.iter().map(|h| h.0));
        out_rows.extend(hits.iter().map(|h| h.1));
        scores.extend(std::iter::repeat_n(f32::NEG_INFINITY, pad));
        out_rows.extend(std::iter::repeat_n(NO_ROW, pad));
    }
    TopKResult {
        k,
        scores,
        rows: out_rows,
    }
}

/// Per-row importance 1..=10.
fn rank_rows(rows: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..rows).map(|_| 1 + rng.below(10) as u8).collect()
}

/// A batch of queries over `ranges` with random inputs: unit vectors (`seed`), per range row
/// BM25-like sparse scores (mostly 0) and ~5 % flagged rows (`seed + 1`), and the time rules
/// none, front, boost by `boost` in turn.
pub(super) struct QueryInputs {
    vectors: Vec<f32>,
    pub ranges: Vec<[u32; 2]>,
    sparse: Vec<f32>,
    flags: Vec<u8>,
    time: Vec<TimeRule>,
}

impl QueryInputs {
    pub(super) fn new(ranges: Vec<[u32; 2]>, dim: usize, seed: u64, boost: f32) -> QueryInputs {
        let (_, total) = range_offsets(&ranges);
        let mut rng = Rng(seed + 1);
        let sparse = (0..total)
            .map(|_| match rng.below(6) {
                0 => (rng.unit() + 0.5) * 12.0,
                _ => 0.0,
            })
            .collect();
        let flags = (0..total).map(|_| u8::from(rng.below(20) == 0)).collect();
        let rules = [TimeRule::None, TimeRule::Front, TimeRule::Boost(boost)];
        QueryInputs {
            vectors: random_unit(ranges.len(), dim, seed),
            time: (0..ranges.len()).map(|i| rules[i % 3]).collect(),
            ranges,
            sparse,
            flags,
        }
    }

    pub(super) fn view(&self) -> RankQueries<'_> {
        RankQueries {
            vectors: &self.vectors,
            ranges: &self.ranges,
            sparse: &self.sparse,
            flags: &self.flags,
            time: &self.time,
        }
    }
}

pub(super) const DEFAULTS: RankParams = RankParams {
    w_dense: 0.5,
    w_sparse: 0.5,
    sparse_fused: false,
    fragrel: Some(FragRelParams { alpha: 0.5, w: 0.8 }),
    importance: Some(0.3),
};

/// A check (see the module docs).
pub fn rank_matches_reference(k: &dyn Kernels) {
    // at the sanitizer's size: both kernel variants (dim ≤ 512 and wider), a range past one
    // block, on 1,100 rows instead of 3,000
    let (dims, n): (&[usize], usize) = if sanitizer_size() {
        (&[64, 640], 1100)
    } else {
        (&[64, 384, 640], 3000)
    };
    for &dim in dims {
        // the narrowest dim with tiles of at most 3 queries, the others with tiles of up to
        // 16 (the dense step's tiled widths; single queries: the parts and text checks)
        let ranges = if dim == dims[0] {
            super::ranges_asked(n as u32, &[(4, 2)])
        } else {
            super::ranges_for(n as u32)
        };
        rank_matches_reference_at(k, dim, n, ranges);
    }
}

fn rank_matches_reference_at(k: &dyn Kernels, dim: usize, n: usize, ranges: Vec<[u32; 2]>) {
    let data = to_f16(&random_unit(n, dim, 21));
    let m = Matrix { dim, data: &data };
    let (positions, groups) = timeline(n, 22);
    let importance = rank_rows(n, 23);
    let rows = RankRows {
        timeline: Timeline {
            positions: &positions,
            groups: &groups,
        },
        importance: &importance,
    };
    let inputs = QueryInputs::new(ranges, dim, 24, 0.2);
    let (q, ranges) = (inputs.view(), &inputs.ranges);
    let variants = [
        DEFAULTS,
        RankParams {
            fragrel: None,
            importance: None,
            ..DEFAULTS
        },
        RankParams {
            w_dense: 0.7,
            w_sparse: 0.3,
            sparse_fused: false,
            fragrel: Some(FragRelParams { alpha: 1.0, w: 0.3 }),
            importance: None,
        },
        // the keyword side fused by the host (query expansion): added as it is
        RankParams {
            sparse_fused: true,
            ..DEFAULTS
        },
    ];
    for p in variants {
        rank_scores_match(k, &m, &rows, &q, &p);
        for topk in [10, 64] {
            let got = k.rank_topk(&m, &rows, &q, &p, topk).unwrap();
            let want = brute_rank_topk(&m, &rows, &q, &p, topk);
            let what = format!("{} rank dim {dim} k {topk} {p:?}", k.device());
            assert_close(&got, &want, 1e-4, &format!("{what} vs brute force"));
            if against_cpu_kernels(k) {
                let cpu = Cpu.rank_topk(&m, &rows, &q, &p, topk).unwrap();
                assert_close(&got, &cpu, 1e-4, &format!("{what} vs CPU"));
            }
            check_properties(&got, ranges);
        }
    }
    // every time rule met flagged rows somewhere, and `front` really moved rows
    let got = k.rank_topk(&m, &rows, &q, &DEFAULTS, 10).unwrap();
    let plain_time = vec![TimeRule::None; ranges.len()];
    let plain = RankQueries {
        time: &plain_time,
        ..q
    };
    let base = k.rank_topk(&m, &rows, &plain, &DEFAULTS, 10).unwrap();
    assert_ne!(got.rows, base.rows, "the time stage changed nothing");
}

/// `rank_scores`: every row's final score within 1e-4 of the brute force's.
fn rank_scores_match(
    k: &dyn Kernels,
    m: &Matrix<'_>,
    rows: &RankRows<'_>,
    q: &RankQueries<'_>,
    p: &RankParams,
) {
    let got = k.rank_scores(m, rows, q, p).unwrap();
    let (offsets, total) = range_offsets(q.ranges);
    assert_eq!(got.len(), total);
    for (qi, &off) in offsets.iter().enumerate() {
        let (off, a) = (off as usize, q.ranges[qi][0] as usize);
        let (live, s, _, _) = brute_query(m, rows, q, p, qi, off);
        let mut want = vec![f32::NEG_INFINITY; (q.ranges[qi][1] as usize).saturating_sub(a)];
        for (&r, &v) in live.iter().zip(&s) {
            want[r - a] = v as f32;
        }
        for (i, (g, w)) in got[off..off + want.len()].iter().zip(&want).enumerate() {
            let ok = (g == w) || (g - w).abs() <= 1e-4;
            assert!(
                ok,
                "{} scores query {qi} row {}: {g} vs {w} ({p:?})",
                k.device(),
                a + i
            );
        }
    }
}

/// Filled slots and only rows of the range (the order is not plain under `front`).
fn check_properties(r: &TopKResult, ranges: &[[u32; 2]]) {
    for (q, &[a, b]) in ranges.iter().enumerate() {
        let hits = r.hits(q);
        let n = b.saturating_sub(a) as usize;
        assert_eq!(hits.len(), n.min(r.k), "query {q}: slots filled");
        assert!(hits.iter().all(|&(_, x)| x >= a && x < b));
    }
}

/// A check (see the module docs).
pub fn rank_invalid_inputs_are_errors(k: &dyn Kernels) {
    let n = 40usize;
    let data = to_f16(&random_unit(n, 8, 26));
    let m = Matrix {
        dim: 8,
        data: &data,
    };
    let (positions, groups) = timeline(n, 27);
    let importance = rank_rows(n, 28);
    let rows = RankRows {
        timeline: Timeline {
            positions: &positions,
            groups: &groups,
        },
        importance: &importance,
    };
    let ranges = [[0u32, 30], [10, 40]];
    let vectors = random_unit(2, 8, 29);
    let (sparse, flags) = (vec![0f32; 60], vec![0u8; 60]);
    let time = [TimeRule::None, TimeRule::Front];
    let ok = RankQueries {
        vectors: &vectors,
        ranges: &ranges,
        sparse: &sparse,
        flags: &flags,
        time: &time,
    };
    assert!(k.rank_topk(&m, &rows, &ok, &DEFAULTS, 5).is_ok());
    let short = RankQueries {
        sparse: &sparse[..59],
        ..ok
    };
    let nan = [TimeRule::None, TimeRule::Boost(f32::NAN)];
    let bad_boost = RankQueries { time: &nan, ..ok };
    let few_values = RankRows {
        importance: &importance[..1],
        ..rows
    };
    let bad_weight = RankParams {
        w_sparse: f32::INFINITY,
        ..DEFAULTS
    };
    for e in [
        k.rank_topk(&m, &rows, &short, &DEFAULTS, 5),
        k.rank_topk(&m, &rows, &bad_boost, &DEFAULTS, 5),
        k.rank_topk(&m, &few_values, &ok, &DEFAULTS, 5),
        k.rank_topk(&m, &rows, &ok, &bad_weight, 5),
        k.rank_topk(&m, &rows, &ok, &DEFAULTS, 0),
    ] {
        assert!(matches!(e, Err(KernelError::Invalid(_))), "{e:?}");
    }
}

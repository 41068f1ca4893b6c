//! The kernels' checks: every kernel against an independent brute force written here (f64
//! cosines of every candidate, fully sorted; FragRel through memdex-score's O(N²) definition;
//! LSH through memdex-score's hashing), and on a device other than the CPU also against the
//! CPU kernels ([`crate::cpu`]), exactly where scores are exact. Selection is compared on
//! inputs whose scores are exact (small integers, with ties), score arithmetic within
//! tolerance on random vectors, LSH by agreement and recall.
//!
//! On the CPU run the CPU kernels *are* the device under test, so the comparison with them
//! would compare a function with itself: it is skipped ([`against_cpu_kernels`]) and the
//! brute force is what checks them.
//!
//! Each check panics on failure. `tests/kernels.rs` runs them per device through
//! [`crate::test_device!`]; the `memdex-kernels-check` binary (feature `cuda`) runs them on a
//! GPU box without Rust and reports each ([`run`]: a check also fails when the device reported
//! a new fault during it, [`Kernels::faults`]). They live in the library for that reason.
//!
//! [`set_sanitizer_size`] shrinks the inputs of the slowest checks for compute-sanitizer
//! (racecheck multiplies a kernel's time by ~50): fewer rows and dims, but every kernel
//! variant (d ≤ 512 and wider), a range past one block (> 1,024 rows), every weighting and
//! both `k`.
#![allow(clippy::unwrap_used)]

mod parts;
mod rank;
mod text;

pub use parts::rank_parts_match_one_matrix;
pub use rank::{brute_rank_topk, rank_invalid_inputs_are_errors, rank_matches_reference};
pub use text::rank_text_matches_host_inputs;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use memdex_score::fragrel::{relation_scores_reference, FragRel};
use memdex_score::lsh::{Lsh, LshParams};

use crate::cpu::{better, Cpu};
use crate::{
    f16, BucketMask, FragRelParams, KernelDevice, KernelError, Kernels, Matrix, ScanKernels,
    Timeline, TopKResult, NO_ROW,
};

/// A check: panics on failure.
pub type Check = fn(&dyn Kernels);

/// Every check, by name.
pub const ALL: &[(&str, Check)] = &[
    ("selection_is_exact_with_ties", selection_is_exact_with_ties),
    ("masked_selection_is_exact", masked_selection_is_exact),
    ("scores_within_tolerance", scores_within_tolerance),
    ("tensor_scan_matches_the_scan", tensor_scan_matches_the_scan),
    ("fragrel_matches_reference", fragrel_matches_reference),
    (
        "fragrel_without_environment_is_the_plain_top_k",
        fragrel_without_environment_is_the_plain_top_k,
    ),
    (
        "lsh_buckets_agree_and_keep_recall",
        lsh_buckets_agree_and_keep_recall,
    ),
    ("invalid_inputs_are_errors", invalid_inputs_are_errors),
    ("rank_matches_reference", rank_matches_reference),
    (
        "rank_invalid_inputs_are_errors",
        rank_invalid_inputs_are_errors,
    ),
    ("rank_parts_match_one_matrix", rank_parts_match_one_matrix),
    (
        "rank_text_matches_host_inputs",
        rank_text_matches_host_inputs,
    ),
];

static SANITIZER_SIZE: AtomicBool = AtomicBool::new(false);

/// Whether the checks run at the sanitizer's input sizes (see the module docs); for the whole
/// process (`memdex-kernels-check --small`).
pub fn set_sanitizer_size(on: bool) {
    SANITIZER_SIZE.store(on, Ordering::Relaxed);
}

fn sanitizer_size() -> bool {
    SANITIZER_SIZE.load(Ordering::Relaxed)
}

/// One check's result on one device.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub ok: bool,
    /// The check's panic message, or the faults the device reported during it.
    pub error: Option<String>,
    pub seconds: f64,
}

/// Runs `check` on `k`: it fails when it panics, and also when the device reported a fault
/// ([`Kernels::faults`]) during it that it had not before, though every answer was right (a
/// kernel found wrong by the device's own comparison and replaced by its reference).
pub fn run(check: Check, k: &dyn Kernels) -> Outcome {
    let before = k.faults().len();
    let t = Instant::now();
    let r = catch_unwind(AssertUnwindSafe(|| check(k)));
    let seconds = t.elapsed().as_secs_f64();
    let faults = k.faults();
    let error = match r {
        Err(e) => Some(
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into()),
        ),
        Ok(()) if faults.len() > before => Some(format!(
            "{}: fault: {}",
            k.device(),
            faults[before..].join("; ")
        )),
        Ok(()) => None,
    };
    Outcome {
        ok: error.is_none(),
        error,
        seconds,
    }
}

/// Panics when `k` reported a fault (a check's last step where a device compares its own work,
/// as on the first batch over resident parts).
fn assert_no_faults(k: &dyn Kernels, what: &str) {
    let faults = k.faults();
    assert!(
        faults.is_empty(),
        "{} {what}: faults {faults:?}",
        k.device()
    );
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

/// Small-integer rows (exact in f16, every partial sum exact in f32), with duplicated rows so
/// that equal scores at different rows exercise the tie-break.
fn integer_data(rows: usize, dim: usize, seed: u64) -> Vec<f16> {
    let mut rng = Rng(seed);
    let mut v: Vec<f16> = (0..rows * dim)
        .map(|_| f16::from_f32(rng.below(5) as f32 - 2.0))
        .collect();
    for r in (0..rows).step_by(7).skip(1) {
        let src = rng.below(r as u64) as usize;
        let row: Vec<f16> = v[src * dim..(src + 1) * dim].to_vec();
        v[r * dim..(r + 1) * dim].copy_from_slice(&row);
    }
    v
}

fn integer_queries(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    (0..n * dim).map(|_| rng.below(5) as f32 - 2.0).collect()
}

fn random_unit(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut v: Vec<f32> = (0..rows * dim).map(|_| rng.unit()).collect();
    for row in v.chunks_exact_mut(dim) {
        let n = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        row.iter_mut().for_each(|x| *x /= n);
    }
    v
}

fn to_f16(v: &[f32]) -> Vec<f16> {
    v.iter().map(|&x| f16::from_f32(x)).collect()
}

/// Ranges of different shapes: empty, shorter than k, ordinary, one long enough that the GPU
/// splits it (> 1,024 rows) and the whole matrix (`rows` > 1,024).
/// The checks' ranges over `rows` rows: edge cases (empty, short, past one block, the whole
/// matrix), and three of them asked again by more queries, interleaved with the others, so
/// the tiled scans (`crate::tiles`) see tiles of 1, 3, 10 and 16 + 1 queries of one range.
fn ranges_for(rows: u32) -> Vec<[u32; 2]> {
    ranges_asked(rows, &[(1, 16), (3, 9), (4, 2)])
}

/// The edge-case ranges of [`ranges_for`], with `again`: (range, extra queries) asked
/// round-robin after them. No extras: every tile has one query; at most 3 per range: the
/// 4-wide tiled kernels.
fn ranges_asked(rows: u32, again: &[(usize, usize)]) -> Vec<[u32; 2]> {
    let mut out = vec![
        [0, 0],
        [5, 9],
        [0, 300],
        [300, 1000],
        [1000, rows],
        [0, rows],
        [17, 2500.min(rows - 1)],
    ];
    let rounds = again.iter().map(|a| a.1).max().unwrap_or(0);
    for round in 0..rounds {
        let asked = again.iter().filter(|(_, n)| round < *n);
        out.extend(asked.map(|(r, _)| out[*r]).collect::<Vec<_>>());
    }
    out
}

/// Whether `k` is not the CPU kernels themselves, so comparing it with them means something.
pub fn against_cpu_kernels(k: &dyn Kernels) -> bool {
    k.device() != Cpu.device()
}

/// Brute-force selection, independent of the kernels' code: sorts every candidate by score
/// descending (NaN last), then row ascending; keeps `k`, pads with empty slots.
fn brute_select(mut cands: Vec<(f64, u32)>, k: usize) -> Vec<(f32, u32)> {
    cands.sort_by(|a, b| {
        let key = |s: f64| if s.is_nan() { f64::NEG_INFINITY } else { s };
        key(b.0).total_cmp(&key(a.0)).then(a.1.cmp(&b.1))
    });
    let mut out: Vec<(f32, u32)> = cands
        .into_iter()
        .take(k)
        .map(|(s, r)| (s as f32, r))
        .collect();
    out.resize(k, (f32::NEG_INFINITY, NO_ROW));
    out
}

/// The cosine in f64 (the kernels accumulate in f32).
fn brute_cosine(q: &[f32], row: &[f16]) -> f64 {
    let (mut dot, mut qq, mut rr) = (0f64, 0f64, 0f64);
    for (&a, &b) in q.iter().zip(row) {
        let (a, b) = (f64::from(a), f64::from(b.to_f32()));
        dot += a * b;
        qq += a * a;
        rr += b * b;
    }
    dot / (qq.sqrt() * rr.sqrt()).max(1e-30)
}

fn brute_result(per_query: Vec<Vec<(f32, u32)>>, k: usize) -> TopKResult {
    let (scores, rows) = per_query.into_iter().flatten().unzip();
    TopKResult { k, scores, rows }
}

/// `segmented_topk` by brute force.
pub fn brute_topk(
    m: &Matrix<'_>,
    queries: &[f32],
    ranges: &[[u32; 2]],
    mask: Option<&BucketMask<'_>>,
    k: usize,
) -> TopKResult {
    let per_query = ranges
        .iter()
        .enumerate()
        .map(|(qi, &[a, b])| {
            let q = &queries[qi * m.dim..][..m.dim];
            let cands = (a..b)
                .filter(|&r| mask.is_none_or(|mk| mk.selects(qi, r as usize)))
                .map(|r| (brute_cosine(q, m.row(r as usize)), r))
                .collect();
            brute_select(cands, k)
        })
        .collect();
    brute_result(per_query, k)
}

/// `fragrel_topk` by brute force: f64 cosines, and FragRel's O(N²) definition
/// ([`relation_scores_reference`]) over each run of one group inside the range (items of other
/// groups weigh nothing, so this is the definition over the whole range).
#[allow(clippy::too_many_arguments)]
pub fn brute_fragrel_topk(
    m: &Matrix<'_>,
    t: &Timeline<'_>,
    queries: &[f32],
    ranges: &[[u32; 2]],
    mask: Option<&BucketMask<'_>>,
    k: usize,
    p: FragRelParams,
) -> TopKResult {
    let p = FragRel {
        alpha: f64::from(p.alpha),
        w: f64::from(p.w),
    };
    let per_query = ranges
        .iter()
        .enumerate()
        .map(|(qi, &[a, b])| {
            let q = &queries[qi * m.dim..][..m.dim];
            let (a, b) = (a as usize, b as usize);
            let mut fused = Vec::with_capacity(b - a);
            let mut start = a;
            while start < b {
                let mut end = start + 1;
                while end < b && t.groups[end] == t.groups[start] {
                    end += 1;
                }
                let s: Vec<f64> = (start..end).map(|r| brute_cosine(q, m.row(r))).collect();
                let pos: Vec<u64> = t.positions[start..end]
                    .iter()
                    .map(|&x| u64::from(x))
                    .collect();
                let grp = vec![0u64; end - start];
                fused.extend(relation_scores_reference(&s, &pos, &grp, p));
                start = end;
            }
            let cands = (a..b)
                .filter(|&r| mask.is_none_or(|mk| mk.selects(qi, r)))
                .map(|r| (fused[r - a], r as u32))
                .collect();
            brute_select(cands, k)
        })
        .collect();
    brute_result(per_query, k)
}

/// Properties any correct answer has, checked against brute force on the CPU reference.
fn check_properties(r: &TopKResult, ranges: &[[u32; 2]], allowed: impl Fn(usize, u32) -> bool) {
    for (q, &[a, b]) in ranges.iter().enumerate() {
        let hits = r.hits(q);
        let candidates = (a..b).filter(|&row| allowed(q, row)).count();
        assert_eq!(hits.len(), candidates.min(r.k), "query {q}: slots filled");
        for w in hits.windows(2) {
            assert!(better(w[0], w[1]), "query {q}: order {w:?}");
        }
        for &(_, row) in &hits {
            assert!(
                row >= a && row < b && allowed(q, row),
                "query {q}: row {row}"
            );
        }
        for j in hits.len()..r.k {
            assert_eq!(r.rows[q * r.k + j], NO_ROW);
        }
    }
}

/// Same rows in the same order, except where two scores tie within `tol` (then the rows may
/// swap); scores within `tol` everywhere.
fn assert_close(got: &TopKResult, want: &TopKResult, tol: f32, what: &str) {
    assert_eq!(got.k, want.k);
    assert_eq!(got.rows.len(), want.rows.len());
    for q in 0..want.queries() {
        let (g, w) = (got.hits(q), want.hits(q));
        assert_eq!(g.len(), w.len(), "{what} query {q}: slots");
        for (j, (a, b)) in g.iter().zip(&w).enumerate() {
            assert!(
                (a.0 - b.0).abs() <= tol,
                "{what} query {q} slot {j}: {a:?} vs {b:?}"
            );
            if a.1 != b.1 {
                // a swap is only allowed between near-equal scores
                let other = w.iter().find(|x| x.1 == a.1);
                let last = w.last().map_or(f32::NEG_INFINITY, |x| x.0);
                assert!(
                    other.is_some_and(|o| (o.0 - a.0).abs() <= tol) || (a.0 - last).abs() <= tol,
                    "{what} query {q} slot {j}: row {} vs {}",
                    a.1,
                    b.1
                );
            }
        }
    }
}

/// A check (see the module docs).
pub fn selection_is_exact_with_ties(k: &dyn Kernels) {
    let (rows, dim) = (3000usize, 16usize);
    let data = integer_data(rows, dim, 1);
    let m = Matrix { dim, data: &data };
    // tiles of one query, of at most 3, and of up to 16 (the tiled kernel's three widths)
    for ranges in [[].as_slice(), &[(4, 2)]].map(|a| ranges_asked(rows as u32, a)) {
        selection_is_exact_on(k, &m, &ranges);
    }
    selection_is_exact_on(k, &m, &ranges_for(rows as u32));
}

fn selection_is_exact_on(k: &dyn Kernels, m: &Matrix<'_>, ranges: &[[u32; 2]]) {
    let queries = integer_queries(ranges.len(), m.dim, 2);
    for topk in [1, 10, 64, 128] {
        let got = k.segmented_topk(m, &queries, ranges, None, topk).unwrap();
        // equal cosines of different integer rows may round apart in f32: near-ties may swap
        let brute = brute_topk(m, &queries, ranges, None, topk);
        assert_close(
            &got,
            &brute,
            1e-6,
            &format!("{} k={topk} vs brute force", k.device()),
        );
        if against_cpu_kernels(k) {
            let want = Cpu.segmented_topk(m, &queries, ranges, None, topk).unwrap();
            assert_eq!(got, want, "{} k={topk}", k.device());
        }
        check_properties(&got, ranges, |_, _| true);
    }
    // ties really occur: some query has two equal scores in its top 10
    let r = k.segmented_topk(m, &queries, ranges, None, 10).unwrap();
    assert!((0..ranges.len()).any(|q| r.hits(q).windows(2).any(|w| w[0].0 == w[1].0)));
}

fn random_mask(
    rows: usize,
    nq: usize,
    tables: usize,
    buckets: usize,
    seed: u64,
) -> (Vec<u16>, Vec<u32>) {
    let mut rng = Rng(seed);
    let row_buckets = (0..rows * tables)
        .map(|_| rng.below(buckets as u64) as u16)
        .collect();
    let probes: Vec<Vec<Vec<u32>>> = (0..nq)
        .map(|_| {
            (0..tables)
                .map(|_| (0..3).map(|_| rng.below(buckets as u64) as u32).collect())
                .collect()
        })
        .collect();
    (
        row_buckets,
        BucketMask::query_bits(&probes, tables, buckets),
    )
}

/// A check (see the module docs).
pub fn masked_selection_is_exact(k: &dyn Kernels) {
    let (rows, dim) = (3000usize, 24usize);
    let data = integer_data(rows, dim, 3);
    let m = Matrix { dim, data: &data };
    let ranges = ranges_for(rows as u32);
    let queries = integer_queries(ranges.len(), dim, 4);
    for (tables, buckets) in [(1, 16), (4, 64), (8, 256)] {
        let (row_buckets, query_masks) = random_mask(rows, ranges.len(), tables, buckets, 5);
        let mask = BucketMask {
            tables,
            buckets,
            row_buckets: &row_buckets,
            query_masks: &query_masks,
        };
        let got = k
            .segmented_topk(&m, &queries, &ranges, Some(&mask), 10)
            .unwrap();
        let brute = brute_topk(&m, &queries, &ranges, Some(&mask), 10);
        let what = format!("{} L={tables} b={buckets}", k.device());
        assert_close(&got, &brute, 1e-6, &format!("{what} vs brute force"));
        if against_cpu_kernels(k) {
            let want = Cpu
                .segmented_topk(&m, &queries, &ranges, Some(&mask), 10)
                .unwrap();
            assert_eq!(got, want, "{what}");
        }
        check_properties(&got, &ranges, |q, r| mask.selects(q, r as usize));
    }
}

/// A check (see the module docs).
pub fn scores_within_tolerance(k: &dyn Kernels) {
    // 384: the narrow kernel (dim ≤ 512); 1024: the wide one at its limit
    for (rows, dim) in [(4000usize, 384usize), (3000, 1024)] {
        let data = to_f16(&random_unit(rows, dim, 6));
        let m = Matrix { dim, data: &data };
        let ranges = ranges_for(rows as u32);
        let queries = random_unit(ranges.len(), dim, 7);
        let got = k.segmented_topk(&m, &queries, &ranges, None, 20).unwrap();
        let want = brute_topk(&m, &queries, &ranges, None, 20);
        assert_close(&got, &want, 1e-5, &format!("segmented_topk dim {dim}"));
        check_properties(&got, &ranges, |_, _| true);
    }
}

/// A check (see the module docs): the tensor-core scan ([`ScanKernels::tensor_topk`]) against
/// the brute force on random unit rows (dims 384 and 1024: tiles of 1 to 16 queries, k 10 and
/// 64), on near-duplicate rows (cosines within its certificate's margin: the exact rescan), at
/// a dim it does not take (40: the CUDA-core scan answers), and equal to the device's own
/// CUDA-core scan on small-integer rows (exact arithmetic, with ties).
pub fn tensor_scan_matches_the_scan(k: &dyn Kernels) {
    let small = sanitizer_size();
    let sizes = [
        (if small { 1500 } else { 4000 }, 384),
        (if small { 1100 } else { 3000 }, 1024),
        (1500, 40),
    ];
    for (rows, dim) in sizes {
        let data = to_f16(&random_unit(rows, dim, 21));
        tensor_scan_on(k, &Matrix { dim, data: &data }, &format!("dim {dim}"));
    }
    // three directions, every row one of them plus noise of 1e-3 of its size
    let (rows, dim) = (1500usize, 384usize);
    let (base, noise) = (random_unit(3, dim, 23), random_unit(rows, dim, 24));
    let near: Vec<f32> = (0..rows * dim)
        .map(|i| base[(i / dim) % 3 * dim + i % dim] + 1e-3 * noise[i])
        .collect();
    let data = to_f16(&near);
    tensor_scan_on(k, &Matrix { dim, data: &data }, "near duplicates");
    let (rows, dim) = (3000usize, 16usize);
    let data = integer_data(rows, dim, 25);
    let m = Matrix { dim, data: &data };
    let ranges = ranges_for(rows as u32);
    let queries = integer_queries(ranges.len(), dim, 26);
    for topk in [1, 10, 64] {
        let got = k.tensor_topk(&m, &queries, &ranges, topk).unwrap();
        let scan = k.segmented_topk(&m, &queries, &ranges, None, topk).unwrap();
        assert_eq!(got, scan, "{} integer rows, k={topk}", k.device());
        let brute = brute_topk(&m, &queries, &ranges, None, topk);
        assert_close(
            &got,
            &brute,
            1e-6,
            "tensor_topk integer rows vs brute force",
        );
    }
}

fn tensor_scan_on(k: &dyn Kernels, m: &Matrix<'_>, what: &str) {
    let ranges = ranges_for(m.rows() as u32);
    let queries = random_unit(ranges.len(), m.dim, 22);
    for topk in [10, 64] {
        let got = k.tensor_topk(m, &queries, &ranges, topk).unwrap();
        let want = brute_topk(m, &queries, &ranges, None, topk);
        let what = format!("{} tensor_topk {what}, k {topk}", k.device());
        assert_close(&got, &want, 1e-5, &what);
        check_properties(&got, &ranges, |_, _| true);
    }
}

fn timeline(rows: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut rng = Rng(seed);
    let (mut positions, mut groups) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    let (mut pos, mut group) = (0u32, 0u32);
    for _ in 0..rows {
        if rng.below(9) == 0 {
            group += 1;
        }
        pos += 1 + rng.below(3) as u32; // gaps, as with skipped blank turns
        positions.push(pos);
        groups.push(group);
    }
    (positions, groups)
}

/// A check (see the module docs).
pub fn fragrel_matches_reference(k: &dyn Kernels) {
    for dim in [64, 640] {
        fragrel_matches_reference_at(k, dim);
    }
}

fn fragrel_matches_reference_at(k: &dyn Kernels, dim: usize) {
    let rows = 3000usize;
    let data = to_f16(&random_unit(rows, dim, 8));
    let m = Matrix { dim, data: &data };
    let (positions, groups) = timeline(rows, 9);
    let t = Timeline {
        positions: &positions,
        groups: &groups,
    };
    let ranges = ranges_for(rows as u32);
    let queries = random_unit(ranges.len(), dim, 10);
    for p in [
        FragRelParams { alpha: 0.5, w: 0.8 },
        FragRelParams { alpha: 1.0, w: 0.3 },
        FragRelParams { alpha: 0.2, w: 1.0 },
    ] {
        let got = k
            .fragrel_topk(&m, &t, &queries, &ranges, None, 10, p)
            .unwrap();
        let want = brute_fragrel_topk(&m, &t, &queries, &ranges, None, 10, p);
        assert_close(&got, &want, 1e-4, &format!("fragrel dim {dim} {p:?}"));
        check_properties(&got, &ranges, |_, _| true);
    }
    // with a mask: the environment still sees every row, only the selection is limited
    let (row_buckets, query_masks) = random_mask(rows, ranges.len(), 2, 16, 11);
    let mask = BucketMask {
        tables: 2,
        buckets: 16,
        row_buckets: &row_buckets,
        query_masks: &query_masks,
    };
    let p = FragRelParams { alpha: 0.5, w: 0.8 };
    let got = k
        .fragrel_topk(&m, &t, &queries, &ranges, Some(&mask), 10, p)
        .unwrap();
    let want = brute_fragrel_topk(&m, &t, &queries, &ranges, Some(&mask), 10, p);
    assert_close(&got, &want, 1e-4, "fragrel masked");
    check_properties(&got, &ranges, |q, r| mask.selects(q, r as usize));
}

/// A check (see the module docs).
pub fn fragrel_without_environment_is_the_plain_top_k(k: &dyn Kernels) {
    // α = 0: s + 0·env = s exactly, so the fused kernel must select exactly as segmented_topk
    let (rows, dim) = (2600usize, 16usize);
    let data = integer_data(rows, dim, 12);
    let m = Matrix { dim, data: &data };
    let (positions, groups) = timeline(rows, 13);
    let t = Timeline {
        positions: &positions,
        groups: &groups,
    };
    let ranges = ranges_for(rows as u32);
    let queries = integer_queries(ranges.len(), dim, 14);
    let p = FragRelParams { alpha: 0.0, w: 0.8 };
    let fused = k
        .fragrel_topk(&m, &t, &queries, &ranges, None, 10, p)
        .unwrap();
    let plain = k.segmented_topk(&m, &queries, &ranges, None, 10).unwrap();
    assert_eq!(fused, plain, "{}", k.device());
    let brute = brute_fragrel_topk(&m, &t, &queries, &ranges, None, 10, p);
    assert_close(&fused, &brute, 1e-6, "fragrel α = 0 vs brute force");
}

/// A check (see the module docs).
pub fn lsh_buckets_agree_and_keep_recall(k: &dyn Kernels) {
    // clustered, like real embeddings: 100 topics × 40 rows, so true neighbours exist
    let (rows, dim) = (4000usize, 384usize);
    let centers = random_unit(100, dim, 15);
    let noisy = |c: usize, seed: u64| -> Vec<f32> {
        let noise = random_unit(1, dim, seed);
        let v: Vec<f32> = centers[c * dim..][..dim]
            .iter()
            .zip(&noise)
            .map(|(a, b)| a + 0.4 * b)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    };
    let x: Vec<f32> = (0..rows)
        .flat_map(|r| noisy(r % 100, 100 + r as u64))
        .collect();
    for (tables, buckets) in [(1, 16), (4, 64), (8, 256)] {
        let lsh = Lsh::new(
            dim,
            LshParams {
                buckets,
                tables,
                seed: 42,
            },
        );
        let got = k
            .lsh_project(&x, dim, lsh.projection(), tables, buckets)
            .unwrap();
        assert_eq!(got.len(), rows * tables);
        // against memdex-score's hashing (a different summation order: near-ties may flip)
        let same = (0..rows * tables)
            .filter(|&i| got[i] == lsh.bucket(&x[i / tables * dim..][..dim], i % tables))
            .count();
        let agreement = same as f64 / (rows * tables) as f64;
        assert!(
            agreement >= 0.995,
            "L={tables} b={buckets}: agreement {agreement}"
        );

        // recall@10 of the bucketed top-k (2 probes per table) against the exact scan, with
        // this device's bucket ids, must match the reference's within noise
        let nq = 50;
        let queries: Vec<f32> = (0..nq)
            .flat_map(|i| noisy(i * 37 % 100, 10_000 + i as u64))
            .collect();
        let probes: Vec<Vec<Vec<u32>>> = queries
            .chunks_exact(dim)
            .map(|q| (0..tables).map(|t| lsh.probes(q, t, 2)).collect())
            .collect();
        let qmask = BucketMask::query_bits(&probes, tables, buckets);
        let data = to_f16(&x);
        let m = Matrix { dim, data: &data };
        let ranges = vec![[0, rows as u32]; nq];
        let exact = brute_topk(&m, &queries, &ranges, None, 10);
        let recall = |ids: &[u32]| {
            let ids16: Vec<u16> = ids.iter().map(|&b| b as u16).collect();
            let mask = BucketMask {
                tables,
                buckets,
                row_buckets: &ids16,
                query_masks: &qmask,
            };
            let r = k
                .segmented_topk(&m, &queries, &ranges, Some(&mask), 10)
                .unwrap();
            let found: usize = (0..nq)
                .map(|q| {
                    let want = exact.hits(q);
                    r.hits(q)
                        .iter()
                        .filter(|h| want.iter().any(|w| w.1 == h.1))
                        .count()
                })
                .sum();
            found as f64 / (nq * 10) as f64
        };
        // the recall with memdex-score's bucket ids, not the CPU kernel's
        let reference: Vec<u32> = (0..rows * tables)
            .map(|i| lsh.bucket(&x[i / tables * dim..][..dim], i % tables))
            .collect();
        let (mine, theirs) = (recall(&got), recall(&reference));
        assert!(
            (mine - theirs).abs() <= 0.02,
            "L={tables} b={buckets}: recall {mine} vs reference {theirs}"
        );
        eprintln!(
            "{} L={tables} b={buckets}: recall {mine} (reference {theirs})",
            k.device()
        );
        if tables == 8 {
            assert!(mine > 0.5, "8 tables × 2 probes: recall {mine}");
        }
    }
}

/// A check (see the module docs).
pub fn invalid_inputs_are_errors(k: &dyn Kernels) {
    let data = vec![f16::ZERO; 12 * 10];
    let bad_dim = Matrix {
        dim: 12,
        data: &data,
    };
    let q = vec![0f32; 12];
    let e = k.segmented_topk(&bad_dim, &q, &[[0, 5]], None, 5);
    assert!(matches!(e, Err(KernelError::Invalid(_))), "{e:?}");
    let m = Matrix {
        dim: 8,
        data: &data[..80],
    };
    let q = vec![1f32; 8];
    for (range, topk) in [([0, 11], 5), ([3, 2], 5), ([0, 5], 0), ([0, 5], 129)] {
        let e = k.segmented_topk(&m, &q, &[range], None, topk);
        assert!(
            matches!(e, Err(KernelError::Invalid(_))),
            "{range:?} k={topk}: {e:?}"
        );
    }
    let e = k.lsh_project(&q, 8, &[0.0; 8 * 3], 1, 7);
    assert!(matches!(e, Err(KernelError::Invalid(_))), "{e:?}");
}

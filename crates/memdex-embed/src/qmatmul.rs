//! memdex's 16-bit integer GEMM: large batches (bulk embedding) on AVX2 and on AVX-512 VNNI.
//!
//! Why: on AVX2 the fastest float product is FMA, 2 × 8 multiply-adds a cycle per core, and
//! the f32 GEMM ([`crate::matmul`]) already runs at ~90 % of that. `vpmaddwd` multiplies 16
//! pairs of i16 and adds neighbours into 8 i32 lanes; beside a `vpaddd` it measured 81.5
//! multiply-adds/ns against FMA's 50.1 on one Zen 3 core (register-only loops). So the same
//! products in 16-bit integers have ~1.6× the ceiling.
//!
//! How, per `out = x · wᵀ + b` (same [`Epilogue`]s as the f32 GEMM):
//! - weights are quantised once per output column, symmetric: `w_q = round(w · s_j)`,
//!   `s_j` such that `‖w_q‖₂ ≈ 46,000 ≈ √2³¹` (and `|w_q| ≤ 32,767`);
//! - each activation row is quantised per call the same way, `a_q = round(a · r_i)`, with the
//!   largest `r_i` such that `|a_q| ≤ 32,767` and `‖a_q‖₂ · max_j ‖w_q‖₂ < 2³¹`;
//! - the tile sums `a_q · w_q` in i32 and the epilogue multiplies by `1 / (r_i · s_j)`.
//!
//! **No overflow, by construction:** every partial sum of `a_q · w_q` (each `vpmaddwd` pair,
//! each running total) is bounded by `‖a_q‖₂ · ‖w_q‖₂` (Cauchy–Schwarz), which the row scale
//! keeps below 2³¹, so the integer sums are exact whatever the input. Rounding each operand
//! to ~13–15 significant bits gives a relative error of ~1e-4 per product, far inside the
//! encoder's parity goal (cosine ≥ 0.9999 to sentence-transformers fp32; measured 0.99999+).
//! A row holding NaN or ±∞ comes out NaN, as the f32 GEMM's would. Every path is tested
//! against the f64 loop of `matmul::reference`.
//!
//! On AVX-512 CPUs with VNNI the same operands go through `vpdpwssd` on 512-bit registers
//! ([`vnni`]): one instruction for `vpmaddwd` + `vpaddd`, twice the lanes.

use crate::isa::Isa;
use crate::math::{self, MulAdd};
use crate::matmul::{self, on_tile, Epilogue, MR, NR};

/// Pairs of the reduction per depth block: the `KC2 × NR` i32 panel (24 KB) stays in L1.
const KC2: usize = 384;
/// A column's target `‖w_q‖₂`: √2³¹ less a margin, so both operands keep ~equal precision.
const W_NORM: f64 = 46_000.0;
/// The largest magnitude of a quantised value (symmetric: −32,768 is never used).
const Q_MAX: f64 = 32_767.0;

/// A weight matrix `w[n × k]` quantised per output column and packed as `ceil(n / NR)` panels
/// of `ceil(k / 2) × NR` i32 values, each holding two i16 (`w[j][2p]` low, `w[j][2p + 1]`
/// high) — the operand layout of `vpmaddwd`. Missing columns and the odd tail are zero.
#[derive(Debug)]
pub(crate) struct PackedI16 {
    n: usize,
    k: usize,
    pairs: usize,
    data: Vec<i32>,
    /// `1 / s_j` per column, padded to whole panels with 0 (NaN for a non-finite column).
    col_inv: Vec<f32>,
    /// Activation rows are scaled so that `‖a_q‖₂` stays below this.
    a_norm_max: f64,
}

/// Two i16 in one i32, `lo` at the lower address.
fn pair(lo: i16, hi: i16) -> i32 {
    (lo as u16 as u32 | ((hi as u16 as u32) << 16)) as i32
}

impl PackedI16 {
    /// Quantises and packs `w`, row-major `n × k`.
    pub(crate) fn pack(w: &[f32], n: usize, k: usize) -> PackedI16 {
        assert_eq!(w.len(), n * k, "weight shape");
        let pairs = k.div_ceil(2);
        let mut data = vec![0i32; n.div_ceil(NR) * pairs * NR];
        let mut col_inv = vec![0f32; n.div_ceil(NR) * NR];
        let mut w_norm_max = 0f64;
        for (j, row) in w.chunks_exact(k).enumerate() {
            let norm = row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt();
            if !norm.is_finite() {
                col_inv[j] = f32::NAN;
                continue;
            }
            if norm == 0.0 {
                continue;
            }
            let max = row.iter().fold(0f64, |m, &v| m.max((v as f64).abs()));
            let s = (W_NORM / norm).min(Q_MAX / max);
            let q: Vec<i16> = row
                .iter()
                .map(|&v| (v as f64 * s).round().clamp(-Q_MAX, Q_MAX) as i16)
                .collect();
            let q_norm = q.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt();
            w_norm_max = w_norm_max.max(q_norm);
            col_inv[j] = (1.0 / s) as f32;
            let panel = &mut data[(j / NR) * pairs * NR..][..pairs * NR];
            for (p, two) in q.chunks(2).enumerate() {
                panel[p * NR + j % NR] = pair(two[0], two.get(1).copied().unwrap_or(0));
            }
        }
        let a_norm_max = if w_norm_max > 0.0 {
            i32::MAX as f64 / w_norm_max
        } else {
            f64::INFINITY
        };
        PackedI16 {
            n,
            k,
            pairs,
            data,
            col_inv,
            a_norm_max,
        }
    }

    pub(crate) fn n(&self) -> usize {
        self.n
    }

    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// The weights as the integer GEMM sees them, `w_q / s_j`, row-major `n × k`.
    #[cfg(test)]
    pub(crate) fn dequantized(&self) -> Vec<f32> {
        let mut w = vec![0f32; self.n * self.k];
        for (j, row) in w.chunks_exact_mut(self.k).enumerate() {
            let panel = &self.data[(j / NR) * self.pairs * NR..];
            for (p, v) in row.iter_mut().enumerate() {
                let (lo, hi) = halves(panel[(p / 2) * NR + j % NR]);
                *v = [lo, hi][p % 2] as f32 * self.col_inv[j];
            }
        }
        w
    }

    /// Pairs `p0..p0 + kc` of panel `jp`.
    fn panel(&self, jp: usize, p0: usize, kc: usize) -> &[i32] {
        &self.data[(jp * self.pairs + p0) * NR..][..kc * NR]
    }
}

/// Quantised activation rows of one block, padded to whole [`MR`] groups with zero rows and
/// interleaved per group (BLIS's packed A: pair `p` of row `g·MR + i` at
/// `(g·pairs + p)·MR + i`, so a tile's six broadcasts per step read one 24-byte run), and
/// each row's `1 / r_i` (0 for padding, NaN if not finite).
#[derive(Debug, Default)]
pub(crate) struct QRows {
    q: Vec<i32>,
    inv: Vec<f32>,
    /// One row's pairs before they are interleaved.
    row: Vec<i32>,
}

impl QRows {
    /// Quantises rows `0..rows` of `a` (row length `w.k`) for `w`, on `kern`'s row kernels.
    #[inline(always)]
    fn fill<K: Kernel>(&mut self, kern: K, a: &[f32], rows: usize, w: &PackedI16) {
        let (k, pairs) = (w.k, w.pairs);
        let padded = rows.div_ceil(MR) * MR;
        self.q.clear();
        self.q.resize(padded * pairs, 0);
        self.inv.clear();
        self.inv.resize(padded, 0.0);
        // ‖a_q‖₂ ≤ r·‖a‖₂·(1 + ε) + ½√k: r and v·r are rounded to f32 (ε = 2⁻²³ covers both),
        // then to integers. The f32 sum of squares reads at most k·2⁻²⁴ low (k < 2²³), so
        // ‖a‖₂ ≤ norm·(1 + k·ε). With the slack below, the row scale keeps the bound rigorous.
        let slack = 1.0 + (k as f64 + 2.0) * f32::EPSILON as f64;
        let limit = (w.a_norm_max - 0.5 * (k as f64).sqrt()) / slack;
        self.row.resize(pairs, 0);
        for (i, row) in a[..rows * k].chunks_exact(k).enumerate() {
            let (max, sq) = kern.row_stats(row);
            if !max.is_finite() || sq.is_nan() {
                self.inv[i] = f32::NAN;
                continue;
            }
            if max == 0.0 {
                continue;
            }
            // finite values whose squares overflow f32 (|v| > 1.8e19) get their norm in f64
            let norm = if sq.is_finite() {
                (sq as f64).sqrt()
            } else {
                row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt()
            };
            // (capped so that rows of subnormals keep a finite scale: they round to zero)
            let r = (Q_MAX / max as f64).min(limit / norm).min(1e38) as f32;
            kern.quantize_row(row, r, &mut self.row);
            let group = &mut self.q[(i / MR) * pairs * MR..][..pairs * MR];
            for (d, &v) in group[i % MR..].iter_mut().step_by(MR).zip(&self.row) {
                *d = v;
            }
            self.inv[i] = 1.0 / r;
        }
    }

    /// Pair `p` of row `i` (`pairs` per row).
    #[cfg(test)]
    fn pair_at(&self, i: usize, p: usize, pairs: usize) -> i32 {
        self.q[((i / MR) * pairs + p) * MR + i % MR]
    }
}

/// Rows `0..rows` of `a` (row length `w.k`) as the integer GEMM sees them for `w`:
/// `a_q / r_i`, row-major,
/// on `isa`'s row kernels.
#[cfg(test)]
pub(crate) fn dequantized_rows(isa: Isa, a: &[f32], rows: usize, w: &PackedI16) -> Vec<f32> {
    let mut qa = QRows::default();
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => qa.fill(x86::Avx2Int::new().expect("AVX2"), a, rows, w),
        _ => qa.fill(Portable, a, rows, w),
    }
    let mut out = vec![0f32; rows * w.k];
    for (i, row) in out.chunks_exact_mut(w.k).enumerate() {
        for (p, v) in row.iter_mut().enumerate() {
            let (lo, hi) = halves(qa.pair_at(i, p / 2, w.pairs));
            *v = [lo, hi][p % 2] as f32 * qa.inv[i];
        }
    }
    out
}

/// A register tile of the integer GEMM: `c[i·ldc + j] (+)= (Σ_p a_q(i, p) · w_q(p, j)) ·
/// row_inv[i] · col_inv[j] (+ bias[j])` for `i < MR`, `j < NR`, over `kc` pairs; `a` is an
/// interleaved group ([`QRows`]): `a_q(i, p)` at `a[p·MR + i]`. Panics on short slices.
pub(crate) trait Kernel: Copy {
    type Fma: MulAdd;

    /// `(max |v|, Σ v²)` of a row (either may come out non-finite).
    #[inline(always)]
    fn row_stats(self, row: &[f32]) -> (f32, f32) {
        row.iter()
            .fold((0f32, 0f32), |(m, s), &v| (m.max(v.abs()), v.mul_add(v, s)))
    }

    /// `q[p] = pair(round(row[2p]·r), round(row[2p + 1]·r))`, ties to even, 0 past the end;
    /// `|row[i]·r| ≤ 32,767` is the caller's promise.
    #[inline(always)]
    fn quantize_row(self, row: &[f32], r: f32, q: &mut [i32]) {
        let quant = |v: f32| (v * r).round_ties_even() as i16;
        for (p, d) in q.iter_mut().enumerate() {
            let hi = row.get(2 * p + 1).map_or(0, |&v| quant(v));
            *d = pair(quant(row[2 * p]), hi);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn tile(
        self,
        kc: usize,
        a: &[i32],
        b: &[i32],
        scale: (&[f32; MR], &[f32; NR]),
        c: &mut [f32],
        ldc: usize,
        add_c: bool,
        bias: Option<&[f32; NR]>,
    );
}

/// The tile in plain Rust: the reference the AVX2 tile is tested against, and the path of an
/// integer-packed matrix on a CPU without AVX2.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

/// The i16 halves of a pair.
fn halves(v: i32) -> (i32, i32) {
    (v as i16 as i32, (v >> 16) as i16 as i32)
}

impl Kernel for Portable {
    type Fma = math::Baseline;

    fn tile(
        self,
        kc: usize,
        a: &[i32],
        b: &[i32],
        (ri, ci): (&[f32; MR], &[f32; NR]),
        c: &mut [f32],
        ldc: usize,
        add_c: bool,
        bias: Option<&[f32; NR]>,
    ) {
        let mut acc = [[0i32; NR]; MR];
        for (p, bp) in b[..kc * NR].chunks_exact(NR).enumerate() {
            for (i, row) in acc.iter_mut().enumerate() {
                let (a0, a1) = halves(a[p * MR + i]);
                for (s, &bv) in row.iter_mut().zip(bp) {
                    let (b0, b1) = halves(bv);
                    *s = s.wrapping_add(a0 * b0 + a1 * b1);
                }
            }
        }
        let acc =
            std::array::from_fn(|i| std::array::from_fn(|j| acc[i][j] as f32 * (ci[j] * ri[i])));
        matmul::store_tile(&acc, c, ldc, add_c, bias);
    }
}

/// `c = epilogue(a · wᵀ + b)` for one block of `rows` rows of `a` on `isa`'s tile.
#[allow(clippy::too_many_arguments)]
pub(crate) fn block(
    isa: Isa,
    a: &[f32],
    rows: usize,
    w: &PackedI16,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    qa: &mut QRows,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if vnni::Vnni::new().is_some() => {
            let kern = vnni::Vnni::new().expect("checked above");
            // SAFETY: the token exists, so the CPU has AVX-512F/BW/VNNI, AVX2 and FMA.
            #[allow(unsafe_code)]
            unsafe {
                vnni::block(kern, a, rows, w, b, c, epi, qa)
            }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => {
            let kern = x86::Avx2Int::new().expect("CPU lacks AVX2");
            // SAFETY: the token exists, so the CPU has AVX2 and FMA.
            #[allow(unsafe_code)]
            unsafe {
                x86::block_avx2(kern, a, rows, w, b, c, epi, qa)
            }
        }
        _ => block_with(Portable, a, rows, w, b, c, epi, qa),
    }
}

/// [`block`] with a given tile (inlined into each ISA's copy).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_with<K: Kernel>(
    kern: K,
    a: &[f32],
    rows: usize,
    w: &PackedI16,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    qa: &mut QRows,
) {
    let (n, pairs) = (w.n, w.pairs);
    qa.fill(kern, a, rows, w);
    let (act, residual) = match epi {
        Epilogue::Bias(act) => (act, false),
        Epilogue::ResidualLayerNorm { .. } => (None, true),
    };
    for (p0, kc) in matmul::depth_blocks(pairs, KC2) {
        let (first, last) = (p0 == 0, p0 + kc == pairs);
        for jp in 0..n.div_ceil(NR) {
            let bp = w.panel(jp, p0, kc);
            let j0 = jp * NR;
            let nc = NR.min(n - j0);
            let bias = matmul::panel_bias(b, j0, nc);
            let bias = first.then_some(&bias);
            let ci: &[f32; NR] = w.col_inv[j0..j0 + NR].try_into().expect("whole panel");
            for i0 in (0..rows).step_by(MR) {
                let mr = MR.min(rows - i0);
                let ri: &[f32; MR] = qa.inv[i0..i0 + MR].try_into().expect("padded rows");
                let a_ip = &qa.q[(i0 * pairs + p0 * MR)..];
                let add_c = residual || !first;
                on_tile(&mut c[i0 * n + j0..], n, (mr, nc), add_c, |c, ldc| {
                    kern.tile(kc, a_ip, bp, (ri, ci), c, ldc, add_c, bias)
                });
                if let (true, Some(act)) = (last, act) {
                    matmul::apply_act::<K::Fma>(c, n, (i0, mr), (j0, nc), act);
                }
            }
        }
    }
    matmul::finish_rows(c, rows, n, epi);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    //! The AVX2 tile: 6 rows × 16 columns = 12 ymm i32 accumulators, two weight vectors and
    //! one broadcast pair per step.
    use std::arch::x86_64::*;

    use super::{Epilogue, Kernel, PackedI16, QRows, MR, NR};

    /// The AVX2 integer tile; a value exists only on CPUs with AVX2 and FMA.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Avx2Int {
        _checked: (),
    }

    impl Avx2Int {
        pub(crate) fn new() -> Option<Avx2Int> {
            let ok = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            ok.then_some(Avx2Int { _checked: () })
        }
    }

    impl Kernel for Avx2Int {
        type Fma = crate::math::Fused;

        #[inline(always)]
        fn row_stats(self, row: &[f32]) -> (f32, f32) {
            // SAFETY: `self` exists only if the CPU has AVX2 + FMA.
            unsafe { row_stats(row) }
        }

        #[inline(always)]
        fn quantize_row(self, row: &[f32], r: f32, q: &mut [i32]) {
            assert!(q.len() >= row.len().div_ceil(2));
            // SAFETY: `q` holds a pair per two values (checked); AVX2 as above.
            unsafe { quantize_row(row, r, q) }
        }

        #[inline(always)]
        fn tile(
            self,
            kc: usize,
            a: &[i32],
            b: &[i32],
            scale: (&[f32; MR], &[f32; NR]),
            c: &mut [f32],
            ldc: usize,
            add_c: bool,
            bias: Option<&[f32; NR]>,
        ) {
            assert!(a.len() >= kc * MR);
            assert!(b.len() >= kc * NR && c.len() >= (MR - 1) * ldc + NR);
            // SAFETY: lengths checked above; `self` exists only if the CPU has AVX2 + FMA.
            unsafe {
                tile_6x16(
                    kc,
                    a.as_ptr(),
                    b.as_ptr(),
                    scale,
                    c.as_mut_ptr(),
                    ldc,
                    add_c,
                    bias,
                )
            }
        }
    }

    /// [`QRows::fill`] on the AVX2 row kernels, compiled for AVX2 + FMA: inlined into code
    /// compiled for AVX-512, its interleaving stores become `vpscatterdd` (slow on AMD).
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA (guaranteed by `kern`).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn fill(
        kern: Avx2Int,
        qa: &mut QRows,
        a: &[f32],
        rows: usize,
        w: &PackedI16,
    ) {
        qa.fill(kern, a, rows, w)
    }

    /// [`super::block_with`] compiled for AVX2 + FMA with the AVX2 tile inlined.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA (guaranteed by `kern`).
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn block_avx2(
        kern: Avx2Int,
        a: &[f32],
        rows: usize,
        w: &PackedI16,
        b: &[f32],
        c: &mut [f32],
        epi: Epilogue<'_>,
        qa: &mut QRows,
    ) {
        super::block_with(kern, a, rows, w, b, c, epi, qa)
    }

    /// [`Kernel::row_stats`], eight lanes at a time in four independent chains (one chain
    /// waits on the FMA's latency).
    ///
    /// # Safety
    /// The CPU has AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn row_stats(row: &[f32]) -> (f32, f32) {
        let abs = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX));
        let (mut m, mut s) = ([_mm256_setzero_ps(); 4], [_mm256_setzero_ps(); 4]);
        let chunks = row.chunks_exact(32);
        let tail = chunks.remainder();
        for c in chunks {
            for (q, (m, s)) in m.iter_mut().zip(s.iter_mut()).enumerate() {
                let v = _mm256_loadu_ps(c.as_ptr().add(8 * q));
                // max_ps returns its second operand when either is NaN: keep NaN visible in `s`
                *m = _mm256_max_ps(*m, _mm256_and_ps(v, abs));
                *s = _mm256_fmadd_ps(v, v, *s);
            }
        }
        let m = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
        let s = _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3]));
        let (mut ml, mut sl) = ([0f32; 8], [0f32; 8]);
        _mm256_storeu_ps(ml.as_mut_ptr(), m);
        _mm256_storeu_ps(sl.as_mut_ptr(), s);
        let fold = |(m, s): (f32, f32), &v: &f32| (m.max(v.abs()), v.mul_add(v, s));
        let (m, s) = tail.iter().fold((0.0, 0.0), fold);
        let m = ml.iter().fold(m, |a, &b| a.max(b));
        (m, sl.iter().sum::<f32>() + s)
    }

    /// [`Kernel::quantize_row`], sixteen values at a time (`vcvtps2dq` rounds to nearest
    /// even; `vpackssdw` saturates, never reached within the caller's promise).
    ///
    /// # Safety
    /// `q.len() ≥ ceil(row.len() / 2)`; the CPU has AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn quantize_row(row: &[f32], r: f32, q: &mut [i32]) {
        let rv = _mm256_set1_ps(r);
        let full = row.len() / 16;
        for c in 0..full {
            let src = row.as_ptr().add(c * 16);
            let lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src), rv));
            let hi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src.add(8)), rv));
            // packs works per 128-bit lane: [lo0-3 hi0-3 lo4-7 hi4-7] → restore the order
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(lo, hi));
            _mm256_storeu_si256(q.as_mut_ptr().add(c * 8) as *mut __m256i, packed);
        }
        let rest = &row[full * 16..];
        super::Portable.quantize_row(rest, r, &mut q[full * 8..]);
    }

    /// # Safety
    /// `a`: `kc·MR` interleaved pairs; `b`: `kc·NR`; `c`: rows `0..MR`
    /// of `NR` values at stride `ldc`; the CPU has AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_6x16(
        kc: usize,
        a: *const i32,
        b: *const i32,
        (ri, ci): (&[f32; MR], &[f32; NR]),
        c: *mut f32,
        ldc: usize,
        add_c: bool,
        bias: Option<&[f32; NR]>,
    ) {
        let mut acc = [[_mm256_setzero_si256(); 2]; MR];
        for p in 0..kc {
            let b0 = _mm256_loadu_si256(b.add(p * NR) as *const __m256i);
            let b1 = _mm256_loadu_si256(b.add(p * NR + 8) as *const __m256i);
            for (i, row) in acc.iter_mut().enumerate() {
                let av = _mm256_set1_epi32(*a.add(p * MR + i));
                row[0] = _mm256_add_epi32(row[0], _mm256_madd_epi16(av, b0));
                row[1] = _mm256_add_epi32(row[1], _mm256_madd_epi16(av, b1));
            }
        }
        let (c0, c1) = (
            _mm256_loadu_ps(ci.as_ptr()),
            _mm256_loadu_ps(ci.as_ptr().add(8)),
        );
        let (b0, b1) = match bias {
            Some(bias) => (
                _mm256_loadu_ps(bias.as_ptr()),
                _mm256_loadu_ps(bias.as_ptr().add(8)),
            ),
            None => (_mm256_setzero_ps(), _mm256_setzero_ps()),
        };
        for (i, row) in acc.iter().enumerate() {
            let out = c.add(i * ldc);
            let s = _mm256_set1_ps(ri[i]);
            let mut v0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row[0]), _mm256_mul_ps(c0, s), b0);
            let mut v1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row[1]), _mm256_mul_ps(c1, s), b1);
            if add_c {
                v0 = _mm256_add_ps(v0, _mm256_loadu_ps(out));
                v1 = _mm256_add_ps(v1, _mm256_loadu_ps(out.add(8)));
            }
            _mm256_storeu_ps(out, v0);
            _mm256_storeu_ps(out.add(8), v1);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod vnni;

#[cfg(test)]
mod tests;

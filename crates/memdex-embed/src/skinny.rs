//! The skinny linear layer: `out_t[j·t + i] = b[j] + x_i · w_j` for a few activation rows
//! `x_i` (a search query: ≤ 32 tokens) and every weight row `w_j`.
//!
//! gemm packs the whole weight matrix for every call, which for a handful of rows costs more
//! than the product; here each weight is read once, straight from the model's layout, into
//! register tiles of up to 4 activation rows × 4 weight rows (16 independent FMA chains).
//! Weights are f32, or IEEE half bits ([`f16_bits`]) widened in registers: half the memory
//! traffic, so MiniLM's encoder (21 MB in f16) stays in the L3 cache between queries.
//!
//! Three code paths, picked by the encoder's [`Isa`] (so `MEMDEX_CPU_ISA` forces them): AVX-512,
//! AVX2 + FMA + F16C (both with explicit intrinsics: auto-vectorising the tiles proved
//! fragile), and a portable loop. Every path is tested against [`reference`] on the machine
//! running the tests.
//!
//! Half weights also come in a panel layout ([`half_panels`], [`panels_block`]): 16 weight
//! rows interleaved along `k`, so a tile of up to 6 activation rows × 16 outputs is 12 FMA
//! chains fed by one broadcast per row and two widened loads per step, with no horizontal
//! sums. On AVX2 the row-major dot-product tiles above spend as many F16C conversions as
//! FMAs (2 × 4 tile) plus a horizontal sum per output; the panel tile converts each weight
//! once per 6 rows. The encoder uses panels on every ISA but AVX-512, whose dot-product
//! tiles (4 × 4, 16 lanes) keep the row-major copy.

use crate::isa::Isa;

/// IEEE half-precision bits of `v`, round to nearest even; magnitudes below the smallest
/// normal half (6.1e-5) become zero, so the kernels never meet a subnormal.
pub fn f16_bits(v: f32) -> u16 {
    if v.abs() < 6.103_515_6e-5 {
        return if v.is_sign_negative() { 0x8000 } else { 0 };
    }
    half::f16::from_f32(v).to_bits()
}

/// Widens half bits from [`f16_bits`] (zero, normals and the sign are exact).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    half::f16::from_bits(h).to_f32()
}

/// Weight matrix rows `[n × k]`, f32 or half bits.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    F32(&'a [f32]),
    F16(&'a [u16]),
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match self {
            Rows::F32(w) => w.len(),
            Rows::F16(w) => w.len(),
        }
    }
}

/// `out_t[j·t + i] = b[j] + x_i · w_j` for the `t` rows of `x` (`t × k`) and the `b.len()`
/// rows of `w`, on instruction set `isa` (the encoder's, [`Isa::selected`]). Panics if the
/// CPU lacks it, or on shape mismatch.
pub fn skinny_block(
    isa: Isa,
    x: &[f32],
    t: usize,
    k: usize,
    w: Rows<'_>,
    b: &[f32],
    out_t: &mut [f32],
) {
    let n = b.len();
    assert!(x.len() >= t * k && w.len() >= n * k && out_t.len() >= n * t);
    match isa {
        Isa::Portable => portable(x, t, k, w, b, out_t),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            assert!(std::arch::is_x86_feature_detected!("avx512f"));
            // SAFETY: the CPU has AVX-512F (checked above); shapes checked above.
            #[allow(unsafe_code)]
            unsafe {
                match w {
                    Rows::F32(w) => x86::drive_f32_512(x, t, k, w, b, out_t),
                    Rows::F16(w) => x86::drive_f16_512(x, t, k, w, b, out_t),
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            assert!(
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("f16c")
            );
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above); shapes checked above.
            #[allow(unsafe_code)]
            unsafe {
                match w {
                    Rows::F32(w) => x86::drive_f32_256(x, t, k, w, b, out_t),
                    Rows::F16(w) => x86::drive_f16_256(x, t, k, w, b, out_t),
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        _ => portable(x, t, k, w, b, out_t),
    }
}

fn portable(x: &[f32], t: usize, k: usize, w: Rows<'_>, b: &[f32], out_t: &mut [f32]) {
    let mut row = vec![0f32; k];
    for (j, bj) in b.iter().enumerate() {
        let wr: &[f32] = match w {
            Rows::F32(w) => &w[j * k..(j + 1) * k],
            Rows::F16(w) => {
                for (d, s) in row.iter_mut().zip(&w[j * k..(j + 1) * k]) {
                    *d = f16_to_f32(*s);
                }
                &row
            }
        };
        for i in 0..t {
            out_t[j * t + i] = crate::math::dot(&x[i * k..(i + 1) * k], wr) + bj;
        }
    }
}

/// Output columns per panel of [`half_panels`].
pub const PANEL: usize = 16;

/// Most activation rows one panel tile holds (12 accumulators of 8 lanes on AVX2).
const PANEL_ROWS: usize = 6;

/// `w` (`n × k`, row-major f32) as [`f16_bits`] in panels of [`PANEL`] weight rows: panel
/// `p` is `k` runs of 16 values, run `q` holding `w[p·16 + c][q]` for `c < 16` (0 past `n`).
pub fn half_panels(w: &[f32], n: usize, k: usize) -> Vec<u16> {
    assert!(w.len() >= n * k);
    let mut out = vec![0u16; n.div_ceil(PANEL) * PANEL * k];
    for (p, panel) in out.chunks_exact_mut(PANEL * k).enumerate() {
        for (c, j) in (p * PANEL..n.min((p + 1) * PANEL)).enumerate() {
            for (q, &v) in w[j * k..(j + 1) * k].iter().enumerate() {
                panel[q * PANEL + c] = f16_bits(v);
            }
        }
    }
    out
}

/// `y[p·t·16 + i·16 + c] = x_i · w_{p·16+c}` for every panel `p` of `w16` (whole panels of
/// [`half_panels`]) and the `t` rows of `x` (`t × k`): `y` is panel-major, `t × 16` per
/// panel, no bias. Panics on shape mismatch or if the CPU lacks `isa`.
pub fn panels_block(isa: Isa, x: &[f32], t: usize, k: usize, w16: &[u16], y: &mut [f32]) {
    assert!(k > 0 && w16.len().is_multiple_of(PANEL * k));
    let panels = w16.len() / (PANEL * k);
    assert!(x.len() >= t * k && y.len() >= panels * t * PANEL);
    if t == 0 {
        return;
    }
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => {
            assert!(
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("f16c")
            );
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above); shapes checked above.
            #[allow(unsafe_code)]
            unsafe {
                panel_x86::drive(x, t, k, w16, y)
            }
        }
        _ => panels_portable(x, t, k, w16, y),
    }
}

/// Row blocks of at most [`PANEL_ROWS`], as even as possible (13 rows → 5, 4, 4): a short
/// last block would run its tile at a fraction of the FMA rate.
fn row_blocks(t: usize) -> impl Iterator<Item = (usize, usize)> {
    let blocks = t.div_ceil(PANEL_ROWS);
    (0..blocks).scan(0, move |i, b| {
        let mr = (t - *i).div_ceil(blocks - b);
        let start = *i;
        *i += mr;
        Some((start, mr))
    })
}

/// Each panel is widened once (a software conversion per weight, not one per row), then
/// every row runs over it 16 lanes at a time.
fn panels_portable(x: &[f32], t: usize, k: usize, w16: &[u16], y: &mut [f32]) {
    let mut wide = vec![0f32; PANEL * k];
    for (panel, yp) in w16
        .chunks_exact(PANEL * k)
        .zip(y.chunks_exact_mut(t * PANEL))
    {
        for (d, &h) in wide.iter_mut().zip(panel) {
            *d = f16_to_f32(h);
        }
        for (i, yi) in yp.chunks_exact_mut(PANEL).enumerate() {
            let mut acc = [0f32; PANEL];
            for (run, &xv) in wide.chunks_exact(PANEL).zip(&x[i * k..(i + 1) * k]) {
                for (a, &w) in acc.iter_mut().zip(run) {
                    *a += xv * w;
                }
            }
            yi.copy_from_slice(&acc);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod panel_x86 {
    //! The panel tile with explicit intrinsics. Callers guarantee AVX2 + FMA + F16C and the
    //! shapes of [`super::panels_block`].
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn drive(x: &[f32], t: usize, k: usize, w16: &[u16], y: &mut [f32]) {
        let panels = w16.chunks_exact(super::PANEL * k);
        for (panel, yp) in panels.zip(y.chunks_exact_mut(t * super::PANEL)) {
            let w = panel.as_ptr();
            for (i, mr) in super::row_blocks(t) {
                let (xi, yi) = (x[i * k..].as_ptr(), yp[i * super::PANEL..].as_mut_ptr());
                match mr {
                    1 => tile::<1>(xi, k, w, yi),
                    2 => tile::<2>(xi, k, w, yi),
                    3 => tile::<3>(xi, k, w, yi),
                    4 => tile::<4>(xi, k, w, yi),
                    5 => tile::<5>(xi, k, w, yi),
                    _ => tile::<6>(xi, k, w, yi),
                }
            }
        }
    }

    /// `MR` rows of `x` (row stride `k`) × one panel (`k` runs of 16 halves) into `MR × 16`
    /// values at `y`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tile<const MR: usize>(x: *const f32, k: usize, w: *const u16, y: *mut f32) {
        let mut acc = [[_mm256_setzero_ps(); 2]; MR];
        for q in 0..k {
            let run = w.add(q * super::PANEL);
            let b0 = _mm256_cvtph_ps(_mm_loadu_si128(run as *const __m128i));
            let b1 = _mm256_cvtph_ps(_mm_loadu_si128(run.add(8) as *const __m128i));
            for (i, a) in acc.iter_mut().enumerate() {
                let xv = _mm256_broadcast_ss(&*x.add(i * k + q));
                a[0] = _mm256_fmadd_ps(xv, b0, a[0]);
                a[1] = _mm256_fmadd_ps(xv, b1, a[1]);
            }
        }
        for (i, a) in acc.iter().enumerate() {
            _mm256_storeu_ps(y.add(i * super::PANEL), a[0]);
            _mm256_storeu_ps(y.add(i * super::PANEL + 8), a[1]);
        }
    }
}

/// The plain f64 loop every path must match.
#[cfg(test)]
pub fn reference(x: &[f32], t: usize, k: usize, w: Rows<'_>, b: &[f32], out_t: &mut [f32]) {
    for (j, bj) in b.iter().enumerate() {
        for i in 0..t {
            let s: f64 = (0..k)
                .map(|q| {
                    let wv = match w {
                        Rows::F32(w) => w[j * k + q],
                        Rows::F16(w) => f16_to_f32(w[j * k + q]),
                    };
                    x[i * k + q] as f64 * wv as f64
                })
                .sum();
            out_t[j * t + i] = s as f32 + bj;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    //! Register tiles with explicit intrinsics. Callers guarantee the CPU features and
    //! the shapes (`x`: t × k, `w`: n × k, `out_t`: n × t with n = `b.len()`).
    use std::arch::x86_64::*;

    /// Defines a tile `TT` activation rows × `RR` weight rows and the driver over all rows.
    macro_rules! kernel {
        ($tile:ident, $drive:ident, $feat:literal, $wty:ty, $vec:ty, $lanes:literal,
         $zero:ident, $fma:ident, $loadx:expr, $loadw:expr, $sum:expr, $tt:literal) => {
            #[target_feature(enable = $feat)]
            unsafe fn $tile<const TT: usize, const RR: usize>(
                xs: [*const f32; TT],
                ws: [*const $wty; RR],
                k: usize,
            ) -> [[f32; RR]; TT] {
                let body = k / $lanes * $lanes;
                let mut acc = [[$zero(); RR]; TT];
                let mut p = 0;
                while p < body {
                    let mut wv = [$zero(); RR];
                    for r in 0..RR {
                        wv[r] = $loadw(ws[r].add(p));
                    }
                    for i in 0..TT {
                        let xv = $loadx(xs[i].add(p));
                        for r in 0..RR {
                            acc[i][r] = $fma(xv, wv[r], acc[i][r]);
                        }
                    }
                    p += $lanes;
                }
                let mut out = [[0f32; RR]; TT];
                for i in 0..TT {
                    for r in 0..RR {
                        let mut s: f32 = $sum(acc[i][r]);
                        for q in body..k {
                            s += *xs[i].add(q) * super::Widen::widen(*ws[r].add(q));
                        }
                        out[i][r] = s;
                    }
                }
                out
            }

            #[target_feature(enable = $feat)]
            pub(super) unsafe fn $drive(
                x: &[f32],
                t: usize,
                k: usize,
                w: &[$wty],
                b: &[f32],
                out_t: &mut [f32],
            ) {
                let n = b.len();
                let xp = |i: usize| x[i * k..(i + 1) * k].as_ptr();
                let mut j = 0;
                while j + 4 <= n {
                    let ws: [*const $wty; 4] =
                        std::array::from_fn(|r| w[(j + r) * k..(j + r + 1) * k].as_ptr());
                    let mut i = 0;
                    while i + $tt <= t {
                        let o = $tile::<$tt, 4>(std::array::from_fn(|q| xp(i + q)), ws, k);
                        for (q, row) in o.iter().enumerate() {
                            for (r, v) in row.iter().enumerate() {
                                out_t[(j + r) * t + i + q] = v + b[j + r];
                            }
                        }
                        i += $tt;
                    }
                    while i < t {
                        let o = $tile::<1, 4>([xp(i)], ws, k);
                        for (r, v) in o[0].iter().enumerate() {
                            out_t[(j + r) * t + i] = v + b[j + r];
                        }
                        i += 1;
                    }
                    j += 4;
                }
                while j < n {
                    let ws = [w[j * k..(j + 1) * k].as_ptr()];
                    for i in 0..t {
                        out_t[j * t + i] = $tile::<1, 1>([xp(i)], ws, k)[0][0] + b[j];
                    }
                    j += 1;
                }
            }
        };
    }

    #[inline(always)]
    unsafe fn load_f16_512(p: *const u16) -> __m512 {
        _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
    }

    #[inline(always)]
    unsafe fn load_f16_256(p: *const u16) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }

    #[inline(always)]
    unsafe fn sum256(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    kernel!(
        tile_f32_512,
        drive_f32_512,
        "avx512f",
        f32,
        __m512,
        16,
        _mm512_setzero_ps,
        _mm512_fmadd_ps,
        _mm512_loadu_ps,
        _mm512_loadu_ps,
        _mm512_reduce_add_ps,
        4
    );
    kernel!(
        tile_f16_512,
        drive_f16_512,
        "avx512f",
        u16,
        __m512,
        16,
        _mm512_setzero_ps,
        _mm512_fmadd_ps,
        _mm512_loadu_ps,
        load_f16_512,
        _mm512_reduce_add_ps,
        4
    );
    kernel!(
        tile_f32_256,
        drive_f32_256,
        "avx2,fma,f16c",
        f32,
        __m256,
        8,
        _mm256_setzero_ps,
        _mm256_fmadd_ps,
        _mm256_loadu_ps,
        _mm256_loadu_ps,
        sum256,
        2
    );
    kernel!(
        tile_f16_256,
        drive_f16_256,
        "avx2,fma,f16c",
        u16,
        __m256,
        8,
        _mm256_setzero_ps,
        _mm256_fmadd_ps,
        _mm256_loadu_ps,
        load_f16_256,
        sum256,
        2
    );
}

/// A weight element as f32 (scalar tails of the tiles).
#[cfg(target_arch = "x86_64")]
trait Widen: Copy {
    fn widen(self) -> f32;
}

#[cfg(target_arch = "x86_64")]
impl Widen for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}

#[cfg(target_arch = "x86_64")]
impl Widen for u16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        f16_to_f32(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trip() {
        for v in [
            0.0f32, -0.0, 1.0, -2.5, 0.04, -0.123_456, 6.2e-5, 3e-5, -3e-5, 65_000.0,
        ] {
            let back = f16_to_f32(f16_bits(v));
            assert!(
                (back - v).abs() <= v.abs() / 1024.0 + 6.2e-5,
                "{v} -> {back}"
            );
            if v.abs() < 6.1e-5 {
                assert_eq!(back, 0.0);
            }
        }
    }

    /// Activations `t × k`, weights `n × k` and their half bits, spread over ±1 and ±0.05.
    fn case(t: usize, k: usize, n: usize) -> (Vec<f32>, Vec<f32>, Vec<u16>) {
        let x: Vec<f32> = (0..t * k)
            .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
            .collect();
        let w: Vec<f32> = (0..n * k)
            .map(|i| ((i * 104_729) % 997) as f32 / 9970.0 - 0.05)
            .collect();
        let w16 = w.iter().map(|&v| f16_bits(v)).collect();
        (x, w, w16)
    }

    /// Every kernel path against the f64 loop: relative tolerance 1e-4.
    fn assert_close(g: f32, e: f32, what: impl Fn() -> String) {
        assert!(
            (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
            "{}: {g} vs {e}",
            what()
        );
    }

    #[test]
    fn panels_match_reference_on_every_path() {
        // t up to the small-batch limit (row blocks of 1..6) and 0, n off the panel width, odd k
        let shapes = [
            (1, 384, 16),
            (13, 384, 1152),
            (7, 1536, 40),
            (32, 37, 5),
            (6, 1, 17),
            (0, 384, 16),
            (2, 24, 3),
        ];
        for path in Isa::available() {
            for (t, k, n) in shapes {
                let (x, w, w16) = case(t, k, n);
                let panels = half_panels(&w, n, k);
                let mut y = vec![f32::NAN; n.div_ceil(PANEL) * PANEL * t];
                panels_block(path, &x, t, k, &panels, &mut y);
                let zero = vec![0f32; n];
                let mut want = vec![0f32; n * t];
                reference(&x, t, k, Rows::F16(&w16), &zero, &mut want);
                for j in 0..n {
                    for i in 0..t {
                        let (g, e) = (
                            y[(j / PANEL) * t * PANEL + i * PANEL + j % PANEL],
                            want[j * t + i],
                        );
                        assert_close(g, e, || format!("{path:?} t {t} k {k} n {n} [{i}, {j}]"));
                    }
                }
            }
        }
    }

    #[test]
    fn row_blocks_are_even_and_cover_the_rows() {
        for t in 0..40 {
            let blocks: Vec<_> = row_blocks(t).collect();
            assert_eq!(blocks.iter().map(|b| b.1).sum::<usize>(), t);
            let (lo, hi) = blocks
                .iter()
                .fold((usize::MAX, 0), |(l, h), b| (l.min(b.1), h.max(b.1)));
            assert!(
                t == 0 || (hi <= PANEL_ROWS && hi - lo <= 1),
                "{t}: {blocks:?}"
            );
        }
        assert_eq!(row_blocks(13).collect::<Vec<_>>(), [(0, 5), (5, 4), (9, 4)]);
    }

    #[test]
    fn every_path_matches_reference() {
        // odd shapes exercise every tile and the scalar tails; 384 / 1536 are MiniLM's
        let shapes = [
            (1, 384, 96),
            (2, 384, 8),
            (5, 384, 7),
            (11, 1536, 13),
            (3, 37, 5),
            (9, 24, 4),
        ];
        for path in Isa::available() {
            for (t, k, n) in shapes {
                let (x, w, w16) = case(t, k, n);
                let b: Vec<f32> = (0..n).map(|j| j as f32 * 0.01).collect();
                for rows in [Rows::F32(&w), Rows::F16(&w16)] {
                    let (mut got, mut want) = (vec![0f32; n * t], vec![0f32; n * t]);
                    skinny_block(path, &x, t, k, rows, &b, &mut got);
                    reference(&x, t, k, rows, &b, &mut want);
                    for (g, e) in got.iter().zip(&want) {
                        assert_close(*g, *e, || format!("{path:?} t {t} k {k} n {n}"));
                    }
                }
            }
        }
    }
}

//! The 16-bit integer GEMM on AVX-512 VNNI: `vpdpwssd` multiplies 32 pairs of i16 and adds
//! each pair's sum into one of 16 i32 lanes, in one instruction where AVX2 needs `vpmaddwd`
//! and `vpaddd` on half the lanes. Same operands as the AVX2 tile ([`PackedI16`] panels,
//! [`QRows`] groups of [`MR`] interleaved rows), same exact sums (the products are the same;
//! the lanes wrap like `vpaddd`, never reached under the Cauchy–Schwarz bound), same
//! epilogues.
//!
//! The tile is up to two row groups × two panels: 12 rows × 32 columns = 24 zmm accumulators
//! (of 32), two weight vectors and one broadcast per step; smaller variants cover the edges.
//! The depth block is half the AVX2 one so that the two `KC × NR` panels a tile reads (24 KB)
//! stay in L1.

use std::arch::x86_64::*;

use super::x86::Avx2Int;
use super::{Epilogue, Kernel, PackedI16, QRows, MR, NR};
use crate::matmul;

/// Pairs per depth block (two panels of `KC × NR` i32 = 24 KB).
const KC: usize = 192;
/// Row groups of a full tile.
const G: usize = 2;
/// Panels of a full tile.
const P: usize = 2;

/// The AVX-512 VNNI tile; a value exists only on CPUs with AVX-512F/BW/VNNI, AVX2 and FMA.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vnni {
    /// The row kernels (quantisation) are the AVX2 ones.
    rows: Avx2Int,
}

impl Vnni {
    pub(crate) fn new() -> Option<Vnni> {
        let rows = Avx2Int::new()?;
        crate::isa::has_avx512_vnni().then_some(Vnni { rows })
    }

    /// A `g·MR × p·NR` tile (`g ≤ G`, `p ≤ P`): `c[i·ldc + j] (+)= (Σ_p a_q · w_q) · ri · ci
    /// (+ bias)`, `a[g]` the interleaved pairs of row group `g`, `b[p]` panel `p`'s `kc` pairs.
    /// Panics on short slices.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tile<const GG: usize, const PP: usize>(
        self,
        kc: usize,
        a: [&[i32]; GG],
        b: [&[i32]; PP],
        scale: (&[[f32; MR]; GG], &[[f32; NR]; PP]),
        c: &mut [f32],
        ldc: usize,
        add_c: bool,
        bias: Option<&[[f32; NR]; PP]>,
    ) {
        assert!(GG > 0 && PP > 0 && GG <= G && PP <= P);
        assert!(a.iter().all(|a| a.len() >= kc * MR));
        assert!(b.iter().all(|b| b.len() >= kc * NR));
        assert!(c.len() >= (GG * MR - 1) * ldc + PP * NR);
        // SAFETY: lengths checked above; `self` exists only if the CPU has AVX-512F/BW/VNNI.
        #[allow(unsafe_code)]
        unsafe {
            tile::<GG, PP>(
                kc,
                a.map(<[i32]>::as_ptr),
                b.map(<[i32]>::as_ptr),
                scale,
                c.as_mut_ptr(),
                ldc,
                add_c,
                bias,
            )
        }
    }
}

/// [`super::block`] on the VNNI tile.
///
/// # Safety
/// The CPU must have AVX-512F/BW/VNNI, AVX2 and FMA (guaranteed by `kern`).
#[allow(unsafe_code, clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
pub(super) unsafe fn block(
    kern: Vnni,
    a: &[f32],
    rows: usize,
    w: &PackedI16,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    qa: &mut QRows,
) {
    let (n, pairs) = (w.n, w.pairs);
    // SAFETY: `kern.rows` exists, so the CPU has AVX2 and FMA.
    unsafe { super::x86::fill(kern.rows, qa, a, rows, w) };
    let (act, residual) = match epi {
        Epilogue::Bias(act) => (act, false),
        Epilogue::ResidualLayerNorm { .. } => (None, true),
    };
    let panels = n.div_ceil(NR);
    for (p0, kc) in matmul::depth_blocks(pairs, KC) {
        let (first, last) = (p0 == 0, p0 + kc == pairs);
        let add_c = residual || !first;
        for jp in (0..panels).step_by(P) {
            let cols = Cols::new(w, b, jp, (p0, kc), first);
            for i0 in (0..rows).step_by(G * MR) {
                let mr = (G * MR).min(rows - i0);
                let ri = |g: usize| -> [f32; MR] {
                    qa.inv[i0 + g * MR..][..MR].try_into().expect("padded rows")
                };
                let group = |g: usize| &qa.q[((i0 + g * MR) * pairs + p0 * MR)..];
                let c_tile = &mut c[i0 * n + cols.j0..];
                let shape = (if mr > MR { G * MR } else { MR }, cols.np * NR);
                on_tile(c_tile, n, (mr, cols.nc), shape, add_c, |c, ldc| {
                    // the tile of row groups `$g` × panels `$q` (bias and scales copied for
                    // one panel, read in place for two)
                    macro_rules! tile {
                        ([$($g:literal),+], [$q:literal]) => {
                            kern.tile(
                                kc,
                                [$(group($g)),+],
                                [cols.b[$q]],
                                (&[$(ri($g)),+], &[cols.ci[$q]]),
                                c,
                                ldc,
                                add_c,
                                cols.bias.map(|b| [b[$q]]).as_ref(),
                            )
                        };
                        ([$($g:literal),+], [$($q:literal),+]) => {
                            kern.tile(
                                kc,
                                [$(group($g)),+],
                                [$(cols.b[$q]),+],
                                (&[$(ri($g)),+], &cols.ci),
                                c,
                                ldc,
                                add_c,
                                cols.bias.as_ref(),
                            )
                        };
                    }
                    match (mr > MR, cols.np) {
                        (true, 2) => tile!([0, 1], [0, 1]),
                        (true, _) => tile!([0, 1], [0]),
                        (false, 2) => tile!([0], [0, 1]),
                        (false, _) => tile!([0], [0]),
                    }
                });
                if let (true, Some(act)) = (last, act) {
                    matmul::apply_act::<<Avx2Int as Kernel>::Fma>(
                        c,
                        n,
                        (i0, mr),
                        (cols.j0, cols.nc),
                        act,
                    );
                }
            }
        }
    }
    matmul::finish_rows(c, rows, n, epi);
}

/// The up to [`P`] panels of one column step: their weights for the depth block, column
/// scales and (on the first depth block) bias, zero past the matrix's last column.
struct Cols<'a> {
    j0: usize,
    /// Columns of `c` they cover, and panels.
    nc: usize,
    np: usize,
    b: [&'a [i32]; P],
    ci: [[f32; NR]; P],
    bias: Option<[[f32; NR]; P]>,
}

impl<'a> Cols<'a> {
    #[inline(always)]
    fn new(w: &'a PackedI16, b: &[f32], jp: usize, (p0, kc): (usize, usize), first: bool) -> Self {
        let np = P.min(w.n.div_ceil(NR) - jp);
        let j0 = jp * NR;
        let nc = (np * NR).min(w.n - j0);
        let panel = |q: usize| w.panel(jp + q.min(np - 1), p0, kc);
        let ci = std::array::from_fn(|q| {
            let mut s = [0f32; NR];
            if q < np {
                s.copy_from_slice(&w.col_inv[j0 + q * NR..][..NR]);
            }
            s
        });
        let bias = first.then(|| {
            std::array::from_fn(|q| {
                let start = (j0 + q * NR).min(w.n);
                matmul::panel_bias(b, start, NR.min(w.n - start))
            })
        });
        Cols {
            j0,
            nc,
            np,
            b: std::array::from_fn(panel),
            ci,
            bias,
        }
    }
}

/// Runs a tile of `shape` (at most `G·MR × P·NR`) on the `mr × nc` corner of `c` (row stride
/// `ldc`): in place when the corner is the tile's whole shape; else through a buffer, the
/// corner copied in (when the tile adds to `c`) and back.
#[inline(always)]
fn on_tile(
    c: &mut [f32],
    ldc: usize,
    (mr, nc): (usize, usize),
    shape: (usize, usize),
    add_c: bool,
    tile: impl FnOnce(&mut [f32], usize),
) {
    const W: usize = P * NR;
    if (mr, nc) == shape {
        return tile(c, ldc);
    }
    let mut buf = [0f32; G * MR * W];
    if add_c {
        for i in 0..mr {
            buf[i * W..i * W + nc].copy_from_slice(&c[i * ldc..i * ldc + nc]);
        }
    }
    tile(&mut buf, W);
    for i in 0..mr {
        c[i * ldc..i * ldc + nc].copy_from_slice(&buf[i * W..i * W + nc]);
    }
}

/// # Safety
/// `a[g]`: `kc·MR` interleaved pairs; `b[p]`: `kc·NR`; `c`: rows `0..GG·MR` of `PP·NR`
/// values at stride `ldc`; the CPU has AVX-512F/BW/VNNI.
#[allow(unsafe_code, clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
unsafe fn tile<const GG: usize, const PP: usize>(
    kc: usize,
    a: [*const i32; GG],
    b: [*const i32; PP],
    (ri, ci): (&[[f32; MR]; GG], &[[f32; NR]; PP]),
    c: *mut f32,
    ldc: usize,
    add_c: bool,
    bias: Option<&[[f32; NR]; PP]>,
) {
    let mut acc = [[[_mm512_setzero_si512(); PP]; MR]; GG];
    for p in 0..kc {
        let bv: [__m512i; PP] =
            std::array::from_fn(|q| _mm512_loadu_si512(b[q].add(p * NR) as *const __m512i));
        for (g, rows) in acc.iter_mut().enumerate() {
            for (i, row) in rows.iter_mut().enumerate() {
                let av = _mm512_set1_epi32(*a[g].add(p * MR + i));
                for (s, &bq) in row.iter_mut().zip(&bv) {
                    *s = _mm512_dpwssd_epi32(*s, av, bq);
                }
            }
        }
    }
    let cv: [__m512; PP] = std::array::from_fn(|q| _mm512_loadu_ps(ci[q].as_ptr()));
    let bb: [__m512; PP] = std::array::from_fn(|q| match bias {
        Some(bias) => _mm512_loadu_ps(bias[q].as_ptr()),
        None => _mm512_setzero_ps(),
    });
    for (g, rows) in acc.iter().enumerate() {
        for (i, row) in rows.iter().enumerate() {
            let out = c.add((g * MR + i) * ldc);
            let s = _mm512_set1_ps(ri[g][i]);
            for (q, &v) in row.iter().enumerate() {
                let mut y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(cv[q], s), bb[q]);
                if add_c {
                    y = _mm512_add_ps(y, _mm512_loadu_ps(out.add(q * NR)));
                }
                _mm512_storeu_ps(out.add(q * NR), y);
            }
        }
    }
}

//! memdex's own f32 GEMM for the fast CPU encoder (AVX2 + FMA and portable paths).
//!
//! `out[m × n] = x[m × k] · wᵀ + b` where `w` (`n × k`, PyTorch's Linear layout) is packed once
//! at load time into [`PackedB`]: panels of [`NR`] columns, each `k × NR` contiguous and
//! 64-byte aligned, so no call ever repacks the weights. [`crate::linear`] splits the rows
//! of `x` into blocks of at most 96 (one rayon task each); a block runs the `MR × NR`
//! register tile over every panel, `kc` steps at a time, reading its `MR` activation rows in
//! place (only a partial last group of rows is copied, zero-padded). BLIS order: the
//! `kc × NR` weight panel stays in L1 while the block's rows stream from L2.
//!
//! Fused epilogues ([`Epilogue`]) save a pass over memory and a thread hand-off each: bias and
//! activation are applied on the tile just written (still in L1); a residual + LayerNorm
//! accumulates into `out` (which holds the residual) and normalises the block's rows once
//! they are complete; [`crate::linear::feed_forward`] runs both feed-forward GEMMs on one
//! block of rows in turn, so the intermediate rows stay in L2. Every path is tested against a
//! plain f64 loop (`reference`, tests in `linear`). The helpers for a block's loop (edge
//! tiles, bias, activation, LayerNorm pass) serve [`crate::qmatmul`] too.

use crate::isa::Isa;
use crate::math::{self, MulAdd};

/// Rows of a register tile.
pub(crate) const MR: usize = 6;
/// Columns of a register tile (two AVX2 vectors).
pub(crate) const NR: usize = 16;
/// Reduction depth per packed block at most (the `KC × NR` panel must stay in L1).
const KC: usize = 384;

/// A 64-byte-aligned f32 buffer (safe code: the start index absorbs the misalignment).
#[derive(Debug, Default)]
pub(crate) struct Aligned {
    buf: Vec<f32>,
    start: usize,
    len: usize,
}

impl Aligned {
    /// Makes room for `len` values (contents unspecified) and returns them.
    pub(crate) fn resize(&mut self, len: usize) -> &mut [f32] {
        if self.buf.len() < len + 16 {
            self.buf = vec![0f32; len + 16];
        }
        let misalign = (self.buf.as_ptr() as usize % 64) / 4;
        self.start = (16 - misalign) % 16;
        self.len = len;
        &mut self.buf[self.start..self.start + len]
    }

    pub(crate) fn get(&self) -> &[f32] {
        &self.buf[self.start..self.start + self.len]
    }
}

/// A weight matrix `w[n × k]` packed as `ceil(n / NR)` panels of `k × NR` values (column
/// `j` of panel `p` is row `p·NR + j` of `w`; missing rows of the last panel are zero).
#[derive(Debug)]
pub(crate) struct PackedB {
    n: usize,
    k: usize,
    data: Aligned,
}

impl PackedB {
    /// Packs `w`, row-major `n × k`.
    pub(crate) fn pack(w: &[f32], n: usize, k: usize) -> PackedB {
        assert_eq!(w.len(), n * k, "weight shape");
        let mut data = Aligned::default();
        let d = data.resize(n.div_ceil(NR) * k * NR);
        d.fill(0.0);
        for (j, row) in w.chunks_exact(k).enumerate() {
            let panel = &mut d[(j / NR) * k * NR..][..k * NR];
            for (p, &v) in row.iter().enumerate() {
                panel[p * NR + j % NR] = v;
            }
        }
        PackedB { n, k, data }
    }

    /// Output columns `n` and reduction depth `k` (the weight is `n × k`).
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.n, self.k)
    }

    /// Rows `p0..p0 + kc` of panel `jp`.
    fn panel(&self, jp: usize, p0: usize, kc: usize) -> &[f32] {
        &self.data.get()[(jp * self.k + p0) * NR..][..kc * NR]
    }
}

pub(crate) use crate::math::Act;

/// What happens to `x · wᵀ` before it lands in `out`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Epilogue<'a> {
    /// `out = x·wᵀ + b`, then the activation if any.
    Bias(Option<Act>),
    /// `out = LayerNorm(out + x·wᵀ + b) · gamma + beta`, row by row (`out` holds the
    /// residual on entry).
    ResidualLayerNorm {
        gamma: &'a [f32],
        beta: &'a [f32],
        eps: f32,
    },
}

/// One block of rows of the f32 GEMM on `isa`'s tile.
#[allow(clippy::too_many_arguments)]
pub(crate) fn block(
    isa: Isa,
    a: &[f32],
    rows: usize,
    w: &PackedB,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    apack: &mut Aligned,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => {
            let kern = x86::Avx2Fma::new().expect("CPU lacks AVX2/FMA");
            // SAFETY: the token exists, so the CPU has AVX2 and FMA.
            #[allow(unsafe_code)]
            unsafe {
                x86::block_avx2(kern, a, rows, w, b, c, epi, apack)
            }
        }
        _ => block_with(Portable, a, rows, w, b, c, epi, apack),
    }
}

/// Where element `(i, p)` (row `i < MR`, step `p < kc`) of a tile's left operand sits:
/// `a[i·row + p·step]`. Packed micro-panels are `{ row: 1, step: MR }`, plain row-major rows
/// of length `k` are `{ row: k, step: 1 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AStride {
    pub row: usize,
    pub step: usize,
}

impl AStride {
    pub(crate) const PACKED: AStride = AStride { row: 1, step: MR };

    /// Values of `a` a tile of depth `kc` reads at most.
    #[inline(always)]
    pub(crate) fn span(self, kc: usize) -> usize {
        if kc == 0 {
            0
        } else {
            (MR - 1) * self.row + (kc - 1) * self.step + 1
        }
    }
}

/// A register tile: `c[i·ldc + j] (+)= Σ_p a(i, p) · b[p·NR + j] (+ bias[j])` for `i < MR`,
/// `j < NR`, over `kc` steps (`add_c`: accumulate into `c`; `a(i, p)` per [`AStride`]).
/// Panics on short slices (`a`: [`AStride::span`], `b`: `kc·NR`, `c`: `(MR − 1)·ldc + NR`).
pub(crate) trait Kernel: Copy {
    /// The multiply-add of the code this tile is compiled into.
    type Fma: MulAdd;

    #[allow(clippy::too_many_arguments)]
    fn tile(
        self,
        kc: usize,
        a: &[f32],
        sa: AStride,
        b: &[f32],
        c: &mut [f32],
        ldc: usize,
        add_c: bool,
        bias: Option<&[f32; NR]>,
    );
}

/// The tile in plain Rust (the portable path; LLVM vectorises it for the baseline target).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

impl Kernel for Portable {
    type Fma = math::Baseline;

    #[inline(always)]
    fn tile(
        self,
        kc: usize,
        a: &[f32],
        sa: AStride,
        b: &[f32],
        c: &mut [f32],
        ldc: usize,
        add_c: bool,
        bias: Option<&[f32; NR]>,
    ) {
        // two halves of NR / 2 columns: 12 accumulators of 4 lanes fit SSE2's 16 registers
        let mut acc = [[0f32; NR]; MR];
        assert!(a.len() >= sa.span(kc));
        let b = &b[..kc * NR];
        for half in 0..2 {
            let mut h = [[0f32; NR / 2]; MR];
            for (p, bp) in b.chunks_exact(NR).enumerate() {
                let bp = &bp[half * NR / 2..(half + 1) * NR / 2];
                let ap: [f32; MR] = std::array::from_fn(|i| a[i * sa.row + p * sa.step]);
                for i in 0..MR {
                    for j in 0..NR / 2 {
                        h[i][j] += ap[i] * bp[j];
                    }
                }
            }
            for i in 0..MR {
                acc[i][half * NR / 2..(half + 1) * NR / 2].copy_from_slice(&h[i]);
            }
        }
        store_tile(&acc, c, ldc, add_c, bias);
    }
}

#[inline(always)]
pub(crate) fn store_tile(
    acc: &[[f32; NR]; MR],
    c: &mut [f32],
    ldc: usize,
    add_c: bool,
    bias: Option<&[f32; NR]>,
) {
    for (i, row) in acc.iter().enumerate() {
        let out = &mut c[i * ldc..i * ldc + NR];
        for j in 0..NR {
            let mut v = row[j];
            if let Some(b) = bias {
                v += b[j];
            }
            if add_c {
                v += out[j];
            }
            out[j] = v;
        }
    }
}

/// The depth blocks of a `k`-long reduction: as few as blocks of ≤ `max` allow, of equal size.
pub(crate) fn depth_blocks(k: usize, max: usize) -> impl Iterator<Item = (usize, usize)> {
    let count = k.div_ceil(max).max(1);
    let size = k.div_ceil(count);
    (0..count).map(move |i| (i * size, size.min(k - i * size)))
}

/// Packs rows `0..rows` of `a` (row stride `k`), columns `p0..p0 + kc`, into micro-panels of
/// [`MR`] rows: `dst[(r·kc + p)·MR + i] = a[(r·MR + i)·k + p0 + p]`, zero past the last row.
#[inline(always)]
pub(crate) fn pack_a(a: &[f32], rows: usize, k: usize, p0: usize, kc: usize, dst: &mut [f32]) {
    for (r, panel) in dst.chunks_exact_mut(kc * MR).enumerate() {
        for i in 0..MR {
            let row = r * MR + i;
            if row < rows {
                let src = &a[row * k + p0..][..kc];
                for (p, &v) in src.iter().enumerate() {
                    panel[p * MR + i] = v;
                }
            } else {
                (0..kc).for_each(|p| panel[p * MR + i] = 0.0);
            }
        }
    }
}

/// [`block`] with a given tile (inlined into each ISA's copy).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_with<K: Kernel>(
    kern: K,
    a: &[f32],
    rows: usize,
    w: &PackedB,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    apack: &mut Aligned,
) {
    let (n, k) = (w.n, w.k);
    let panels = rows.div_ceil(MR);
    let (act, residual) = match epi {
        Epilogue::Bias(act) => (act, false),
        Epilogue::ResidualLayerNorm { .. } => (None, true),
    };
    // full micro-panels read `a` in place (rows of k); a partial last one goes through a
    // zero-padded packed copy
    let full = rows / MR;
    for (p0, kc) in depth_blocks(k, KC) {
        if full < panels {
            let ap = apack.resize(MR * kc);
            pack_a(&a[full * MR * k..], rows - full * MR, k, p0, kc, ap);
        }
        let (first, last) = (p0 == 0, p0 + kc == k);
        for jp in 0..n.div_ceil(NR) {
            let bp = w.panel(jp, p0, kc);
            let j0 = jp * NR;
            let nc = NR.min(n - j0);
            let bias = panel_bias(b, j0, nc);
            let bias = first.then_some(&bias);
            for ip in 0..panels {
                let i0 = ip * MR;
                let mr = MR.min(rows - i0);
                let (a_ip, sa) = if ip < full {
                    (&a[i0 * k + p0..], AStride { row: k, step: 1 })
                } else {
                    (apack.get(), AStride::PACKED)
                };
                let add_c = residual || !first;
                on_tile(&mut c[i0 * n + j0..], n, (mr, nc), add_c, |c, ldc| {
                    kern.tile(kc, a_ip, sa, bp, c, ldc, add_c, bias)
                });
                if let (true, Some(act)) = (last, act) {
                    apply_act::<K::Fma>(c, n, (i0, mr), (j0, nc), act);
                }
            }
        }
    }
    finish_rows(c, rows, n, epi);
}

/// The panel bias of columns `j0..j0 + nc`, zero-padded to [`NR`].
#[inline(always)]
pub(crate) fn panel_bias(b: &[f32], j0: usize, nc: usize) -> [f32; NR] {
    let mut bias = [0f32; NR];
    bias[..nc].copy_from_slice(&b[j0..j0 + nc]);
    bias
}

/// Runs a tile on the `mr × nc` corner of `c` (row stride `ldc`): in place when the tile is
/// whole; at the bottom or right edge through a full-size buffer, the corner copied in (when
/// the tile adds to `c`) and back.
#[inline(always)]
pub(crate) fn on_tile(
    c: &mut [f32],
    ldc: usize,
    (mr, nc): (usize, usize),
    add_c: bool,
    tile: impl FnOnce(&mut [f32], usize),
) {
    if mr == MR && nc == NR {
        return tile(c, ldc);
    }
    let mut buf = [0f32; MR * NR];
    if add_c {
        for i in 0..mr {
            buf[i * NR..i * NR + nc].copy_from_slice(&c[i * ldc..i * ldc + nc]);
        }
    }
    tile(&mut buf, NR);
    for i in 0..mr {
        c[i * ldc..i * ldc + nc].copy_from_slice(&buf[i * NR..i * NR + nc]);
    }
}

/// The activation on rows `i0..i0 + mr`, columns `j0..j0 + nc` of `c` (row stride `n`).
#[inline(always)]
pub(crate) fn apply_act<M: MulAdd>(
    c: &mut [f32],
    n: usize,
    (i0, mr): (usize, usize),
    (j0, nc): (usize, usize),
    act: Act,
) {
    for i in 0..mr {
        act.apply::<M>(&mut c[(i0 + i) * n + j0..][..nc]);
    }
}

/// The residual + LayerNorm epilogue's last step, once a block's `rows` rows are complete.
#[inline(always)]
pub(crate) fn finish_rows(c: &mut [f32], rows: usize, n: usize, epi: Epilogue<'_>) {
    if let Epilogue::ResidualLayerNorm { gamma, beta, eps } = epi {
        for row in c[..rows * n].chunks_exact_mut(n) {
            math::layer_norm(row, gamma, beta, eps);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    //! The AVX2 + FMA tile: 6 rows × 16 columns = 12 ymm accumulators, two weight vectors and
    //! one broadcast per step (15 of the 16 registers).
    use std::arch::x86_64::*;

    use super::{AStride, Aligned, Epilogue, Kernel, PackedB, MR, NR};

    /// The AVX2 tile; a value exists only on CPUs with AVX2 and FMA.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Avx2Fma {
        _checked: (),
    }

    impl Avx2Fma {
        pub(crate) fn new() -> Option<Avx2Fma> {
            let ok = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            ok.then_some(Avx2Fma { _checked: () })
        }
    }

    impl Kernel for Avx2Fma {
        type Fma = crate::math::Fused;

        #[inline(always)]
        fn tile(
            self,
            kc: usize,
            a: &[f32],
            sa: AStride,
            b: &[f32],
            c: &mut [f32],
            ldc: usize,
            add_c: bool,
            bias: Option<&[f32; NR]>,
        ) {
            assert!(a.len() >= sa.span(kc));
            assert!(b.len() >= kc * NR && c.len() >= (MR - 1) * ldc + NR);
            // SAFETY: lengths checked above; `self` exists only if the CPU has AVX2 + FMA.
            unsafe {
                tile_6x16(
                    kc,
                    a.as_ptr(),
                    sa,
                    b.as_ptr(),
                    c.as_mut_ptr(),
                    ldc,
                    add_c,
                    bias,
                )
            }
        }
    }

    /// [`super::block_with`] compiled for AVX2 + FMA with the AVX2 tile inlined.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA (guaranteed by `kern`).
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn block_avx2(
        kern: Avx2Fma,
        a: &[f32],
        rows: usize,
        w: &PackedB,
        b: &[f32],
        c: &mut [f32],
        epi: Epilogue<'_>,
        apack: &mut Aligned,
    ) {
        super::block_with(kern, a, rows, w, b, c, epi, apack)
    }

    /// # Safety
    /// `a`: [`AStride::span`] values, `b`: `kc·NR`, `c`: rows `0..MR` of
    /// `NR` values at stride `ldc`; the CPU has AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_6x16(
        kc: usize,
        a: *const f32,
        sa: AStride,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        add_c: bool,
        bias: Option<&[f32; NR]>,
    ) {
        let mut acc = [[_mm256_setzero_ps(); 2]; MR];
        let rows: [*const f32; MR] = std::array::from_fn(|i| a.add(i * sa.row));
        for p in 0..kc {
            let b0 = _mm256_loadu_ps(b.add(p * NR));
            let b1 = _mm256_loadu_ps(b.add(p * NR + 8));
            for (i, row) in acc.iter_mut().enumerate() {
                let av = _mm256_broadcast_ss(&*rows[i].add(p * sa.step));
                row[0] = _mm256_fmadd_ps(av, b0, row[0]);
                row[1] = _mm256_fmadd_ps(av, b1, row[1]);
            }
        }
        if let Some(bias) = bias {
            let (b0, b1) = (
                _mm256_loadu_ps(bias.as_ptr()),
                _mm256_loadu_ps(bias.as_ptr().add(8)),
            );
            for row in acc.iter_mut() {
                row[0] = _mm256_add_ps(row[0], b0);
                row[1] = _mm256_add_ps(row[1], b1);
            }
        }
        for (i, row) in acc.iter().enumerate() {
            let out = c.add(i * ldc);
            let (mut v0, mut v1) = (row[0], row[1]);
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
pub(crate) use x86::Avx2Fma;

#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
pub(crate) use avx512::Avx512Fma;

/// `out = epilogue(x · wᵀ + b)` in f64, the plain loop every path must match.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn reference(
    x: &[f32],
    m: usize,
    w: &[f32],
    n: usize,
    k: usize,
    b: &[f32],
    out: &mut [f32],
    epi: Epilogue<'_>,
) {
    for i in 0..m {
        let row: Vec<f64> = (0..n)
            .map(|j| {
                let s: f64 = (0..k)
                    .map(|p| x[i * k + p] as f64 * w[j * k + p] as f64)
                    .sum();
                s + b[j] as f64
            })
            .collect();
        let o = &mut out[i * n..(i + 1) * n];
        match epi {
            Epilogue::Bias(act) => {
                for (d, s) in o.iter_mut().zip(&row) {
                    *d = *s as f32;
                }
                if let Some(act) = act {
                    act.apply::<math::Baseline>(o);
                }
            }
            Epilogue::ResidualLayerNorm { gamma, beta, eps } => {
                let s: Vec<f64> = row
                    .iter()
                    .zip(o.iter())
                    .map(|(a, r)| a + *r as f64)
                    .collect();
                let mean = s.iter().sum::<f64>() / n as f64;
                let var = s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
                for j in 0..n {
                    let y = (s[j] - mean) / (var + eps as f64).sqrt();
                    o[j] = (y * gamma[j] as f64 + beta[j] as f64) as f32;
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    /// Deterministic test values in [−0.5, 0.5] (shared by the GEMM tests).
    pub(crate) fn data(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (((i * 7919 + seed * 104_729) % 1999) as f32 / 999.5 - 1.0) * 0.5)
            .collect()
    }
}

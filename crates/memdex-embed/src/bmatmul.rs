//! memdex's bf16 GEMM: large batches (bulk embedding) on AMX tiles, f32 sums.
//!
//! `out = epilogue(x · wᵀ + b)` (the same [`Epilogue`]s as the f32 GEMM) with both operands
//! rounded to bf16 (nearest even) and every product summed in f32 by `TDPBF16PS`. Bias,
//! activation, residual and LayerNorm stay f32, as do attention, softmax and pooling.
//!
//! - Weights are rounded and packed once at load ([`PackedBf16`]) in the pair layout AMX's B
//!   operand reads: panels of 16 output columns, row `p` of a panel holding, per column `j`,
//!   the pair `(w[j][2p], w[j][2p+1])` (64 bytes); 16 rows are one B tile (1 KB, contiguous).
//! - A block's activation rows are rounded per call into [`Bf16Rows`]: row-major pairs, rows
//!   padded to 32 and depth to a whole tile (zeros), so every A tile (16 rows × 16 pairs) is
//!   a strided load inside the buffer.
//! - The tile plan ([`CONFIG`]): C in `tmm0..4` (a 2 × 2 grid of 16 × 16 f32), A in
//!   `tmm4..6` (two row groups), B in `tmm6..8` (two panels): per depth step two A loads, two
//!   B loads and four `tdpbf16ps` (32 × 32 outputs, 16 pairs deep). The whole depth stays
//!   in the C tiles; they are stored once to a 32 × 32 buffer and the epilogue writes `out`.
//!
//! The loops are generic over [`TileUnit`]: the hardware ([`crate::amx::AmxTiles`]) or
//! [`Emulator`], which runs the same plan over the same buffers on any CPU (the test
//! reference, and the `bf16` path where AMX is missing). Every path is tested against the f64
//! loop of `matmul::reference` on the bf16-rounded operands.

use crate::isa::Isa;
use crate::math::MulAdd;
use crate::matmul::{self, Epilogue, NR};
use crate::tiles::{bf16_bits, pair, Emulator, TileConfig, TileUnit, Tmm};

/// Pairs of the reduction per tile step (a B tile's rows, an A tile's 64-byte rows).
const PAIRS: usize = 16;
/// Rows of an A or C tile.
const TM: usize = 16;
/// Rows and columns a tile step covers (2 × 2 C tiles).
const BLOCK: usize = 2 * TM;

/// Every tile 16 rows × 64 bytes: C `tmm0..4`, A `tmm4..6`, B `tmm6..8`.
pub(crate) const CONFIG: TileConfig = TileConfig::palette1([(16, 64); 8]);

/// C tile of row group `g`, panel `q`; A tile of row group `g`; B tile of panel `q`.
fn c_tile(g: usize, q: usize) -> Tmm {
    Tmm((2 * g + q) as u8)
}
fn a_tile(g: usize) -> Tmm {
    Tmm(4 + g as u8)
}
fn b_tile(q: usize) -> Tmm {
    Tmm(6 + q as u8)
}

/// A weight matrix `w[n × k]` rounded to bf16 and packed as `ceil(n / 16)` panels of
/// `pairs × 16` pairs (see the module doc); `pairs` is `ceil(k / 2)` rounded up to whole tile
/// steps. Missing columns and the depth padding are zero.
#[derive(Debug)]
pub(crate) struct PackedBf16 {
    n: usize,
    k: usize,
    pairs: usize,
    data: Vec<u32>,
}

impl PackedBf16 {
    /// Rounds and packs `w`, row-major `n × k`.
    pub(crate) fn pack(w: &[f32], n: usize, k: usize) -> PackedBf16 {
        assert_eq!(w.len(), n * k, "weight shape");
        let pairs = k.div_ceil(2).div_ceil(PAIRS).max(1) * PAIRS;
        let mut data = vec![0u32; n.div_ceil(NR) * pairs * NR];
        for (j, row) in w.chunks_exact(k).enumerate() {
            let panel = &mut data[(j / NR) * pairs * NR..][..pairs * NR];
            for (p, two) in row.chunks(2).enumerate() {
                let hi = two.get(1).map_or(0, |&v| bf16_bits(v));
                panel[p * NR + j % NR] = pair(bf16_bits(two[0]), hi);
            }
        }
        PackedBf16 { n, k, pairs, data }
    }

    pub(crate) fn n(&self) -> usize {
        self.n
    }

    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// The B tile of panel `jp`, tile step `s` (16 rows of 16 pairs, stride 16 words).
    fn tile(&self, jp: usize, s: usize) -> &[u32] {
        &self.data[(jp * self.pairs + s * PAIRS) * NR..][..PAIRS * NR]
    }

    /// The weights as the tiles see them (bf16 values), row-major `n × k`.
    #[cfg(test)]
    pub(crate) fn rounded(&self) -> Vec<f32> {
        let mut w = vec![0f32; self.n * self.k];
        for (j, row) in w.chunks_exact_mut(self.k).enumerate() {
            let panel = &self.data[(j / NR) * self.pairs * NR..];
            for (p, v) in row.iter_mut().enumerate() {
                let word = panel[(p / 2) * NR + j % NR];
                *v = crate::tiles::bf16_value((word >> (16 * (p % 2))) as u16);
            }
        }
        w
    }
}

/// A block's activation rows in bf16 pairs: `rows` padded to a multiple of 32 (zero rows),
/// each `pairs` words (the weight's padded depth).
#[derive(Debug, Default)]
pub(crate) struct Bf16Rows {
    q: Vec<u32>,
    pairs: usize,
}

impl Bf16Rows {
    /// Rounds rows `0..rows` of `a` (row length `w.k`) for `w`.
    #[inline(always)]
    fn fill(&mut self, a: &[f32], rows: usize, w: &PackedBf16) {
        self.pairs = w.pairs;
        self.q.clear();
        self.q.resize(rows.div_ceil(BLOCK) * BLOCK * w.pairs, 0);
        let full = w.k / 2;
        for (row, dst) in a[..rows * w.k]
            .chunks_exact(w.k)
            .zip(self.q.chunks_exact_mut(w.pairs))
        {
            for (d, two) in dst[..full].iter_mut().zip(row.chunks_exact(2)) {
                *d = pair(bf16_bits(two[0]), bf16_bits(two[1]));
            }
            if w.k % 2 == 1 {
                dst[full] = pair(bf16_bits(row[w.k - 1]), 0);
            }
        }
    }

    /// The A tile of rows `i0..i0 + 16`, tile step `s` (stride `pairs` words).
    fn tile(&self, i0: usize, s: usize) -> &[u32] {
        &self.q[i0 * self.pairs + s * PAIRS..][..(TM - 1) * self.pairs + PAIRS]
    }

    /// Rows `0..rows` of `a` as the tiles see them (bf16 values), row-major.
    #[cfg(test)]
    pub(crate) fn rounded(a: &[f32], rows: usize, w: &PackedBf16) -> Vec<f32> {
        let mut q = Bf16Rows::default();
        q.fill(a, rows, w);
        let mut out = vec![0f32; rows * w.k];
        for (i, row) in out.chunks_exact_mut(w.k).enumerate() {
            for (p, v) in row.iter_mut().enumerate() {
                let word = q.q[i * w.pairs + p / 2];
                *v = crate::tiles::bf16_value((word >> (16 * (p % 2))) as u16);
            }
        }
        out
    }
}

/// Scratch of one worker: the rounded rows and the C tiles' landing buffer.
#[derive(Debug)]
pub(crate) struct Scratch {
    rows: Bf16Rows,
    c: Box<[f32; BLOCK * BLOCK]>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            rows: Bf16Rows::default(),
            c: Box::new([0.0; BLOCK * BLOCK]),
        }
    }
}

/// `c = epilogue(a · wᵀ + b)` for one block of `rows` rows of `a`: on AMX when `isa` is
/// AVX-512 and this process may use it ([`crate::amx::status`]), else on the [`Emulator`]
/// compiled for `isa`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn block(
    isa: Isa,
    a: &[f32],
    rows: usize,
    w: &PackedBf16,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    s: &mut Scratch,
) {
    match isa {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        Isa::Avx512 if crate::amx::Amx::get().is_some() && avx512() => {
            let amx = crate::amx::Amx::get().expect("checked above");
            // SAFETY: checked above: the CPU has AVX-512F, AVX2 and FMA.
            #[allow(unsafe_code)]
            unsafe {
                x86::block_amx(amx, a, rows, w, b, c, epi, s)
            }
        }
        _ => emulated(isa, a, rows, w, b, c, epi, s),
    }
}

/// [`block`] on the [`Emulator`] compiled for `isa` (the test reference on every CPU).
#[allow(clippy::too_many_arguments)]
pub(crate) fn emulated(
    isa: Isa,
    a: &[f32],
    rows: usize,
    w: &PackedBf16,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    s: &mut Scratch,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 | Isa::Avx2 if crate::matmul::Avx2Fma::new().is_some() => {
            let wide = isa == Isa::Avx512 && avx512();
            // SAFETY: the token exists, so the CPU has AVX2 and FMA; `wide` only with AVX-512F.
            #[allow(unsafe_code)]
            unsafe {
                x86::emulated_avx2(wide, a, rows, w, b, c, epi, s)
            }
        }
        _ => {
            let mut t = Emulator::configured(&CONFIG);
            block_with::<_, crate::math::Baseline>(&mut t, a, rows, w, b, c, epi, s);
        }
    }
}

/// Whether the CPU has AVX-512F, AVX2 and FMA (the AVX-512 copies' features).
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    crate::matmul::Avx512Fma::new().is_some()
}

/// [`block`] on tile unit `t`, configured with [`CONFIG`] (inlined into each ISA's copy).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_with<T: TileUnit, M: MulAdd>(
    t: &mut T,
    a: &[f32],
    rows: usize,
    w: &PackedBf16,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    s: &mut Scratch,
) {
    let n = w.n;
    assert!(a.len() >= rows * w.k && c.len() >= rows * n && b.len() == n);
    s.rows.fill(a, rows, w);
    let panels = n.div_ceil(NR);
    for jp in (0..panels).step_by(2) {
        let np = 2.min(panels - jp);
        for i0 in (0..rows).step_by(BLOCK) {
            let groups = if rows - i0 > TM { 2 } else { 1 };
            let (a, out) = (&s.rows, &mut s.c);
            // constant tile counts: the register numbers fold into the instructions
            match (groups, np) {
                (2, 2) => tile_step::<T, 2, 2>(t, a, w, i0, jp, out),
                (2, _) => tile_step::<T, 2, 1>(t, a, w, i0, jp, out),
                (_, 2) => tile_step::<T, 1, 2>(t, a, w, i0, jp, out),
                _ => tile_step::<T, 1, 1>(t, a, w, i0, jp, out),
            }
            let cols = (jp * NR, (np * NR).min(n - jp * NR));
            write_block::<M>(&s.c, c, n, (i0, BLOCK.min(rows - i0)), cols, b, epi);
        }
    }
    matmul::finish_rows(c, rows, n, epi);
}

/// The `G × Q` C tiles of rows `i0..`, panels `jp..`, over the whole depth, stored to `out`
/// (32 × 32, row stride 32).
#[inline(always)]
fn tile_step<T: TileUnit, const G: usize, const Q: usize>(
    t: &mut T,
    a: &Bf16Rows,
    w: &PackedBf16,
    i0: usize,
    jp: usize,
    out: &mut [f32; BLOCK * BLOCK],
) {
    for g in 0..G {
        for q in 0..Q {
            t.zero(c_tile(g, q));
        }
    }
    for s in 0..w.pairs / PAIRS {
        for g in 0..G {
            t.load(a_tile(g), a.tile(i0 + g * TM, s), a.pairs);
        }
        for q in 0..Q {
            t.load(b_tile(q), w.tile(jp + q, s), NR);
        }
        for g in 0..G {
            for q in 0..Q {
                t.dot_bf16(c_tile(g, q), a_tile(g), b_tile(q));
            }
        }
    }
    for g in 0..G {
        for q in 0..Q {
            t.store(c_tile(g, q), &mut out[g * TM * BLOCK + q * NR..], BLOCK);
        }
    }
}

/// Rows `i0..i0 + mr`, columns `j0..j0 + nc` of `c` (row stride `n`) from the products in
/// `acc` (row stride 32): `+ b`, then the activation, or added to the residual in `c`.
#[inline(always)]
fn write_block<M: MulAdd>(
    acc: &[f32; BLOCK * BLOCK],
    c: &mut [f32],
    n: usize,
    (i0, mr): (usize, usize),
    (j0, nc): (usize, usize),
    b: &[f32],
    epi: Epilogue<'_>,
) {
    let bias = &b[j0..j0 + nc];
    for i in 0..mr {
        let dst = &mut c[(i0 + i) * n + j0..][..nc];
        let src = &acc[i * BLOCK..][..nc];
        match epi {
            Epilogue::Bias(act) => {
                for ((d, &v), &bj) in dst.iter_mut().zip(src).zip(bias) {
                    *d = v + bj;
                }
                if let Some(act) = act {
                    act.apply::<M>(dst);
                }
            }
            Epilogue::ResidualLayerNorm { .. } => {
                for ((d, &v), &bj) in dst.iter_mut().zip(src).zip(bias) {
                    *d += v + bj;
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use super::{block_with, Epilogue, PackedBf16, Scratch, CONFIG};
    use crate::tiles::Emulator;

    /// [`super::block`] on AMX tiles, compiled for AVX-512 (the row rounding and epilogues).
    ///
    /// # Safety
    /// The CPU must have AVX-512F, AVX2 and FMA.
    #[cfg(target_os = "linux")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn block_amx(
        amx: crate::amx::Amx,
        a: &[f32],
        rows: usize,
        w: &PackedBf16,
        b: &[f32],
        c: &mut [f32],
        epi: Epilogue<'_>,
        s: &mut Scratch,
    ) {
        let mut t = crate::amx::AmxTiles::configured(amx, &CONFIG);
        block_with::<_, crate::math::Fused>(&mut t, a, rows, w, b, c, epi, s);
    }

    /// [`super::emulated`] compiled for AVX2 + FMA, or for AVX-512 when `wide`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA, and AVX-512F when `wide`.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn emulated_avx2(
        wide: bool,
        a: &[f32],
        rows: usize,
        w: &PackedBf16,
        b: &[f32],
        c: &mut [f32],
        epi: Epilogue<'_>,
        s: &mut Scratch,
    ) {
        if wide {
            return emulated_avx512(a, rows, w, b, c, epi, s);
        }
        emulated_with_avx2(a, rows, w, b, c, epi, s)
    }

    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn emulated_with_avx2(
        a: &[f32],
        rows: usize,
        w: &PackedBf16,
        b: &[f32],
        c: &mut [f32],
        epi: Epilogue<'_>,
        s: &mut Scratch,
    ) {
        let mut t = Emulator::configured(&CONFIG);
        block_with::<_, crate::math::Fused>(&mut t, a, rows, w, b, c, epi, s);
    }

    /// # Safety
    /// The CPU must have AVX-512F, AVX2 and FMA.
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn emulated_avx512(
        a: &[f32],
        rows: usize,
        w: &PackedBf16,
        b: &[f32],
        c: &mut [f32],
        epi: Epilogue<'_>,
        s: &mut Scratch,
    ) {
        let mut t = Emulator::configured(&CONFIG);
        block_with::<_, crate::math::Fused>(&mut t, a, rows, w, b, c, epi, s);
    }
}

#[cfg(test)]
mod tests;

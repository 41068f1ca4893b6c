//! The AMX tile programming model, as data: bf16 rounding, the 64-byte tile configuration, the
//! [`TileUnit`] interface through which [`crate::bmatmul`] issues its tile instructions, and
//! [`Emulator`], a plain-Rust implementation of those instructions.
//!
//! The emulator follows the Intel SDM's definitions (palette 1, the `#UD` shape checks,
//! `TDPBF16PS`'s pseudocode): for each output row `m` and each of the `K / 2` pairs `k` in
//! order, `c[m][n] += a[m].bf16[2k]·b[k].bf16[2n]`, then `+= a[m].bf16[2k+1]·b[k].bf16[2n+1]`,
//! each step rounded to nearest even in f32 (the bf16 products are exact in f32), with
//! subnormal inputs read as zero and subnormal results flushed to zero. It reads and writes
//! the same packed buffers as the hardware through the same configuration, so the GEMM's
//! layouts and loops are tested on any CPU; on CPUs without AMX it is also the `bf16` large-batch
//! path ([`crate::isa::LargeBatchKernel::Bf16Emulated`]): the arithmetic an AMX machine runs,
//! to check its accuracy anywhere.

/// Rows of a tile at most (palette 1).
pub(crate) const MAX_ROWS: usize = 16;
/// Bytes of a tile row at most (palette 1).
pub(crate) const MAX_COLSB: usize = 64;
/// 32-bit words of a tile row at most.
const WORDS: usize = MAX_COLSB / 4;
/// Tile registers (palette 1).
pub(crate) const TILES: usize = 8;

/// The bf16 bits of `v`: round to nearest, ties to even; NaN stays a (quiet) NaN, ±∞ stays,
/// finite values past bf16's range round to ±∞, and subnormals become ±0 (as AMX reads them).
#[inline(always)]
pub(crate) fn bf16_bits(v: f32) -> u16 {
    let bits = v.to_bits();
    if v.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    if bits & 0x7f80_0000 == 0 {
        return ((bits >> 16) & 0x8000) as u16;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// The f32 value of bf16 bits, subnormals read as ±0 (`TDPBF16PS`'s DAZ).
#[inline(always)]
pub(crate) fn bf16_value(h: u16) -> f32 {
    ftz(f32::from_bits((h as u32) << 16))
}

/// Two bf16 in one 32-bit word, `lo` at the lower address (the pair layout of AMX's operands).
#[inline(always)]
pub(crate) fn pair(lo: u16, hi: u16) -> u32 {
    lo as u32 | ((hi as u32) << 16)
}

/// `v` with a subnormal result flushed to ±0 (`TDPBF16PS`'s FTZ).
#[inline(always)]
fn ftz(v: f32) -> f32 {
    let bits = v.to_bits();
    // exponent bits all zero: ±0 or subnormal (branch-free, so that it vectorises)
    let keep = ((bits & 0x7f80_0000 != 0) as u32).wrapping_neg();
    f32::from_bits(bits & (keep | 0x8000_0000))
}

/// A tile register, `tmm0`..`tmm7`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tmm(pub u8);

/// The 64-byte operand of `ldtilecfg`: byte 0 the palette, byte 1 the start row, bytes
/// 16 + 2i the bytes per row of `tmm i` (u16, little-endian), byte 48 + i its rows.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TileConfig {
    bytes: [u8; 64],
}

impl TileConfig {
    /// Palette 1 with `shapes[i] = (rows, bytes per row)` of `tmm i` (`(0, 0)`: unused).
    pub(crate) const fn palette1(shapes: [(u8, u16); TILES]) -> TileConfig {
        let mut bytes = [0u8; 64];
        bytes[0] = 1;
        let mut i = 0;
        while i < TILES {
            let (rows, colsb) = shapes[i];
            bytes[16 + 2 * i] = colsb as u8;
            bytes[17 + 2 * i] = (colsb >> 8) as u8;
            bytes[48 + i] = rows;
            i += 1;
        }
        TileConfig { bytes }
    }

    /// The raw bytes `ldtilecfg` reads.
    pub(crate) fn bytes(&self) -> &[u8; 64] {
        &self.bytes
    }

    /// `(rows, bytes per row)` of every tile.
    pub(crate) fn shapes(&self) -> [(usize, usize); TILES] {
        std::array::from_fn(|i| self.shape(Tmm(i as u8)))
    }

    /// `(rows, bytes per row)` of `t`.
    pub(crate) fn shape(&self, t: Tmm) -> (usize, usize) {
        let i = t.0 as usize;
        let colsb = u16::from_le_bytes([self.bytes[16 + 2 * i], self.bytes[17 + 2 * i]]);
        (self.bytes[48 + i] as usize, colsb as usize)
    }

    /// What `ldtilecfg` faults on (`#GP`) for palette 1, as a message; `None` if valid.
    pub(crate) fn invalid(&self) -> Option<String> {
        if self.bytes[0] != 1 {
            return Some(format!("palette {} (only 1 is known)", self.bytes[0]));
        }
        if self.bytes[1] != 0 || self.bytes[2..16].iter().any(|&b| b != 0) {
            return Some("start row or reserved bytes not zero".into());
        }
        for i in 0..TILES {
            let (rows, colsb) = self.shape(Tmm(i as u8));
            if rows > MAX_ROWS || colsb > MAX_COLSB || (rows == 0) != (colsb == 0) {
                return Some(format!("tmm{i}: {rows} rows of {colsb} bytes"));
            }
        }
        if self.bytes[48 + TILES..].iter().any(|&b| b != 0)
            || self.bytes[16 + 2 * TILES..48].iter().any(|&b| b != 0)
        {
            return Some("tiles past tmm7 configured".into());
        }
        None
    }
}

/// The tile instructions [`crate::bmatmul`] issues, against a configuration loaded when the
/// unit was made ([`Emulator::configured`], [`crate::amx::AmxTiles::configured`]); dropping
/// the unit releases the tiles (`tilerelease`). Strides are in 32-bit words. Every method
/// panics where the hardware would fault: an unconfigured tile, shapes `TDPBF16PS` refuses, a
/// slice shorter than the rows the tile moves.
pub(crate) trait TileUnit {
    /// `tilezero t`.
    fn zero(&mut self, t: Tmm);
    /// `tileloadd t, [src + 4·stride]`: the tile's rows from `src[r·stride..]`.
    fn load(&mut self, t: Tmm, src: &[u32], stride: usize);
    /// `tdpbf16ps c, a, b`: `c` (f32) += `a` (bf16 pairs) · `b` (bf16 pairs).
    fn dot_bf16(&mut self, c: Tmm, a: Tmm, b: Tmm);
    /// `tilestored [dst + 4·stride], t`: the tile's rows to `dst[r·stride..]`.
    fn store(&mut self, t: Tmm, dst: &mut [f32], stride: usize);
}

/// Words a tile of `rows × colsb` moves at row stride `stride`: the slice length it needs.
pub(crate) fn span(rows: usize, colsb: usize, stride: usize) -> usize {
    if rows == 0 {
        0
    } else {
        (rows - 1) * stride + colsb / 4
    }
}

/// The checks `TDPBF16PS` makes (`#UD`), for tiles of `(rows, bytes per row)` `c`, `a`, `b`.
pub(crate) fn dot_shapes_ok(
    (c, a, b): (Tmm, Tmm, Tmm),
    sc: (usize, usize),
    sa: (usize, usize),
    sb: (usize, usize),
) -> Result<(), String> {
    if c == a || c == b || a == b {
        return Err(format!(
            "tmm{} tmm{} tmm{}: registers must differ",
            c.0, a.0, b.0
        ));
    }
    if [sc, sa, sb].iter().any(|&(r, _)| r == 0) {
        return Err("an operand tile is not configured".into());
    }
    if sa.1 / 4 != sb.0 {
        return Err(format!("K: a has {} pairs, b {} rows", sa.1 / 4, sb.0));
    }
    if sc.1 != sb.1 || sc.0 != sa.0 {
        return Err(format!("c {sc:?} does not match a {sa:?} · b {sb:?}"));
    }
    if !sc.1.is_multiple_of(4) || !sa.1.is_multiple_of(4) {
        return Err("bytes per row not a multiple of 4".into());
    }
    Ok(())
}

/// A tile's words as two f32 planes, the low and the high bf16 of each (DAZ applied).
#[inline(always)]
fn widen(reg: &[[u32; WORDS]; MAX_ROWS]) -> ([[f32; WORDS]; MAX_ROWS], [[f32; WORDS]; MAX_ROWS]) {
    let lo = std::array::from_fn(|r| std::array::from_fn(|n| bf16_value(reg[r][n] as u16)));
    let hi = std::array::from_fn(|r| std::array::from_fn(|n| bf16_value((reg[r][n] >> 16) as u16)));
    (lo, hi)
}

/// One pair step of an output row: `acc[n] += a0·lo[n]`, then `+= a1·hi[n]`, each rounded and
/// flushed.
#[inline(always)]
fn step(acc: &mut [f32; WORDS], a0: f32, a1: f32, lo: &[f32; WORDS], hi: &[f32; WORDS]) {
    for n in 0..WORDS {
        acc[n] = ftz(ftz(acc[n] + a0 * lo[n]) + a1 * hi[n]);
    }
}

/// Tile registers and configuration in memory: the instructions of [`TileUnit`] in plain Rust.
#[derive(Debug)]
pub(crate) struct Emulator {
    shapes: [(usize, usize); TILES],
    regs: [[[u32; WORDS]; MAX_ROWS]; TILES],
}

impl Emulator {
    /// `ldtilecfg cfg`: all tiles zero. Panics on a configuration the hardware refuses.
    pub(crate) fn configured(cfg: &TileConfig) -> Emulator {
        if let Some(why) = cfg.invalid() {
            panic!("ldtilecfg: {why}");
        }
        Emulator {
            shapes: cfg.shapes(),
            regs: [[[0; WORDS]; MAX_ROWS]; TILES],
        }
    }

    fn shape(&self, t: Tmm) -> (usize, usize) {
        configured_shape(&self.shapes, t)
    }
}

/// `(rows, bytes per row)` of `t` in `shapes`; panics if it does not exist or is not
/// configured.
#[inline(always)]
pub(crate) fn configured_shape(shapes: &[(usize, usize); TILES], t: Tmm) -> (usize, usize) {
    assert!((t.0 as usize) < TILES, "tmm{} does not exist", t.0);
    let s = shapes[t.0 as usize];
    assert!(s.0 > 0, "tmm{} is not configured", t.0);
    s
}

impl TileUnit for Emulator {
    #[inline(always)]
    fn zero(&mut self, t: Tmm) {
        self.shape(t);
        self.regs[t.0 as usize] = [[0; WORDS]; MAX_ROWS];
    }

    #[inline(always)]
    fn load(&mut self, t: Tmm, src: &[u32], stride: usize) {
        let (rows, colsb) = self.shape(t);
        assert!(
            src.len() >= span(rows, colsb, stride),
            "tileloadd past the slice"
        );
        let reg = &mut self.regs[t.0 as usize];
        *reg = [[0; WORDS]; MAX_ROWS];
        for (r, row) in reg.iter_mut().take(rows).enumerate() {
            row[..colsb / 4].copy_from_slice(&src[r * stride..][..colsb / 4]);
        }
    }

    #[inline(always)]
    fn dot_bf16(&mut self, c: Tmm, a: Tmm, b: Tmm) {
        let (sc, sa, sb) = (self.shape(c), self.shape(a), self.shape(b));
        if let Err(why) = dot_shapes_ok((c, a, b), sc, sa, sb) {
            panic!("tdpbf16ps: {why}");
        }
        let (rows, pairs, cols) = (sc.0, sa.1 / 4, sc.1 / 4);
        // both operands widened once (the registers past a tile's shape hold zeros)
        let b_halves = widen(&self.regs[b.0 as usize]);
        let (a_lo, a_hi) = widen(&self.regs[a.0 as usize]);
        let (b_lo, b_hi) = (&b_halves.0, &b_halves.1);
        let rc = &mut self.regs[c.0 as usize];
        // four rows at a time, each in registers: independent chains (each element's own
        // order is unchanged)
        for (g, crows) in rc[..rows].chunks_mut(4).enumerate() {
            let row = |r: usize| (g * 4 + r).min(MAX_ROWS - 1);
            let mut acc: [[f32; WORDS]; 4] = std::array::from_fn(|r| {
                let w = crows.get(r).copied().unwrap_or([0; WORDS]);
                std::array::from_fn(|n| ftz(f32::from_bits(w[n])))
            });
            for k in 0..pairs {
                let (l, h) = (&b_lo[k], &b_hi[k]);
                step(&mut acc[0], a_lo[row(0)][k], a_hi[row(0)][k], l, h);
                step(&mut acc[1], a_lo[row(1)][k], a_hi[row(1)][k], l, h);
                step(&mut acc[2], a_lo[row(2)][k], a_hi[row(2)][k], l, h);
                step(&mut acc[3], a_lo[row(3)][k], a_hi[row(3)][k], l, h);
            }
            for (crow, acc) in crows.iter_mut().zip(acc) {
                for (w, s) in crow.iter_mut().zip(acc).take(cols) {
                    *w = s.to_bits();
                }
            }
        }
    }

    #[inline(always)]
    fn store(&mut self, t: Tmm, dst: &mut [f32], stride: usize) {
        let (rows, colsb) = self.shape(t);
        assert!(
            dst.len() >= span(rows, colsb, stride),
            "tilestored past the slice"
        );
        for (r, row) in self.regs[t.0 as usize].iter().take(rows).enumerate() {
            for (d, &w) in dst[r * stride..][..colsb / 4].iter_mut().zip(row) {
                *d = f32::from_bits(w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        let r = |v: f32| f32::from_bits((bf16_bits(v) as u32) << 16);
        assert_eq!(r(1.0), 1.0);
        assert_eq!(r(-2.5), -2.5);
        // 1 + 2⁻⁸ is halfway between 1 and 1 + 2⁻⁷: ties to the even one, 1
        assert_eq!(r(1.0 + 2f32.powi(-8)), 1.0);
        // 1 + 3·2⁻⁸ is halfway between 1 + 2⁻⁷ and 1 + 2⁻⁶: ties to the even one
        assert_eq!(r(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
        // just past halfway rounds up
        assert_eq!(r(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 1.0 + 2f32.powi(-7));
        assert_eq!(r(f32::INFINITY), f32::INFINITY);
        assert_eq!(
            r(f32::MAX),
            f32::INFINITY,
            "past bf16's largest finite value"
        );
        assert!(r(f32::NAN).is_nan());
        // a NaN whose payload sits in the low bits only stays a NaN (not ∞)
        assert!(r(f32::from_bits(0x7f80_0001)).is_nan());
        assert_eq!(bf16_bits(1e-40), 0, "subnormal → +0");
        assert_eq!(bf16_bits(-1e-40), 0x8000, "subnormal → −0");
        assert_eq!(bf16_value(0x0001), 0.0, "subnormal bf16 read as zero");
        for v in [0.1f32, -3.7, 1234.5, 6.1e-5, -7.3e9] {
            let e = (r(v) - v).abs() / v.abs();
            assert!(e <= 2f32.powi(-8), "{v}: relative error {e}");
        }
    }

    #[test]
    fn configuration_bytes_and_what_ldtilecfg_refuses() {
        let mut shapes = [(0u8, 0u16); TILES];
        shapes[0] = (16, 64);
        shapes[5] = (3, 12);
        let cfg = TileConfig::palette1(shapes);
        assert_eq!(cfg.bytes()[0], 1);
        assert_eq!(cfg.bytes()[16], 64);
        assert_eq!(cfg.bytes()[48], 16);
        assert_eq!(cfg.shape(Tmm(5)), (3, 12));
        assert_eq!(cfg.invalid(), None);
        for bad in [(17, 64), (16, 68), (4, 0)] {
            shapes[1] = bad;
            assert!(TileConfig::palette1(shapes).invalid().is_some(), "{bad:?}");
        }
        let mut p0 = TileConfig::palette1([(16, 64); TILES]);
        p0.bytes[0] = 0;
        assert!(p0.invalid().is_some());
    }

    /// Random-looking bf16 pairs (exact small values: every product and sum below is exact in
    /// f32 too, so the emulator must match the integer-valued truth bit for bit).
    fn pairs(len: usize, seed: u32) -> Vec<u32> {
        let v = |i: u32| bf16_bits(((i.wrapping_mul(2_654_435_761) >> 27) as f32) - 16.0);
        (0..len as u32)
            .map(|i| pair(v(2 * i + seed), v(2 * i + 1 + 3 * seed)))
            .collect()
    }

    #[test]
    fn tdpbf16ps_is_the_sum_of_pair_products() {
        // c: 5 × 7 f32, a: 5 rows × 6 pairs, b: 6 pairs × 7 columns, read at odd strides
        let mut shapes = [(0u8, 0u16); TILES];
        shapes[0] = (5, 28);
        shapes[1] = (5, 24);
        shapes[2] = (6, 28);
        let cfg = TileConfig::palette1(shapes);
        let (sa, sb, sc) = (9, 11, 10);
        let (a, b) = (pairs(span(5, 24, sa), 1), pairs(span(6, 28, sb), 2));
        let mut t = Emulator::configured(&cfg);
        t.zero(Tmm(0));
        t.load(Tmm(1), &a, sa);
        t.load(Tmm(2), &b, sb);
        t.dot_bf16(Tmm(0), Tmm(1), Tmm(2));
        t.dot_bf16(Tmm(0), Tmm(1), Tmm(2));
        let mut c = vec![f32::NAN; span(5, 28, sc)];
        t.store(Tmm(0), &mut c, sc);
        let half = |w: u32, h: usize| bf16_value((w >> (16 * h)) as u16) as f64;
        for m in 0..5 {
            for n in 0..7 {
                let want: f64 = (0..6)
                    .flat_map(|k| (0..2).map(move |h| (k, h)))
                    .map(|(k, h)| half(a[m * sa + k], h) * half(b[k * sb + n], h))
                    .sum();
                assert_eq!(c[m * sc + n] as f64, 2.0 * want, "[{m}][{n}]");
            }
        }
    }

    #[test]
    fn accumulation_rounds_each_step_in_order_and_flushes_subnormals() {
        let mut shapes = [(0u8, 0u16); TILES];
        shapes[0] = (1, 4);
        shapes[1] = (1, 8);
        shapes[2] = (2, 4);
        let cfg = TileConfig::palette1(shapes);
        let one = bf16_bits(1.0);
        let big = bf16_bits(2f32.powi(24));
        // a = [2²⁴, 1, 1, −2²⁴] · b = [1, 1, 1, 1]: in order (2²⁴ + 1) rounds to 2²⁴ (even),
        // + 1 again rounds to 2²⁴, − 2²⁴ = 0; an exact sum would give 2
        let a = [pair(big, one), pair(one, bf16_bits(-(2f32.powi(24))))];
        let b = [pair(one, one), pair(one, one)];
        let mut t = Emulator::configured(&cfg);
        t.zero(Tmm(0));
        t.load(Tmm(1), &a, 2);
        t.load(Tmm(2), &b, 1);
        t.dot_bf16(Tmm(0), Tmm(1), Tmm(2));
        let mut c = [f32::NAN];
        t.store(Tmm(0), &mut c, 1);
        assert_eq!(c[0], 0.0);
        // 2⁻⁶⁴ · 2⁻⁶⁴ = 2⁻¹²⁸ is subnormal in f32: flushed
        let tiny = bf16_bits(2f32.powi(-64));
        let a = [pair(tiny, 0), 0];
        let b = [pair(tiny, 0), 0];
        t.zero(Tmm(0));
        t.load(Tmm(1), &a, 2);
        t.load(Tmm(2), &b, 1);
        t.dot_bf16(Tmm(0), Tmm(1), Tmm(2));
        t.store(Tmm(0), &mut c, 1);
        assert_eq!(c[0].to_bits(), 0);
    }

    #[test]
    #[should_panic(expected = "tdpbf16ps: K")]
    fn mismatched_shapes_fault_like_the_hardware() {
        let mut shapes = [(16u8, 64u16); TILES];
        shapes[6] = (8, 64);
        let mut t = Emulator::configured(&TileConfig::palette1(shapes));
        t.dot_bf16(Tmm(0), Tmm(4), Tmm(6));
    }

    #[test]
    #[should_panic(expected = "tileloadd past the slice")]
    fn a_load_past_the_slice_is_refused() {
        let mut t = Emulator::configured(&TileConfig::palette1([(16, 64); TILES]));
        t.load(Tmm(4), &[0u32; 16 * 16 - 1], 16);
    }
}

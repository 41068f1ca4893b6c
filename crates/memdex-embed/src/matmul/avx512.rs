//! The AVX-512 f32 tile: the same `MR × NR` shape and operands as the AVX2 one, one zmm
//! register per row. Attention's products are short (depth = head size or sequence length),
//! so each row keeps two accumulators (even and odd steps) to have 12 independent FMA chains
//! in flight, as the AVX2 tile's 12 ymm accumulators do, at twice the width.

use std::arch::x86_64::*;

use super::{AStride, Kernel, MR, NR};

/// The AVX-512 f32 tile; a value exists only on CPUs with AVX-512F, AVX2 and FMA.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx512Fma {
    _checked: (),
}

impl Avx512Fma {
    pub(crate) fn new() -> Option<Avx512Fma> {
        let ok = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma");
        ok.then_some(Avx512Fma { _checked: () })
    }
}

impl Kernel for Avx512Fma {
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
        // SAFETY: lengths checked above; `self` exists only if the CPU has AVX-512F.
        #[allow(unsafe_code)]
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

/// # Safety
/// `a`: [`AStride::span`] values, `b`: `kc·NR`, `c`: rows `0..MR` of `NR` values at stride
/// `ldc`; the CPU has AVX-512F.
#[allow(unsafe_code, clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
#[inline]
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
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    let rows: [*const f32; MR] = std::array::from_fn(|i| a.add(i * sa.row));
    let step = |acc: &mut [[__m512; 2]; MR], p: usize, h: usize| {
        let bv = _mm512_loadu_ps(b.add(p * NR));
        for (i, row) in acc.iter_mut().enumerate() {
            let av = _mm512_set1_ps(*rows[i].add(p * sa.step));
            row[h] = _mm512_fmadd_ps(av, bv, row[h]);
        }
    };
    for p in (0..kc / 2).map(|p| 2 * p) {
        step(&mut acc, p, 0);
        step(&mut acc, p + 1, 1);
    }
    if kc % 2 == 1 {
        step(&mut acc, kc - 1, 0);
    }
    let bias = bias.map_or(_mm512_setzero_ps(), |b| _mm512_loadu_ps(b.as_ptr()));
    for (i, row) in acc.iter().enumerate() {
        let out = c.add(i * ldc);
        let mut v = _mm512_add_ps(_mm512_add_ps(row[0], row[1]), bias);
        if add_c {
            v = _mm512_add_ps(v, _mm512_loadu_ps(out));
        }
        _mm512_storeu_ps(out, v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AStride, Kernel, Portable, MR, NR};
    use super::Avx512Fma;
    use crate::matmul::tests::data;

    /// Against the portable tile: odd and even depths, packed and row-major operands, with
    /// and without bias and accumulation.
    #[test]
    fn matches_the_portable_tile() {
        let Some(kern) = Avx512Fma::new() else {
            use std::io::Write as _;
            let why = "the AVX-512 f32 tile (this CPU lacks avx512f; a host with it runs it)";
            let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
            return;
        };
        let ldc = 21;
        for kc in [1, 2, 7, 32, 37] {
            for sa in [AStride::PACKED, AStride { row: kc, step: 1 }] {
                let a = data(sa.span(kc), 1);
                let b = data(kc * NR, 2);
                let bias: [f32; NR] = std::array::from_fn(|j| j as f32 * 0.1 - 0.7);
                let start = data(MR * ldc, 3);
                for (add_c, bias) in [(false, None), (true, Some(&bias))] {
                    let (mut want, mut got) = (start.clone(), start.clone());
                    Portable.tile(kc, &a, sa, &b, &mut want, ldc, add_c, bias);
                    kern.tile(kc, &a, sa, &b, &mut got, ldc, add_c, bias);
                    for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g - e).abs() <= 1e-5 * (1.0 + e.abs()),
                            "kc {kc} {sa:?} add_c {add_c} [{i}]: {g} vs {e}"
                        );
                    }
                }
            }
        }
    }
}

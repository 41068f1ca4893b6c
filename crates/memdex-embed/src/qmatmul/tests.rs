use super::*;
use crate::matmul::reference;
use crate::matmul::tests::data;

fn run(
    isa: Isa,
    x: &[f32],
    m: usize,
    w: &[f32],
    n: usize,
    k: usize,
    epi: Epilogue<'_>,
) -> Vec<f32> {
    let packed = PackedI16::pack(w, n, k);
    let mut out = vec![0.25f32; m * n];
    let mut qa = QRows::default();
    block(isa, x, m, &packed, &vec![0.0; n], &mut out, epi, &mut qa);
    out
}

#[test]
fn every_tile_gives_the_same_sums() {
    // the integer sums are exact, so the tiles differ only in the float epilogue's rounding
    let (kc, ldc) = (301, 21);
    let a: Vec<i32> = (0..MR * kc)
        .map(|i| pair((i * 37 % 2001) as i16 - 1000, (i * 91 % 4001) as i16 - 2000))
        .collect();
    let b: Vec<i32> = (0..kc * NR)
        .map(|i| pair((i * 53 % 3001) as i16 - 1500, (i * 17 % 601) as i16 - 300))
        .collect();
    let ri: [f32; MR] = std::array::from_fn(|i| 1e-3 * (i + 1) as f32);
    let ci: [f32; NR] = std::array::from_fn(|j| 2e-4 * (j + 3) as f32);
    let bias: [f32; NR] = std::array::from_fn(|j| j as f32 - 7.0);
    let start: Vec<f32> = (0..MR * ldc).map(|i| (i % 13) as f32).collect();
    for (add_c, bias) in [(false, None), (true, Some(&bias))] {
        let mut want = start.clone();
        Portable.tile(kc, &a, &b, (&ri, &ci), &mut want, ldc, add_c, bias);
        #[cfg(target_arch = "x86_64")]
        if let Some(k) = x86::Avx2Int::new() {
            let mut got = start.clone();
            k.tile(kc, &a, &b, (&ri, &ci), &mut got, ldc, add_c, bias);
            for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                assert!((g - e).abs() <= 1e-6 * (1.0 + e.abs()), "[{i}]: {g} vs {e}");
            }
        }
        // columns past NR of each row are untouched
        for i in 0..MR {
            assert_eq!(
                &want[i * ldc + NR..(i + 1) * ldc],
                &start[i * ldc + NR..(i + 1) * ldc]
            );
        }
    }
}

#[test]
fn operands_at_the_cauchy_schwarz_bound_do_not_overflow() {
    // a parallel to every column of w (same signs, equal magnitudes) is the largest sum the
    // scales allow: an i32 overflow would wrap it negative
    for k in [384, 1536, 4095] {
        let sign = |p: usize| if p.is_multiple_of(3) { -1.0f32 } else { 1.0 };
        let x: Vec<f32> = (0..2 * k).map(|i| 7.0 * sign(i % k)).collect();
        let w: Vec<f32> = (0..3 * k).map(|i| 0.01 * sign(i % k)).collect();
        let mut want = vec![0f32; 2 * 3];
        reference(&x, 2, &w, 3, k, &[0.0; 3], &mut want, Epilogue::Bias(None));
        for isa in Isa::available() {
            let got = run(isa, &x, 2, &w, 3, k, Epilogue::Bias(None));
            for (g, e) in got.iter().zip(&want) {
                // equal magnitudes round alike, so the error is coherent: ≤ ½ / |q| per
                // operand, |q| ≈ 46,000 / √k (≈ 720 at k 4095)
                assert!((g - e).abs() <= 2e-3 * e.abs(), "{isa:?} k {k}: {g} vs {e}");
            }
        }
    }
}

#[test]
fn a_non_finite_row_comes_out_nan_and_spares_the_others() {
    let (m, k, n) = (8, 64, 20);
    let mut x = data(m * k, 3);
    x[2 * k + 5] = f32::NAN;
    x[5 * k] = f32::INFINITY;
    x[7 * k..].fill(0.0);
    let w = data(n * k, 4);
    let b = data(n, 5);
    let mut want = vec![0f32; m * n];
    reference(&x, m, &w, n, k, &b, &mut want, Epilogue::Bias(None));
    for isa in Isa::available() {
        let packed = PackedI16::pack(&w, n, k);
        let mut got = vec![0f32; m * n];
        let mut qa = QRows::default();
        block(
            isa,
            &x,
            m,
            &packed,
            &b,
            &mut got,
            Epilogue::Bias(None),
            &mut qa,
        );
        for (r, (g, e)) in got.chunks(n).zip(want.chunks(n)).enumerate() {
            if r == 2 || r == 5 {
                assert!(g.iter().all(|v| v.is_nan()), "{isa:?} row {r}: {g:?}");
            } else {
                for (a, b) in g.iter().zip(e) {
                    assert!((a - b).abs() <= 1e-3 * (1.0 + b.abs()), "{isa:?} row {r}");
                }
            }
        }
        // the all-zero row is the bias exactly
        assert_eq!(&got[7 * n..], &b[..]);
    }
}

#[test]
fn zero_and_non_finite_columns() {
    let (m, k, n) = (6, 32, 17);
    let x = data(m * k, 6);
    let mut w = data(n * k, 7);
    w[3 * k..4 * k].fill(0.0);
    w[16 * k + 1] = f32::NEG_INFINITY;
    let packed = PackedI16::pack(&w, n, k);
    assert_eq!(packed.col_inv[3], 0.0);
    assert!(packed.col_inv[16].is_nan());
    for isa in Isa::available() {
        let got = run(isa, &x, m, &w, n, k, Epilogue::Bias(None));
        for row in got.chunks(n) {
            assert_eq!(row[3], 0.0, "{isa:?}");
            assert!(row[16].is_nan(), "{isa:?}");
            assert!(row[..16].iter().all(|v| v.is_finite()), "{isa:?}");
        }
    }
}

#[test]
fn rounding_stays_within_half_a_step_and_under_the_sum_bound() {
    let (m, k, n) = (9, 1536, 32);
    let mut x = data(m * k, 8);
    x[3] = 40.0; // an outlier dimension, as BERT activations have
    let w = data(n * k, 9);
    let packed = PackedI16::pack(&w, n, k);
    let mut qa = QRows::default();
    qa.fill(Portable, &x, m, &packed);
    let xq = dequantized_rows(Isa::Portable, &x, m, &packed);
    let w_max = (0..n)
        .map(|j| {
            let panel = &packed.data[(j / NR) * packed.pairs * NR..];
            (0..packed.pairs)
                .map(|p| {
                    let (lo, hi) = halves(panel[p * NR + j % NR]);
                    (lo * lo + hi * hi) as f64
                })
                .sum::<f64>()
                .sqrt()
        })
        .fold(0f64, f64::max);
    for i in 0..m {
        let norm = (0..packed.pairs)
            .map(|p| {
                let (lo, hi) = halves(qa.pair_at(i, p, packed.pairs));
                (lo * lo + hi * hi) as f64
            })
            .sum::<f64>()
            .sqrt();
        assert!(norm * w_max < i32::MAX as f64, "row {i}: {norm} · {w_max}");
        for p in 0..k {
            let err = (xq[i * k + p] - x[i * k + p]).abs();
            assert!(err <= 0.5 * qa.inv[i] * 1.0001, "row {i} [{p}]: {err}");
        }
    }
    // ~13 bits of each row survive even beside the outlier
    let cos = |a: &[f32], b: &[f32]| {
        let d: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
        let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
        d / (na * nb)
    };
    for i in 0..m {
        let c = cos(&x[i * k..(i + 1) * k], &xq[i * k..(i + 1) * k]);
        assert!(c > 0.999_999, "row {i}: cosine {c}");
    }
    assert!(cos(&w, &packed.dequantized()) > 0.999_999);
}

#[test]
fn every_row_kernel_rounds_alike() {
    // odd lengths reach the scalar tails; values sit on and beside the .5 ties
    for len in [1usize, 15, 16, 17, 33, 384, 1537] {
        let row: Vec<f32> = (0..len)
            .map(|i| ((i % 7) as f32 - 3.0) * 0.5 + (i % 3) as f32 * 1e-3)
            .collect();
        let mut want = vec![0i32; len.div_ceil(2)];
        Portable.quantize_row(&row, 3.0, &mut want);
        let (max, sq) = Portable.row_stats(&row);
        #[cfg(target_arch = "x86_64")]
        if let Some(k) = x86::Avx2Int::new() {
            let mut got = vec![0i32; len.div_ceil(2)];
            k.quantize_row(&row, 3.0, &mut got);
            assert_eq!(got, want, "len {len}");
            let (m2, s2) = k.row_stats(&row);
            assert_eq!(m2, max);
            assert!((s2 - sq).abs() <= 1e-5 * sq, "len {len}: {s2} vs {sq}");
        }
        let back: Vec<f32> = want
            .iter()
            .flat_map(|&v| {
                let (lo, hi) = halves(v);
                [lo, hi]
            })
            .map(|v| v as f32)
            .collect();
        for (i, v) in row.iter().enumerate() {
            assert_eq!(back[i], (v * 3.0).round_ties_even(), "len {len} [{i}]");
        }
    }
}

/// A skip the run's output shows (past the test harness's capture of a passing test).
fn skipped(why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn vnni_tiles_give_the_portable_sums() {
    let Some(kern) = vnni::Vnni::new() else {
        return skipped(
            "the AVX-512 VNNI tiles (this CPU lacks avx512_vnni; a host with it runs them)",
        );
    };
    let (kc, ldc) = (301, 41);
    let pairs = |len: usize, s: usize| -> Vec<i32> {
        (0..len)
            .map(|i| {
                pair(
                    ((i * 37 + s) % 2001) as i16 - 1000,
                    ((i * 91 + s) % 4001) as i16 - 2000,
                )
            })
            .collect()
    };
    let a = [pairs(MR * kc, 1), pairs(MR * kc, 7)];
    let b = [pairs(kc * NR, 3), pairs(kc * NR, 5)];
    let ri: [[f32; MR]; 2] =
        std::array::from_fn(|g| std::array::from_fn(|i| 1e-3 * (g * MR + i + 1) as f32));
    let ci: [[f32; NR]; 2] =
        std::array::from_fn(|q| std::array::from_fn(|j| 2e-4 * (q * NR + j + 3) as f32));
    let bias: [[f32; NR]; 2] =
        std::array::from_fn(|q| std::array::from_fn(|j| (q * NR + j) as f32 - 7.0));
    let start: Vec<f32> = (0..2 * MR * ldc).map(|i| (i % 13) as f32).collect();
    for (add_c, with_bias) in [(false, false), (true, true), (true, false)] {
        // the portable 6 × 16 tile on each (row group, panel) of the largest tile
        let mut want = start.clone();
        for g in 0..2 {
            for q in 0..2 {
                let bq = with_bias.then_some(&bias[q]);
                let c = &mut want[g * MR * ldc + q * NR..];
                Portable.tile(kc, &a[g], &b[q], (&ri[g], &ci[q]), c, ldc, add_c, bq);
            }
        }
        let check = |got: &[f32], rows: usize, cols: usize, shape: &str| {
            for i in 0..2 * MR {
                for j in 0..ldc {
                    let (g, e) = (
                        got[i * ldc + j],
                        if i < rows && j < cols {
                            want[i * ldc + j]
                        } else {
                            start[i * ldc + j]
                        },
                    );
                    assert!(
                        (g - e).abs() <= 1e-6 * (1.0 + e.abs()),
                        "{shape} add_c {add_c} [{i}][{j}]: {g} vs {e}"
                    );
                }
            }
        };
        let mut got = start.clone();
        kern.tile::<2, 2>(
            kc,
            [&a[0], &a[1]],
            [&b[0], &b[1]],
            (&ri, &ci),
            &mut got,
            ldc,
            add_c,
            with_bias.then_some(&bias),
        );
        check(&got, 2 * MR, 2 * NR, "12×32");
        let mut got = start.clone();
        let bias1 = [bias[0]];
        kern.tile::<2, 1>(
            kc,
            [&a[0], &a[1]],
            [&b[0]],
            (&ri, &[ci[0]]),
            &mut got,
            ldc,
            add_c,
            with_bias.then_some(&bias1),
        );
        check(&got, 2 * MR, NR, "12×16");
        let mut got = start.clone();
        kern.tile::<1, 2>(
            kc,
            [&a[0]],
            [&b[0], &b[1]],
            (&[ri[0]], &ci),
            &mut got,
            ldc,
            add_c,
            with_bias.then_some(&bias),
        );
        check(&got, MR, 2 * NR, "6×32");
        let mut got = start.clone();
        kern.tile::<1, 1>(
            kc,
            [&a[0]],
            [&b[0]],
            (&[ri[0]], &[ci[0]]),
            &mut got,
            ldc,
            add_c,
            with_bias.then_some(&bias1),
        );
        check(&got, MR, NR, "6×16");
    }
}

/// The AVX-512 block (VNNI tiles, its own depth blocks and edges) against the AVX2 one (the
/// same row kernels, so the same quantised operands): the same exact integer sums, so only
/// the epilogue's float rounding may differ. (Both also meet the f64 loop: `linear`'s tests.)
#[test]
fn avx512_block_matches_the_avx2_block() {
    if !Isa::available().contains(&Isa::Avx512) || !crate::isa::has_avx512_vnni() {
        return skipped(
            "the AVX-512 VNNI block (this CPU lacks avx512_vnni; a host with it runs it)",
        );
    }
    let eps = 1e-12;
    for (m, k, n) in [
        (1, 16, 8),
        (7, 40, 37),
        (13, 384, 96),
        (30, 1536, 40),
        (96, 384, 1152),
        (25, 1537, 33),
    ] {
        let (x, w, b) = (data(m * k, 1), data(n * k, 2), data(n, 3));
        let (g, beta) = (data(n, 4), data(n, 5));
        let packed = PackedI16::pack(&w, n, k);
        for epi in [
            Epilogue::Bias(None),
            Epilogue::Bias(Some(crate::math::Act::Gelu)),
            Epilogue::ResidualLayerNorm {
                gamma: &g,
                beta: &beta,
                eps,
            },
        ] {
            let resid = data(m * n, 6);
            let run = |isa| {
                let mut out = resid.clone();
                block(
                    isa,
                    &x,
                    m,
                    &packed,
                    &b,
                    &mut out,
                    epi,
                    &mut QRows::default(),
                );
                out
            };
            let (got, want) = (run(Isa::Avx512), run(Isa::Avx2));
            for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - e).abs() <= 1e-5 * (1.0 + e.abs()),
                    "m {m} k {k} n {n} {epi:?} [{i}]: {g} vs {e}"
                );
            }
        }
    }
}

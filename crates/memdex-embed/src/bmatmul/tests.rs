use super::*;
use crate::math::Act;
use crate::matmul::reference;
use crate::matmul::tests::data;

/// A visible skip (past the test harness's capture of a passing test's output).
fn skipped(why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// `x`, `w` rounded as the tiles see them, and `w` packed.
fn operands(
    x: &[f32],
    m: usize,
    w: &[f32],
    n: usize,
    k: usize,
) -> (PackedBf16, Vec<f32>, Vec<f32>) {
    let p = PackedBf16::pack(w, n, k);
    let (xr, wr) = (Bf16Rows::rounded(x, m, &p), p.rounded());
    (p, xr, wr)
}

fn epilogues<'a>(g: &'a [f32], beta: &'a [f32]) -> [Epilogue<'a>; 4] {
    [
        Epilogue::Bias(None),
        Epilogue::Bias(Some(Act::Gelu)),
        Epilogue::Bias(Some(Act::Relu)),
        Epilogue::ResidualLayerNorm {
            gamma: g,
            beta,
            eps: 1e-12,
        },
    ]
}

fn close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    for (i, (g, e)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - e).abs() <= tol * (1.0 + e.abs()),
            "{what} [{i}]: {g} vs {e}"
        );
    }
}

/// Odd shapes: partial row groups and panels, odd depth, one and several tile steps.
const SHAPES: [(usize, usize, usize); 7] = [
    (1, 16, 8),
    (7, 40, 37),
    (13, 384, 96),
    (17, 33, 24),
    (50, 64, 48),
    (96, 1536, 40),
    (33, 384, 1152),
];

#[test]
fn rounding_matches_bf16_and_packing_keeps_every_weight() {
    let (n, k) = (37, 41);
    let w = data(n * k, 9);
    let p = PackedBf16::pack(&w, n, k);
    assert_eq!(p.pairs % PAIRS, 0);
    for (r, v) in p.rounded().iter().zip(&w) {
        assert_eq!(*r, crate::tiles::bf16_value(bf16_bits(*v)));
        assert!((r - v).abs() <= v.abs() * 2f32.powi(-8));
    }
    let x = data(5 * k, 3);
    for (r, v) in Bf16Rows::rounded(&x, 5, &p).iter().zip(&x) {
        assert!((r - v).abs() <= v.abs() * 2f32.powi(-8));
    }
}

#[test]
fn the_tile_plan_on_the_emulator_matches_the_f64_loop() {
    for isa in Isa::available() {
        for (m, k, n) in SHAPES {
            let (x, w, b) = (data(m * k, 1), data(n * k, 2), data(n, 3));
            let (g, beta) = (data(n, 4), data(n, 5));
            let (p, xr, wr) = operands(&x, m, &w, n, k);
            for epi in epilogues(&g, &beta) {
                let resid = data(m * n, 6);
                let (mut got, mut want) = (resid.clone(), resid);
                emulated(isa, &x, m, &p, &b, &mut got, epi, &mut Scratch::default());
                reference(&xr, m, &wr, n, k, &b, &mut want, epi);
                close(
                    &got,
                    &want,
                    2e-5,
                    &format!("{isa} m {m} k {k} n {n} {epi:?}"),
                );
            }
        }
    }
}

#[test]
fn every_isa_copy_of_the_emulator_gives_the_same_bits() {
    // the emulator's arithmetic is fixed (each step rounded in order): its copies compiled
    // for each ISA must agree exactly
    let (m, k, n) = (37, 384, 70);
    let (x, w, b) = (data(m * k, 7), data(n * k, 8), data(n, 9));
    let p = PackedBf16::pack(&w, n, k);
    let run = |isa| {
        let mut c = vec![0f32; m * n];
        emulated(
            isa,
            &x,
            m,
            &p,
            &b,
            &mut c,
            Epilogue::Bias(None),
            &mut Scratch::default(),
        );
        c
    };
    let want = run(Isa::Portable);
    for isa in Isa::available() {
        assert_eq!(run(isa), want, "{isa}");
    }
}

#[test]
fn a_nan_row_comes_out_nan_and_spares_the_others() {
    let (m, k, n) = (8, 64, 20);
    let mut x = data(m * k, 3);
    x[2 * k + 5] = f32::NAN;
    x[7 * k..].fill(0.0);
    let (w, b) = (data(n * k, 4), data(n, 5));
    let (p, xr, wr) = operands(&x, m, &w, n, k);
    let mut want = vec![0f32; m * n];
    reference(&xr, m, &wr, n, k, &b, &mut want, Epilogue::Bias(None));
    for isa in Isa::available() {
        let mut got = vec![0f32; m * n];
        block(
            isa,
            &x,
            m,
            &p,
            &b,
            &mut got,
            Epilogue::Bias(None),
            &mut Scratch::default(),
        );
        for (r, (g, e)) in got.chunks(n).zip(want.chunks(n)).enumerate() {
            if r == 2 {
                assert!(g.iter().all(|v| v.is_nan()), "{isa} row {r}: {g:?}");
            } else {
                close(g, e, 2e-5, &format!("{isa} row {r}"));
            }
        }
        assert_eq!(
            &got[7 * n..],
            &b[..],
            "the all-zero row is the bias exactly"
        );
    }
}

/// The kernel on the hardware: the same plan as the emulator, so the same sums up to the
/// order the hardware adds a pair's two products in; and the f64 loop within f32 rounding.
/// Runs where this process may use AMX; elsewhere a visible skip.
#[test]
fn amx_matches_the_emulator_and_the_f64_loop() {
    if let Err(why) = crate::amx::status() {
        skipped(&format!("no AMX: the AMX kernel is not run ({why})"));
        return;
    }
    for (m, k, n) in SHAPES {
        let (x, w, b) = (data(m * k, 1), data(n * k, 2), data(n, 3));
        let (g, beta) = (data(n, 4), data(n, 5));
        let (p, xr, wr) = operands(&x, m, &w, n, k);
        for epi in epilogues(&g, &beta) {
            let resid = data(m * n, 6);
            let (mut amx, mut emu, mut want) = (resid.clone(), resid.clone(), resid);
            block(
                Isa::Avx512,
                &x,
                m,
                &p,
                &b,
                &mut amx,
                epi,
                &mut Scratch::default(),
            );
            emulated(
                Isa::Avx512,
                &x,
                m,
                &p,
                &b,
                &mut emu,
                epi,
                &mut Scratch::default(),
            );
            reference(&xr, m, &wr, n, k, &b, &mut want, epi);
            let what = format!("AMX m {m} k {k} n {n} {epi:?}");
            close(&amx, &emu, 1e-5, &format!("{what} vs emulator"));
            close(&amx, &want, 2e-5, &format!("{what} vs f64"));
        }
    }
}

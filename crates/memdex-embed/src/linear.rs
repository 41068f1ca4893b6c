//! A linear layer's product in one of memdex's GEMMs: f32 ([`crate::matmul`]), 16-bit
//! integer ([`crate::qmatmul`]) or bf16 ([`crate::bmatmul`]), per how each weight matrix was
//! packed ([`Packed`]). Splits the rows into blocks across rayon tasks and fuses the
//! feed-forward pair per block.

use rayon::prelude::*;

use crate::bmatmul::{self, PackedBf16};
use crate::isa::Isa;
use crate::matmul::{self, Act, Aligned, Epilogue, PackedB, MR};
use crate::qmatmul::{self, PackedI16, QRows};

/// Rows per rayon task at most (multiple of [`MR`]).
const MC: usize = 96;

/// A weight matrix packed for one of memdex's GEMMs: f32 ([`crate::matmul`]), 16-bit
/// integer ([`crate::qmatmul`]) or bf16 ([`crate::bmatmul`]).
#[derive(Debug)]
pub(crate) enum Packed {
    F32(PackedB),
    I16(PackedI16),
    Bf16(PackedBf16),
}

impl Packed {
    /// Output columns `n` and reduction depth `k` (the weight is `n × k`).
    fn shape(&self) -> (usize, usize) {
        match self {
            Packed::F32(w) => w.shape(),
            Packed::I16(w) => (w.n(), w.k()),
            Packed::Bf16(w) => (w.n(), w.k()),
        }
    }

    /// Rows of a block are a multiple of this: the bf16 tiles take 32 rows a step, the
    /// others [`MR`].
    fn row_unit(&self) -> usize {
        match self {
            Packed::Bf16(_) => 32,
            _ => MR,
        }
    }
}

/// `out = epilogue(x · wᵀ + b)` for `m` rows of `x` (`m × k`), on `isa`'s kernels, in parallel
/// over blocks of rows. `isa` must not exceed what the CPU has (see [`Isa::active`]).
pub(crate) fn linear(
    isa: Isa,
    x: &[f32],
    m: usize,
    w: &Packed,
    b: &[f32],
    out: &mut [f32],
    epi: Epilogue<'_>,
) {
    let (n, k) = w.shape();
    assert!(
        x.len() >= m * k && out.len() >= m * n && b.len() == n,
        "linear shapes"
    );
    let mc = block_rows(m, w.row_unit());
    out[..m * n]
        .par_chunks_mut(mc * n)
        .zip(x[..m * k].par_chunks(mc * k))
        .for_each(|(c, a)| {
            APACK.with(|ap| block(isa, a, c.len() / n, w, b, c, epi, &mut ap.borrow_mut()));
        });
}

/// The feed-forward block, fused per block of rows:
/// `x = LayerNorm(x + act(x·wiᵀ + bi)·woᵀ + bo)` (`ln` is the residual + LayerNorm epilogue).
/// A block's intermediate rows stay in a thread-local buffer sized to stay in L2, so they are
/// never written to memory, and the two GEMMs share one parallel step.
#[allow(clippy::too_many_arguments)]
pub(crate) fn feed_forward(
    isa: Isa,
    x: &mut [f32],
    m: usize,
    wi: &Packed,
    bi: &[f32],
    act: Act,
    wo: &Packed,
    bo: &[f32],
    ln: Epilogue<'_>,
) {
    let (inter, h) = wi.shape();
    assert!(
        wo.shape() == (h, inter) && x.len() >= m * h,
        "feed-forward shapes"
    );
    assert!(bi.len() == inter && bo.len() == h, "feed-forward biases");
    let unit = wi.row_unit();
    let fit = (FFN_L2_BYTES / (4 * inter)) / unit * unit;
    let mc = block_rows(m, unit).min(fit.max(unit));
    x[..m * h].par_chunks_mut(mc * h).for_each(|xb| {
        let rows = xb.len() / h;
        FFN.with(|buf| {
            APACK.with(|ap| {
                let (buf, ap) = (&mut *buf.borrow_mut(), &mut *ap.borrow_mut());
                let mid = buf.resize(rows * inter);
                block(isa, xb, rows, wi, bi, mid, Epilogue::Bias(Some(act)), ap);
                block(isa, buf.get(), rows, wo, bo, xb, ln, ap);
            })
        });
    });
}

/// Bytes of a feed-forward block's intermediate rows at most (half a Zen 3 L2).
const FFN_L2_BYTES: usize = 256 << 10;

thread_local! {
    static APACK: std::cell::RefCell<Aligned> = std::cell::RefCell::new(Aligned::default());
    static FFN: std::cell::RefCell<Aligned> = std::cell::RefCell::new(Aligned::default());
    static QA: std::cell::RefCell<QRows> = std::cell::RefCell::new(QRows::default());
    static BF: std::cell::RefCell<bmatmul::Scratch> = Default::default();
}

/// Rows per task: at most [`MC`], a multiple of `unit` (which divides [`MC`]), and small
/// enough that both threads of a two-core machine get several blocks.
fn block_rows(m: usize, unit: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let want = m.div_ceil(threads * 4).div_ceil(unit) * unit;
    want.clamp(unit, MC)
}

/// One block of rows on `isa`'s kernels, in `w`'s arithmetic.
#[allow(clippy::too_many_arguments)]
fn block(
    isa: Isa,
    a: &[f32],
    rows: usize,
    w: &Packed,
    b: &[f32],
    c: &mut [f32],
    epi: Epilogue<'_>,
    apack: &mut Aligned,
) {
    match w {
        Packed::F32(w) => matmul::block(isa, a, rows, w, b, c, epi, apack),
        Packed::I16(w) => {
            QA.with(|qa| qmatmul::block(isa, a, rows, w, b, c, epi, &mut qa.borrow_mut()))
        }
        Packed::Bf16(w) => {
            BF.with(|s| bmatmul::block(isa, a, rows, w, b, c, epi, &mut s.borrow_mut()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::reference;
    use crate::matmul::tests::data;

    /// `w` packed in each arithmetic, with the operands each one multiplies (`x` rows of
    /// length `k`, `w`): the integer GEMM must match the f64 loop on its dequantised values
    /// (its rounding of the operands is tested in `qmatmul`).
    fn packings(
        isa: Isa,
        x: &[f32],
        w: &[f32],
        n: usize,
        k: usize,
    ) -> [(Packed, Vec<f32>, Vec<f32>); 3] {
        let q = PackedI16::pack(w, n, k);
        let (xq, wq) = (
            qmatmul::dequantized_rows(isa, x, x.len() / k, &q),
            q.dequantized(),
        );
        let h = PackedBf16::pack(w, n, k);
        let (xh, wh) = (bmatmul::Bf16Rows::rounded(x, x.len() / k, &h), h.rounded());
        [
            (Packed::F32(PackedB::pack(w, n, k)), x.to_vec(), w.to_vec()),
            (Packed::I16(q), xq, wq),
            (Packed::Bf16(h), xh, wh),
        ]
    }

    fn name(p: &Packed) -> &'static str {
        match p {
            Packed::F32(_) => "f32",
            Packed::I16(_) => "i16",
            Packed::Bf16(_) => "bf16",
        }
    }

    #[test]
    fn every_isa_matches_reference() {
        // odd shapes hit the edge tiles, several depth blocks and several row blocks
        let shapes = [
            (1, 16, 8),
            (7, 40, 37),
            (13, 384, 96),
            (50, 33, 24),
            (203, 1536, 40),
            (97, 384, 1152),
        ];
        let eps = 1e-12;
        for isa in Isa::available() {
            for (m, k, n) in shapes {
                let (x, w, b) = (data(m * k, 1), data(n * k, 2), data(n, 3));
                let (g, beta) = (data(n, 4), data(n, 5));
                let epis = [
                    Epilogue::Bias(None),
                    Epilogue::Bias(Some(Act::Gelu)),
                    Epilogue::Bias(Some(Act::Relu)),
                    Epilogue::ResidualLayerNorm {
                        gamma: &g,
                        beta: &beta,
                        eps,
                    },
                ];
                for (packed, xr, wr) in packings(isa, &x, &w, n, k) {
                    for epi in epis {
                        let resid = data(m * n, 6);
                        let (mut got, mut want) = (resid.clone(), resid);
                        linear(isa, &x, m, &packed, &b, &mut got, epi);
                        reference(&xr, m, &wr, n, k, &b, &mut want, epi);
                        let p = name(&packed);
                        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                            assert!(
                                (g - e).abs() <= 2e-5 * (1.0 + e.abs()),
                                "{isa:?} {p} m {m} k {k} n {n} {epi:?} [{i}]: {g} vs {e}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fused_feed_forward_matches_two_reference_steps() {
        let eps = 1e-12;
        for isa in Isa::available() {
            for (m, h, inter) in [(7, 32, 64), (100, 40, 96), (131, 384, 1536)] {
                let (x, wi, bi) = (data(m * h, 1), data(inter * h, 2), data(inter, 3));
                let (wo, bo) = (data(h * inter, 4), data(h, 5));
                let (g, beta) = (data(h, 6), data(h, 7));
                let ln = Epilogue::ResidualLayerNorm {
                    gamma: &g,
                    beta: &beta,
                    eps,
                };
                let act = Epilogue::Bias(Some(Act::Gelu));
                let both = packings(isa, &x, &wi, inter, h).into_iter();
                for ((pi, xr, wir), (po, _, _)) in both.zip(packings(isa, &x, &wo, h, inter)) {
                    // the second product's operands are the first one's output
                    let mut mid = vec![0f32; m * inter];
                    reference(&xr, m, &wir, inter, h, &bi, &mut mid, act);
                    let (mid, wor) = match &po {
                        Packed::F32(_) => (mid, wo.clone()),
                        Packed::I16(q) => {
                            (qmatmul::dequantized_rows(isa, &mid, m, q), q.dequantized())
                        }
                        Packed::Bf16(h) => (bmatmul::Bf16Rows::rounded(&mid, m, h), h.rounded()),
                    };
                    let mut want = x.clone();
                    reference(&mid, m, &wor, h, inter, &bo, &mut want, ln);
                    let mut got = x.clone();
                    feed_forward(isa, &mut got, m, &pi, &bi, Act::Gelu, &po, &bo, ln);
                    let p = name(&pi);
                    for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g - e).abs() <= 2e-4 * (1.0 + e.abs()),
                            "{isa:?} {p} m {m} h {h} inter {inter} [{i}]: {g} vs {e}"
                        );
                    }
                }
            }
        }
    }
}

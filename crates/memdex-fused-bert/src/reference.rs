//! The CPU reference of every kernel of `kernels/cuda/encoder/bert.cu` and of the products the
//! plan hands cuBLAS: the semantics, not a fast path. f16 buffers are held as f32 values
//! rounded to f16 where the device stores f16 ([`r16`]); arithmetic is f32 as on the device.
//! Checked against the CUDA sources under the SIMT emulator (`tests/emulated.rs`), and the
//! whole plan against candle's BERT (memdex-embed's `fused_reference_matches_candle`).

use half::f16;

use crate::plan::Gemm;

/// `v` rounded to the nearest f16 (what an f16 store keeps).
pub fn r16(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

/// LayerNorm of `row` into `out` (rounded to f16).
fn norm_row(row: &[f32], gamma: &[f32], beta: &[f32], eps: f32, out: &mut [f32]) {
    let h = row.len() as f32;
    let mean = row.iter().sum::<f32>() / h;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h;
    let inv = 1.0 / (var + eps).sqrt();
    for (d, o) in out.iter_mut().enumerate() {
        *o = r16((row[d] - mean) * inv * gamma[d] + beta[d]);
    }
}

/// Embedding rows for `ids` (`rows` = ids' length, position = row mod `len`) into `out`.
#[derive(Debug, Clone, Copy)]
pub struct EmbedWeights<'a> {
    pub word: &'a [f32],
    pub pos: &'a [f32],
    pub type0: &'a [f32],
    pub gamma: &'a [f32],
    pub beta: &'a [f32],
}

pub fn embed(ids: &[u32], len: usize, w: &EmbedWeights<'_>, h: usize, eps: f32, out: &mut [f32]) {
    let mut row = vec![0f32; h];
    for (t, &id) in ids.iter().enumerate() {
        let (word, pos) = (id as usize * h, (t % len) * h);
        for (d, v) in row.iter_mut().enumerate() {
            *v = w.word[word + d] + w.pos[pos + d] + w.type0[d];
        }
        norm_row(&row, w.gamma, w.beta, eps, &mut out[t * h..(t + 1) * h]);
    }
}

/// `x ← LN(y + bias + x)` row by row.
pub fn residual_norm(
    y: &[f32],
    bias: &[f32],
    x: &mut [f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    let h = bias.len();
    let mut row = vec![0f32; h];
    for (yr, xr) in y.chunks_exact(h).zip(x.chunks_exact_mut(h)) {
        for d in 0..h {
            row[d] = yr[d] + bias[d] + xr[d];
        }
        norm_row(&row, gamma, beta, eps, xr);
    }
}

/// The activation numbered as the kernels number it (0 gelu, 1 gelu-tanh, 2 relu).
pub fn act(x: f32, kind: u32) -> f32 {
    match kind {
        0 => 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2)),
        1 => {
            let c = 0.797_884_6_f32;
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        }
        _ => x.max(0.0),
    }
}

/// `u ← act(u + bias)` over rows of `bias.len()`.
pub fn bias_act(u: &mut [f32], bias: &[f32], kind: u32) {
    for row in u.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = r16(act(*v + b, kind));
        }
    }
}

/// The error function in f32 (Abramowitz–Stegun 7.1.26 is not enough for a reference: this is
/// the erf of f64 via its series/continued fraction, rounded to f32).
pub fn erf(x: f32) -> f32 {
    erf64(x as f64) as f32
}

fn erf64(x: f64) -> f64 {
    let a = x.abs();
    let r = if a < 2.5 {
        // Maclaurin series: 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1))
        let (mut term, mut sum, x2) = (a, a, a * a);
        for n in 1..60 {
            term *= -x2 / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else {
        // erfc's continued fraction (Lentz), converging fast for a ≥ 2.5
        let (tiny, mut f) = (1e-300, a);
        let (mut c, mut d) = (a, 0.0);
        for n in 1..200 {
            let an = n as f64 / 2.0;
            d = a + an * d;
            d = if d.abs() < tiny { tiny } else { d };
            c = a + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        1.0 - (-a * a).exp() / (f * std::f64::consts::PI.sqrt())
    };
    r.copysign(x)
}

/// Shapes of one attention call.
#[derive(Debug, Clone, Copy)]
pub struct Heads {
    pub len: usize,
    pub heads: usize,
    pub dh: usize,
    pub scale: f32,
}

impl Heads {
    fn h(&self) -> usize {
        self.heads * self.dh
    }
}

/// A sequence's real keys, as the kernels count them: its length within 1..=len.
fn real(lengths: &[u32], b: usize, len: usize) -> usize {
    (lengths[b] as usize).min(len).max(1)
}

/// Attention in one kernel: per (sequence, head, query row) softmax over the real keys of
/// `(q + bq)·scale · (k + bk)`, context `Σ p·(v + bv)` into `ctx[T, H]`.
pub fn attention(qkv: &[f32], bias: &[f32], lengths: &[u32], a: Heads, ctx: &mut [f32]) {
    let (h, dh) = (a.h(), a.dh);
    for (b, _) in lengths.iter().enumerate() {
        let n = real(lengths, b, a.len);
        for head in 0..a.heads {
            let col = |part: usize, j: usize, d: usize| {
                let c = part * h + head * dh + d;
                qkv[(b * a.len + j) * 3 * h + c] + bias[c]
            };
            for i in 0..a.len {
                let q: Vec<f32> = (0..dh).map(|d| col(0, i, d) * a.scale).collect();
                let s: Vec<f32> = (0..n)
                    .map(|j| (0..dh).map(|d| q[d] * col(1, j, d)).sum())
                    .collect();
                let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let e: Vec<f32> = s.iter().map(|v| (v - m).exp()).collect();
                let inv = 1.0 / e.iter().sum::<f32>();
                for d in 0..dh {
                    let acc: f32 = (0..n).map(|j| e[j] * col(2, j, d)).sum();
                    ctx[(b * a.len + i) * h + head * dh + d] = r16(acc * inv);
                }
            }
        }
    }
}

/// QKV + bias into per-head Q (scaled), K, V `[b, heads, len, dh]`.
pub fn split_heads(
    qkv: &[f32],
    bias: &[f32],
    a: Heads,
    q: &mut [f32],
    k: &mut [f32],
    v: &mut [f32],
) {
    let h = a.h();
    for (e, &x) in qkv.iter().enumerate() {
        let (t, c) = (e / (3 * h), e % (3 * h));
        let (part, head, d) = (c / h, (c % h) / a.dh, c % a.dh);
        let (b, i) = (t / a.len, t % a.len);
        let at = ((b * a.heads + head) * a.len + i) * a.dh + d;
        let x = x + bias[c];
        match part {
            0 => q[at] = r16(x * a.scale),
            1 => k[at] = r16(x),
            _ => v[at] = r16(x),
        }
    }
}

/// Softmax of each score row over its sequence's real keys (0 past them).
pub fn softmax(scores: &[f32], lengths: &[u32], len: usize, heads: usize, probs: &mut [f32]) {
    for (row, (s, p)) in scores
        .chunks_exact(len)
        .zip(probs.chunks_exact_mut(len))
        .enumerate()
    {
        let n = real(lengths, row / (heads * len), len);
        let m = s[..n].iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let inv = 1.0 / s[..n].iter().map(|v| (v - m).exp()).sum::<f32>();
        for (j, o) in p.iter_mut().enumerate() {
            *o = if j < n {
                r16((s[j] - m).exp() * inv)
            } else {
                0.0
            };
        }
    }
}

/// Per-head context `[b, heads, len, dh]` back into rows `[T, H]`.
pub fn merge_heads(per_head: &[f32], a: Heads, ctx: &mut [f32]) {
    let h = a.h();
    for (e, o) in ctx.iter_mut().enumerate() {
        let (t, c) = (e / h, e % h);
        let (head, d, b, i) = (c / a.dh, c % a.dh, t / a.len, t % a.len);
        *o = per_head[((b * a.heads + head) * a.len + i) * a.dh + d];
    }
}

/// One vector per sequence (mode: 0 mean, 1 CLS, 2 max, 3 sum / √length), L2-normalised when
/// `normalize` (norm floored at 1e-12), f32.
pub fn pool(
    x: &[f32],
    lengths: &[u32],
    len: usize,
    h: usize,
    mode: u32,
    normalize: bool,
    out: &mut [f32],
) {
    for (b, o) in out.chunks_exact_mut(h).enumerate() {
        let n = real(lengths, b, len);
        let row = |i: usize, d: usize| x[(b * len + i) * h + d];
        for (d, v) in o.iter_mut().enumerate() {
            *v = match mode {
                1 => row(0, d),
                2 => (0..n).map(|i| row(i, d)).fold(f32::NEG_INFINITY, f32::max),
                m => {
                    let s: f32 = (0..n).map(|i| row(i, d)).sum();
                    s / if m == 0 { n as f32 } else { (n as f32).sqrt() }
                }
            };
        }
        if normalize {
            let norm = o.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            o.iter_mut().for_each(|v| *v /= norm);
        }
    }
}

/// A product of the plan with cuBLAS's semantics (column-major, f32 accumulation in order of
/// `k`); `c` rounded to f16 when `half_out`.
pub fn gemm(g: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], half_out: bool) {
    let (m, n, k) = (g.m as usize, g.n as usize, g.k as usize);
    let (lda, ldb, ldc) = (g.lda as usize, g.ldb as usize, g.ldc as usize);
    let mut col_a = vec![0f32; k];
    for p in 0..g.batch as usize {
        let (a, b) = (&a[p * g.stride_a as usize..], &b[p * g.stride_b as usize..]);
        let c = &mut c[p * g.stride_c as usize..];
        for j in 0..n {
            // op(B)[:, j] as a contiguous column
            let bj: Vec<f32> = (0..k)
                .map(|q| if g.tb { b[j + q * ldb] } else { b[q + j * ldb] })
                .collect();
            for i in 0..m {
                // op(A)[i, :]: contiguous in A when transposed (the linear layers' case)
                let ai: &[f32] = if g.ta {
                    &a[i * lda..i * lda + k]
                } else {
                    for (q, v) in col_a.iter_mut().enumerate() {
                        *v = a[i + q * lda];
                    }
                    &col_a
                };
                let dot: f32 = ai.iter().zip(&bj).map(|(x, y)| x * y).sum();
                let v = g.alpha * dot;
                c[i + j * ldc] = if half_out { r16(v) } else { v };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_accurate() {
        // values from a table of erf
        for (x, e) in [
            (0.0f32, 0.0f64),
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (2.5, 0.999_593_047_982_555),
            (3.0, 0.999_977_909_503_001_4),
            (-1.5, -0.966_105_146_475_310_7),
        ] {
            assert!(
                (erf(x) as f64 - e).abs() < 1e-7,
                "erf({x}) = {} not {e}",
                erf(x)
            );
        }
    }

    #[test]
    fn gemm_follows_column_major_blas() {
        // A (2×3) and B (3×2) column-major; C = A·B
        let a = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0];
        let b = [1.0, 0.0, 2.0, 0.0, 1.0, 1.0];
        let g = Gemm {
            ta: false,
            tb: false,
            m: 2,
            n: 2,
            k: 3,
            alpha: 1.0,
            a: crate::plan::Buf::Ids,
            lda: 2,
            stride_a: 0,
            b: crate::plan::Buf::Ids,
            ldb: 3,
            stride_b: 0,
            c: crate::plan::Buf::Out,
            ldc: 2,
            stride_c: 0,
            batch: 1,
        };
        let mut c = [0f32; 4];
        gemm(&g, &a, &b, &mut c, false);
        assert_eq!(c, [7.0, 16.0, 5.0, 11.0]);
        // the same product with A given transposed (3×2 stored, ld 3)
        let at = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut c2 = [0f32; 4];
        gemm(
            &Gemm {
                ta: true,
                lda: 3,
                ..g
            },
            &at,
            &b,
            &mut c2,
            false,
        );
        assert_eq!(c, c2);
    }
}

//! Vectorisable f32 kernels for the fast CPU encoder, each with a test against `std`.
//!
//! Written as straight-line loops over slices without branches in the inner bodies, so LLVM
//! turns them into SIMD code. The slice kernels at the bottom are compiled twice by
//! [`simd_kernel!`]: for the baseline target and for AVX2 + FMA, picked at run time (without
//! FMA enabled at compile time, `mul_add` would be a libm call); accuracy is far inside what embedding parity needs (< 4e-7
//! absolute for `erf`, < 2 ulp-ish relative for `exp` on the softmax range).

/// e^x for x ≤ 0 (softmax after max subtraction) and moderate positive x; clamps below -87.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // e^x = 2^k · e^r, k = round(x / ln 2), |r| ≤ ln2/2
    let k = (x * std::f32::consts::LOG2_E).round();
    let r = k.mul_add(-0.693_145_75, x);
    let r = k.mul_add(-1.428_606_8e-6, r);
    // degree-6 Taylor/minimax for e^r on [-ln2/2, ln2/2]
    let p = 1.0 / 720.0f32;
    let p = p.mul_add(r, 1.0 / 120.0);
    let p = p.mul_add(r, 1.0 / 24.0);
    let p = p.mul_add(r, 1.0 / 6.0);
    let p = p.mul_add(r, 0.5);
    let p = p.mul_add(r, 1.0);
    let p = p.mul_add(r, 1.0);
    let scale = f32::from_bits(((k as i32 + 127) as u32) << 23);
    p * scale
}

/// erf(x): a Maclaurin series below |x| = 0.5 (where the rational form loses digits to
/// cancellation), Abramowitz & Stegun 7.1.26 above (formula error 1.5e-7; < 4e-7 in f32). Both are computed
/// and selected without a branch, so loops over slices vectorise.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / 0.327_591_1f32.mul_add(a, 1.0);
    let y = 1.061_405_4f32;
    let y = y.mul_add(t, -1.453_152_1);
    let y = y.mul_add(t, 1.421_413_7);
    let y = y.mul_add(t, -0.284_496_74);
    let y = y.mul_add(t, 0.254_829_6);
    let big = 1.0 - y * t * exp(-a * a);
    // 2/√π (a − a³/3 + a⁵/10 − a⁷/42 + a⁹/216 − a¹¹/1320)
    let z = a * a;
    let s = (-1.0f32 / 1320.0).mul_add(z, 1.0 / 216.0);
    let s = s.mul_add(z, -1.0 / 42.0);
    let s = s.mul_add(z, 1.0 / 10.0);
    let s = s.mul_add(z, -1.0 / 3.0);
    let s = s.mul_add(z, 1.0);
    let small = std::f32::consts::FRAC_2_SQRT_PI * a * s;
    let y = if a < 0.5 { small } else { big };
    y.copysign(x)
}

/// Exact (erf) GELU, as BERT's `hidden_act: "gelu"`.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// tanh-approximated GELU (`gelu_new`, `gelu_pytorch_tanh`).
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    // 0.5·x·(1 + tanh(u)) = x · sigmoid(2u)
    let u = 0.797_884_6 * (0.044_715 * x * x * x + x);
    x / (1.0 + exp(-2.0 * u))
}

/// In-place softmax of one row.
#[inline(always)]
pub fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in row.iter_mut() {
        *v = exp(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// `x = LayerNorm(x + residual) · gamma + beta` for one row (two-pass variance, like PyTorch).
#[inline(always)]
pub fn add_layer_norm(x: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    for (v, r) in x.iter_mut().zip(residual) {
        *v += r;
    }
    layer_norm(x, gamma, beta, eps);
}

/// `x = LayerNorm(x) · gamma + beta` for one row.
#[inline(always)]
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in x.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// Dot product with 8 independent accumulators (vectorises without fast-math).
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] = x[i].mul_add(y[i], acc[i]);
        }
    }
    (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]) + tail
}

/// `y += a · x`.
#[inline(always)]
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = a.mul_add(*xi, *yi);
    }
}

/// Defines a slice kernel twice — generic and `avx2,fma` — and dispatches at run time.
macro_rules! simd_kernel {
    ($(#[$m:meta])* pub fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        pub fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn generic($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) {
                    generic($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the running CPU has the features `avx2` was compiled for.
                    #[allow(unsafe_code)]
                    return unsafe { avx2($($arg),*) };
                }
            }
            generic($($arg),*)
        }
    };
}

simd_kernel!(
    /// Exact GELU over a slice.
    pub fn gelu_slice(x: &mut [f32]) {
        x.iter_mut().for_each(|v| *v = gelu(*v));
    }
);

simd_kernel!(
    /// tanh GELU over a slice.
    pub fn gelu_tanh_slice(x: &mut [f32]) {
        x.iter_mut().for_each(|v| *v = gelu_tanh(*v));
    }
);

simd_kernel!(
    /// `x = LayerNorm(sub + x)` for one row; `sub` is clobbered.
    pub fn residual_layer_norm_row(x: &mut [f32], sub: &mut [f32], g: &[f32], b: &[f32], eps: f32) {
        add_layer_norm(sub, x, g, b, eps);
        x.copy_from_slice(sub);
    }
);

simd_kernel!(
    /// `row = LayerNorm(word + pos + typ)`.
    pub fn embedding_row(
        row: &mut [f32],
        word: &[f32],
        pos: &[f32],
        typ: &[f32],
        g: &[f32],
        b: &[f32],
        eps: f32,
    ) {
        for (((r, w), p), t) in row.iter_mut().zip(word).zip(pos).zip(typ) {
            *r = w + p + t;
        }
        layer_norm(row, g, b, eps);
    }
);

/// Where one attention head reads its inputs: `qkv` rows hold `[q | k | v]` (row stride
/// `3·h`); the sequence is rows `start..start + n`; the head uses columns `off..off + hd` of
/// each part.
#[derive(Debug, Clone, Copy)]
pub struct HeadInput<'a> {
    pub qkv: &'a [f32],
    pub h: usize,
    pub start: usize,
    pub n: usize,
    pub off: usize,
    pub hd: usize,
    pub scale: f32,
}

simd_kernel!(
    /// Scaled-dot-product attention of one head over one sequence. Writes `n` rows of `hd`
    /// values into `ctx` (row stride `h`, columns `off..off + hd`); `scores` is scratch of
    /// length ≥ n.
    pub fn attention_head(a: HeadInput<'_>, scores: &mut [f32], ctx: &mut [f32]) {
        let row =
            |i: usize, part: usize| &a.qkv[(a.start + i) * 3 * a.h + part * a.h + a.off..][..a.hd];
        let scores = &mut scores[..a.n];
        for i in 0..a.n {
            let qi = row(i, 0);
            for (j, sc) in scores.iter_mut().enumerate() {
                *sc = dot(qi, row(j, 1)) * a.scale;
            }
            softmax(scores);
            let out = &mut ctx[i * a.h + a.off..][..a.hd];
            out.fill(0.0);
            for (j, &p) in scores.iter().enumerate() {
                axpy(p, row(j, 2), out);
            }
        }
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| lo + (hi - lo) * i as f32 / n as f32)
    }

    #[test]
    fn exp_matches_std() {
        for x in grid(-87.0, 20.0, 100_000) {
            let (got, want) = (exp(x), (x as f64).exp());
            assert!(
                ((got as f64 - want) / want).abs() < 3e-7,
                "exp({x}) = {got}, want {want}"
            );
        }
        assert_eq!(exp(-1000.0), exp(-87.0));
        assert!(exp(-87.0) > 0.0);
    }

    #[test]
    fn erf_and_gelu_match_reference() {
        // reference erf in f64 via the complementary error function series of libm-quality
        // accuracy is not in std; compare against a high-order Taylor/continued fraction instead
        fn erf64(x: f64) -> f64 {
            // Abramowitz & Stegun 7.1.5 series for |x| < 3, asymptotic beyond
            if x.abs() > 5.0 {
                return x.signum();
            }
            let mut sum = x;
            let mut term = x;
            for n in 1..200 {
                term *= -x * x / n as f64;
                sum += term / (2 * n + 1) as f64;
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        }
        for x in grid(-4.5, 4.5, 20_000) {
            let (got, want) = (erf(x) as f64, erf64(x as f64));
            assert!((got - want).abs() < 4e-7, "erf({x}) = {got}, want {want}");
            let g = gelu(x) as f64;
            let gw = 0.5 * x as f64 * (1.0 + erf64(x as f64 / 2f64.sqrt()));
            assert!((g - gw).abs() < 1e-6, "gelu({x})");
            let t = gelu_tanh(x) as f64;
            let tw = 0.5
                * x as f64
                * (1.0 + (0.797_884_560_8 * (x as f64 + 0.044_715 * (x as f64).powi(3))).tanh());
            assert!((t - tw).abs() < 1e-6, "gelu_tanh({x}) = {t} vs {tw}");
        }
        assert_eq!(erf(0.0), 0.0);
    }

    #[test]
    fn softmax_layernorm_dot_match_naive() {
        let mut row: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin() * 9.0).collect();
        let max = row.iter().copied().fold(f32::MIN, f32::max) as f64;
        let z: f64 = row.iter().map(|&v| (v as f64 - max).exp()).sum();
        let want: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp() / z).collect();
        softmax(&mut row);
        for (g, w) in row.iter().zip(&want) {
            assert!((*g as f64 - w).abs() < 1e-7);
        }
        let x: Vec<f32> = (0..384)
            .map(|i| (i as f32 * 0.11).cos() * 3.0 + 1.0)
            .collect();
        let r: Vec<f32> = (0..384).map(|i| (i as f32 * 0.7).sin()).collect();
        let g: Vec<f32> = (0..384).map(|i| 1.0 + i as f32 / 1000.0).collect();
        let b: Vec<f32> = (0..384).map(|i| i as f32 / 2000.0).collect();
        let mut y = x.clone();
        add_layer_norm(&mut y, &r, &g, &b, 1e-12);
        let s: Vec<f64> = x.iter().zip(&r).map(|(a, c)| (*a + *c) as f64).collect();
        let mean = s.iter().sum::<f64>() / 384.0;
        let var = s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 384.0;
        for i in 0..384 {
            let want = (s[i] - mean) / (var + 1e-12).sqrt() * g[i] as f64 + b[i] as f64;
            assert!((y[i] as f64 - want).abs() < 1e-5, "{i}");
        }
        let want: f64 = x.iter().zip(&r).map(|(a, c)| *a as f64 * *c as f64).sum();
        assert!((dot(&x, &r) as f64 - want).abs() < 1e-3);
        let mut acc = r.clone();
        axpy(0.5, &x, &mut acc);
        assert!((acc[3] - (r[3] + 0.5 * x[3])).abs() < 1e-6);
    }
}

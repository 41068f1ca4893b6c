//! Vectorisable f32 kernels for the fast CPU encoder, each with a test against `std`.
//!
//! Written as straight-line loops over slices without branches in the inner bodies, so LLVM
//! turns them into SIMD code. The slice kernels at the bottom are compiled twice by
//! [`simd_kernel!`]: for the baseline target and for AVX2 + FMA, picked by
//! [`crate::isa::Isa::active`].
//! Multiply-adds go through [`MulAdd`]: fused where the code is compiled with FMA, two
//! roundings where it is not (`f32::mul_add` there would be a libm call per element).
//! Accuracy is far inside what embedding parity needs (< 4e-7 absolute for `erf`, < 3e-7
//! relative for `exp` on the softmax range).

/// How `a·b + c` is computed inside a kernel.
pub trait MulAdd: Copy {
    fn ma(a: f32, b: f32, c: f32) -> f32;
}

/// One rounding: for code compiled with FMA (or on targets whose baseline has it).
#[derive(Debug, Clone, Copy)]
pub struct Fused;

impl MulAdd for Fused {
    #[inline(always)]
    fn ma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

/// Two roundings, for code compiled without FMA.
#[derive(Debug, Clone, Copy)]
pub struct Unfused;

impl MulAdd for Unfused {
    #[inline(always)]
    fn ma(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

/// The multiply-add of code compiled for the baseline target: fused where the baseline has
/// FMA (aarch64, or an x86 build with `-C target-feature=+fma`), else two roundings.
#[cfg(any(not(target_arch = "x86_64"), target_feature = "fma"))]
pub type Baseline = Fused;
#[cfg(all(target_arch = "x86_64", not(target_feature = "fma")))]
pub type Baseline = Unfused;

/// e^x for x ≤ 0 (softmax after max subtraction) and moderate positive x; clamps below -87.
/// With multiply-add `M`. Branch-free, and no float-to-int conversion (whose saturation
/// would keep it scalar): k is rounded with the 1.5·2²³ trick and 2^k built from the bits
/// of k + 127 + 2²³.
#[inline(always)]
pub fn exp_with<M: MulAdd>(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2^23
    let x = x.clamp(-87.0, 88.0);
    // e^x = 2^k · e^r, k = round(x / ln 2) in [-126, 127], |r| ≤ ln2/2 (+ rounding)
    let k = (x * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let r = M::ma(k, -0.693_145_75, x);
    let r = M::ma(k, -1.428_606_8e-6, r);
    // degree-6 Taylor/minimax for e^r on [-ln2/2, ln2/2]
    let p = 1.0 / 720.0f32;
    let p = M::ma(p, r, 1.0 / 120.0);
    let p = M::ma(p, r, 1.0 / 24.0);
    let p = M::ma(p, r, 1.0 / 6.0);
    let p = M::ma(p, r, 0.5);
    let p = M::ma(p, r, 1.0);
    let p = M::ma(p, r, 1.0);
    let scale = f32::from_bits((k + 8_388_735.0).to_bits() << 23); // (k + 127) << 23
    p * scale
}

/// erf(x): the rational approximation `x·P(x²)/Q(x²)` of Eigen and XLA (odd degree-13
/// numerator, even degree-8 denominator, input clamped to ±4 where erf is ±1 in f32): |error|
/// < 6.5e-8 in exact arithmetic, < 4e-7 in f32 (tested). Branch-free and exp-free, with two
/// independent Horner chains, so loops over slices vectorise with a short dependency chain.
/// With multiply-add `M`.
#[inline(always)]
pub fn erf_with<M: MulAdd>(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let z = x * x;
    let p = M::ma(z, -2.726_142_3e-10, 2.770_681_4e-8);
    let p = M::ma(z, p, -2.101_024e-6);
    let p = M::ma(z, p, -5.692_506_4e-5);
    let p = M::ma(z, p, -7.349_906_3e-4);
    let p = M::ma(z, p, -2.954_6e-3);
    let p = M::ma(z, p, -1.609_603_3e-2);
    let q = M::ma(z, -1.456_607_2e-5, -2.133_740_6e-4);
    let q = M::ma(z, q, -1.682_827e-3);
    let q = M::ma(z, q, -7.373_329_2e-3);
    let q = M::ma(z, q, -1.426_473_9e-2);
    x * p / q
}

/// Exact (erf) GELU, as BERT's `hidden_act: "gelu"`.
/// With multiply-add `M`.
#[inline(always)]
pub fn gelu_with<M: MulAdd>(x: f32) -> f32 {
    0.5 * x * (1.0 + erf_with::<M>(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// tanh-approximated GELU (`gelu_new`, `gelu_pytorch_tanh`).
/// With multiply-add `M`.
#[inline(always)]
pub fn gelu_tanh_with<M: MulAdd>(x: f32) -> f32 {
    // 0.5·x·(1 + tanh(u)) = x · sigmoid(2u)
    let u = 0.797_884_6 * (0.044_715 * x * x * x + x);
    x / (1.0 + exp_with::<M>(-2.0 * u))
}

/// An activation applied elementwise after a bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Exact (erf) GELU.
    Gelu,
    /// tanh-approximated GELU.
    GeluTanh,
    Relu,
}

impl Act {
    /// Applies the activation with multiply-add `M`.
    #[inline(always)]
    pub fn apply<M: MulAdd>(self, x: &mut [f32]) {
        match self {
            Act::Gelu => x.iter_mut().for_each(|v| *v = gelu_with::<M>(*v)),
            Act::GeluTanh => x.iter_mut().for_each(|v| *v = gelu_tanh_with::<M>(*v)),
            Act::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
        }
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

/// `x = LayerNorm(x) · gamma + beta` for one row (8-lane sums, so it vectorises).
#[inline(always)]
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = x.len() as f32;
    let mean = sum8(x, |v| v) / n;
    let var = sum8(x, |v| (v - mean) * (v - mean)) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in x.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// `Σ f(x_i)` with 8 independent partial sums.
#[inline(always)]
fn sum8(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for c in chunks {
        for l in 0..8 {
            acc[l] += f(c[l]);
        }
    }
    (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]) + tail
}

/// Dot product with 8 independent accumulators (vectorises without fast-math).
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_with::<Baseline>(a, b)
}

/// [`dot`] with a given multiply-add.
#[inline(always)]
pub fn dot_with<M: MulAdd>(a: &[f32], b: &[f32]) -> f32 {
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
            acc[i] = M::ma(x[i], y[i], acc[i]);
        }
    }
    (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]) + tail
}

/// Defines a slice kernel twice — for the baseline target ([`Baseline`] multiply-adds) and for
/// `avx2,fma` ([`Fused`]) — picked by the `isa` argument the generated function takes first
/// (the encoder's level, never above what the CPU has). The body names the multiply-add `M`.
macro_rules! simd_kernel {
    ($(#[$m:meta])* pub fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        pub fn $name(isa: crate::isa::Isa, $($arg: $ty),*) {
            #[inline(always)]
            #[allow(dead_code)]
            fn generic<M: MulAdd>($($arg: $ty),*) $body
            #[cfg(not(target_arch = "x86_64"))]
            let _ = isa;
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) {
                    generic::<Fused>($($arg),*)
                }
                if isa >= crate::isa::Isa::Avx2 && crate::isa::Isa::detect() >= crate::isa::Isa::Avx2 {
                    // SAFETY: the running CPU has AVX2 and FMA (checked just above).
                    #[allow(unsafe_code)]
                    return unsafe { avx2($($arg),*) };
                }
            }
            generic::<Baseline>($($arg),*)
        }
    };
}

simd_kernel!(
    /// The activation (if any) over a slice.
    pub fn act_slice(x: &mut [f32], act: Option<Act>) {
        if let Some(act) = act {
            act.apply::<M>(x);
        }
    }
);

simd_kernel!(
    /// `x = LayerNorm(x + add)` for one row.
    pub fn add_layer_norm_row(x: &mut [f32], add: &[f32], g: &[f32], b: &[f32], eps: f32) {
        add_layer_norm(x, add, g, b, eps);
    }
);

simd_kernel!(
    /// `row = LayerNorm(word + pos + typ)`, `parts = [word, pos, typ]`.
    pub fn embedding_row(row: &mut [f32], parts: [&[f32]; 3], g: &[f32], b: &[f32], eps: f32) {
        let [word, pos, typ] = parts;
        for (((r, w), p), t) in row.iter_mut().zip(word).zip(pos).zip(typ) {
            *r = w + p + t;
        }
        layer_norm(row, g, b, eps);
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
        for f in [exp_with::<Fused>, exp_with::<Unfused>, exp_with::<Baseline>] {
            for x in grid(-87.0, 88.0, 100_000) {
                let (got, want) = (f(x), (x as f64).exp());
                assert!(
                    ((got as f64 - want) / want).abs() < 3e-7,
                    "exp({x}) = {got}, want {want}"
                );
            }
            assert_eq!(f(-1000.0), f(-87.0));
            assert!(f(-87.0) > 0.0);
            assert!(f(1000.0).is_finite());
        }
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
        fn check<M: MulAdd>() {
            for x in grid(-4.5, 4.5, 20_000) {
                let (got, want) = (erf_with::<M>(x) as f64, erf64(x as f64));
                assert!((got - want).abs() < 4e-7, "erf({x}) = {got}, want {want}");
                let g = gelu_with::<M>(x) as f64;
                let gw = 0.5 * x as f64 * (1.0 + erf64(x as f64 / 2f64.sqrt()));
                assert!((g - gw).abs() < 1e-6, "gelu({x})");
                let t = gelu_tanh_with::<M>(x) as f64;
                let xd = x as f64;
                let tw =
                    0.5 * xd * (1.0 + (0.797_884_560_8 * (xd + 0.044_715 * xd.powi(3))).tanh());
                assert!((t - tw).abs() < 1e-6, "gelu_tanh({x}) = {t} vs {tw}");
            }
            assert_eq!(erf_with::<M>(0.0), 0.0);
        }
        check::<Fused>();
        check::<Unfused>();
        // the slice kernels (on the ISA in force) agree with the scalar functions
        let mut v: Vec<f32> = grid(-6.0, 6.0, 1001).collect();
        let want: Vec<f32> = v.iter().map(|&x| gelu_with::<Baseline>(x)).collect();
        act_slice(crate::isa::Isa::detect(), &mut v, Some(Act::Gelu));
        for (g, w) in v.iter().zip(&want) {
            assert!((g - w).abs() < 1e-6);
        }
    }

    #[test]
    fn layernorm_and_dot_match_naive() {
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
        assert!((dot_with::<Unfused>(&x, &r) as f64 - want).abs() < 1e-3);
    }
}

//! Scaled-dot-product attention of one packed sequence, all heads, on the GEMM register tile
//! of [`crate::matmul`]: per head, `S = (Q·scale)·Kᵀ` and `ctx = softmax(S)·V` are two small
//! GEMMs whose operands are packed into the tile's layouts (`Q` and `P` in micro-panels of
//! [`MR`] rows, `Kᵀ` and `V` in panels of [`NR`] columns). The softmax runs over each score
//! row with the vectorisable `math::exp` and writes `P` straight into its packed layout.
//! Compiled three times: for AVX-512 (its f32 tile, one zmm per row), for AVX2 + FMA (the AVX2
//! tile) and for the baseline target (portable tile).

use crate::isa::Isa;
use crate::math::{self, MulAdd};
use crate::matmul::{AStride, Aligned, Kernel, Portable, MR, NR};

/// Where a sequence's rows sit in the fused `[q | k | v]` projection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeqInput<'a> {
    /// Rows of `3·h` values: `q` in columns `0..h`, `k` in `h..2h`, `v` in `2h..3h`.
    pub qkv: &'a [f32],
    pub h: usize,
    pub heads: usize,
    /// First row of the sequence and its length.
    pub start: usize,
    pub n: usize,
}

/// Reusable packing buffers of one worker.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    q: Aligned,
    k: Aligned,
    v: Aligned,
    s: Aligned,
    /// Per query column: max then `1 / Σ`, and the running sums.
    inv: Vec<f32>,
    sum: Vec<f32>,
}

/// Writes the attention output of every head into `ctx` (`n` rows of `h`, head `i` in
/// columns `i·hd..(i + 1)·hd`).
pub(crate) fn attention_seq(isa: Isa, a: SeqInput<'_>, ctx: &mut [f32], scratch: &mut Scratch) {
    assert!(
        a.heads > 0 && a.h.is_multiple_of(a.heads),
        "heads must divide hidden"
    );
    assert!(a.qkv.len() >= (a.start + a.n) * 3 * a.h && ctx.len() >= a.n * a.h);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            let kern = crate::matmul::Avx512Fma::new().expect("CPU lacks AVX-512F");
            // SAFETY: the token exists, so the CPU has AVX-512F, AVX2 and FMA.
            #[allow(unsafe_code)]
            unsafe {
                attention_avx512(kern, a, ctx, scratch)
            }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            let kern = crate::matmul::Avx2Fma::new().expect("CPU lacks AVX2/FMA");
            // SAFETY: the token exists, so the CPU has AVX2 and FMA.
            #[allow(unsafe_code)]
            unsafe {
                attention_avx2(kern, a, ctx, scratch)
            }
        }
        _ => attention_with(Portable, a, ctx, scratch),
    }
}

/// # Safety
/// The CPU must have AVX2 and FMA (guaranteed by `kern`).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
unsafe fn attention_avx2(
    kern: crate::matmul::Avx2Fma,
    a: SeqInput<'_>,
    ctx: &mut [f32],
    scratch: &mut Scratch,
) {
    attention_with(kern, a, ctx, scratch)
}

/// # Safety
/// The CPU must have AVX-512F, AVX2 and FMA (guaranteed by `kern`).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attention_avx512(
    kern: crate::matmul::Avx512Fma,
    a: SeqInput<'_>,
    ctx: &mut [f32],
    scratch: &mut Scratch,
) {
    attention_with(kern, a, ctx, scratch)
}

#[inline(always)]
fn attention_with<K: Kernel>(kern: K, a: SeqInput<'_>, ctx: &mut [f32], s: &mut Scratch) {
    let (n, h) = (a.n, a.h);
    if n == 0 {
        return;
    }
    let hd = h / a.heads;
    let (j_panels, d_panels) = (n.div_ceil(MR), hd.div_ceil(NR));
    // columns of the transposed scores: queries, padded for both tile shapes
    let cols = (j_panels * MR).div_ceil(NR) * NR;
    let (k_len, q_len, v_len) = (j_panels * MR * hd, cols * hd, d_panels * NR * n);
    pack_heads(a, s, k_len, q_len, v_len);
    s.inv.resize(cols, 0.0);
    s.sum.resize(cols, 0.0);
    for head in 0..a.heads {
        let (k, q) = (&s.k.get()[head * k_len..], &s.q.get()[head * q_len..]);
        // Sᵀ[j][i] = k_j · q_i·scale: j_panels × (cols / NR) tiles of depth hd
        let st = s.s.resize(j_panels * MR * cols);
        for jp in 0..j_panels {
            for ip in 0..cols / NR {
                let c = &mut st[jp * MR * cols + ip * NR..];
                kern.tile(
                    hd,
                    &k[jp * MR * hd..],
                    AStride::PACKED,
                    &q[ip * NR * hd..],
                    c,
                    cols,
                    false,
                    None,
                );
            }
        }
        // softmax down each column i over the n keys: e = exp(s − max), 1 / Σe kept aside;
        // only the j_panels·MR query columns the PV tiles read (the rest is NR padding),
        // rounded up to whole 8-lane vectors so no scalar tail runs (cols is a multiple of 16)
        let st = &mut st[..n * cols];
        let used = (j_panels * MR).next_multiple_of(8).min(cols);
        let inv = &mut s.inv[..used];
        column_softmax::<K::Fma>(st, cols, inv, &mut s.sum[..used]);
        // ctx_i = Σ_j e_ij v_j / Σ_j e_ij: (n / MR) × d_panels tiles of depth n, reading the
        // exponentials straight from Sᵀ (MR consecutive queries per key, stride cols)
        let v = &s.v.get()[head * v_len..];
        for ip in 0..j_panels {
            let mr = MR.min(n - ip * MR);
            for dp in 0..d_panels {
                let nc = NR.min(hd - dp * NR);
                let mut buf = [0f32; MR * NR];
                kern.tile(
                    n,
                    &st[ip * MR..],
                    AStride { row: 1, step: cols },
                    &v[dp * NR * n..],
                    &mut buf,
                    NR,
                    false,
                    None,
                );
                for r in 0..mr {
                    let o = (ip * MR + r) * h + head * hd + dp * NR;
                    let scale = inv[ip * MR + r];
                    for (d, x) in ctx[o..o + nc].iter_mut().zip(&buf[r * NR..r * NR + nc]) {
                        *d = x * scale;
                    }
                }
            }
        }
    }
}

/// Packs every head: `K` in micro-panels of [`MR`] keys, `Q·scale` and `V` in panels of
/// [`NR`] columns, zero padding included (every value of the three buffers is written). `Q`
/// and `K` are transposed a panel at a time: for each depth `d` the panel's values are
/// gathered from its rows and stored as one contiguous run, not scattered one by one.
#[inline(always)]
fn pack_heads(a: SeqInput<'_>, s: &mut Scratch, k_len: usize, q_len: usize, v_len: usize) {
    let (n, h) = (a.n, a.h);
    let hd = h / a.heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let (k, q, v) = (
        s.k.resize(a.heads * k_len),
        s.q.resize(a.heads * q_len),
        s.v.resize(a.heads * v_len),
    );
    let row = |i: usize| &a.qkv[(a.start + i) * 3 * h..][..3 * h];
    // the rows past the sequence's end read as zeros (no branch per value)
    let zeros = vec![0f32; hd];
    let at = |i: usize, col: usize| {
        if i < n {
            &row(i)[col..][..hd]
        } else {
            &zeros[..]
        }
    };
    for head in 0..a.heads {
        for (p, dst) in q[head * q_len..][..q_len]
            .chunks_exact_mut(NR * hd)
            .enumerate()
        {
            let rows: [&[f32]; NR] = std::array::from_fn(|t| at(p * NR + t, head * hd));
            transpose_panel(&rows, dst, scale);
        }
        for (p, dst) in k[head * k_len..][..k_len]
            .chunks_exact_mut(MR * hd)
            .enumerate()
        {
            let rows: [&[f32]; MR] = std::array::from_fn(|t| at(p * MR + t, h + head * hd));
            transpose_panel(&rows, dst, 1.0);
        }
    }
    v.fill(0.0);
    for i in 0..n {
        let row = row(i);
        for head in 0..a.heads {
            let src = &row[2 * h + head * hd..][..hd];
            for (dp, chunk) in src.chunks(NR).enumerate() {
                let at = head * v_len + (dp * n + i) * NR;
                let dst = &mut v[at..at + NR];
                match (
                    <&mut [f32; NR]>::try_from(dst),
                    <&[f32; NR]>::try_from(chunk),
                ) {
                    (Ok(d), Ok(c)) => *d = *c, // a fixed-size copy, no memmove call
                    (Ok(d), Err(_)) => d[..chunk.len()].copy_from_slice(chunk),
                    (Err(_), _) => unreachable!("the slice is NR long"),
                }
            }
        }
    }
}

/// `dst[d·W + t] = rows[t][d] · scale` for every depth `d < dst.len() / W`: one panel of `W`
/// rows transposed, each depth's run stored contiguously.
#[inline(always)]
fn transpose_panel<const W: usize>(rows: &[&[f32]; W], dst: &mut [f32], scale: f32) {
    let depth = dst.len() / W;
    let rows: [&[f32]; W] = rows.map(|r| &r[..depth]);
    for (d, out) in dst.chunks_exact_mut(W).enumerate() {
        let run: [f32; W] = std::array::from_fn(|t| rows[t][d] * scale);
        out.copy_from_slice(&run);
    }
}

/// Softmax down the first `inv.len()` columns of `st` (`rows × cols`, row-major), vectorised
/// across columns: leaves `exp(s − max)` in place and `1 / Σ` per column in `inv`.
#[inline(always)]
fn column_softmax<M: MulAdd>(st: &mut [f32], cols: usize, inv: &mut [f32], sum: &mut [f32]) {
    let used = inv.len();
    inv.copy_from_slice(&st[..used]);
    for row in st.chunks_exact(cols).skip(1) {
        // `max`, not `if x > m { m = x }`: LLVM turns that into masked stores (slow on Zen)
        for (m, &x) in inv.iter_mut().zip(&row[..used]) {
            *m = m.max(x);
        }
    }
    sum.fill(0.0);
    for row in st.chunks_exact_mut(cols) {
        let row = &mut row[..used];
        for ((x, m), s) in row.iter_mut().zip(inv.iter()).zip(sum.iter_mut()) {
            *x = math::exp_with::<M>(*x - m);
            *s += *x;
        }
    }
    for (m, s) in inv.iter_mut().zip(sum.iter()) {
        *m = 1.0 / s;
    }
}

/// Plain f64 attention of one head, for the tests.
#[cfg(test)]
pub(crate) fn reference(a: SeqInput<'_>, ctx: &mut [f32]) {
    let (n, h) = (a.n, a.h);
    let hd = h / a.heads;
    let at = |i: usize, c: usize| a.qkv[(a.start + i) * 3 * h + c] as f64;
    for head in 0..a.heads {
        let off = head * hd;
        for i in 0..n {
            let s: Vec<f64> = (0..n)
                .map(|j| {
                    (0..hd)
                        .map(|d| at(i, off + d) * at(j, h + off + d))
                        .sum::<f64>()
                })
                .map(|x| x / (hd as f64).sqrt())
                .collect();
            let max = s.iter().copied().fold(f64::MIN, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let z: f64 = e.iter().sum();
            for d in 0..hd {
                let o: f64 = (0..n).map(|j| e[j] / z * at(j, 2 * h + off + d)).sum();
                ctx[i * h + off + d] = o as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_isa_matches_reference() {
        // (h, heads, n): MiniLM's 384/12 with lengths around the tile edges, odd head dims
        let cases = [
            (384, 12, 1),
            (384, 12, 7),
            (384, 12, 37),
            (384, 12, 130),
            (32, 4, 5),
            (40, 2, 19),
            (96, 2, 17),
        ];
        for isa in Isa::available() {
            for (h, heads, n) in cases {
                let start = 3;
                let qkv: Vec<f32> = (0..(start + n) * 3 * h)
                    .map(|i| ((i * 7919 % 2003) as f32 / 1001.5 - 1.0) * 2.0)
                    .collect();
                let a = SeqInput {
                    qkv: &qkv,
                    h,
                    heads,
                    start,
                    n,
                };
                let (mut got, mut want) = (vec![0f32; n * h], vec![0f32; n * h]);
                attention_seq(isa, a, &mut got, &mut Scratch::default());
                reference(a, &mut want);
                for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - e).abs() <= 1e-5 * (1.0 + e.abs()),
                        "{isa:?} h {h} heads {heads} n {n} [{i}]: {g} vs {e}"
                    );
                }
            }
        }
    }
}

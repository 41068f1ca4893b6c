//! The forward pass of one batch shape as a list of operations: matrix products (cuBLAS's
//! column-major `gemm` semantics, to the argument) and launches of `kernels/cuda/encoder/bert.cu`
//! (name, grid, shared memory, arguments in the signature's order). Three executors run the
//! same plan: the CPU reference (`crate::cpu`), the CUDA executor (`crate::cuda`, feature
//! `cuda`: eagerly or captured once per bucket as a CUDA graph) and, in the tests, the CUDA
//! sources under kernels/emu's SIMT emulator.
//!
//! Per layer, with attention in one kernel (short sequences, the serving case): the QKV
//! product, `attention`, the output product, `residual_norm`, the up product, `bias_act`, the
//! down product, `residual_norm` — 8 operations; long sequences split attention into
//! `split_heads`, QKᵀ and PV as strided batched products, `softmax` and `merge_heads`.

use crate::shape::{Bucket, Shape, Tensor};

/// Threads of every kernel's block.
pub const THREADS: u32 = 128;
/// Shared memory a launch may use without opting in (48 KiB).
pub const SMEM_LIMIT: usize = 48 * 1024;

/// A buffer an operation reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Buf {
    /// A weight tensor ([`Tensor::index`]), f16.
    Weight(usize),
    /// A scratch buffer of the pass.
    Scratch(Scratch),
    /// The token ids, `batch × len` u32.
    Ids,
    /// Each sequence's real tokens, `batch` u32.
    Lengths,
    /// The pooled vectors, `batch × hidden` f32.
    Out,
}

/// The scratch buffers of a pass (f16 unless said).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scratch {
    /// Hidden states `[T, H]`.
    X,
    /// The QKV product `[T, 3H]`.
    Qkv,
    /// Attention's context `[T, H]`.
    Ctx,
    /// A product's output `[T, H]` before its residual.
    Y,
    /// The feed-forward's inner activations `[T, I]`.
    U,
    /// Per-head Q, K, V `[b, heads, L, dh]` (long sequences).
    Q,
    K,
    V,
    /// Attention scores `[b·heads·L, L]`, f32 (long sequences).
    Scores,
    /// Probabilities `[b·heads·L, L]` (long sequences).
    Probs,
    /// Per-head context `[b, heads, L, dh]` (long sequences).
    PerHead,
}

pub const SCRATCH: [Scratch; 11] = [
    Scratch::X,
    Scratch::Qkv,
    Scratch::Ctx,
    Scratch::Y,
    Scratch::U,
    Scratch::Q,
    Scratch::K,
    Scratch::V,
    Scratch::Scores,
    Scratch::Probs,
    Scratch::PerHead,
];

impl Scratch {
    pub fn is_f32(self) -> bool {
        self == Scratch::Scores
    }

    /// Its values for `bucket` (0: unused by this plan).
    pub fn elems(self, shape: &Shape, bucket: Bucket, split: bool) -> usize {
        let (t, h) = (bucket.rows(), shape.hidden);
        let scores = shape.heads * t * bucket.len;
        match self {
            Scratch::X | Scratch::Ctx | Scratch::Y => t * h,
            Scratch::Qkv => 3 * t * h,
            Scratch::U => t * shape.intermediate,
            Scratch::Q | Scratch::K | Scratch::V | Scratch::PerHead if split => t * h,
            Scratch::Scores | Scratch::Probs if split => scores,
            _ => 0,
        }
    }

    pub fn index(self) -> usize {
        SCRATCH.iter().position(|&s| s == self).unwrap_or(0)
    }
}

/// A launch argument, in the kernel signature's order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    Buf(Buf),
    U32(u32),
    F32(f32),
}

/// Every kernel of `bert.cu`.
pub const KERNELS: [&str; 8] = [
    "memdex_bert_embed",
    "memdex_bert_residual_norm",
    "memdex_bert_bias_act",
    "memdex_bert_attention",
    "memdex_bert_split_heads",
    "memdex_bert_softmax",
    "memdex_bert_merge_heads",
    "memdex_bert_pool",
];

/// A kernel of `bert.cu` with its arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kernel {
    /// `memdex_bert_embed`: one block per token row.
    Embed {
        rows: u32,
        len: u32,
        h: u32,
        eps: f32,
    },
    /// `memdex_bert_residual_norm(y, bias, x, gamma, beta)`, x ← LN(y + bias + x).
    ResidualNorm {
        rows: u32,
        h: u32,
        eps: f32,
        bias: Buf,
        gamma: Buf,
        beta: Buf,
    },
    /// `memdex_bert_bias_act(u, bias)`, in place.
    BiasAct {
        cols: u32,
        n: u32,
        act: u32,
        bias: Buf,
    },
    /// `memdex_bert_attention`: one block per (sequence, head).
    Attention {
        batch: u32,
        len: u32,
        heads: u32,
        dh: u32,
        scale: f32,
        bias: Buf,
    },
    /// `memdex_bert_split_heads`: one thread per QKV value.
    SplitHeads {
        len: u32,
        heads: u32,
        dh: u32,
        scale: f32,
        n: u32,
        bias: Buf,
    },
    /// `memdex_bert_softmax`: one warp per score row.
    Softmax { len: u32, heads: u32, rows: u32 },
    /// `memdex_bert_merge_heads`: one thread per context value.
    MergeHeads {
        len: u32,
        heads: u32,
        dh: u32,
        n: u32,
    },
    /// `memdex_bert_pool`: one block per sequence.
    Pool {
        batch: u32,
        len: u32,
        h: u32,
        mode: u32,
        normalize: u32,
    },
}

impl Kernel {
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Embed { .. } => "memdex_bert_embed",
            Kernel::ResidualNorm { .. } => "memdex_bert_residual_norm",
            Kernel::BiasAct { .. } => "memdex_bert_bias_act",
            Kernel::Attention { .. } => "memdex_bert_attention",
            Kernel::SplitHeads { .. } => "memdex_bert_split_heads",
            Kernel::Softmax { .. } => "memdex_bert_softmax",
            Kernel::MergeHeads { .. } => "memdex_bert_merge_heads",
            Kernel::Pool { .. } => "memdex_bert_pool",
        }
    }

    /// Blocks (a 1-D grid of [`THREADS`] each).
    pub fn grid(&self) -> u32 {
        let per = |n: u32| n.div_ceil(THREADS);
        match *self {
            Kernel::Embed { rows, .. } | Kernel::ResidualNorm { rows, .. } => rows,
            Kernel::BiasAct { n, .. } | Kernel::SplitHeads { n, .. } => per(n),
            Kernel::MergeHeads { n, .. } => per(n),
            Kernel::Attention { batch, heads, .. } => batch * heads,
            Kernel::Softmax { rows, .. } => rows.div_ceil(THREADS / 32),
            Kernel::Pool { batch, .. } => batch,
        }
    }

    /// Dynamic shared memory, bytes.
    pub fn smem(&self) -> u32 {
        match *self {
            Kernel::Embed { h, .. } | Kernel::ResidualNorm { h, .. } | Kernel::Pool { h, .. } => {
                4 * h
            }
            Kernel::Attention { len, dh, .. } => {
                attention_smem(len as usize, dh as usize).unwrap_or(usize::MAX) as u32
            }
            _ => 0,
        }
    }

    /// The arguments in the CUDA signature's order.
    pub fn args(&self) -> Vec<Arg> {
        use Arg::{Buf as B, F32, U32};
        let s = |x: Scratch| B(Buf::Scratch(x));
        let w = |t: Tensor| B(Buf::Weight(t.index()));
        match *self {
            Kernel::Embed { len, h, eps, .. } => vec![
                B(Buf::Ids),
                U32(len),
                w(Tensor::Word),
                w(Tensor::Position),
                w(Tensor::Type0),
                w(Tensor::EmbedGamma),
                w(Tensor::EmbedBeta),
                U32(h),
                F32(eps),
                s(Scratch::X),
            ],
            Kernel::ResidualNorm {
                h,
                eps,
                bias,
                gamma,
                beta,
                ..
            } => vec![
                s(Scratch::Y),
                B(bias),
                s(Scratch::X),
                B(gamma),
                B(beta),
                U32(h),
                F32(eps),
            ],
            Kernel::BiasAct { cols, n, act, bias } => {
                vec![s(Scratch::U), B(bias), U32(cols), U32(n), U32(act)]
            }
            Kernel::Attention {
                len,
                heads,
                dh,
                scale,
                bias,
                ..
            } => vec![
                s(Scratch::Qkv),
                B(bias),
                B(Buf::Lengths),
                U32(len),
                U32(heads),
                U32(dh),
                F32(scale),
                s(Scratch::Ctx),
            ],
            Kernel::SplitHeads {
                len,
                heads,
                dh,
                scale,
                n,
                bias,
            } => vec![
                s(Scratch::Qkv),
                B(bias),
                U32(len),
                U32(heads),
                U32(dh),
                F32(scale),
                U32(n),
                s(Scratch::Q),
                s(Scratch::K),
                s(Scratch::V),
            ],
            Kernel::Softmax { len, heads, rows } => vec![
                s(Scratch::Scores),
                B(Buf::Lengths),
                U32(len),
                U32(heads),
                U32(rows),
                s(Scratch::Probs),
            ],
            Kernel::MergeHeads { len, heads, dh, n } => vec![
                s(Scratch::PerHead),
                U32(len),
                U32(heads),
                U32(dh),
                U32(n),
                s(Scratch::Ctx),
            ],
            Kernel::Pool {
                len,
                h,
                mode,
                normalize,
                ..
            } => vec![
                s(Scratch::X),
                B(Buf::Lengths),
                U32(len),
                U32(h),
                U32(mode),
                U32(normalize),
                B(Buf::Out),
            ],
        }
    }
}

/// Shared memory of the one-kernel attention for sequences of `len` and heads of `dh`: K with
/// a padded row, V, and per warp a query row and its probabilities. None past 48 KiB (then the
/// plan splits attention into products and a softmax).
pub fn attention_smem(len: usize, dh: usize) -> Option<usize> {
    let warps = (THREADS / 32) as usize;
    let bytes = 4 * (len * (dh + 1) + len * dh + warps * (dh + len));
    (bytes <= SMEM_LIMIT).then_some(bytes)
}

/// A matrix product in cuBLAS's terms (column-major; `a`, `b` f16, `c` f16 or f32 as its
/// buffer is; f32 accumulation; β = 0): for each of `batch` products,
/// `C[m × n] = alpha · op(A)[m × k] · op(B)[k × n]`, `op` transposing when `ta` / `tb`, matrices
/// `stride_*` values apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gemm {
    pub ta: bool,
    pub tb: bool,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub alpha: f32,
    pub a: Buf,
    pub lda: u32,
    pub stride_a: u64,
    pub b: Buf,
    pub ldb: u32,
    pub stride_b: u64,
    pub c: Buf,
    pub ldc: u32,
    pub stride_c: u64,
    pub batch: u32,
}

impl Gemm {
    /// `out[rows, n] = x[rows, k] · W[n, k]ᵀ` for row-major activations and an `nn.Linear`
    /// weight: in column-major terms `outᵀ = Wᵀᵀ · xᵀ`, so `op(A) = Aᵀ` with A = W (k × n,
    /// ld k) and B = xᵀ (k × rows, ld k).
    pub fn linear(x: Buf, weight: Buf, out: Buf, rows: usize, n: usize, k: usize) -> Gemm {
        let (rows, n, k) = (rows as u32, n as u32, k as u32);
        Gemm {
            ta: true,
            tb: false,
            m: n,
            n: rows,
            k,
            alpha: 1.0,
            a: weight,
            lda: k,
            stride_a: 0,
            b: x,
            ldb: k,
            stride_b: 0,
            c: out,
            ldc: n,
            stride_c: 0,
            batch: 1,
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Gemm(Gemm),
    Launch(Kernel),
}

/// The operations of one forward pass over a batch of `bucket`'s shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub bucket: Bucket,
    /// Attention as products and a softmax (long sequences), not one kernel.
    pub split_attention: bool,
    pub ops: Vec<Op>,
}

impl Plan {
    /// The plan for `bucket`: one-kernel attention when its shared memory allows, unless
    /// `force_split`.
    pub fn new(shape: &Shape, bucket: Bucket, force_split: bool) -> Plan {
        let dh = shape.head_dim();
        let split = force_split || attention_smem(bucket.len, dh).is_none();
        let mut ops = vec![Op::Launch(Kernel::Embed {
            rows: bucket.rows() as u32,
            len: bucket.len as u32,
            h: shape.hidden as u32,
            eps: shape.eps,
        })];
        for layer in 0..shape.layers {
            layer_ops(shape, bucket, layer, split, &mut ops);
        }
        ops.push(Op::Launch(Kernel::Pool {
            batch: bucket.batch as u32,
            len: bucket.len as u32,
            h: shape.hidden as u32,
            mode: pool_mode(shape.pooling),
            normalize: shape.normalize as u32,
        }));
        Plan {
            bucket,
            split_attention: split,
            ops,
        }
    }

    /// Values of each scratch buffer ([`SCRATCH`]'s order) this plan needs.
    pub fn scratch_elems(&self, shape: &Shape) -> [usize; SCRATCH.len()] {
        SCRATCH.map(|s| s.elems(shape, self.bucket, self.split_attention))
    }

    /// Kernel launches and products per pass.
    pub fn launches(&self) -> usize {
        self.ops.len()
    }
}

/// The kernels' number for a pooling.
pub fn pool_mode(p: memdex_core::Pooling) -> u32 {
    match p {
        memdex_core::Pooling::Mean => 0,
        memdex_core::Pooling::Cls => 1,
        memdex_core::Pooling::Max => 2,
        memdex_core::Pooling::MeanSqrtLen => 3,
    }
}

fn layer_ops(shape: &Shape, bucket: Bucket, l: usize, split: bool, ops: &mut Vec<Op>) {
    let (t, h, i) = (bucket.rows(), shape.hidden, shape.intermediate);
    let w = |x: Tensor| Buf::Weight(x.index());
    let s = Buf::Scratch;
    let (heads, dh) = (shape.heads as u32, shape.head_dim() as u32);
    let scale = 1.0 / (dh as f32).sqrt();
    let len = bucket.len as u32;
    ops.push(Op::Gemm(Gemm::linear(
        s(Scratch::X),
        w(Tensor::Qkv(l)),
        s(Scratch::Qkv),
        t,
        3 * h,
        h,
    )));
    let bias = w(Tensor::QkvBias(l));
    if split {
        split_attention(shape, bucket, bias, scale, ops);
    } else {
        ops.push(Op::Launch(Kernel::Attention {
            batch: bucket.batch as u32,
            len,
            heads,
            dh,
            scale,
            bias,
        }));
    }
    let norm = |bias, gamma, beta| {
        Op::Launch(Kernel::ResidualNorm {
            rows: t as u32,
            h: h as u32,
            eps: shape.eps,
            bias,
            gamma,
            beta,
        })
    };
    ops.push(Op::Gemm(Gemm::linear(
        s(Scratch::Ctx),
        w(Tensor::Out(l)),
        s(Scratch::Y),
        t,
        h,
        h,
    )));
    ops.push(norm(
        w(Tensor::OutBias(l)),
        w(Tensor::Norm1Gamma(l)),
        w(Tensor::Norm1Beta(l)),
    ));
    ops.push(Op::Gemm(Gemm::linear(
        s(Scratch::X),
        w(Tensor::Up(l)),
        s(Scratch::U),
        t,
        i,
        h,
    )));
    ops.push(Op::Launch(Kernel::BiasAct {
        cols: i as u32,
        n: (t * i) as u32,
        act: shape.act as u32,
        bias: w(Tensor::UpBias(l)),
    }));
    ops.push(Op::Gemm(Gemm::linear(
        s(Scratch::U),
        w(Tensor::Down(l)),
        s(Scratch::Y),
        t,
        h,
        i,
    )));
    ops.push(norm(
        w(Tensor::DownBias(l)),
        w(Tensor::Norm2Gamma(l)),
        w(Tensor::Norm2Beta(l)),
    ));
}

/// Attention of long sequences: per-head Q (scaled), K, V; scores = Q·Kᵀ per (sequence, head)
/// as one strided batch (col-major: `S[L_k × L_q] = Kᵀᵀ·Q`, A = K (dh × L, ld dh) transposed,
/// B = Q (dh × L)); softmax over the real keys; per-head context = P·V (col-major:
/// `C[dh × L_q] = V · P`, A = V (dh × L), B = P (L_k × L_q, ld L)); heads merged into rows.
fn split_attention(shape: &Shape, bucket: Bucket, bias: Buf, scale: f32, ops: &mut Vec<Op>) {
    let (t, h) = (bucket.rows() as u32, shape.hidden as u32);
    let (heads, dh, len) = (
        shape.heads as u32,
        shape.head_dim() as u32,
        bucket.len as u32,
    );
    let s = Buf::Scratch;
    let batch = bucket.batch as u32 * heads;
    let per = (len * dh) as u64;
    let square = (len * len) as u64;
    ops.push(Op::Launch(Kernel::SplitHeads {
        len,
        heads,
        dh,
        scale,
        n: 3 * t * h,
        bias,
    }));
    ops.push(Op::Gemm(Gemm {
        ta: true,
        tb: false,
        m: len,
        n: len,
        k: dh,
        alpha: 1.0,
        a: s(Scratch::K),
        lda: dh,
        stride_a: per,
        b: s(Scratch::Q),
        ldb: dh,
        stride_b: per,
        c: s(Scratch::Scores),
        ldc: len,
        stride_c: square,
        batch,
    }));
    ops.push(Op::Launch(Kernel::Softmax {
        len,
        heads,
        rows: batch * len,
    }));
    ops.push(Op::Gemm(Gemm {
        ta: false,
        tb: false,
        m: dh,
        n: len,
        k: len,
        alpha: 1.0,
        a: s(Scratch::V),
        lda: dh,
        stride_a: per,
        b: s(Scratch::Probs),
        ldb: len,
        stride_b: square,
        c: s(Scratch::PerHead),
        ldc: dh,
        stride_c: per,
        batch,
    }));
    ops.push(Op::Launch(Kernel::MergeHeads {
        len,
        heads,
        dh,
        n: t * h,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Act;
    use memdex_core::Pooling;

    fn minilm() -> Shape {
        Shape {
            vocab: 30_522,
            max_positions: 512,
            hidden: 384,
            heads: 12,
            layers: 6,
            intermediate: 1536,
            eps: 1e-12,
            act: Act::Gelu,
            pooling: Pooling::Mean,
            normalize: true,
        }
    }

    #[test]
    fn a_serving_batch_is_fifty_operations() {
        let p = Plan::new(&minilm(), Bucket { batch: 32, len: 16 }, false);
        assert!(!p.split_attention);
        assert_eq!(p.launches(), 2 + 6 * 8);
        let long = Plan::new(&minilm(), Bucket { batch: 8, len: 256 }, false);
        assert!(
            long.split_attention,
            "K and V of 256 tokens overflow 48 KiB"
        );
        assert_eq!(long.launches(), 2 + 6 * 12);
    }

    #[test]
    fn every_kernel_is_named_once_and_launched() {
        let mut used = std::collections::BTreeSet::new();
        for split in [false, true] {
            for op in Plan::new(&minilm(), Bucket { batch: 2, len: 8 }, split).ops {
                if let Op::Launch(k) = op {
                    assert!(KERNELS.contains(&k.name()), "{}", k.name());
                    used.insert(k.name());
                }
            }
        }
        assert_eq!(used.len(), KERNELS.len());
        let source = include_str!("../../../kernels/cuda/encoder/bert.cu");
        for name in KERNELS {
            assert_eq!(source.matches(&format!("{name}(")).count(), 1, "{name}");
        }
    }

    #[test]
    fn every_launch_fits_its_limits() {
        for (len, split) in [(16, false), (128, false), (512, true)] {
            let p = Plan::new(&minilm(), Bucket { batch: 64, len }, false);
            assert_eq!(p.split_attention, split, "len {len}");
            for op in &p.ops {
                if let Op::Launch(k) = op {
                    assert!(k.smem() as usize <= SMEM_LIMIT, "{k:?}");
                    assert!(k.grid() >= 1);
                }
            }
        }
    }
}

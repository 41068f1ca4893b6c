//! The plan run on the CPU by the references of `crate::reference`: the fused encoder's
//! semantics (its layouts, the products' arguments, where f16 is stored), slow. memdex-embed
//! offers it as `--cpu-backend fused` to check the plan against candle's BERT without a GPU.

use crate::plan::{Buf, Kernel, Op, Plan, Scratch};
use crate::reference::{self as r, EmbedWeights, Heads};
use crate::shape::{Bucket, Shape, Tensor, Weights};
use crate::{pack_batch, FusedError};

/// The fused encoder's plan on the CPU.
#[derive(Debug)]
pub struct CpuBert {
    shape: Shape,
    /// The f16 weights as f32.
    weights: Vec<Vec<f32>>,
}

/// A pass's buffers.
struct Buffers {
    scratch: Vec<Vec<f32>>,
    ids: Vec<u32>,
    lengths: Vec<u32>,
    out: Vec<f32>,
}

impl CpuBert {
    pub fn new(shape: Shape, weights: &Weights) -> Result<CpuBert, FusedError> {
        Weights::new(&shape, weights.tensors.clone())?;
        let weights = (weights.tensors.iter())
            .map(|t| t.iter().map(|v| v.to_f32()).collect())
            .collect();
        Ok(CpuBert { shape, weights })
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Pooled (and, if the shape says so, normalised) vectors of `seqs`, `seqs.len() × hidden`,
    /// through the plan of the batch's own shape (or its attention split in products when
    /// `split`).
    pub fn forward(&self, seqs: &[&[u32]], pad: u32, split: bool) -> Result<Vec<f32>, FusedError> {
        let len = seqs.iter().map(|s| s.len()).max().unwrap_or(1).max(1);
        let bucket = Bucket {
            batch: seqs.len().max(1),
            len,
        };
        let (ids, lengths) = pack_batch(&self.shape, seqs, bucket, pad)?;
        let plan = Plan::new(&self.shape, bucket, split);
        let mut out = self.run(&plan, ids, lengths);
        out.truncate(seqs.len() * self.shape.hidden);
        Ok(out)
    }

    /// Runs `plan` on packed inputs (`bucket.rows()` ids, `bucket.batch` lengths).
    pub fn run(&self, plan: &Plan, ids: Vec<u32>, lengths: Vec<u32>) -> Vec<f32> {
        let sizes = plan.scratch_elems(&self.shape);
        let mut bufs = Buffers {
            scratch: sizes.iter().map(|&n| vec![0f32; n]).collect(),
            ids,
            lengths,
            out: vec![0f32; plan.bucket.batch * self.shape.hidden],
        };
        for op in &plan.ops {
            match op {
                Op::Gemm(g) => {
                    let mut c = bufs.take(g.c);
                    let half = !matches!(g.c, Buf::Scratch(s) if s.is_f32());
                    r::gemm(g, self.get(&bufs, g.a), self.get(&bufs, g.b), &mut c, half);
                    bufs.put(g.c, c);
                }
                Op::Launch(k) => self.launch(k, &mut bufs),
            }
        }
        bufs.out
    }

    fn get<'a>(&'a self, bufs: &'a Buffers, b: Buf) -> &'a [f32] {
        match b {
            Buf::Weight(i) => &self.weights[i],
            Buf::Scratch(s) => &bufs.scratch[s.index()],
            Buf::Out => &bufs.out,
            Buf::Ids | Buf::Lengths => &[],
        }
    }

    fn w(&self, t: Tensor) -> &[f32] {
        &self.weights[t.index()]
    }

    fn launch(&self, k: &Kernel, bufs: &mut Buffers) {
        use Scratch::*;
        let heads = |len: u32, heads: u32, dh: u32, scale: f32| Heads {
            len: len as usize,
            heads: heads as usize,
            dh: dh as usize,
            scale,
        };
        match *k {
            Kernel::Embed { len, h, eps, .. } => {
                let w = EmbedWeights {
                    word: self.w(Tensor::Word),
                    pos: self.w(Tensor::Position),
                    type0: self.w(Tensor::Type0),
                    gamma: self.w(Tensor::EmbedGamma),
                    beta: self.w(Tensor::EmbedBeta),
                };
                let mut x = bufs.take(Buf::Scratch(X));
                r::embed(&bufs.ids, len as usize, &w, h as usize, eps, &mut x);
                bufs.put(Buf::Scratch(X), x);
            }
            Kernel::ResidualNorm {
                eps,
                bias,
                gamma,
                beta,
                ..
            } => {
                let mut x = bufs.take(Buf::Scratch(X));
                let (b, g, be) = (
                    self.get(bufs, bias),
                    self.get(bufs, gamma),
                    self.get(bufs, beta),
                );
                r::residual_norm(&bufs.scratch[Y.index()], b, &mut x, g, be, eps);
                bufs.put(Buf::Scratch(X), x);
            }
            Kernel::BiasAct { act, bias, .. } => {
                let mut u = bufs.take(Buf::Scratch(U));
                r::bias_act(&mut u, self.get(bufs, bias), act);
                bufs.put(Buf::Scratch(U), u);
            }
            Kernel::Attention {
                len,
                heads: n,
                dh,
                scale,
                bias,
                ..
            } => {
                let mut ctx = bufs.take(Buf::Scratch(Ctx));
                let qkv = &bufs.scratch[Qkv.index()];
                let a = heads(len, n, dh, scale);
                r::attention(qkv, self.get(bufs, bias), &bufs.lengths, a, &mut ctx);
                bufs.put(Buf::Scratch(Ctx), ctx);
            }
            Kernel::SplitHeads {
                len,
                heads: n,
                dh,
                scale,
                bias,
                ..
            } => {
                let (mut q, mut k, mut v) = (bufs.take_s(Q), bufs.take_s(K), bufs.take_s(V));
                let a = heads(len, n, dh, scale);
                let qkv = &bufs.scratch[Qkv.index()];
                r::split_heads(qkv, self.get(bufs, bias), a, &mut q, &mut k, &mut v);
                for (s, b) in [(Q, q), (K, k), (V, v)] {
                    bufs.put(Buf::Scratch(s), b);
                }
            }
            Kernel::Softmax { len, heads: n, .. } => {
                let mut p = bufs.take_s(Probs);
                let s = &bufs.scratch[Scores.index()];
                r::softmax(s, &bufs.lengths, len as usize, n as usize, &mut p);
                bufs.put(Buf::Scratch(Probs), p);
            }
            Kernel::MergeHeads {
                len, heads: n, dh, ..
            } => {
                let mut ctx = bufs.take_s(Ctx);
                let a = heads(len, n, dh, 1.0);
                r::merge_heads(&bufs.scratch[PerHead.index()], a, &mut ctx);
                bufs.put(Buf::Scratch(Ctx), ctx);
            }
            Kernel::Pool {
                len,
                h,
                mode,
                normalize,
                ..
            } => {
                let x = &bufs.scratch[X.index()];
                let (len, h) = (len as usize, h as usize);
                r::pool(
                    x,
                    &bufs.lengths,
                    len,
                    h,
                    mode,
                    normalize != 0,
                    &mut bufs.out,
                );
            }
        }
    }
}

impl Buffers {
    fn take(&mut self, b: Buf) -> Vec<f32> {
        match b {
            Buf::Scratch(s) => std::mem::take(&mut self.scratch[s.index()]),
            Buf::Out => std::mem::take(&mut self.out),
            _ => Vec::new(),
        }
    }

    fn take_s(&mut self, s: Scratch) -> Vec<f32> {
        self.take(Buf::Scratch(s))
    }

    fn put(&mut self, b: Buf, v: Vec<f32>) {
        match b {
            Buf::Scratch(s) => self.scratch[s.index()] = v,
            Buf::Out => self.out = v,
            _ => {}
        }
    }
}

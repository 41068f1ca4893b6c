//! A fast CPU BERT encoder: packed sequences (no padding at all), one fused QKV GEMM, fused
//! bias + GELU and residual + LayerNorm passes, per-(sequence, head) attention in parallel,
//! and scratch buffers reused across batches.
//!
//! candle's `BertModel` stays the reference implementation (and the CUDA path); the test
//! `fast_cpu_matches_candle_reference` compares the two on every run.

use std::sync::Mutex;

use candle_core::DType;
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};
use gemm::Parallelism;
use rayon::prelude::*;

use crate::math;
use crate::skinny::{self, Rows};

struct Layer {
    qkv_w: Vec<f32>, // [3H, H]
    qkv_b: Vec<f32>, // [3H]
    o_w: Vec<f32>,   // [H, H]
    o_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    i_w: Vec<f32>, // [I, H]
    i_b: Vec<f32>,
    out_w: Vec<f32>, // [H, I]
    out_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
    /// Half-precision copies of the four matrices for batches of ≤ [`SKINNY_ROWS`] tokens.
    half: Option<HalfWeights>,
}

/// IEEE half bits ([`skinny::f16_bits`]) of a layer's matrices, same layout as the f32 ones.
struct HalfWeights {
    qkv_w: Vec<u16>,
    o_w: Vec<u16>,
    i_w: Vec<u16>,
    out_w: Vec<u16>,
}

fn to_half(w: &[f32]) -> Vec<u16> {
    w.iter().map(|&v| skinny::f16_bits(v)).collect()
}

#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    tmp: Vec<f32>,
    inter: Vec<f32>,
}

/// BERT encoder weights in f32, laid out for the kernels below.
pub(crate) struct FastBert {
    hidden: usize,
    heads: usize,
    inter: usize,
    eps: f32,
    act: HiddenAct,
    max_pos: usize,
    word: Vec<f32>,
    pos: Vec<f32>,
    type0: Vec<f32>,
    emb_ln_g: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    scratch: Mutex<Scratch>,
}

fn get(vb: &VarBuilder<'_>, shape: &[usize], name: &str) -> candle_core::Result<Vec<f32>> {
    vb.get(shape, name)?
        .to_dtype(DType::F32)?
        .flatten_all()?
        .to_vec1::<f32>()
}

impl FastBert {
    /// Reads the weights (names as in Hugging Face BERT, with or without a `bert.` prefix).
    /// `half_small_batches`: batches of ≤ [`SKINNY_ROWS`] tokens (queries) read half-precision
    /// copies of the matrices (f32 activations and accumulation).
    pub(crate) fn load(
        vb: VarBuilder<'_>,
        cfg: &BertConfig,
        half_small_batches: bool,
    ) -> candle_core::Result<FastBert> {
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            vb.pp(cfg.model_type.as_deref().unwrap_or("bert"))
        };
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        if cfg.num_attention_heads == 0 || h % cfg.num_attention_heads != 0 {
            candle_core::bail!("hidden_size {h} is not a multiple of num_attention_heads");
        }
        let e = vb.pp("embeddings");
        let type_all = get(
            &e,
            &[cfg.type_vocab_size, h],
            "token_type_embeddings.weight",
        )?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let v = vb.pp(format!("encoder.layer.{l}"));
            let mut qkv_w = Vec::with_capacity(3 * h * h);
            let mut qkv_b = Vec::with_capacity(3 * h);
            for n in ["query", "key", "value"] {
                qkv_w.extend(get(&v, &[h, h], &format!("attention.self.{n}.weight"))?);
                qkv_b.extend(get(&v, &[h], &format!("attention.self.{n}.bias"))?);
            }
            let o_w = get(&v, &[h, h], "attention.output.dense.weight")?;
            let i_w = get(&v, &[i, h], "intermediate.dense.weight")?;
            let out_w = get(&v, &[h, i], "output.dense.weight")?;
            let half = half_small_batches.then(|| HalfWeights {
                qkv_w: to_half(&qkv_w),
                o_w: to_half(&o_w),
                i_w: to_half(&i_w),
                out_w: to_half(&out_w),
            });
            layers.push(Layer {
                qkv_w,
                qkv_b,
                o_w,
                o_b: get(&v, &[h], "attention.output.dense.bias")?,
                ln1_g: get(&v, &[h], "attention.output.LayerNorm.weight")?,
                ln1_b: get(&v, &[h], "attention.output.LayerNorm.bias")?,
                i_w,
                i_b: get(&v, &[i], "intermediate.dense.bias")?,
                out_w,
                out_b: get(&v, &[h], "output.dense.bias")?,
                ln2_g: get(&v, &[h], "output.LayerNorm.weight")?,
                ln2_b: get(&v, &[h], "output.LayerNorm.bias")?,
                half,
            });
        }
        Ok(FastBert {
            hidden: h,
            heads: cfg.num_attention_heads,
            inter: i,
            eps: cfg.layer_norm_eps as f32,
            act: cfg.hidden_act,
            max_pos: cfg.max_position_embeddings,
            word: get(&e, &[cfg.vocab_size, h], "word_embeddings.weight")?,
            pos: get(
                &e,
                &[cfg.max_position_embeddings, h],
                "position_embeddings.weight",
            )?,
            type0: type_all[..h].to_vec(),
            emb_ln_g: get(&e, &[h], "LayerNorm.weight")?,
            emb_ln_b: get(&e, &[h], "LayerNorm.bias")?,
            layers,
            scratch: Mutex::new(Scratch::default()),
        })
    }

    /// Last hidden states of the packed sequences: `Σ len × hidden`, row-major, sequences in
    /// order. Ids must be < vocab size and each sequence ≤ max positions.
    pub(crate) fn forward<R>(&self, seqs: &[&[u32]], f: impl FnOnce(&[f32]) -> R) -> R {
        let h = self.hidden;
        let offsets: Vec<usize> = std::iter::once(0)
            .chain(seqs.iter().scan(0, |acc, s| {
                *acc += s.len();
                Some(*acc)
            }))
            .collect();
        let t = offsets[seqs.len()];
        let mut guard = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let s = &mut *guard;
        resize(&mut s.x, t * h);
        resize(&mut s.qkv, t * 3 * h);
        resize(&mut s.ctx, t * h);
        resize(&mut s.tmp, t * h);
        resize(&mut s.inter, t * self.inter);

        // embeddings + LayerNorm
        let rows: Vec<(usize, usize)> = seqs
            .iter()
            .enumerate()
            .flat_map(|(si, seq)| (0..seq.len()).map(move |p| (si, p)))
            .collect();
        s.x[..t * h]
            .par_chunks_mut(h)
            .zip(rows.par_iter())
            .for_each(|(row, &(si, p))| {
                let id = seqs[si][p] as usize;
                let p = p.min(self.max_pos - 1);
                math::embedding_row(
                    row,
                    &self.word[id * h..(id + 1) * h],
                    &self.pos[p * h..(p + 1) * h],
                    &self.type0,
                    &self.emb_ln_g,
                    &self.emb_ln_b,
                    self.eps,
                );
            });

        for layer in &self.layers {
            self.layer(layer, t, &offsets, s);
        }
        f(&s.x[..t * h])
    }

    fn layer<'a>(&self, l: &'a Layer, t: usize, offsets: &[usize], s: &mut Scratch) {
        let h = self.hidden;
        let hd = h / self.heads;
        let scale = 1.0 / (hd as f32).sqrt();
        let half = l.half.as_ref();
        let w = |f32s: &'a [f32], half: Option<&'a [u16]>| Weights { f32s, half };
        let qkv_w = w(&l.qkv_w, half.map(|x| &x.qkv_w[..]));
        linear(&s.x, t, h, qkv_w, &l.qkv_b, 3 * h, &mut s.qkv);

        // attention: one task per sequence (all heads), writing only that sequence's ctx rows
        let qkv = &s.qkv;
        let mut parts: Vec<(usize, &mut [f32])> = Vec::with_capacity(offsets.len() - 1);
        let mut rest: &mut [f32] = &mut s.ctx[..t * h];
        for w in offsets.windows(2) {
            let (mine, tail) = rest.split_at_mut((w[1] - w[0]) * h);
            parts.push((w[0], mine));
            rest = tail;
        }
        parts
            .into_par_iter()
            .for_each_init(Vec::new, |scores, (start, ctx)| {
                let n = ctx.len() / h;
                scores.resize(n, 0.0);
                for hi in 0..self.heads {
                    let input = math::HeadInput {
                        qkv,
                        h,
                        start,
                        n,
                        off: hi * hd,
                        hd,
                        scale,
                    };
                    math::attention_head(input, scores, ctx);
                }
            });

        // attention output + residual + LayerNorm
        let o_w = w(&l.o_w, half.map(|x| &x.o_w[..]));
        linear(&s.ctx, t, h, o_w, &l.o_b, h, &mut s.tmp);
        self.residual_layer_norm(&mut s.x[..t * h], &mut s.tmp[..t * h], &l.ln1_g, &l.ln1_b);

        // feed-forward: GELU(x Wi + b) Wo + b, residual, LayerNorm
        let i_w = w(&l.i_w, half.map(|x| &x.i_w[..]));
        linear(&s.x, t, h, i_w, &l.i_b, self.inter, &mut s.inter);
        let act = self.act;
        s.inter[..t * self.inter]
            .par_chunks_mut(4096)
            .for_each(|c| match act {
                HiddenAct::Gelu => math::gelu_slice(c),
                HiddenAct::GeluApproximate => math::gelu_tanh_slice(c),
                HiddenAct::Relu => c.iter_mut().for_each(|v| *v = v.max(0.0)),
            });
        let out_w = w(&l.out_w, half.map(|x| &x.out_w[..]));
        linear(&s.inter, t, self.inter, out_w, &l.out_b, h, &mut s.tmp);
        self.residual_layer_norm(&mut s.x[..t * h], &mut s.tmp[..t * h], &l.ln2_g, &l.ln2_b);
    }

    /// `x = LayerNorm(sub + x)` row by row (`sub` is clobbered).
    fn residual_layer_norm(&self, x: &mut [f32], sub: &mut [f32], g: &[f32], b: &[f32]) {
        let h = self.hidden;
        x.par_chunks_mut(h)
            .zip(sub.par_chunks_mut(h))
            .for_each(|(x, o)| math::residual_layer_norm_row(x, o, g, b, self.eps));
    }
}

fn resize(v: &mut Vec<f32>, n: usize) {
    if v.len() < n {
        v.resize(n, 0.0);
    }
}

/// Batches of at most this many tokens (a query) take [`linear_skinny`].
const SKINNY_ROWS: usize = 32;

/// A weight matrix `[n × k]`, with its half-precision copy when the model keeps one.
#[derive(Clone, Copy)]
struct Weights<'a> {
    f32s: &'a [f32],
    half: Option<&'a [u16]>,
}

/// [`linear`] for a few rows: weight rows split across rayon tasks, each read once
/// ([`skinny::skinny_block`], from the half copy when there is one), results transposed into
/// `out`.
fn linear_skinny(
    x: &[f32],
    t: usize,
    k: usize,
    w: Weights<'_>,
    b: &[f32],
    n: usize,
    out: &mut [f32],
) {
    const COLS: usize = 96;
    let mut out_t = vec![0f32; n * t];
    let tasks = out_t.par_chunks_mut(COLS * t).zip(b.par_chunks(COLS));
    match w.half {
        Some(h) => tasks
            .zip(h.par_chunks(COLS * k))
            .for_each(|((o, bc), wc)| skinny::skinny_block(x, t, k, Rows::F16(wc), bc, o)),
        None => tasks
            .zip(w.f32s.par_chunks(COLS * k))
            .for_each(|((o, bc), wc)| skinny::skinny_block(x, t, k, Rows::F32(wc), bc, o)),
    }
    for (j, col) in out_t.chunks_exact(t).enumerate() {
        for (i, v) in col.iter().enumerate() {
            out[i * n + j] = *v;
        }
    }
}

/// `out[t × n] = x[t × k] · w[n × k]ᵀ + b[n]` with gemm (row-major everywhere).
fn linear(x: &[f32], t: usize, k: usize, w: Weights<'_>, b: &[f32], n: usize, out: &mut [f32]) {
    let out = &mut out[..t * n];
    if t <= SKINNY_ROWS {
        return linear_skinny(x, t, k, w, b, n, out);
    }
    let w = w.f32s;
    for row in out.chunks_exact_mut(n) {
        row.copy_from_slice(b);
    }
    let par = if t * n * k >= 1 << 18 {
        Parallelism::Rayon(rayon::current_num_threads())
    } else {
        Parallelism::None
    };
    // SAFETY: pointers and strides describe exactly the slices above: out is t×n (row
    // stride n), x is t×k (row stride k), and wᵀ is k×n read from w (n×k) with row stride 1
    // and column stride k. gemm reads dst (read_dst) to add the bias.
    #[allow(unsafe_code)]
    unsafe {
        gemm::gemm(
            t,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            true,
            x.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            k as isize,
            1,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

//! A fast CPU BERT encoder: packed sequences (no padding at all), weights packed once for
//! memdex's GEMM ([`crate::matmul`]) with bias, activation and residual + LayerNorm fused into
//! its epilogues, attention per sequence on the same register tile ([`crate::attention`]),
//! and scratch buffers reused across batches. The instruction set is [`Isa::active`]; large
//! batches run the kernels of [`LargeBatchKernel`]: on AVX-512 CPUs with usable AMX memdex's
//! bf16 GEMM on `tdpbf16ps` ([`crate::bmatmul`]), with VNNI its integer GEMM on `vpdpwssd`,
//! on those without either the `gemm` crate's AVX-512 kernels (unfused epilogue passes). Batches of ≤ [`SKINNY_ROWS`] tokens (queries) run on [`crate::skinny`].
//!
//! candle's `BertModel` stays the reference implementation (and the CUDA path); the test
//! `fast_cpu_matches_candle_reference` compares the two on every run.

use std::sync::Mutex;

use crate::config::{BertConfig, HiddenAct};
use candle_core::DType;
use candle_nn::VarBuilder;
use gemm::Parallelism;
use rayon::prelude::*;

use crate::attention::{self, SeqInput};
use crate::bmatmul::PackedBf16;
use crate::isa::{Isa, LargeBatchGemm, LargeBatchKernel};
use crate::linear::{self, Packed};
use crate::math;
use crate::matmul::{Act, Epilogue, PackedB};
use crate::qmatmul::PackedI16;
use crate::skinny::{self, Rows};
use crate::stage_timer::{self, Stage};

/// A weight matrix `[n × k]` in the layouts the kernels in force read.
struct Matrix {
    n: usize,
    k: usize,
    /// Row-major f32: the `gemm` crate ([`LargeBatchKernel::F32GemmCrate`]) and f32 small
    /// batches.
    rows: Option<Vec<f32>>,
    /// Packed for [`crate::linear`]: large batches on memdex's GEMMs (AVX2, portable, and
    /// AVX-512 with VNNI or AMX; bf16 anywhere).
    packed: Option<Packed>,
    /// IEEE half bits ([`skinny::f16_bits`]): small batches by default.
    half: Option<Half>,
}

/// A weight matrix's half copy, in the layout the small-batch kernels of the ISA read.
enum Half {
    /// Row-major `[n × k]`: AVX-512's dot-product tiles ([`skinny::skinny_block`]).
    Rows(Vec<u16>),
    /// [`skinny::half_panels`]: AVX2 and portable ([`skinny::panels_block`]).
    Panels(Vec<u16>),
}

/// How the fast encoder lays out and multiplies its matrices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// The kernels to run (at most what the CPU has, see [`Isa::selected`]).
    pub isa: Isa,
    /// Batches of ≤ [`SKINNY_ROWS`] tokens (queries) read half-precision copies of the
    /// matrices (f32 activations and accumulation).
    pub half_small_batches: bool,
    /// Larger batches: f32, 16-bit integer ([`crate::qmatmul`]) or bf16 ([`crate::bmatmul`])
    /// products, as the setting and the CPU allow ([`LargeBatchKernel`]).
    pub large_batch_gemm: LargeBatchGemm,
}

impl Layout {
    /// The kernels of larger batches on the running CPU.
    pub(crate) fn large_batch_kernel(&self) -> LargeBatchKernel {
        LargeBatchKernel::detect(self.isa, self.large_batch_gemm)
    }
}

impl Matrix {
    fn new(w: Vec<f32>, n: usize, k: usize, lay: Layout) -> Matrix {
        let isa = lay.isa;
        let half = lay.half_small_batches.then(|| match isa {
            Isa::Avx512 => Half::Rows(w.iter().map(|&v| skinny::f16_bits(v)).collect()),
            _ => Half::Panels(skinny::half_panels(&w, n, k)),
        });
        let packed = match lay.large_batch_kernel() {
            LargeBatchKernel::F32GemmCrate => None,
            LargeBatchKernel::I16Avx2 | LargeBatchKernel::I16Vnni => {
                Some(Packed::I16(PackedI16::pack(&w, n, k)))
            }
            LargeBatchKernel::Bf16Amx | LargeBatchKernel::Bf16Emulated => {
                Some(Packed::Bf16(PackedBf16::pack(&w, n, k)))
            }
            LargeBatchKernel::F32Tile => Some(Packed::F32(PackedB::pack(&w, n, k))),
        };
        let rows = (packed.is_none() || half.is_none()).then_some(w);
        Matrix {
            n,
            k,
            rows,
            packed,
            half,
        }
    }
}

struct Layer {
    qkv_w: Matrix, // [3H, H]
    qkv_b: Vec<f32>,
    o_w: Matrix, // [H, H]
    o_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    i_w: Matrix, // [I, H]
    i_b: Vec<f32>,
    out_w: Matrix, // [H, I]
    out_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    inter: Vec<f32>,
}

/// BERT encoder weights in f32, laid out for the kernels below.
pub(crate) struct FastBert {
    isa: Isa,
    large_batch_gemm: LargeBatchGemm,
    hidden: usize,
    heads: usize,
    inter: usize,
    eps: f32,
    act: Act,
    max_pos: usize,
    word: Vec<f32>,
    pos: Vec<f32>,
    type0: Vec<f32>,
    emb_ln_g: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    /// Idle scratch buffers: one per pass running at once (batches run side by side when the
    /// embedder splits work by batch, see `crate::split`).
    scratch: Mutex<Vec<Scratch>>,
}

fn get(vb: &VarBuilder<'_>, shape: &[usize], name: &str) -> candle_core::Result<Vec<f32>> {
    vb.get(shape, name)?
        .to_dtype(DType::F32)?
        .flatten_all()?
        .to_vec1::<f32>()
}

impl FastBert {
    /// Reads the weights (names as in Hugging Face BERT, with or without a `bert.` prefix)
    /// into `lay`'s layouts.
    pub(crate) fn load(
        vb: VarBuilder<'_>,
        cfg: &BertConfig,
        lay: Layout,
    ) -> candle_core::Result<FastBert> {
        let isa = lay.isa;
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
        // nothing is sized by config.json alone: a hostile count or width must fail on the
        // first weight it does not match, not reserve terabytes first
        let mut layers = Vec::new();
        for l in 0..cfg.num_hidden_layers {
            let v = vb.pp(format!("encoder.layer.{l}"));
            let (mut qkv_w, mut qkv_b) = (Vec::new(), Vec::new());
            for n in ["query", "key", "value"] {
                qkv_w.extend(get(&v, &[h, h], &format!("attention.self.{n}.weight"))?);
                qkv_b.extend(get(&v, &[h], &format!("attention.self.{n}.bias"))?);
            }
            let mat = |w: Vec<f32>, n: usize, k: usize| Matrix::new(w, n, k, lay);
            layers.push(Layer {
                qkv_w: mat(qkv_w, 3 * h, h),
                qkv_b,
                o_w: mat(get(&v, &[h, h], "attention.output.dense.weight")?, h, h),
                o_b: get(&v, &[h], "attention.output.dense.bias")?,
                ln1_g: get(&v, &[h], "attention.output.LayerNorm.weight")?,
                ln1_b: get(&v, &[h], "attention.output.LayerNorm.bias")?,
                i_w: mat(get(&v, &[i, h], "intermediate.dense.weight")?, i, h),
                i_b: get(&v, &[i], "intermediate.dense.bias")?,
                out_w: mat(get(&v, &[h, i], "output.dense.weight")?, h, i),
                out_b: get(&v, &[h], "output.dense.bias")?,
                ln2_g: get(&v, &[h], "output.LayerNorm.weight")?,
                ln2_b: get(&v, &[h], "output.LayerNorm.bias")?,
            });
        }
        Ok(FastBert {
            isa,
            large_batch_gemm: lay.large_batch_gemm,
            hidden: h,
            heads: cfg.num_attention_heads,
            inter: i,
            eps: cfg.layer_norm_eps as f32,
            act: match cfg.hidden_act {
                HiddenAct::Gelu => Act::Gelu,
                HiddenAct::GeluApproximate => Act::GeluTanh,
                HiddenAct::Relu => Act::Relu,
            },
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
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// The instruction set its kernels run.
    pub(crate) fn isa(&self) -> Isa {
        self.isa
    }

    /// The kernels of its larger batches and the setting they were chosen for.
    pub(crate) fn large_batch_kernel(&self) -> (LargeBatchKernel, LargeBatchGemm) {
        let lay = Layout {
            isa: self.isa,
            half_small_batches: false,
            large_batch_gemm: self.large_batch_gemm,
        };
        (lay.large_batch_kernel(), self.large_batch_gemm)
    }

    /// Last hidden states of the packed sequences: `Σ len × hidden`, row-major, sequences in
    /// order. Ids must be < vocab size and each sequence ≤ max positions. `small`: a pass of
    /// ≤ [`SKINNY_ROWS`] tokens may take the small-batch path (its own kernels, half-precision
    /// weights by default). A job of several batches passes false, so that a text's vector
    /// does not depend on whether the job's batching left it in a small tail batch: on the
    /// GEMM path every row is computed alike, whatever its batch mates.
    pub(crate) fn forward<R>(
        &self,
        seqs: &[&[u32]],
        small: bool,
        f: impl FnOnce(&[f32]) -> R,
    ) -> R {
        let h = self.hidden;
        let offsets: Vec<usize> = std::iter::once(0)
            .chain(seqs.iter().scan(0, |acc, s| {
                *acc += s.len();
                Some(*acc)
            }))
            .collect();
        let t = offsets[seqs.len()];
        let pool = || self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let mut scratch = pool().pop().unwrap_or_default();
        let s = &mut scratch;
        resize(&mut s.x, t * h);
        resize(&mut s.qkv, t * 3 * h);
        resize(&mut s.ctx, t * h);

        stage_timer::time(Stage::Embeddings, || self.embed(seqs, &mut s.x[..t * h]));
        for layer in &self.layers {
            self.layer(layer, (t, small && t <= SKINNY_ROWS), &offsets, s);
        }
        let out = f(&s.x[..t * h]);
        pool().push(scratch);
        out
    }

    /// `x = LayerNorm(word + position + type 0)` for every token of the packed sequences.
    fn embed(&self, seqs: &[&[u32]], x: &mut [f32]) {
        let h = self.hidden;
        let rows: Vec<(usize, usize)> = seqs
            .iter()
            .enumerate()
            .flat_map(|(si, seq)| (0..seq.len()).map(move |p| (si, p)))
            .collect();
        x.par_chunks_mut(h)
            .zip(rows.par_iter())
            .for_each(|(row, &(si, p))| {
                let id = seqs[si][p] as usize;
                let p = p.min(self.max_pos - 1);
                math::embedding_row(
                    self.isa,
                    row,
                    [
                        &self.word[id * h..(id + 1) * h],
                        &self.pos[p * h..(p + 1) * h],
                        &self.type0,
                    ],
                    &self.emb_ln_g,
                    &self.emb_ln_b,
                    self.eps,
                );
            });
    }

    /// One encoder layer over `t` packed rows (`skinny`: on the small-batch path).
    fn layer(&self, l: &Layer, (t, skinny): (usize, bool), offsets: &[usize], s: &mut Scratch) {
        let h = self.hidden;
        let (x, qkv, ctx) = (
            &mut s.x[..t * h],
            &mut s.qkv[..t * 3 * h],
            &mut s.ctx[..t * h],
        );
        stage_timer::time(Stage::Qkv, || {
            self.linear(
                x,
                (t, skinny),
                &l.qkv_w,
                &l.qkv_b,
                qkv,
                Epilogue::Bias(None),
            )
        });
        stage_timer::time(Stage::Attention, || self.attention(qkv, offsets, ctx));
        let ln1 = Epilogue::ResidualLayerNorm {
            gamma: &l.ln1_g,
            beta: &l.ln1_b,
            eps: self.eps,
        };
        stage_timer::time(Stage::AttnOut, || {
            self.linear(ctx, (t, skinny), &l.o_w, &l.o_b, x, ln1)
        });
        let ln2 = Epilogue::ResidualLayerNorm {
            gamma: &l.ln2_g,
            beta: &l.ln2_b,
            eps: self.eps,
        };
        if let (Some(wi), Some(wo), true) = (&l.i_w.packed, &l.out_w.packed, !skinny) {
            return stage_timer::time(Stage::Ffn, || {
                linear::feed_forward(self.isa, x, t, wi, &l.i_b, self.act, wo, &l.out_b, ln2)
            });
        }
        // unfused: the intermediate rows go through memory
        resize(&mut s.inter, t * self.inter);
        let inter = &mut s.inter[..t * self.inter];
        let act = Epilogue::Bias(Some(self.act));
        stage_timer::time(Stage::FfnIn, || {
            self.linear(x, (t, skinny), &l.i_w, &l.i_b, inter, act)
        });
        stage_timer::time(Stage::FfnOut, || {
            self.linear(inter, (t, skinny), &l.out_w, &l.out_b, x, ln2)
        });
    }

    /// Attention: one task per sequence (all heads), writing only that sequence's ctx rows.
    fn attention(&self, qkv: &[f32], offsets: &[usize], ctx: &mut [f32]) {
        let h = self.hidden;
        let mut parts: Vec<(usize, &mut [f32])> = Vec::with_capacity(offsets.len() - 1);
        let mut rest = ctx;
        for w in offsets.windows(2) {
            let (mine, tail) = rest.split_at_mut((w[1] - w[0]) * h);
            parts.push((w[0], mine));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(start, ctx)| {
            let a = SeqInput {
                qkv,
                h,
                heads: self.heads,
                start,
                n: ctx.len() / h,
            };
            ATTN.with(|sc| attention::attention_seq(self.isa, a, ctx, &mut sc.borrow_mut()));
        });
    }

    /// `out = epilogue(x · wᵀ + b)` for `t` rows: [`linear_skinny`] on the small-batch path,
    /// else memdex's GEMM, or the `gemm` crate where the weights are not packed (AVX-512).
    fn linear(
        &self,
        x: &[f32],
        (t, skinny): (usize, bool),
        w: &Matrix,
        b: &[f32],
        out: &mut [f32],
        epi: Epilogue<'_>,
    ) {
        match (&w.packed, &w.rows) {
            _ if skinny => {
                let mut y = vec![0f32; t * w.n];
                linear_skinny(self.isa, x, t, w, b, &mut y);
                finish(self.isa, out, &y, w.n, epi);
            }
            (Some(p), _) => linear::linear(self.isa, x, t, p, b, out, epi),
            (None, Some(rows)) => linear_gemm(self.isa, x, t, w.k, rows, b, w.n, out, epi),
            (None, None) => unreachable!("a matrix keeps f32 rows when it is not packed"),
        }
    }
}

thread_local! {
    static ATTN: std::cell::RefCell<attention::Scratch> = Default::default();
}

fn resize(v: &mut Vec<f32>, n: usize) {
    if v.len() < n {
        v.resize(n, 0.0);
    }
}

/// Batches of at most this many tokens (a query) take [`linear_skinny`].
const SKINNY_ROWS: usize = 32;

/// `out = epilogue(y)` where `y = x · wᵀ + b` was computed apart (rows of `n`), on the
/// calling thread: for the ≤ [`SKINNY_ROWS`] rows of a small batch this is microseconds of
/// work, less than waking a second thread for it.
fn finish(isa: Isa, out: &mut [f32], y: &[f32], n: usize, epi: Epilogue<'_>) {
    match epi {
        Epilogue::Bias(act) => {
            out[..y.len()].copy_from_slice(y);
            math::act_slice(isa, &mut out[..y.len()], act);
        }
        Epilogue::ResidualLayerNorm { gamma, beta, eps } => {
            for (o, y) in out[..y.len()].chunks_exact_mut(n).zip(y.chunks_exact(n)) {
                math::add_layer_norm_row(isa, o, y, gamma, beta, eps);
            }
        }
    }
}

/// [`FastBert::linear`] for a few rows: weight rows split across rayon tasks, each read once
/// (from the half copy when there is one: [`skinny::panels_block`] or
/// [`skinny::skinny_block`]), results gathered into `out` (`t × n`, bias added).
fn linear_skinny(isa: Isa, x: &[f32], t: usize, w: &Matrix, b: &[f32], out: &mut [f32]) {
    const COLS: usize = 96;
    let (n, k) = (w.n, w.k);
    if t == 0 {
        return;
    }
    if let Some(Half::Panels(h)) = &w.half {
        const PANELS: usize = COLS / skinny::PANEL;
        let mut y = vec![0f32; n.div_ceil(skinny::PANEL) * skinny::PANEL * t];
        y.par_chunks_mut(PANELS * skinny::PANEL * t)
            .zip(h.par_chunks(PANELS * skinny::PANEL * k))
            .for_each(|(yc, wc)| skinny::panels_block(isa, x, t, k, wc, yc));
        for (i, row) in out[..t * n].chunks_exact_mut(n).enumerate() {
            for ((o, bc), p) in row
                .chunks_mut(skinny::PANEL)
                .zip(b.chunks(skinny::PANEL))
                .zip(0..)
            {
                let yp = &y[(p * t + i) * skinny::PANEL..];
                for ((d, &v), &bj) in o.iter_mut().zip(yp).zip(bc) {
                    *d = v + bj;
                }
            }
        }
        return;
    }
    let mut out_t = vec![0f32; n * t];
    let tasks = out_t.par_chunks_mut(COLS * t).zip(b.par_chunks(COLS));
    match (&w.half, &w.rows) {
        (Some(Half::Rows(h)), _) => tasks
            .zip(h.par_chunks(COLS * k))
            .for_each(|((o, bc), wc)| skinny::skinny_block(isa, x, t, k, Rows::F16(wc), bc, o)),
        (None, Some(r)) => tasks
            .zip(r.par_chunks(COLS * k))
            .for_each(|((o, bc), wc)| skinny::skinny_block(isa, x, t, k, Rows::F32(wc), bc, o)),
        _ => unreachable!("a matrix keeps f32 rows when it has no half copy"),
    }
    for (j, col) in out_t.chunks_exact(t).enumerate() {
        for (i, v) in col.iter().enumerate() {
            out[i * n + j] = *v;
        }
    }
}

/// `out = epilogue(x[t × k] · w[n × k]ᵀ + b)` with the `gemm` crate (row-major everywhere):
/// its AVX-512 kernels on AVX-512 CPUs; the epilogue in a pass of its own.
#[allow(clippy::too_many_arguments)]
fn linear_gemm(
    isa: Isa,
    x: &[f32],
    t: usize,
    k: usize,
    w: &[f32],
    b: &[f32],
    n: usize,
    out: &mut [f32],
    epi: Epilogue<'_>,
) {
    let out = &mut out[..t * n];
    if let Epilogue::Bias(_) = epi {
        for row in out.chunks_exact_mut(n) {
            row.copy_from_slice(b);
        }
    }
    let par = if t * n * k >= 1 << 18 {
        Parallelism::Rayon(rayon::current_num_threads())
    } else {
        Parallelism::None
    };
    // SAFETY: pointers and strides describe exactly the slices above: out is t×n (row
    // stride n), x is t×k (row stride k), and wᵀ is k×n read from w (n×k) with row stride 1
    // and column stride k. gemm reads dst (read_dst) to add the bias or the residual.
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
    match epi {
        Epilogue::Bias(act) => out
            .par_chunks_mut(4096)
            .for_each(|c| math::act_slice(isa, c, act)),
        Epilogue::ResidualLayerNorm { gamma, beta, eps } => out
            .par_chunks_mut(n)
            .for_each(|o| math::add_layer_norm_row(isa, o, b, gamma, beta, eps)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul;

    fn data(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (((i * 7919 + seed * 104_729) % 1999) as f32 / 999.5 - 1.0) * 0.5)
            .collect()
    }

    /// The paths with epilogues in passes of their own — the `gemm` crate (large batches on
    /// AVX-512 CPUs; here it runs its AVX2 kernels) and the skinny kernels (queries, f32 and
    /// f16 weights) — against the f64 reference.
    #[test]
    fn gemm_crate_and_skinny_paths_match_reference() {
        let eps = 1e-12;
        for (t, k, n) in [(5, 384, 96), (40, 384, 1152), (33, 1536, 64), (7, 40, 37)] {
            let (x, w, b) = (data(t * k, 1), data(n * k, 2), data(n, 3));
            let (g, beta) = (data(n, 4), data(n, 5));
            let epis = [
                Epilogue::Bias(None),
                Epilogue::Bias(Some(Act::Gelu)),
                Epilogue::ResidualLayerNorm {
                    gamma: &g,
                    beta: &beta,
                    eps,
                },
            ];
            for epi in epis {
                let resid = data(t * n, 6);
                let mut want = resid.clone();
                matmul::reference(&x, t, &w, n, k, &b, &mut want, epi);
                let mut got = resid.clone();
                linear_gemm(Isa::detect(), &x, t, k, &w, &b, n, &mut got, epi);
                let mut checks = vec![("gemm crate", got, 2e-5)];
                for isa in Isa::available() {
                    for half in [false, true] {
                        let lay = Layout {
                            isa,
                            half_small_batches: half,
                            large_batch_gemm: LargeBatchGemm::F32,
                        };
                        let m = Matrix::new(w.clone(), n, k, lay);
                        let mut y = vec![0f32; t * n];
                        linear_skinny(isa, &x, t.min(SKINNY_ROWS), &m, &b, &mut y);
                        let rows = t.min(SKINNY_ROWS);
                        let mut got = resid.clone();
                        finish(isa, &mut got[..rows * n], &y[..rows * n], n, epi);
                        got[rows * n..].copy_from_slice(&want[rows * n..]);
                        let tol = if half { 5e-3 } else { 2e-5 };
                        checks.push(("skinny", got, tol));
                    }
                }
                for (path, got, tol) in checks {
                    for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g - e).abs() <= tol * (1.0 + e.abs()),
                            "{path} t {t} k {k} n {n} {epi:?} [{i}]: {g} vs {e}"
                        );
                    }
                }
            }
        }
    }
}

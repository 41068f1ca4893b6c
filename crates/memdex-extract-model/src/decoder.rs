//! memdex's own decoder for llama- and qwen2-family GGUFs, from candle's public ops
//! (quantized matmul, RMSNorm, rotary embeddings, softmax).
//!
//! It differs from candle's `quantized_llama` / `quantized_qwen2` in what batched generation
//! needs: the weights are immutable and shared (`Clone` is cheap), the attention cache is a
//! value of its own ([`KvCache`]) that can be repeated for a batch and cut down to the rows
//! still generating, and the last position of a multi-row pass is made contiguous before the
//! quantized output matmul (which refuses strided inputs). With quantized weights every row of
//! a batch runs the same arithmetic as it would alone: the quantized matmul works row by row,
//! attention is one product per row and head, and rows of a batch have equal lengths (the
//! caller groups them), so no padding enters any sum. (f32 and f16 weights go through a dense
//! matmul whose blocking may depend on the number of rows: equal within rounding.) The tests
//! check the logits against candle's own models.

use std::io::{Read, Seek};

use candle_core::quantized::{gguf_file, QMatMul, QTensor};
use candle_core::{DType, Device, IndexOp, Result, Tensor, D};
use candle_nn::{Embedding, Module};
use candle_transformers::utils::{build_causal_mask, repeat_kv};

/// Positions precomputed for the rotary embedding at most (prompt prefix + item + answer
/// stay far below).
const MAX_POSITIONS: usize = 4096;

/// The architectures this decoder runs (`general.architecture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Llama and its derivatives (SmolLM2, TinyLlama, …): interleaved rotary pairs as
    /// llama.cpp's converter lays them out.
    Llama,
    /// Qwen2 / Qwen2.5: biases on the query, key and value projections, rotary pairs
    /// `(i, i + d/2)`, tied embeddings allowed.
    Qwen2,
}

impl Arch {
    pub fn from_name(name: &str) -> Option<Arch> {
        match name {
            "llama" => Some(Arch::Llama),
            "qwen2" => Some(Arch::Qwen2),
            _ => None,
        }
    }

    /// The prefix of the architecture's metadata keys.
    pub fn key(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
        }
    }
}

#[derive(Debug, Clone)]
struct Block {
    attn_norm: Tensor,
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    /// Query, key and value biases (qwen2).
    bias: Option<[Tensor; 3]>,
    wo: QMatMul,
    ffn_norm: Tensor,
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
}

/// A loaded decoder: immutable weights, shared by clones.
#[derive(Debug, Clone)]
pub struct Decoder {
    arch: Arch,
    embed: Embedding,
    blocks: Vec<Block>,
    norm: Tensor,
    output: QMatMul,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    eps: f64,
    cos: Tensor,
    sin: Tensor,
}

/// The attention cache of a batch of rows: per block, keys and values of every position so
/// far, `(rows, kv_heads, len, head_dim)`.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    kv: Vec<(Tensor, Tensor)>,
    len: usize,
}

impl KvCache {
    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// This cache (of one row) for `rows` rows.
    pub fn repeat(&self, rows: usize) -> Result<KvCache> {
        let rep = |t: &Tensor| Tensor::cat(&vec![t; rows], 0);
        Ok(KvCache {
            kv: self
                .kv
                .iter()
                .map(|(k, v)| Ok((rep(k)?, rep(v)?)))
                .collect::<Result<_>>()?,
            len: self.len,
        })
    }

    /// Only the rows `keep` (indices into the current rows), in that order.
    pub fn select(&self, keep: &[u32]) -> Result<KvCache> {
        let Some((k0, _)) = self.kv.first() else {
            return Ok(self.clone());
        };
        let idx = Tensor::new(keep, k0.device())?;
        Ok(KvCache {
            kv: self
                .kv
                .iter()
                .map(|(k, v)| Ok((k.index_select(&idx, 0)?, v.index_select(&idx, 0)?)))
                .collect::<Result<_>>()?,
            len: self.len,
        })
    }
}

/// Reads a tensor of the file onto `device`.
struct Reader<'a, R> {
    ct: &'a gguf_file::Content,
    reader: &'a mut R,
    device: &'a Device,
}

impl<'a, R: Read + Seek> Reader<'a, R> {
    /// The header's entry for tensor `name`.
    fn info(&self, name: &str) -> Result<&'a gguf_file::TensorInfo> {
        match self.ct.tensor_infos.get(name) {
            Some(info) => Ok(info),
            None => candle_core::bail!("tensor {name} is missing"),
        }
    }

    /// The shape the header gives tensor `name` (rows first, as candle reads GGUF).
    fn dims(&self, name: &str) -> Result<&'a [usize]> {
        Ok(self.info(name)?.shape.dims())
    }

    /// Tensor `name`, which must have the shape `dims` with rows of whole quantization
    /// blocks: a file whose tensors disagree with its own hyperparameters is refused before
    /// any of them is used.
    fn q(&mut self, name: &str, dims: &[usize]) -> Result<QTensor> {
        let info = self.info(name)?;
        let block = info.ggml_dtype.block_size();
        if info.shape.dims() != dims || dims.last().is_some_and(|c| c % block != 0) {
            candle_core::bail!(
                "tensor {name} has shape {:?} ({:?}), expected {dims:?}",
                info.shape.dims(),
                info.ggml_dtype
            );
        }
        info.read(self.reader, self.ct.tensor_data_offset, self.device)
    }

    fn matmul(&mut self, name: &str, dims: &[usize]) -> Result<QMatMul> {
        QMatMul::from_qtensor(self.q(name, dims)?)
    }

    fn f32(&mut self, name: &str, dims: &[usize]) -> Result<Tensor> {
        self.q(name, dims)?.dequantize(self.device)
    }

    fn u32(&self, key: &str) -> Result<usize> {
        match self.ct.metadata.get(key) {
            Some(v) => Ok(v.to_u32()? as usize),
            None => candle_core::bail!("metadata field {key} is missing"),
        }
    }

    fn f32_or(&self, key: &str, default: f32) -> Result<f32> {
        self.ct
            .metadata
            .get(key)
            .map_or(Ok(default), |v| v.to_f32())
    }
}

impl Decoder {
    /// The decoder of a GGUF whose header is `ct` (tensors read from `reader`).
    pub fn from_gguf<R: Read + Seek>(
        arch: Arch,
        ct: &gguf_file::Content,
        reader: &mut R,
        device: &Device,
    ) -> Result<Decoder> {
        let mut r = Reader { ct, reader, device };
        let key = |k: &str| format!("{}.{k}", arch.key());
        let heads = r.u32(&key("attention.head_count"))?;
        let kv_heads = r.u32(&key("attention.head_count_kv"))?;
        let dim = r.u32(&key("embedding_length"))?;
        let layers = r.u32(&key("block_count"))?;
        let eps = r.f32_or(&key("attention.layer_norm_rms_epsilon"), 1e-6)? as f64;
        let base = r.f32_or(&key("rope.freq_base"), 10_000.0)?;
        if dim == 0 || heads == 0 || kv_heads == 0 || dim % heads != 0 || heads % kv_heads != 0 {
            candle_core::bail!("{heads} heads, {kv_heads} key/value heads, width {dim}");
        }
        let head_dim = dim / heads;
        if let Ok(rope) = r.u32(&key("rope.dimension_count")) {
            if rope != head_dim {
                candle_core::bail!("rotary dimension {rope} ≠ head dimension {head_dim}");
            }
        }
        let width = Widths {
            dim,
            kv: head_dim * kv_heads,
            hidden: match layers {
                0 => 0,
                _ => r.dims("blk.0.ffn_up.weight")?.first().copied().unwrap_or(0),
            },
        };
        let vocab = r.dims("token_embd.weight")?.first().copied().unwrap_or(0);
        if vocab == 0 || (layers > 0 && width.hidden == 0) {
            candle_core::bail!(
                "token_embd.weight has {vocab} rows, blk.0.ffn_up.weight {} (both must be > 0)",
                width.hidden
            );
        }
        let embed_q = r.q("token_embd.weight", &[vocab, dim])?;
        let embed = Embedding::new(embed_q.dequantize(device)?, dim);
        let output = match r.dims("output.weight") {
            Ok(_) => r.matmul("output.weight", &[vocab, dim])?,
            Err(_) => QMatMul::from_qtensor(embed_q)?, // tied embeddings
        };
        let blocks = (0..layers)
            .map(|l| read_block(&mut r, arch, &format!("blk.{l}"), width))
            .collect::<Result<_>>()?;
        let norm = r.f32("output_norm.weight", &[dim])?;
        // after the weights: their bytes bound the head width the tables are sized by
        let (cos, sin) = rotary_tables(head_dim, base, device)?;
        Ok(Decoder {
            arch,
            embed,
            blocks,
            norm,
            output,
            heads,
            kv_heads,
            head_dim,
            eps,
            cos,
            sin,
        })
    }

    /// Runs `ids` (`(rows, len)`, every row at the cache's positions onwards) and extends
    /// `cache` (empty, or of `rows` rows). Returns each row's last-position logits,
    /// `(rows, vocab)`.
    pub fn forward(&self, ids: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        let (_, len) = ids.dims2()?;
        let pos = cache.len;
        if len == 0 || pos + len > MAX_POSITIONS {
            candle_core::bail!("{len} tokens at position {pos} (at most {MAX_POSITIONS} in all)");
        }
        let cos = self.cos.narrow(0, pos, len)?;
        let sin = self.sin.narrow(0, pos, len)?;
        let mask = (len > 1)
            .then(|| build_causal_mask(len, pos, ids.device()))
            .transpose()?;
        let mut x = self.embed.forward(ids)?;
        let mut kv = Vec::with_capacity(self.blocks.len());
        for (i, b) in self.blocks.iter().enumerate() {
            let h = candle_nn::ops::rms_norm(&x, &b.attn_norm, self.eps as f32)?;
            let rot = (&cos, &sin);
            let (a, k, v) = self.attention(b, &h, cache.kv.get(i), rot, mask.as_ref())?;
            kv.push((k, v));
            x = (x + a)?;
            let h = candle_nn::ops::rms_norm(&x, &b.ffn_norm, self.eps as f32)?;
            let act = (candle_nn::ops::silu(&b.gate.forward(&h)?)? * b.up.forward(&h)?)?;
            x = (x + b.down.forward(&act)?)?;
        }
        cache.kv = kv;
        cache.len = pos + len;
        let x = candle_nn::ops::rms_norm(&x, &self.norm, self.eps as f32)?;
        // the quantized matmul takes contiguous rows only
        let last = x.i((.., len - 1, ..))?.contiguous()?;
        self.output.forward(&last)
    }

    /// One block's attention over `x` (`(rows, len, dim)`), after the cached positions
    /// `past`; returns the output and the extended keys and values.
    fn attention(
        &self,
        b: &Block,
        x: &Tensor,
        past: Option<&(Tensor, Tensor)>,
        (cos, sin): (&Tensor, &Tensor),
        mask: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let (rows, len, dim) = x.dims3()?;
        let hd = self.head_dim;
        let project = |w: &QMatMul, i: usize, heads: usize| -> Result<Tensor> {
            let mut y = w.forward(x)?;
            if let Some(bias) = &b.bias {
                y = y.broadcast_add(&bias[i])?;
            }
            y.reshape((rows, len, heads, hd))?
                .transpose(1, 2)?
                .contiguous()
        };
        let rope = |t: Tensor| match self.arch {
            Arch::Llama => candle_nn::rotary_emb::rope_i(&t, cos, sin),
            Arch::Qwen2 => candle_nn::rotary_emb::rope(&t, cos, sin),
        };
        let q = rope(project(&b.wq, 0, self.heads)?)?;
        let mut k = rope(project(&b.wk, 1, self.kv_heads)?)?;
        let mut v = project(&b.wv, 2, self.kv_heads)?;
        if let Some((pk, pv)) = past {
            k = Tensor::cat(&[pk, &k], 2)?;
            v = Tensor::cat(&[pv, &v], 2)?;
        }
        let rep = self.heads / self.kv_heads;
        let kr = repeat_kv(k.clone(), rep)?;
        let vr = repeat_kv(v.clone(), rep)?;
        let mut att = (q.matmul(&kr.t()?)? / (hd as f64).sqrt())?;
        if let Some(mask) = mask {
            let neg = Tensor::new(f32::NEG_INFINITY, att.device())?.broadcast_as(att.shape())?;
            att = mask.broadcast_as(att.shape())?.where_cond(&neg, &att)?;
        }
        let att = candle_nn::ops::softmax_last_dim(&att)?;
        let y = att
            .matmul(&vr)?
            .transpose(1, 2)?
            .reshape((rows, len, dim))?;
        Ok((b.wo.forward(&y)?, k, v))
    }
}

/// The widths a block's tensors must have.
#[derive(Debug, Clone, Copy)]
struct Widths {
    dim: usize,
    /// Key/value width: head width × key/value heads.
    kv: usize,
    /// Feed-forward width.
    hidden: usize,
}

fn read_block<R: Read + Seek>(
    r: &mut Reader<'_, R>,
    arch: Arch,
    p: &str,
    w: Widths,
) -> Result<Block> {
    let Widths { dim, kv, hidden } = w;
    let bias = match arch {
        Arch::Llama => None,
        Arch::Qwen2 => Some([
            r.f32(&format!("{p}.attn_q.bias"), &[dim])?,
            r.f32(&format!("{p}.attn_k.bias"), &[kv])?,
            r.f32(&format!("{p}.attn_v.bias"), &[kv])?,
        ]),
    };
    Ok(Block {
        attn_norm: r.f32(&format!("{p}.attn_norm.weight"), &[dim])?,
        wq: r.matmul(&format!("{p}.attn_q.weight"), &[dim, dim])?,
        wk: r.matmul(&format!("{p}.attn_k.weight"), &[kv, dim])?,
        wv: r.matmul(&format!("{p}.attn_v.weight"), &[kv, dim])?,
        bias,
        wo: r.matmul(&format!("{p}.attn_output.weight"), &[dim, dim])?,
        ffn_norm: r.f32(&format!("{p}.ffn_norm.weight"), &[dim])?,
        gate: r.matmul(&format!("{p}.ffn_gate.weight"), &[hidden, dim])?,
        up: r.matmul(&format!("{p}.ffn_up.weight"), &[hidden, dim])?,
        down: r.matmul(&format!("{p}.ffn_down.weight"), &[dim, hidden])?,
    })
}

/// `cos`, `sin` of position × frequency, `(MAX_POSITIONS, head_dim / 2)`.
fn rotary_tables(head_dim: usize, base: f32, device: &Device) -> Result<(Tensor, Tensor)> {
    let theta: Vec<f32> = (0..head_dim)
        .step_by(2)
        .map(|i| 1f32 / base.powf(i as f32 / head_dim as f32))
        .collect();
    let theta = Tensor::new(theta.as_slice(), device)?;
    let angles = Tensor::arange(0, MAX_POSITIONS as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((MAX_POSITIONS, 1))?
        .matmul(&theta.reshape((1, theta.elem_count()))?)?;
    Ok((angles.cos()?, angles.sin()?))
}

/// The argmax of each row of `logits` (`(rows, vocab)`).
pub fn greedy(logits: &Tensor) -> Result<Vec<u32>> {
    logits.argmax(D::Minus1)?.to_vec1::<u32>()
}

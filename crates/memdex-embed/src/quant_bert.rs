//! A BERT encoder over quantized GGUF weights (`--weights gguf --cpu-backend candle`, and
//! `--weights gguf` on CUDA): every projection is a
//! candle [`QMatMul`] over the file's blocks (Q4_0, Q8_0, … as stored; f32/f16 matrices are
//! used as they are), the word embeddings are gathered row by row from their blocks, and
//! LayerNorms, biases, position and type embeddings run in f32. Tensor names are the
//! Hugging Face BERT names (`embeddings.word_embeddings.weight`,
//! `encoder.layer.N.attention.self.query.weight`, …, optionally under `bert.`), which is what
//! `memdex model convert` writes; the sizes come from `config.json` beside the file.
//!
//! On the CPU candle's quantized matmul rounds the activations to 8 bits per block before the
//! dot products, so vectors differ from the dequantised-f32 model by that rounding too
//! (docs/evaluation.md has the parity figures).

use std::path::Path;
use std::sync::Arc;

use crate::config::{BertConfig as Config, HiddenAct};
use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm};
use candle_transformers::quantized_nn::{layer_norm, linear, Linear};
use candle_transformers::quantized_var_builder::VarBuilder;

pub(crate) struct QuantBert {
    word: Arc<QTensor>,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    act: HiddenAct,
}

struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    inter: Linear,
    out: Linear,
    out_norm: LayerNorm,
}

impl QuantBert {
    pub fn load(path: &Path, config: &Config, device: &Device) -> Result<Self> {
        let vb = VarBuilder::from_gguf(path, device)?;
        let vb = if vb.contains_key("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let (h, eps) = (config.hidden_size, config.layer_norm_eps);
        if config.num_attention_heads == 0 || h % config.num_attention_heads != 0 {
            candle_core::bail!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        let e = vb.pp("embeddings");
        let dense = |name: &str, rows: usize| -> Result<Embedding> {
            Ok(Embedding::new(
                e.get((rows, h), name)?.dequantize(device)?,
                h,
            ))
        };
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), config))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            word: e.get((config.vocab_size, h), "word_embeddings.weight")?,
            position: dense("position_embeddings.weight", config.max_position_embeddings)?,
            token_type: dense("token_type_embeddings.weight", config.type_vocab_size)?,
            norm: layer_norm(h, eps, e.pp("LayerNorm"))?,
            layers,
            heads: config.num_attention_heads,
            act: config.hidden_act,
        })
    }

    /// Hidden states `(b, L, H)` for `input_ids` `(b, L)` with `mask` `(b, L)` (1 = token).
    pub fn forward(&self, input_ids: &Tensor, type_ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, len) = input_ids.dims2()?;
        let positions = Tensor::arange(0u32, len as u32, input_ids.device())?;
        let x = (self.word.embedding(input_ids)? + self.token_type.forward(type_ids)?)?
            .broadcast_add(&self.position.forward(&positions)?)?;
        let mut x = self.norm.forward(&x)?;
        // (b, 1, 1, L): 0 for tokens, a large negative number for padding
        let bias = (mask.to_dtype(DType::F32)?.affine(1.0, -1.0)? * 1e30)?
            .unsqueeze(1)?
            .unsqueeze(1)?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias, self.heads, self.act)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        let (h, i, eps) = (c.hidden_size, c.intermediate_size, c.layer_norm_eps);
        let a = vb.pp("attention");
        Ok(Self {
            q: linear(h, h, a.pp("self.query"))?,
            k: linear(h, h, a.pp("self.key"))?,
            v: linear(h, h, a.pp("self.value"))?,
            attn_out: linear(h, h, a.pp("output.dense"))?,
            attn_norm: layer_norm(h, eps, a.pp("output.LayerNorm"))?,
            inter: linear(h, i, vb.pp("intermediate.dense"))?,
            out: linear(i, h, vb.pp("output.dense"))?,
            out_norm: layer_norm(h, eps, vb.pp("output.LayerNorm"))?,
        })
    }

    fn forward(&self, x: &Tensor, bias: &Tensor, heads: usize, act: HiddenAct) -> Result<Tensor> {
        let (b, len, h) = x.dims3()?;
        let hd = h / heads;
        let split = |t: Tensor| -> Result<Tensor> {
            t.reshape((b, len, heads, hd))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split((self.q.forward(x)? * (1.0 / (hd as f64).sqrt()))?)?;
        let k = split(self.k.forward(x)?)?;
        let v = split(self.v.forward(x)?)?;
        let scores = q.matmul(&k.t()?)?.broadcast_add(bias)?;
        let p = candle_nn::ops::softmax_last_dim(&scores)?;
        let ctx = p.matmul(&v)?.transpose(1, 2)?.reshape((b, len, h))?;
        let a = self
            .attn_norm
            .forward(&(self.attn_out.forward(&ctx)? + x)?)?;
        let i = self.inter.forward(&a)?;
        let i = match act {
            HiddenAct::Gelu => i.gelu_erf()?,
            HiddenAct::GeluApproximate => i.gelu()?,
            HiddenAct::Relu => i.relu()?,
        };
        self.out_norm.forward(&(self.out.forward(&i)? + a)?)
    }
}

//! candle-transformers' BERT with a correct attention mask in f16 and bf16.
//!
//! `BertModel::forward` builds the additive mask as `(1 − mask) · f32::MIN` *in the model's
//! dtype*: `f32::MIN` overflows f16 and bf16 to −∞, and `0 · −∞` is NaN, so every vector comes
//! out NaN in half precision (found with `--precision f16` on the CPU, before any GPU run). This
//! wrapper loads the same weights (candle's public `BertEncoder` plus the embedding layer
//! rebuilt here, identical to candle's) and passes `(1 − mask) · finfo(dtype).min` computed in
//! f32 and then converted — finite in every dtype, like transformers does.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{embedding, layer_norm, Embedding, LayerNorm, VarBuilder};
use candle_transformers::models::bert::{BertEncoder, Config};

pub(crate) struct MaskedBert {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
    encoder: BertEncoder,
}

impl MaskedBert {
    pub fn load(vb: VarBuilder<'_>, config: &Config) -> Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let e = vb.pp("embeddings");
        let h = config.hidden_size;
        Ok(Self {
            word: embedding(config.vocab_size, h, e.pp("word_embeddings"))?,
            position: embedding(
                config.max_position_embeddings,
                h,
                e.pp("position_embeddings"),
            )?,
            token_type: embedding(config.type_vocab_size, h, e.pp("token_type_embeddings"))?,
            norm: layer_norm(h, config.layer_norm_eps, e.pp("LayerNorm"))?,
            encoder: BertEncoder::load(vb.pp("encoder"), config)?,
        })
    }

    /// Hidden states `(b, L, H)` for `input_ids` `(b, L)` with `mask` `(b, L)` (1 = token).
    pub fn forward(&self, input_ids: &Tensor, type_ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, len) = input_ids.dims2()?;
        let positions = Tensor::arange(0u32, len as u32, input_ids.device())?;
        let x = (self.word.forward(input_ids)? + self.token_type.forward(type_ids)?)?
            .broadcast_add(&self.position.forward(&positions)?)?;
        let x = self.norm.forward(&x)?;
        let dtype = x.dtype();
        let min = match dtype {
            DType::F16 => -65504.0,
            DType::BF16 => -3.389_531_4e38,
            _ => f32::MIN as f64,
        };
        let ext = ((mask.to_dtype(DType::F32)?.affine(-1.0, 1.0)? * min)?)
            .to_dtype(dtype)?
            .unsqueeze(1)?
            .unsqueeze(1)?;
        self.encoder.forward(&x, &ext)
    }
}

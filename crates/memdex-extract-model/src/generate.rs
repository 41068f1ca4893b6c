//! Greedy generation with candle's quantized llama. The few-shot prefix is run once at load
//! time; each item clones the model with that attention cache (the weights are shared, not
//! copied) and continues from it, so an item costs its own tokens only.
//!
//! Items run one after another: candle's `quantized_llama` has a causal mask but no padding
//! mask, so prompts of different lengths cannot share a batch without changing the output.

use std::io::{Read, Seek};

use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use tokenizers::Tokenizer;

use crate::gguf::GgufHeader;
use crate::requant;
use crate::ModelError;

/// Tokens generated per item at most (four short triples fit in ~50).
pub const MAX_NEW_TOKENS: usize = 64;

/// A loaded model with the prompt prefix already in its attention cache.
#[derive(Debug)]
pub struct Generator {
    base: ModelWeights,
    prefix_len: usize,
    tokenizer: Tokenizer,
    /// Tokens that end the answer (`<|im_end|>`, the GGUF's end-of-sequence token).
    stop: Vec<u32>,
    device: Device,
    /// True when weights were requantized to Q8_0 at load (the output then differs slightly
    /// from the file's own types: part of the extractor's name).
    pub requantized: bool,
}

/// One item's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    pub text: String,
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
}

fn tok_err(e: impl ToString) -> candle_core::Error {
    candle_core::Error::Msg(e.to_string())
}

impl Generator {
    /// Loads the weights of `header` (read from `reader`) onto `device` and runs `prefix`.
    /// On the CPU, with `requantize`, weight types without a SIMD kernel become Q8_0 first.
    pub fn new<R: Read + Seek>(
        header: GgufHeader,
        reader: &mut R,
        tokens: (Tokenizer, Vec<u32>),
        device: Device,
        requantize: bool,
        prefix: &str,
    ) -> Result<Self, ModelError> {
        let (tokenizer, stop) = tokens;
        let path = header.path;
        let weights = |cause| ModelError::Weights {
            path: path.clone(),
            cause,
        };
        let faster = if requantize && device.is_cpu() {
            requant::requantize(&header.content, reader).map_err(weights)?
        } else {
            None
        };
        let requantized = faster.is_some();
        let mut base = match faster {
            Some((content, mut buf)) => ModelWeights::from_gguf(content, &mut buf, &device),
            None => ModelWeights::from_gguf(header.content, reader, &device),
        }
        .map_err(weights)?;
        let ids = encode(&tokenizer, prefix)
            .and_then(|ids| {
                if !ids.is_empty() {
                    forward(&mut base, &ids, 0, &device)?;
                }
                Ok(ids)
            })
            .map_err(|cause| ModelError::Prompt { path, cause })?;
        Ok(Generator {
            base,
            prefix_len: ids.len(),
            tokenizer,
            stop,
            device,
            requantized,
        })
    }

    /// Greedy decoding of the answer to `prefix + suffix`, up to [`MAX_NEW_TOKENS`].
    pub fn generate(&self, suffix: &str) -> candle_core::Result<Generation> {
        let ids = encode(&self.tokenizer, suffix)?;
        if ids.is_empty() {
            return Err(candle_core::Error::Msg("empty prompt".into()));
        }
        let mut model = self.base.clone();
        let mut pos = self.prefix_len;
        let mut logits = forward(&mut model, &ids, pos, &self.device)?;
        pos += ids.len();
        let mut out: Vec<u32> = Vec::new();
        while out.len() < MAX_NEW_TOKENS {
            let next = logits.squeeze(0)?.argmax(0)?.to_scalar::<u32>()?;
            if self.stop.contains(&next) {
                break;
            }
            out.push(next);
            logits = forward(&mut model, &[next], pos, &self.device)?;
            pos += 1;
        }
        let text = self.tokenizer.decode(&out, true).map_err(tok_err)?;
        Ok(Generation {
            text,
            prompt_tokens: ids.len(),
            generated_tokens: out.len(),
        })
    }
}

fn encode(tok: &Tokenizer, text: &str) -> candle_core::Result<Vec<u32>> {
    Ok(tok.encode(text, false).map_err(tok_err)?.get_ids().to_vec())
}

/// Runs `ids` at position `pos`; the last position's logits, shape (1, vocab).
fn forward(
    model: &mut ModelWeights,
    ids: &[u32],
    pos: usize,
    device: &Device,
) -> candle_core::Result<Tensor> {
    let input = Tensor::new(ids, device)?.unsqueeze(0)?;
    model.forward(&input, pos)
}

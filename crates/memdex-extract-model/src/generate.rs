//! Greedy generation with memdex's decoder ([`crate::decoder`]). The few-shot prefix is run
//! once at load time; every item continues from that attention cache, so an item costs its own
//! tokens only.
//!
//! Batches: prompts with the same number of tokens run in lockstep, up to [`MAX_BATCH`] rows a
//! pass; a row that ends its answer leaves the batch. Rows of equal length need no padding, so
//! with quantized weights each answer is exactly the one the prompt gets alone (tested on
//! SmolLM2); prompts of a length no other prompt has run alone. One pass for many rows is what
//! a GPU needs; on the CPU candle's quantized matmul is compute-bound and a batch runs no
//! faster per item than its rows alone (docs/evaluation.md).

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use candle_core::{Device, Tensor};
use tokenizers::Tokenizer;

use crate::decoder::{greedy, Decoder, KvCache};
use crate::error::plain;
use crate::gguf::GgufHeader;
use crate::requant;
use crate::ModelError;

/// Tokens generated per item at most (four short triples fit in ~50).
pub const MAX_NEW_TOKENS: usize = 64;

/// Rows of one forward pass at most.
pub const MAX_BATCH: usize = 16;

/// A loaded model with the prompt prefix already in its attention cache.
#[derive(Debug)]
pub struct Generator {
    decoder: Decoder,
    prefix: KvCache,
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
        let arch = header.arch()?;
        let path = header.path;
        let weights = |cause| ModelError::Weights {
            path: path.clone(),
            cause: plain(cause),
        };
        let faster = if requantize && device.is_cpu() {
            requant::requantize(&header.content, reader).map_err(weights)?
        } else {
            None
        };
        let requantized = faster.is_some();
        let decoder = match faster {
            Some((content, mut buf)) => Decoder::from_gguf(arch, &content, &mut buf, &device),
            None => Decoder::from_gguf(arch, &header.content, reader, &device),
        }
        .map_err(weights)?;
        let mut cache = KvCache::default();
        encode(&tokenizer, prefix)
            .and_then(|ids| {
                if !ids.is_empty() {
                    decoder.forward(&Tensor::new(ids, &device)?.unsqueeze(0)?, &mut cache)?;
                }
                Ok(())
            })
            .map_err(|cause| ModelError::Prompt {
                path,
                cause: plain(cause),
            })?;
        Ok(Generator {
            decoder,
            prefix: cache,
            tokenizer,
            stop,
            device,
            requantized,
        })
    }

    /// Greedy decoding of the answer to `prefix + suffix`, up to [`MAX_NEW_TOKENS`].
    pub fn generate(&self, suffix: &str) -> candle_core::Result<Generation> {
        let mut all = self.generate_batch(&[suffix]);
        all.pop().expect("one answer per suffix")
    }

    /// [`Self::generate`] for each suffix, in order; prompts of equal token length share
    /// forward passes.
    pub fn generate_batch(&self, suffixes: &[&str]) -> Vec<candle_core::Result<Generation>> {
        let mut out: Vec<Option<candle_core::Result<Generation>>> =
            suffixes.iter().map(|_| None).collect();
        let mut by_len: BTreeMap<usize, Vec<(usize, Vec<u32>)>> = BTreeMap::new();
        for (i, s) in suffixes.iter().enumerate() {
            match encode(&self.tokenizer, s) {
                Ok(ids) if ids.is_empty() => out[i] = Some(Err(tok_err("empty prompt"))),
                Ok(ids) => by_len.entry(ids.len()).or_default().push((i, ids)),
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        for group in by_len.values() {
            for batch in group.chunks(MAX_BATCH) {
                let prompts: Vec<&[u32]> = batch.iter().map(|(_, ids)| ids.as_slice()).collect();
                match self.run_batch(&prompts) {
                    Ok(gens) => {
                        for ((i, _), g) in batch.iter().zip(gens) {
                            out[*i] = Some(Ok(g));
                        }
                    }
                    Err(e) => {
                        for (i, _) in batch {
                            out[*i] = Some(Err(tok_err(&e)));
                        }
                    }
                }
            }
        }
        out.into_iter()
            .map(|g| g.unwrap_or_else(|| Err(tok_err("not generated"))))
            .collect()
    }

    /// Greedy answers for prompts of equal length, in lockstep; a row leaves the batch when
    /// its answer ends.
    fn run_batch(&self, prompts: &[&[u32]]) -> candle_core::Result<Vec<Generation>> {
        let (rows, len) = (prompts.len(), prompts[0].len());
        let mut cache = self.prefix.repeat(rows)?;
        let flat: Vec<u32> = prompts.concat();
        let input = Tensor::from_vec(flat, (rows, len), &self.device)?;
        let mut logits = self.decoder.forward(&input, &mut cache)?;
        let mut answers: Vec<Vec<u32>> = vec![Vec::new(); rows];
        // live[r]: the prompt in row r of the current batch
        let mut live: Vec<usize> = (0..rows).collect();
        loop {
            let next = greedy(&logits)?;
            let (mut keep, mut feed) = (Vec::new(), Vec::new());
            for (r, (&item, &t)) in live.iter().zip(&next).enumerate() {
                if self.stop.contains(&t) {
                    continue;
                }
                answers[item].push(t);
                if answers[item].len() < MAX_NEW_TOKENS {
                    keep.push(r as u32);
                    feed.push(t);
                }
            }
            if keep.is_empty() {
                break;
            }
            if keep.len() < live.len() {
                cache = cache.select(&keep)?;
                live = keep.iter().map(|&r| live[r as usize]).collect();
            }
            let input = Tensor::new(feed, &self.device)?.unsqueeze(1)?;
            logits = self.decoder.forward(&input, &mut cache)?;
        }
        answers
            .into_iter()
            .map(|ids| {
                Ok(Generation {
                    text: self.tokenizer.decode(&ids, true).map_err(tok_err)?,
                    prompt_tokens: len,
                    generated_tokens: ids.len(),
                })
            })
            .collect()
    }
}

fn encode(tok: &Tokenizer, text: &str) -> candle_core::Result<Vec<u32>> {
    Ok(tok.encode(text, false).map_err(tok_err)?.get_ids().to_vec())
}

//! A fact extractor that runs a local GGUF instruct model (llama or qwen2 family, e.g.
//! SmolLM2-135M-Instruct) through memdex's own decoder on candle's quantized ops, for key
//! expansion (`memdex index --extractor model:PATH.gguf`).
//!
//! * [`gguf`]: the file's header and the tokenizer it carries, rebuilt as a byte-level BPE;
//! * [`decoder`]: the llama / qwen2 decoder, with an attention cache that batches;
//! * [`prompt`]: a few-shot ChatML prompt asking for `subject | relation | object` lines;
//! * [`generate`]: greedy (deterministic) decoding, the shared prompt prefix cached once,
//!   prompts of equal length in lockstep;
//! * [`parse`]: keeps only well-formed lines grounded in the item's text.
//!
//! An item whose output yields no valid fact (or whose generation fails) gets the rules'
//! facts ([`HeuristicFacts`]); [`ModelStats`] counts both. The extractor's name records the
//! prompt version, the file's sha256 and whether its weights were requantized
//! (`model-v1:FILE@SHA12[+q8_0]`), so a store built with one model is never extended with
//! another's facts.

pub mod decoder;
mod error;
pub mod generate;
pub mod gguf;
pub mod parse;
pub mod prompt;
pub mod requant;
#[doc(hidden)]
pub mod testing;

use std::io::Read;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use candle_core::Device;
use chrono::NaiveDate;
use memdex_extract::{FactExtractor, HeuristicFacts};
use sha2::{Digest, Sha256};

pub use error::ModelError;
pub use generate::{Generation, Generator};
pub use gguf::GgufHeader;

/// Bumped whenever the prompt, the parser or the decoding changes what is extracted.
pub const PROMPT_VERSION: &str = "model-v1";

/// Where the model runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ModelDevice {
    #[default]
    Cpu,
    /// The first CUDA device (needs the `cuda` feature).
    Cuda,
}

impl ModelDevice {
    fn open(self) -> Result<Device, ModelError> {
        match self {
            ModelDevice::Cpu => Ok(Device::Cpu),
            ModelDevice::Cuda if cfg!(feature = "cuda") => {
                Device::new_cuda(0).map_err(|e| ModelError::Cuda(error::plain(e)))
            }
            ModelDevice::Cuda => Err(ModelError::NoCuda),
        }
    }
}

/// How the model is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelOptions {
    pub device: ModelDevice,
    /// On the CPU, requantize weight types candle has no SIMD kernel for (Q4_1, Q5_x) to
    /// Q8_0 at load time ([`requant`]); off runs the file's types as they are.
    pub requantize: bool,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            device: ModelDevice::Cpu,
            requantize: true,
        }
    }
}

/// What the extractor did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelStats {
    pub items: u64,
    /// Items whose facts came from the model (at least one valid, grounded line).
    pub model_items: u64,
    /// Items that fell back to the rules: no valid line, or generation failed.
    pub fallback_items: u64,
    /// Generations that failed (counted in `fallback_items` too).
    pub errors: u64,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    /// Time spent in the model.
    pub seconds: f64,
}

/// One item's extraction, for inspection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelExtraction {
    pub facts: Vec<String>,
    /// The model's raw answer (None: generation failed).
    pub raw: Option<String>,
    /// True when `facts` came from the model, false when from the rules.
    pub from_model: bool,
}

/// The model-based [`FactExtractor`].
#[derive(Debug)]
pub struct ModelFacts {
    name: String,
    generator: Generator,
    rules: HeuristicFacts,
    stats: Mutex<ModelStats>,
}

impl ModelFacts {
    /// Loads the GGUF at `path`. The file must be a llama- or qwen2-architecture GGUF with a
    /// byte-level BPE tokenizer (or a `tokenizer.json` beside it) that has ChatML's markers.
    pub fn load(path: &Path, opts: ModelOptions) -> Result<ModelFacts, ModelError> {
        let sha = file_sha256(path)?;
        let (header, mut reader) = GgufHeader::open(path)?;
        let tokenizer = header.tokenizer()?;
        let missing = |t: &str| ModelError::Tokenizer {
            path: path.to_path_buf(),
            message: format!("no {t} token: the prompt needs ChatML's markers"),
        };
        let im_end = tokenizer
            .token_to_id(prompt::IM_END)
            .ok_or_else(|| missing(prompt::IM_END))?;
        tokenizer
            .token_to_id(prompt::IM_START)
            .ok_or_else(|| missing(prompt::IM_START))?;
        let mut stop = vec![im_end];
        stop.extend(header.u32("tokenizer.ggml.eos_token_id").ok());
        let file = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        let generator = Generator::new(
            header,
            &mut reader,
            (tokenizer, stop),
            opts.device.open()?,
            opts.requantize,
            prompt::PROMPT_PREFIX,
        )?;
        let q8 = if generator.requantized { "+q8_0" } else { "" };
        Ok(ModelFacts {
            name: format!("{PROMPT_VERSION}:{file}@{}{q8}", &sha[..12]),
            generator,
            rules: HeuristicFacts::default(),
            stats: Mutex::new(ModelStats::default()),
        })
    }

    pub fn stats(&self) -> ModelStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Extracts the facts of `text`: the model's grounded lines, else the rules'.
    pub fn run(&self, text: &str, anchor: Option<NaiveDate>) -> ModelExtraction {
        let mut all = self.run_batch(&[(text, anchor)]);
        all.pop().expect("one extraction per item")
    }

    /// [`Self::run`] for each item, in order; the model generates for all of them in batched
    /// passes ([`Generator::generate_batch`]), each answer the one the item gets alone.
    pub fn run_batch(&self, items: &[(&str, Option<NaiveDate>)]) -> Vec<ModelExtraction> {
        let start = Instant::now();
        let prompts: Vec<String> = items
            .iter()
            .map(|(t, _)| prompt::prompt_suffix(t))
            .collect();
        let prompts: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let results = self.generator.generate_batch(&prompts);
        let seconds = start.elapsed().as_secs_f64();
        let mut s = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        s.seconds += seconds;
        let out = items
            .iter()
            .zip(results)
            .map(|(&(text, anchor), result)| self.finish(&mut s, text, anchor, result))
            .collect();
        drop(s);
        out
    }

    /// One item's facts from its generation (counted in `s`), else the rules'.
    fn finish(
        &self,
        s: &mut ModelStats,
        text: &str,
        anchor: Option<NaiveDate>,
        result: candle_core::Result<Generation>,
    ) -> ModelExtraction {
        let (raw, facts) = match &result {
            Ok(g) => (Some(g.text.clone()), parse::parse_facts(&g.text, text)),
            Err(e) => {
                tracing::warn!("extractor model failed on an item (rules used): {e}");
                (None, Vec::new())
            }
        };
        let from_model = !facts.is_empty();
        s.items += 1;
        s.errors += u64::from(result.is_err());
        if let Ok(g) = &result {
            s.prompt_tokens += g.prompt_tokens as u64;
            s.generated_tokens += g.generated_tokens as u64;
        }
        if from_model {
            s.model_items += 1;
        } else {
            s.fallback_items += 1;
        }
        let facts = if from_model {
            facts
        } else {
            self.rules.extract(text, anchor)
        };
        ModelExtraction {
            facts,
            raw,
            from_model,
        }
    }
}

impl FactExtractor for ModelFacts {
    fn name(&self) -> &str {
        &self.name
    }

    fn extract(&self, text: &str, anchor: Option<NaiveDate>) -> Vec<String> {
        self.run(text, anchor).facts
    }

    fn batched(&self) -> bool {
        true
    }

    fn extract_batch(&self, items: &[(&str, Option<NaiveDate>)]) -> Vec<Vec<String>> {
        self.run_batch(items).into_iter().map(|x| x.facts).collect()
    }
}

fn file_sha256(path: &Path) -> Result<String, ModelError> {
    let io = |cause| ModelError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

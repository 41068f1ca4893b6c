use crate::tokenize::TextTokenizer;
#[cfg(feature = "candle")]
use candle_core::Tensor;
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use memdex_core::{clip_message, ModelInfo, Pooling, TextKind};
use tokenizers::{TruncationDirection, TruncationParams, TruncationStrategy};

use crate::config::{read_bert_config, BertConfig};
use crate::fast_bert::{FastBert, Layout};
use crate::files::{ModelFiles, WeightFiles};
use crate::fused::CudaEncoder;
use crate::isa::{Isa, LargeBatchGemm};
#[cfg(feature = "candle")]
use crate::masked_bert::MaskedBert;
#[cfg(feature = "candle")]
use crate::quant_bert::QuantBert;
use crate::split::{self, CpuSplit};
use crate::{device_name, plan_batches, BatchPlan, EmbedError};

/// Floating-point precision of the weights and activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Precision {
    F32,
    F16,
    Bf16,
}

impl Precision {
    fn dtype(self) -> DType {
        match self {
            Precision::F32 => DType::F32,
            Precision::F16 => DType::F16,
            Precision::Bf16 => DType::BF16,
        }
    }
}

/// Which implementation runs the encoder on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CpuBackend {
    /// memdex's packed, fused encoder (`fast_bert`); f32 only.
    #[default]
    Fast,
    /// candle-transformers' BERT layers (`masked_bert`: its encoder with a mask that stays
    /// finite in f16/bf16): the reference implementation.
    Candle,
    /// The fused CUDA encoder's plans (`memdex-fused-bert`) on their CPU reference, f16
    /// weights: slow, a correctness check of the CUDA path's plan without a GPU.
    Fused,
}

/// Weights the fast CPU encoder reads for batches of ≤ 32 tokens (a search query): the f32
/// matrices, or half-precision copies of them (half the memory traffic, so the encoder stays
/// in the L3 cache; activations and sums stay f32; query cosine vs f32 > 0.9999).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SmallBatchWeights {
    F32,
    #[default]
    F16,
}

/// Which weight files a model directory is run from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WeightFormat {
    /// `model.safetensors` (or sharded, or `pytorch_model.bin`) in the chosen precision;
    /// a directory holding only `model.gguf` runs that.
    #[default]
    Dense,
    /// The directory's `model.gguf`, whatever else the directory holds: the fast CPU encoder
    /// dequantises it to f32 at load (same vectors as the dequantised dense file); the
    /// candle CPU backend and CUDA run its blocks through candle's quantized matmul
    /// (activations f32).
    Gguf,
}

enum Backend {
    /// candle-transformers' BERT encoder (every device; feature `candle`).
    #[cfg(feature = "candle")]
    Candle(MaskedBert),
    Fast(FastBert),
    /// GGUF blocks through candle's quantized matmul (feature `candle`).
    #[cfg(feature = "candle")]
    Quantized(QuantBert),
    /// The fused encoder's plans on their CPU reference (`--cpu-backend fused`).
    FusedReference(memdex_fused_bert::CpuBert),
    /// The fused encoder on a CUDA device (`--cuda-encoder fused`).
    #[cfg(feature = "cuda")]
    FusedCuda(memdex_fused_bert::cuda::CudaBert),
}

/// Embedder settings. `None` fields take the model's or the device's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedOptions {
    /// Padded tokens per forward pass (batch size × longest input). Default: 8,192 on CPU,
    /// 65,536 on CUDA.
    pub token_budget: Option<usize>,
    /// Inputs per forward pass at most. Default: 256 on CPU, 1,024 on CUDA.
    pub max_batch: Option<usize>,
    /// Overrides `max_seq_length` from `sentence_bert_config.json` (capped by the model's
    /// position embeddings).
    pub max_length: Option<usize>,
    /// Overrides the model profile's query prefix (E5: `query: `).
    pub query_prefix: Option<String>,
    /// Overrides the model profile's passage prefix (E5: `passage: `).
    pub passage_prefix: Option<String>,
    /// Default: f32 on CPU, f16 on CUDA.
    pub precision: Option<Precision>,
    /// CPU implementation (default: fast). Ignored on CUDA.
    pub cpu_backend: CpuBackend,
    /// Fast CPU encoder only: weights for small batches (queries). Default: f16.
    pub small_batch_weights: SmallBatchWeights,
    /// Fast CPU encoder: products of larger batches (bf16 on AMX, 16-bit integers on AVX2 and
    /// AVX-512 VNNI, f32). Default: auto, the fastest the CPU has of these.
    pub large_batch_gemm: LargeBatchGemm,
    /// Fast CPU encoder only: the instruction set of its kernels. Default: `MEMDEX_CPU_ISA`,
    /// else the best the CPU has; one the CPU lacks is an error.
    pub cpu_isa: Option<Isa>,
    /// Fast CPU encoder only: how a job of several batches uses the threads. Default:
    /// `MEMDEX_CPU_SPLIT`, else [`CpuSplit::Batches`].
    pub cpu_split: Option<CpuSplit>,
    /// Which weight files to run (default: the dense ones).
    pub weights: WeightFormat,
    /// On CUDA: candle's BERT or memdex's fused encoder. Default: `MEMDEX_CUDA_ENCODER`, else
    /// candle.
    pub cuda_encoder: Option<CudaEncoder>,
}

/// Vectors for a list of texts, in input order.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    pub dim: usize,
    /// Row-major, `texts × dim`.
    pub data: Vec<f32>,
    /// Tokens per text after truncation, special tokens included.
    pub tokens: Vec<usize>,
}

impl Embeddings {
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// A loaded sentence encoder. Synchronous; owns its device.
pub struct Embedder {
    backend: Backend,
    tokenizer: TextTokenizer,
    device: Device,
    dtype: DType,
    /// The padding token of the candle paths' padded batches.
    #[cfg_attr(not(feature = "candle"), allow(dead_code))]
    pad_id: u32,
    info: ModelInfo,
    files: ModelFiles,
    token_budget: usize,
    max_batch: usize,
    split: CpuSplit,
    shape: Shape,
    /// The options it was loaded with (its CPU split fixed), to load a [`Self::replica`].
    opts: EmbedOptions,
}

/// The encoder's sizes that set its arithmetic cost.
#[derive(Debug, Clone, Copy)]
struct Shape {
    layers: usize,
    hidden: usize,
    intermediate: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model", &self.info.name)
            .field("device", &device_name(&self.device))
            .field("dtype", &self.dtype)
            .field("backend", &self.backend_name())
            .finish()
    }
}

impl Embedder {
    /// Loads the model named by `spec` (directory or cached hub repo id) onto `device`.
    pub fn load(spec: &str, device: Device, opts: &EmbedOptions) -> Result<Embedder, EmbedError> {
        let files = ModelFiles::resolve(spec)?;
        Self::from_files(files, device, opts)
    }

    pub fn from_files(
        files: ModelFiles,
        device: Device,
        opts: &EmbedOptions,
    ) -> Result<Embedder, EmbedError> {
        let files = match opts.weights {
            WeightFormat::Gguf => files.with_gguf_weights()?,
            WeightFormat::Dense => files,
        };
        let config = read_bert_config(&files.config)?;
        let default_max = files.max_seq_length.unwrap_or(512);
        let max_length = opts
            .max_length
            .unwrap_or(default_max)
            .min(config.max_position_embeddings)
            .max(2);

        let mut tokenizer = crate::profile::load_tokenizer(&files.tokenizer)?;
        // Whatever tokenizer.json carries (MiniLM ships truncation 128 and fixed padding 128),
        // memdex truncates to the model's max length and pads per batch itself.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| EmbedError::Tokenizer {
                path: files.tokenizer.clone(),
                message: e.to_string(),
            })?;
        let pad_id = tokenizer
            .token_to_id("[PAD]")
            .or_else(|| tokenizer.token_to_id("<pad>"))
            .unwrap_or(config.pad_token_id as u32);
        if tokenizer.get_vocab_size(true) > config.vocab_size {
            return Err(EmbedError::Config {
                path: files.tokenizer.clone(),
                message: format!(
                    "tokenizer has {} tokens but config.json vocab_size is {}",
                    tokenizer.get_vocab_size(true),
                    config.vocab_size
                ),
            });
        }

        let (backend, dtype) = load_backend(&files, &config, &device, opts, pad_id)?;
        // the weights' copies are done before another thread (a model worker) uses them
        device.synchronize()?;
        let info = ModelInfo {
            name: files.name.clone(),
            fingerprint: files.fingerprint(max_length)?,
            dim: config.hidden_size,
            pooling: files.pooling,
            normalize: files.normalize,
            max_length,
            query_prefix: opts
                .query_prefix
                .clone()
                .unwrap_or_else(|| files.query_prefix.clone()),
            passage_prefix: opts
                .passage_prefix
                .clone()
                .unwrap_or_else(|| files.passage_prefix.clone()),
        };
        let is_cuda = device.is_cuda();
        let split = match opts.cpu_split {
            Some(s) => s,
            None => CpuSplit::from_env()?,
        };
        let shape = Shape {
            layers: config.num_hidden_layers,
            hidden: config.hidden_size,
            intermediate: config.intermediate_size,
        };
        Ok(Embedder {
            shape,
            backend,
            tokenizer: TextTokenizer::new(tokenizer, &info.query_prefix, &info.passage_prefix),
            device,
            dtype,
            pad_id,
            info,
            files,
            token_budget: opts
                .token_budget
                .unwrap_or(if is_cuda { 65_536 } else { 8_192 }),
            max_batch: opts.max_batch.unwrap_or(if is_cuda { 1_024 } else { 256 }),
            split,
            opts: EmbedOptions {
                cpu_split: Some(split),
                ..opts.clone()
            },
        })
    }

    /// Another instance of this encoder, for another thread: the same model loaded again from
    /// the same files with the same options (so the same vectors), on the same device — on
    /// CUDA as the first instance is opened, issuing on the per-thread default stream of the
    /// thread that runs it. None where memdex opens no second instance (Metal).
    pub fn replica(&self) -> Option<Result<Embedder, EmbedError>> {
        let device = match self.device.location() {
            candle_core::DeviceLocation::Cpu => Ok(Device::Cpu),
            // opened as the first instance was (select_device: candle's default, each thread
            // on its per-thread default stream; a stream object per replica put cudarc into
            // its multi-stream mode, events around every buffer: on an H200 two workers so
            // served 2,382 searches/s against 7,034 with one, bench/results/gpu-2026-11-28-h200)
            candle_core::DeviceLocation::Cuda { gpu_id } => {
                crate::select_device(memdex_core::DeviceChoice::Cuda(gpu_id))
            }
            candle_core::DeviceLocation::Metal { .. } => return None,
        };
        Some(device.and_then(|d| Self::from_files(self.files.clone(), d, &self.opts)))
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn files(&self) -> &ModelFiles {
        &self.files
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn dim(&self) -> usize {
        self.info.dim
    }

    /// `fast-cpu`, `candle`, `candle-gguf`, `fused-cuda` or `fused-reference`.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Fast(_) => "fast-cpu",
            Backend::FusedReference(_) => "fused-reference",
            #[cfg(feature = "cuda")]
            Backend::FusedCuda(_) => "fused-cuda",
            #[cfg(feature = "candle")]
            Backend::Candle(_) => "candle",
            #[cfg(feature = "candle")]
            Backend::Quantized(_) => "candle-gguf",
        }
    }

    /// Floating-point operations (multiply and add counted apart) of the encoder's useful
    /// work for texts of these token lengths, no padding: per layer and token the four
    /// projections and the feed-forward, `2·(4H² + 2HI)`, plus attention's `QKᵀ` and `PV`,
    /// `4·L·H` for a text of `L` tokens. Effective GFLOP/s = this ÷ seconds.
    pub fn forward_flops(&self, lengths: &[usize]) -> f64 {
        let Shape {
            layers,
            hidden,
            intermediate,
        } = self.shape;
        let (h, i) = (hidden as f64, intermediate as f64);
        let per_layer: f64 = lengths
            .iter()
            .map(|&len| {
                let l = len as f64;
                2.0 * l * (4.0 * h * h + 2.0 * h * i) + 4.0 * l * l * h
            })
            .sum();
        layers as f64 * per_layer
    }

    /// The kernels that run the encoder, in words (for benchmark reports): the fast
    /// encoder's instruction set, or which candle kernels.
    pub fn kernels(&self) -> String {
        match &self.backend {
            Backend::Fast(f) => {
                let (kernel, asked) = f.large_batch_kernel();
                format!("{}, {}", f.isa().name(), kernel.describe(asked))
            }
            #[cfg(feature = "candle")]
            Backend::Candle(_) if self.device().is_cpu() => "candle (gemm crate dispatch)".into(),
            #[cfg(feature = "candle")]
            Backend::Candle(_) => format!("candle ({})", crate::device_name(self.device())),
            #[cfg(feature = "candle")]
            Backend::Quantized(_) => "candle (quantized vec-dot kernels)".to_string(),
            Backend::FusedReference(_) => "fused plan on its CPU reference".into(),
            #[cfg(feature = "cuda")]
            Backend::FusedCuda(m) => format!(
                "fused (bert.cu + cuBLAS, {})",
                if m.uses_graphs() {
                    "CUDA graphs"
                } else {
                    "launched one by one"
                }
            ),
        }
    }

    /// The instruction set of the fast CPU encoder's kernels; `None` for candle.
    pub fn cpu_isa(&self) -> Option<Isa> {
        match &self.backend {
            Backend::Fast(f) => Some(f.isa()),
            _ => None,
        }
    }

    /// (token budget, max batch) used to cut inputs into forward passes.
    pub fn batch_policy(&self) -> (usize, usize) {
        (self.token_budget, self.max_batch)
    }

    /// Token ids of each text (prefix applied, truncated, special tokens included).
    pub fn tokenize(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<u32>>, EmbedError> {
        self.tokenizer.tokenize(texts, kind)
    }

    /// A handle on its tokenizer, to tokenize on other threads ([`Self::embed_ids`] takes the ids).
    pub fn text_tokenizer(&self) -> TextTokenizer {
        self.tokenizer.clone()
    }

    /// Embeds `texts`; `progress` is called with the number of texts finished after each batch.
    pub fn embed_with_progress(
        &self,
        texts: &[&str],
        kind: TextKind,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Embeddings, EmbedError> {
        let ids = self.tokenize(texts, kind)?;
        self.embed_ids(&ids, progress)
    }

    /// Embeds texts already tokenized by [`Self::text_tokenizer`]; `progress` as above.
    pub fn embed_ids(
        &self,
        ids: &[Vec<u32>],
        progress: &mut dyn FnMut(usize),
    ) -> Result<Embeddings, EmbedError> {
        let lengths: Vec<usize> = ids.iter().map(Vec::len).collect();
        let dim = self.info.dim;
        let mut data = vec![0f32; ids.len() * dim];
        let mut place = |plan: &BatchPlan, rows: Vec<f32>| {
            for (row, &i) in rows.chunks_exact(dim).zip(&plan.indices) {
                data[i * dim..(i + 1) * dim].copy_from_slice(row);
            }
            progress(plan.indices.len());
        };
        if let Some((workers, plans)) = self.side_by_side(&lengths) {
            let work = |j: usize| self.forward_batch(&plans[j], ids, false);
            split::run_side_by_side(workers, plans.len(), work, |j, rows| place(&plans[j], rows))?;
        } else {
            let plans = plan_batches(&lengths, self.token_budget, self.max_batch);
            let small = plans.len() == 1;
            for plan in &plans {
                let rows = self.forward_batch(plan, ids, small)?;
                place(plan, rows);
            }
        }
        Ok(Embeddings {
            dim,
            data,
            tokens: lengths,
        })
    }

    /// Threads and batches when a job runs batches side by side ([`CpuSplit::Batches`]): the
    /// fast CPU encoder, two threads or more, and at least two batches of the token budget
    /// divided among the threads.
    fn side_by_side(&self, lengths: &[usize]) -> Option<(usize, Vec<BatchPlan>)> {
        let workers = rayon::current_num_threads();
        if !matches!(self.backend, Backend::Fast(_)) || self.split != CpuSplit::Batches {
            return None;
        }
        if workers < 2 || lengths.len() < 2 {
            return None;
        }
        let plans = plan_batches(
            lengths,
            (self.token_budget / workers).max(1),
            self.max_batch,
        );
        (plans.len() >= 2).then_some((workers, plans))
    }

    /// How a job of several batches uses the CPU's threads (fast CPU encoder).
    pub fn cpu_split(&self) -> CpuSplit {
        self.split
    }

    pub fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Embeddings, EmbedError> {
        self.embed_with_progress(texts, kind, &mut |_| {})
    }

    /// One forward pass over the inputs of `plan`; returns `indices.len() × dim` pooled (and,
    /// if the model says so, L2-normalised) vectors. `small`: the job is this one batch, so a
    /// pass of a few tokens may take the fast encoder's small-batch path.
    fn forward_batch(
        &self,
        plan: &BatchPlan,
        ids: &[Vec<u32>],
        small: bool,
    ) -> Result<Vec<f32>, EmbedError> {
        let indices = &plan.indices;
        if let Some(rows) = self.forward_fused(indices, ids)? {
            return Ok(rows);
        }
        let mut pooled = match &self.backend {
            #[cfg(feature = "candle")]
            Backend::Candle(model) => self.forward_padded(
                |i, t, m| model.forward(i, t, m),
                indices,
                ids,
                plan.padded_len,
            )?,
            #[cfg(feature = "candle")]
            Backend::Quantized(model) => self.forward_padded(
                |i, t, m| model.forward(i, t, m),
                indices,
                ids,
                plan.padded_len,
            )?,
            Backend::Fast(model) => {
                let seqs: Vec<&[u32]> = indices.iter().map(|&i| ids[i].as_slice()).collect();
                // on a pool thread, the pass's parallel steps split without a cross-thread
                // hand-off each (a query's pass has ~50 of them)
                rayon::scope(|_| {
                    model.forward(&seqs, small, |hidden| {
                        pool_packed(hidden, &seqs, self.dim(), self.info.pooling)
                    })
                })
            }
            _ => unreachable!("the fused backends pool on their own"),
        };
        if self.info.normalize {
            for row in pooled.chunks_exact_mut(self.dim()) {
                let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                row.iter_mut().for_each(|v| *v /= norm);
            }
        }
        Ok(pooled)
    }

    /// The fused encoder's pooled and normalised rows of a batch (None: another backend).
    fn forward_fused(
        &self,
        indices: &[usize],
        ids: &[Vec<u32>],
    ) -> Result<Option<Vec<f32>>, EmbedError> {
        let seqs = || {
            indices
                .iter()
                .map(|&i| ids[i].as_slice())
                .collect::<Vec<_>>()
        };
        match &self.backend {
            Backend::FusedReference(m) => Ok(Some(m.forward(&seqs(), self.pad_id, false)?)),
            #[cfg(feature = "cuda")]
            Backend::FusedCuda(m) => Ok(Some(m.forward(&seqs())?)),
            _ => Ok(None),
        }
    }

    /// The candle paths (reference BERT, quantized BERT): `model` maps `(ids, type ids,
    /// mask)` of a padded batch to hidden states `(b, L, H)`; pooling with masks.
    #[cfg(feature = "candle")]
    fn forward_padded(
        &self,
        model: impl Fn(&Tensor, &Tensor, &Tensor) -> candle_core::Result<Tensor>,
        indices: &[usize],
        ids: &[Vec<u32>],
        padded_len: usize,
    ) -> Result<Vec<f32>, EmbedError> {
        let b = indices.len();
        let mut input = vec![self.pad_id; b * padded_len];
        let mut mask = vec![0u32; b * padded_len];
        for (r, &i) in indices.iter().enumerate() {
            let row = &ids[i];
            input[r * padded_len..r * padded_len + row.len()].copy_from_slice(row);
            mask[r * padded_len..r * padded_len + row.len()].fill(1);
        }
        let input = Tensor::from_vec(input, (b, padded_len), &self.device)?;
        let mask = Tensor::from_vec(mask, (b, padded_len), &self.device)?;
        let type_ids = input.zeros_like()?;
        let hidden = model(&input, &type_ids, &mask)?; // (b, L, H)
        let hidden = hidden.to_dtype(DType::F32)?;
        let maskf = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (b, L, 1)
        let pooled = match self.info.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean | Pooling::MeanSqrtLen => {
                let sum = hidden.broadcast_mul(&maskf)?.sum(1)?;
                let count = maskf.sum(1)?; // (b, 1)
                let denom = match self.info.pooling {
                    Pooling::MeanSqrtLen => count.sqrt()?,
                    _ => count,
                };
                sum.broadcast_div(&denom)?
            }
            Pooling::Max => {
                // padded positions must never win the max
                let neg = ((maskf.ones_like()? - &maskf)? * -1e9f64)?;
                hidden.broadcast_add(&neg)?.max(1)?
            }
        };
        Ok(pooled.flatten_all()?.to_vec1::<f32>()?)
    }
}

/// The implementation for these files, options and device, and the dtype it computes in.
fn load_backend(
    files: &ModelFiles,
    config: &BertConfig,
    device: &Device,
    opts: &EmbedOptions,
    pad_id: u32,
) -> Result<(Backend, DType), EmbedError> {
    let weights_path = files.weights.first().to_path_buf();
    let weights_err = |e: candle_core::Error| EmbedError::Weights {
        path: weights_path.clone(),
        config: files.config.clone(),
        message: clip_message(&crate::device::plain_message(&e)),
    };
    let is_cuda = device.is_cuda();
    let fast = !is_cuda && opts.cpu_backend == CpuBackend::Fast;
    if let Some(fused) = load_fused(files, config, device, opts, pad_id)? {
        return Ok((fused, DType::F16));
    }
    if let WeightFiles::Gguf(p) = &files.weights {
        if let Some(other) = opts.precision.filter(|&p| p != Precision::F32) {
            return Err(EmbedError::Config {
                path: p.clone(),
                message: format!(
                    "--precision {other:?} applies to dense weights; GGUF weights run their \
                     own blocks with f32 activations"
                ),
            });
        }
        if !fast {
            #[cfg(feature = "candle")]
            {
                let model = QuantBert::load(p, config, device).map_err(weights_err)?;
                return Ok((Backend::Quantized(model), DType::F32));
            }
            #[cfg(not(feature = "candle"))]
            return Err(needs_candle(
                files,
                "GGUF blocks through candle's quantized matmul",
            ));
        }
    }
    let precision = opts.precision.unwrap_or(if is_cuda {
        Precision::F16
    } else {
        Precision::F32
    });
    let dtype = precision.dtype();
    let vb = match &files.weights {
        WeightFiles::Safetensors(paths) => {
            crate::mmap::safetensors_var_builder(paths, dtype, device).map_err(weights_err)?
        }
        WeightFiles::Pth(p) => VarBuilder::from_pth(p, dtype, device).map_err(weights_err)?,
        WeightFiles::Gguf(p) => {
            crate::gguf::dequantized_var_builder(p, device).map_err(weights_err)?
        }
    };
    if fast && dtype == DType::F32 {
        let lay = Layout {
            isa: match opts.cpu_isa {
                Some(isa) => isa.supported()?,
                None => Isa::selected()?,
            },
            half_small_batches: opts.small_batch_weights == SmallBatchWeights::F16,
            large_batch_gemm: opts.large_batch_gemm,
        };
        let model = FastBert::load(vb, config, lay).map_err(weights_err)?;
        return Ok((Backend::Fast(model), dtype));
    }
    #[cfg(feature = "candle")]
    {
        let candle_config = crate::config::candle_config(&files.config)?;
        let model = MaskedBert::load(vb, &candle_config).map_err(weights_err)?;
        Ok((Backend::Candle(model), dtype))
    }
    #[cfg(not(feature = "candle"))]
    {
        let _ = vb;
        Err(needs_candle(
            files,
            &format!(
                "candle's BERT encoder ({precision:?} on {})",
                device_name(device)
            ),
        ))
    }
}

/// The fused encoder when the options ask for it and it runs this model: on the CPU
/// (`--cpu-backend fused`) its reference, or an error naming why not; on CUDA
/// (`--cuda-encoder fused`) the device executor, or None after a warning naming why not (candle
/// runs the model then).
fn load_fused(
    files: &ModelFiles,
    config: &BertConfig,
    device: &Device,
    opts: &EmbedOptions,
    pad_id: u32,
) -> Result<Option<Backend>, EmbedError> {
    let dense = !matches!(files.weights, WeightFiles::Gguf(_));
    let asked_precision = opts.precision.unwrap_or(Precision::F16);
    if device.is_cpu() {
        if opts.cpu_backend != CpuBackend::Fused {
            return Ok(None);
        }
        if !dense || asked_precision != Precision::F16 {
            return Err(EmbedError::Config {
                path: files.config.clone(),
                message: "--cpu-backend fused runs dense weights in f16 (--precision f16)".into(),
            });
        }
        let model =
            crate::fused::load_reference(files, config).map_err(|e| EmbedError::Weights {
                path: files.weights.first().to_path_buf(),
                config: files.config.clone(),
                message: clip_message(&crate::device::plain_message(&e)),
            })?;
        return Ok(Some(Backend::FusedReference(model)));
    }
    let asked = opts.cuda_encoder.map_or_else(CudaEncoder::from_env, Ok)?;
    if !device.is_cuda() || asked != CudaEncoder::Fused {
        return Ok(None);
    }
    let why = if !dense {
        "it runs dense weights, not GGUF".to_string()
    } else if asked_precision != Precision::F16 {
        format!("it runs f16, not {asked_precision:?}")
    } else {
        #[cfg(feature = "cuda")]
        match crate::fused::load_cuda(files, config, device, pad_id) {
            Ok(m) => return Ok(Some(Backend::FusedCuda(m))),
            Err(e) => e,
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (config, pad_id);
            "this build has no CUDA".to_string()
        }
    };
    tracing::warn!("--cuda-encoder fused: {why}; running candle's BERT instead");
    Ok(None)
}

/// What a build without the `candle` feature answers where only candle's encoders run.
#[cfg(not(feature = "candle"))]
fn needs_candle(files: &ModelFiles, what: &str) -> EmbedError {
    EmbedError::Config {
        path: files.config.clone(),
        message: format!(
            "these settings need {what}: this memdex was built without it; rebuild with \
             `cargo build --release -p memdex-cli --features candle`, or embed with the fast \
             CPU encoder (`--cpu-backend fast`, f32)"
        ),
    }
}

/// Pools packed hidden states (`Σ len × dim`, sequences back to back) into one row each.
fn pool_packed(hidden: &[f32], seqs: &[&[u32]], dim: usize, pooling: Pooling) -> Vec<f32> {
    let mut out = vec![0f32; seqs.len() * dim];
    let mut start = 0;
    for (s, seq) in seqs.iter().enumerate() {
        let rows = &hidden[start * dim..(start + seq.len()) * dim];
        let o = &mut out[s * dim..(s + 1) * dim];
        match pooling {
            Pooling::Cls => o.copy_from_slice(&rows[..dim]),
            Pooling::Max => {
                o.fill(f32::NEG_INFINITY);
                for r in rows.chunks_exact(dim) {
                    o.iter_mut().zip(r).for_each(|(a, b)| *a = a.max(*b));
                }
            }
            Pooling::Mean | Pooling::MeanSqrtLen => {
                for r in rows.chunks_exact(dim) {
                    o.iter_mut().zip(r).for_each(|(a, b)| *a += b);
                }
                let n = seq.len() as f32;
                let d = if pooling == Pooling::Mean {
                    n
                } else {
                    n.sqrt()
                };
                o.iter_mut().for_each(|a| *a /= d);
            }
        }
        start += seq.len();
    }
    out
}

//! memdex embedder: BERT-family sentence encoders (MiniLM, E5, Contriever, bge) through candle.
//!
//! * [`ModelFiles`] finds a model: a plain directory or the local Hugging Face cache
//!   (`HF_HOME`, offline lookup only) and reads its sentence-transformers settings (pooling,
//!   normalisation, max length, query/passage prefixes).
//! * [`Embedder`] owns tokenizer, weights (memory-mapped) and device. Inputs are tokenised,
//!   sorted by length and cut into batches by a token budget ([`plan_batches`]), padded only
//!   to the longest in each batch; vectors come back in input order.
//!
//! * [`Encoder`] is the seam the rest of memdex uses (TEI's `Backend`); [`CandleScorer`] scores
//!   searches on the encoder's device.
//!
//! The embedder is synchronous and owns its device: callers that serve many clients run it on
//! one dedicated thread and feed it batches.

mod amx;
mod attention;
mod batch;
mod bmatmul;
mod config;
mod device;
mod embedder;
mod encoder;
mod error;
mod fast_bert;
mod files;
mod fused;
mod gguf;
mod isa;
mod linear;
#[cfg(feature = "candle")]
mod masked_bert;
mod math;
mod matmul;
mod mmap;
mod profile;
mod qmatmul;
#[cfg(feature = "candle")]
mod quant_bert;
mod scorer;
mod skinny;
mod split;
mod stage_timer;
mod tiles;
mod tokenize;

pub use amx::{has_amx_cpuid, status as amx_status, AmxUnavailable};
pub use batch::{plan_batches, BatchPlan};
#[cfg(feature = "cuda")]
pub use device::keep_pool_memory;
pub use device::{device_name, select_device};
pub use embedder::{
    CpuBackend, EmbedOptions, Embedder, Embeddings, Precision, SmallBatchWeights, WeightFormat,
};
pub use encoder::{load_encoder, Encoder};
pub use error::EmbedError;
pub use files::{ModelFiles, WeightFiles, GGUF_FILE};
pub use fused::{CudaEncoder, CUDA_ENCODER_ENV};
pub use isa::{cpu_isa, has_avx512_vnni, Isa, IsaError, LargeBatchGemm, LargeBatchKernel, ISA_ENV};
pub use profile::{load_tokenizer, Family, Profile, BGE_EN_QUERY, BGE_ZH_QUERY};
pub use scorer::CandleScorer;
pub use split::{CpuSplit, SPLIT_ENV};
pub use stage_timer::{take_stage_profile, PROFILE_ENV};
pub use tokenize::TextTokenizer;

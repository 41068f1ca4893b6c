use std::path::PathBuf;
use thiserror::Error;

/// Embedder failures, naming the model file or setting involved.
#[derive(Debug, Error)]
pub enum EmbedError {
    #[error("{path}: no model directory here, and not a model cached in the Hugging Face cache ({cache}); fetch it with scripts/fetch-model.sh or pass --model DIR")]
    ModelNotFound { path: PathBuf, cache: PathBuf },
    #[error("{dir}: model directory has no {file}")]
    MissingFile { dir: PathBuf, file: &'static str },
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
    #[error("{path}: cannot load tokenizer: {message}")]
    Tokenizer { path: PathBuf, message: String },
    #[error("{path}: weights do not fit {config}: {message}")]
    Weights {
        path: PathBuf,
        config: PathBuf,
        message: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--device {requested}: this memdex was built without the `cuda` feature; rebuild with `cargo build --release --features cuda` (see scripts/build-cuda.sh) or use --device cpu")]
    CudaNotBuilt { requested: String },
    #[error("--device {requested}: {message}")]
    Device { requested: String, message: String },
    #[error("tokenizing input {index}: {message}")]
    Tokenize { index: usize, message: String },
    #[error("{name}: {message}")]
    Setting { name: &'static str, message: String },
    #[error(transparent)]
    CpuIsa(#[from] crate::isa::IsaError),
    #[error("model forward pass failed: {0}")]
    Forward(#[from] candle_core::Error),
    #[error("fused encoder: {0}")]
    Fused(#[from] memdex_fused_bert::FusedError),
}

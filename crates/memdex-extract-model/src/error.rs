use std::path::PathBuf;

/// Why a model extractor could not be loaded. Errors while generating for one item are not
/// fatal: that item falls back to the rules and is counted in [`crate::ModelStats`].
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read the extractor model {path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path} is not a GGUF model file: {message}")]
    NotGguf { path: PathBuf, message: String },
    #[error("{path}: metadata field {field}: {message}")]
    Metadata {
        path: PathBuf,
        field: String,
        message: String,
    },
    #[error(
        "{path}: architecture {arch:?} is not supported (the model extractor runs llama and qwen2 GGUFs)"
    )]
    Architecture { path: PathBuf, arch: String },
    #[error("{path}: cannot build the tokenizer: {message}")]
    Tokenizer { path: PathBuf, message: String },
    #[error("{path}: cannot load the weights: {cause}")]
    Weights {
        path: PathBuf,
        cause: candle_core::Error,
    },
    #[error(
        "CUDA was asked for but this build has no `cuda` feature (rebuild with --features cuda)"
    )]
    NoCuda,
    #[error("cannot open the CUDA device: {0}")]
    Cuda(candle_core::Error),
    #[error("{path}: cannot run the few-shot prompt: {cause}")]
    Prompt {
        path: PathBuf,
        cause: candle_core::Error,
    },
}

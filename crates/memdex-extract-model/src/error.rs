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

/// A candle error without the backtrace candle attaches when `RUST_BACKTRACE` is set: a
/// user-facing error names the failure, it does not dump frames (as `memdex-embed`'s device
/// errors).
pub(crate) fn plain(e: candle_core::Error) -> candle_core::Error {
    match e {
        candle_core::Error::WithBacktrace { inner, .. } => plain(*inner),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_drops_the_backtrace() {
        let with_bt = candle_core::Error::WithBacktrace {
            inner: Box::new(candle_core::Error::Msg("no tensor".into())),
            backtrace: Box::new(std::backtrace::Backtrace::force_capture()),
        };
        assert!(with_bt.to_string().len() > "no tensor".len());
        assert_eq!(plain(with_bt).to_string(), "no tensor");
    }
}

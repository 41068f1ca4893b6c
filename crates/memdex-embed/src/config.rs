//! `config.json` of a BERT-family encoder: the fields memdex's encoders read, with the same
//! required fields and defaults as candle-transformers' BERT config (so a file one accepts the
//! other accepts), read without compiling candle-transformers into a default build. With the
//! `candle` feature, [`candle_config`] gives candle's own struct for its BERT encoder.

use std::path::Path;

use memdex_core::{clip, clip_message};
use serde::Deserialize;
use serde_json::Value;

use crate::EmbedError;

/// The feed-forward activation (Hugging Face `hidden_act`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HiddenAct {
    Gelu,
    GeluApproximate,
    Relu,
}

/// Position embeddings: BERT's absolute ones only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PositionEmbeddingType {
    #[default]
    Absolute,
}

/// A BERT encoder's shape.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(dead_code)] // read so that a file missing them is refused, as candle refuses it
pub(crate) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: HiddenAct,
    pub hidden_dropout_prob: f64,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub initializer_range: f64,
    pub layer_norm_eps: f64,
    pub pad_token_id: usize,
    #[serde(default)]
    pub position_embedding_type: PositionEmbeddingType,
    pub model_type: Option<String>,
}

/// Reads config.json, mapping activation names candle does not know.
pub(crate) fn read_bert_config(path: &Path) -> Result<BertConfig, EmbedError> {
    let v = config_value(path)?;
    serde_json::from_value(v).map_err(|e| not_bert(path, &e))
}

/// candle-transformers' BERT config of the same file (its encoder takes only its own).
#[cfg(feature = "candle")]
pub(crate) fn candle_config(
    path: &Path,
) -> Result<candle_transformers::models::bert::Config, EmbedError> {
    let v = config_value(path)?;
    serde_json::from_value(v).map_err(|e| not_bert(path, &e))
}

fn not_bert(path: &Path, e: &serde_json::Error) -> EmbedError {
    EmbedError::Config {
        path: path.to_path_buf(),
        message: format!("not a BERT config: {}", clip_message(&e.to_string())),
    }
}

/// The file as JSON: activation names mapped, anything but a BERT model refused.
fn config_value(path: &Path) -> Result<Value, EmbedError> {
    let bytes = std::fs::read(path).map_err(|source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut v: Value = serde_json::from_slice(&bytes).map_err(|e| EmbedError::Config {
        path: path.to_path_buf(),
        message: format!("invalid JSON: {}", clip_message(&e.to_string())),
    })?;
    if let Some(act) = v.get_mut("hidden_act") {
        let mapped = match act.as_str() {
            Some("gelu_new" | "gelu_pytorch_tanh" | "gelu_fast") => Some("geluapproximate"),
            _ => None,
        };
        if let Some(m) = mapped {
            *act = Value::String(m.into());
        }
    }
    let model_type = v
        .get("model_type")
        .and_then(|m| m.as_str())
        .unwrap_or("bert");
    // RoBERTa-style models offset their position ids; a BERT encoder would embed them wrongly.
    if model_type != "bert" {
        return Err(EmbedError::Config {
            path: path.to_path_buf(),
            message: format!(
                "model_type {:?} is not a BERT-family encoder",
                clip(model_type, 64)
            ),
        });
    }
    Ok(v)
}

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use memdex_core::Pooling;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::profile::{name_or_path, Family, Profile};
use crate::EmbedError;

/// Where the weights are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeightFiles {
    /// One or more safetensors files (several when sharded via `model.safetensors.index.json`).
    Safetensors(Vec<PathBuf>),
    /// A PyTorch pickle (`pytorch_model.bin`).
    Pth(PathBuf),
    /// Quantized weights under Hugging Face BERT names (`model.gguf`, as `memdex model
    /// convert` writes it): dequantised at load for the fast CPU encoder, else run through
    /// candle's quantized matmul.
    Gguf(PathBuf),
}

impl WeightFiles {
    /// The first (or only) weight file, for messages.
    pub fn first(&self) -> &Path {
        match self {
            WeightFiles::Safetensors(p) => &p[0],
            WeightFiles::Pth(p) | WeightFiles::Gguf(p) => p,
        }
    }
}

/// A resolved model: its files and the sentence-transformers settings read from them.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    /// Human name: directory name or hub repo id.
    pub name: String,
    /// How the model was named by the user (directory or repo id).
    pub source: String,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub tokenizer: PathBuf,
    pub weights: WeightFiles,
    pub pooling: Pooling,
    pub normalize: bool,
    /// `max_seq_length` from `sentence_bert_config.json` (None when absent).
    pub max_seq_length: Option<usize>,
    pub query_prefix: String,
    pub passage_prefix: String,
    /// The family recognised from the names; its profile filled in what the
    /// sentence-transformers files leave out.
    pub family: Family,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

#[derive(Deserialize)]
struct SbertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize, Default)]
struct StConfig {
    #[serde(default)]
    prompts: std::collections::HashMap<String, String>,
}

#[derive(Deserialize)]
struct ShardIndex {
    weight_map: std::collections::BTreeMap<String, String>,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, EmbedError> {
    let bytes = std::fs::read(path).map_err(|source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| EmbedError::Config {
        path: path.to_path_buf(),
        message: format!(
            "invalid JSON: {}",
            memdex_core::clip_message(&e.to_string())
        ),
    })
}

impl ModelFiles {
    /// Resolves `spec`: an existing directory, or else a hub repo id (`org/name`) looked up in
    /// the local Hugging Face cache (`HF_HUB_CACHE`, else `HF_HOME/hub`, else
    /// `~/.cache/huggingface/hub`; nothing is downloaded).
    pub fn resolve(spec: &str) -> Result<ModelFiles, EmbedError> {
        let cache = match std::env::var_os("HF_HUB_CACHE") {
            Some(dir) => hf_hub::Cache::new(dir.into()),
            None => hf_hub::Cache::from_env(),
        };
        Self::resolve_in(spec, &cache)
    }

    /// [`resolve`](Self::resolve) with an explicit hub cache.
    pub fn resolve_in(spec: &str, cache: &hf_hub::Cache) -> Result<ModelFiles, EmbedError> {
        let path = Path::new(spec);
        if path.is_dir() {
            return Self::from_dir(path, spec);
        }
        if spec.split('/').count() == 2 && !spec.starts_with('.') && !spec.starts_with('/') {
            if let Some(config) = cache.model(spec.to_string()).get("config.json") {
                // A snapshot directory holds links to the blobs that were downloaded.
                if let Some(dir) = config.parent() {
                    return Self::from_dir_named(dir, spec, spec.to_string());
                }
            }
        }
        Err(EmbedError::ModelNotFound {
            path: path.to_path_buf(),
            cache: cache.path().clone(),
        })
    }

    /// Reads a sentence-transformers / Hugging Face model directory.
    pub fn from_dir(dir: &Path, source: &str) -> Result<ModelFiles, EmbedError> {
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| source.to_string());
        Self::from_dir_named(dir, source, name)
    }

    /// [`from_dir`](Self::from_dir) for a directory whose own name says nothing (a hub
    /// snapshot): `name` is what the family is recognised from.
    pub fn from_dir_named(
        dir: &Path,
        source: &str,
        name: String,
    ) -> Result<ModelFiles, EmbedError> {
        let need = |file: &'static str| -> Result<PathBuf, EmbedError> {
            let p = dir.join(file);
            if p.is_file() {
                Ok(p)
            } else {
                Err(EmbedError::MissingFile {
                    dir: dir.to_path_buf(),
                    file,
                })
            }
        };
        let config = need("config.json")?;
        let tokenizer = need("tokenizer.json").or_else(|_| {
            need("vocab.txt").map_err(|_| EmbedError::MissingFile {
                dir: dir.to_path_buf(),
                file: "tokenizer.json (or a BERT vocab.txt)",
            })
        })?;
        let weights = weight_files(dir)?;
        let family = Family::detect(
            [
                Some(name.as_str()),
                Some(source),
                name_or_path(&config).as_deref(),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
        );
        let profile = family.profile();
        let (normalize, pooling) = pooling_settings(dir, &profile)?;
        let sbert = dir.join("sentence_bert_config.json");
        let max_seq_length = if sbert.is_file() {
            read_json::<SbertConfig>(&sbert)?.max_seq_length
        } else {
            profile.max_length
        };
        let (query_prefix, passage_prefix) = prefixes(dir, &profile)?;
        Ok(ModelFiles {
            name,
            source: source.to_string(),
            dir: dir.to_path_buf(),
            config,
            tokenizer,
            weights,
            pooling,
            normalize,
            max_seq_length,
            query_prefix,
            passage_prefix,
            family,
        })
    }

    /// A digest identifying these weights and settings: sha256 over config.json,
    /// tokenizer.json, the pooling settings, and for each weight file its length, first MiB
    /// (the safetensors header) and 64 evenly spaced 4 KiB windows. Cheap for large models,
    /// and different checkpoints of one architecture still differ.
    pub fn fingerprint(&self, max_length: usize) -> Result<String, EmbedError> {
        let mut h = Sha256::new();
        for p in [&self.config, &self.tokenizer] {
            h.update(std::fs::read(p).map_err(|source| EmbedError::Io {
                path: p.clone(),
                source,
            })?);
        }
        h.update(format!(
            "{:?}|{}|{}|{}|{}",
            self.pooling, self.normalize, max_length, self.query_prefix, self.passage_prefix
        ));
        let files = match &self.weights {
            WeightFiles::Safetensors(f) => f.clone(),
            WeightFiles::Pth(p) | WeightFiles::Gguf(p) => vec![p.clone()],
        };
        for p in &files {
            sample_file(p, &mut h).map_err(|source| EmbedError::Io {
                path: p.clone(),
                source,
            })?;
        }
        Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// The quantized weights' file name in a model directory.
pub const GGUF_FILE: &str = "model.gguf";

impl ModelFiles {
    /// These files with the directory's `model.gguf` as the weights (`--weights gguf`).
    pub fn with_gguf_weights(mut self) -> Result<ModelFiles, EmbedError> {
        let p = self.dir.join(GGUF_FILE);
        if !p.is_file() {
            return Err(EmbedError::MissingFile {
                dir: self.dir.clone(),
                file: "model.gguf (asked for by --weights gguf)",
            });
        }
        self.weights = WeightFiles::Gguf(p);
        Ok(self)
    }
}

fn weight_files(dir: &Path) -> Result<WeightFiles, EmbedError> {
    if dir.join("model.safetensors").is_file() {
        return Ok(WeightFiles::Safetensors(
            vec![dir.join("model.safetensors")],
        ));
    }
    if dir.join("model.safetensors.index.json").is_file() {
        let index_path = dir.join("model.safetensors.index.json");
        let index: ShardIndex = read_json(&index_path)?;
        let mut files: Vec<PathBuf> = index.weight_map.values().map(|f| dir.join(f)).collect();
        files.sort();
        files.dedup();
        if let Some(missing) = files.iter().find(|f| !f.is_file()) {
            return Err(EmbedError::Config {
                path: index_path,
                message: format!("names shard {} which does not exist", missing.display()),
            });
        }
        return Ok(WeightFiles::Safetensors(files));
    }
    if dir.join("pytorch_model.bin").is_file() {
        return Ok(WeightFiles::Pth(dir.join("pytorch_model.bin")));
    }
    if dir.join(GGUF_FILE).is_file() {
        return Ok(WeightFiles::Gguf(dir.join(GGUF_FILE)));
    }
    Err(EmbedError::MissingFile {
        dir: dir.to_path_buf(),
        file: "model.safetensors (or model.safetensors.index.json, pytorch_model.bin, model.gguf)",
    })
}

/// (normalize, pooling): `modules.json` and the Pooling module's config when present, the
/// family profile for what they leave out. A Normalize module always normalises; without
/// one, a known family's documented similarity decides (a bare checkpoint of an unknown
/// family is normalised, a sentence-transformers one without Normalize is not).
fn pooling_settings(dir: &Path, profile: &Profile) -> Result<(bool, Pooling), EmbedError> {
    let modules_path = dir.join("modules.json");
    let (has_normalize, pooling_dir) = if modules_path.is_file() {
        let modules: Vec<ModuleEntry> = read_json(&modules_path)?;
        let normalize = modules.iter().any(|m| m.kind.ends_with(".Normalize"));
        let pooling_dir = modules
            .iter()
            .find(|m| m.kind.ends_with(".Pooling"))
            .map(|m| dir.join(&m.path));
        (Some(normalize), pooling_dir)
    } else {
        (None, None)
    };
    let normalize = match (has_normalize, profile.family) {
        (Some(true), _) => true,
        (Some(false), Family::Other) => false,
        _ => profile.normalize,
    };
    let pooling_cfg = pooling_dir
        .map(|d| d.join("config.json"))
        .or_else(|| Some(dir.join("1_Pooling/config.json")))
        .filter(|p| p.is_file());
    let Some(p) = pooling_cfg else {
        return Ok((normalize, profile.pooling));
    };
    let c: PoolingConfig = read_json(&p)?;
    let pooling = match (
        c.pooling_mode_cls_token,
        c.pooling_mode_mean_tokens,
        c.pooling_mode_max_tokens,
        c.pooling_mode_mean_sqrt_len_tokens,
    ) {
        (true, false, false, false) => Pooling::Cls,
        (false, true, false, false) => Pooling::Mean,
        (false, false, true, false) => Pooling::Max,
        (false, false, false, true) => Pooling::MeanSqrtLen,
        _ => {
            return Err(EmbedError::Config {
                path: p,
                message: "exactly one pooling mode must be enabled".into(),
            })
        }
    };
    Ok((normalize, pooling))
}

fn sample_file(path: &Path, h: &mut Sha256) -> std::io::Result<()> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    h.update(len.to_le_bytes());
    let mut head = vec![0u8; len.min(1 << 20) as usize];
    f.read_exact(&mut head)?;
    h.update(&head);
    let mut window = [0u8; 4096];
    if len > (1 << 20) + 4096 {
        for i in 0..64u64 {
            let off = (1 << 20) + (len - (1 << 20) - 4096) * i / 63;
            f.seek(SeekFrom::Start(off))?;
            f.read_exact(&mut window)?;
            h.update(window);
        }
    }
    Ok(())
}

/// Query/passage prefixes: the model's own `config_sentence_transformers.json` prompts when
/// present, else the family profile's (E5: `query: `/`passage: `; bge: an instruction before
/// queries only); none otherwise.
fn prefixes(dir: &Path, profile: &Profile) -> Result<(String, String), EmbedError> {
    let st = dir.join("config_sentence_transformers.json");
    let cfg: StConfig = if st.is_file() {
        read_json(&st)?
    } else {
        StConfig::default()
    };
    let q = cfg.prompts.get("query").cloned();
    let p = cfg
        .prompts
        .get("passage")
        .or_else(|| cfg.prompts.get("document"))
        .cloned();
    if q.is_some() || p.is_some() {
        return Ok((q.unwrap_or_default(), p.unwrap_or_default()));
    }
    Ok((profile.query_prefix.clone(), profile.passage_prefix.clone()))
}

//! Model families and their published usage: pooling, similarity (normalised cosine or raw
//! inner product), query/passage prefixes or instructions, max length.
//!
//! sentence-transformers files in a model directory always win; a family profile fills in
//! only what they leave out — which is everything for a bare transformers checkpoint such as
//! `facebook/contriever` (no `modules.json`, no `tokenizer.json`). Families are recognised
//! from the repo id or directory name and from `config.json`'s `_name_or_path`.

use std::path::Path;

use memdex_core::Pooling;
use tokenizers::decoders::wordpiece::WordPiece as WordPieceDecoder;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::Tokenizer;

use crate::EmbedError;

/// The instruction English bge models (v1 and v1.5) put before queries (none before passages).
pub const BGE_EN_QUERY: &str = "Represent this sentence for searching relevant passages: ";
/// The instruction Chinese bge models put before queries.
pub const BGE_ZH_QUERY: &str = "为这个句子生成表示以用于检索相关文章：";

/// A sentence-encoder family with a published way of being used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// intfloat e5 / multilingual-e5: mean pooling, cosine, `query: ` / `passage: `.
    E5,
    /// facebook/contriever(-msmarco): mean pooling, raw inner product, no prefixes.
    Contriever,
    /// BAAI bge: CLS pooling, cosine, an instruction before queries (English or Chinese).
    Bge { chinese: bool },
    /// thenlper / Alibaba gte: mean pooling, cosine, no prefixes.
    Gte,
    /// Anything else (MiniLM, mpnet, …): sentence-transformers files or mean + cosine.
    Other,
}

/// What a family's model card prescribes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub family: Family,
    pub pooling: Pooling,
    /// true: unit vectors (cosine); false: raw vectors scored by inner product.
    pub normalize: bool,
    pub query_prefix: String,
    pub passage_prefix: String,
    /// Max sequence length the family was trained with (None: the model config's).
    pub max_length: Option<usize>,
}

impl Family {
    /// Recognises the family from names (repo id, directory name, `_name_or_path`).
    pub fn detect<'a>(names: impl IntoIterator<Item = &'a str>) -> Family {
        for name in names {
            let n = name.to_lowercase();
            let base = n.rsplit('/').next().unwrap_or(&n);
            if n.contains("contriever") {
                return Family::Contriever;
            }
            if base.starts_with("bge-") || n.contains("/bge-") {
                return Family::Bge {
                    chinese: base.contains("-zh"),
                };
            }
            if base.starts_with("gte-") || n.contains("/gte-") {
                return Family::Gte;
            }
            if base.starts_with("e5-") || base.contains("-e5-") || n.contains("/e5-") {
                return Family::E5;
            }
        }
        Family::Other
    }

    /// The family's published usage.
    pub fn profile(self) -> Profile {
        let p = |pooling, normalize, q: &str, d: &str, max| Profile {
            family: self,
            pooling,
            normalize,
            query_prefix: q.to_string(),
            passage_prefix: d.to_string(),
            max_length: max,
        };
        match self {
            Family::E5 => p(Pooling::Mean, true, "query: ", "passage: ", Some(512)),
            Family::Contriever => p(Pooling::Mean, false, "", "", Some(512)),
            Family::Bge { chinese: false } => p(Pooling::Cls, true, BGE_EN_QUERY, "", Some(512)),
            Family::Bge { chinese: true } => p(Pooling::Cls, true, BGE_ZH_QUERY, "", Some(512)),
            Family::Gte => p(Pooling::Mean, true, "", "", Some(512)),
            Family::Other => p(Pooling::Mean, true, "", "", None),
        }
    }
}

/// `_name_or_path` from config.json, when present (the checkpoint's original repo id).
pub fn name_or_path(config: &Path) -> Option<String> {
    let bytes = std::fs::read(config).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("_name_or_path")?.as_str().map(str::to_string)
}

/// Loads `tokenizer.json`, or builds BERT's WordPiece tokenizer from `vocab.txt` (what
/// checkpoints like facebook/contriever ship), lower-casing unless `tokenizer_config.json`
/// says `do_lower_case: false`.
pub fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    let err = |message: String| EmbedError::Tokenizer {
        path: path.to_path_buf(),
        message,
    };
    if path.file_name().is_some_and(|f| f != "vocab.txt") {
        return Tokenizer::from_file(path).map_err(|e| err(e.to_string()));
    }
    let lowercase = path
        .parent()
        .map(|d| d.join("tokenizer_config.json"))
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("do_lower_case").and_then(|x| x.as_bool()))
        .unwrap_or(true);
    let path_str = path
        .to_str()
        .ok_or_else(|| err("path is not UTF-8".into()))?;
    let wp = WordPiece::from_file(path_str)
        .unk_token("[UNK]".into())
        .build()
        .map_err(|e| err(e.to_string()))?;
    let mut tok = Tokenizer::new(wp);
    let id = |t: &str| {
        tok.token_to_id(t)
            .ok_or_else(|| err(format!("vocab.txt has no {t}")))
    };
    let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
    let post = TemplateProcessing::builder()
        .try_single("[CLS] $A [SEP]")
        .and_then(|b| b.try_pair("[CLS] $A [SEP] $B:1 [SEP]:1"))
        .map_err(|e| err(e.to_string()))?
        .special_tokens(vec![("[CLS]", cls), ("[SEP]", sep)])
        .build()
        .map_err(|e| err(e.to_string()))?;
    tok.with_normalizer(Some(BertNormalizer::new(true, true, None, lowercase)))
        .map_err(|e| err(e.to_string()))?;
    tok.with_pre_tokenizer(Some(BertPreTokenizer));
    tok.with_post_processor(Some(post));
    tok.with_decoder(Some(WordPieceDecoder::default()));
    Ok(tok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_recognised_from_repo_ids_and_dir_names() {
        let d = |s: &str| Family::detect([s]);
        assert_eq!(d("intfloat/e5-small-v2"), Family::E5);
        assert_eq!(d("intfloat/multilingual-e5-small"), Family::E5);
        assert_eq!(d("multilingual-e5-small-q4"), Family::E5);
        assert_eq!(d("facebook/contriever-msmarco"), Family::Contriever);
        assert_eq!(d("BAAI/bge-small-en-v1.5"), Family::Bge { chinese: false });
        assert_eq!(d("BAAI/bge-large-zh-v1.5"), Family::Bge { chinese: true });
        assert_eq!(d("thenlper/gte-small"), Family::Gte);
        assert_eq!(d("all-MiniLM-L6-v2"), Family::Other);
        // names that merely contain the letters are not families
        assert_eq!(d("acme/forge-embedder"), Family::Other);
        assert_eq!(d("acme/pipe5-model"), Family::Other);
        // the first name that names a family wins; a snapshot hash names none
        assert_eq!(
            Family::detect(["0123abcd", "facebook/contriever"]),
            Family::Contriever
        );
    }

    #[test]
    fn profiles_follow_the_model_cards() {
        let bge = Family::Bge { chinese: false }.profile();
        assert_eq!((bge.pooling, bge.normalize), (Pooling::Cls, true));
        assert_eq!(
            (bge.query_prefix.as_str(), bge.passage_prefix.as_str()),
            (BGE_EN_QUERY, "")
        );
        let c = Family::Contriever.profile();
        assert_eq!((c.pooling, c.normalize), (Pooling::Mean, false));
        let e5 = Family::E5.profile();
        assert_eq!(
            (e5.query_prefix.as_str(), e5.passage_prefix.as_str()),
            ("query: ", "passage: ")
        );
        assert_eq!(Family::Gte.profile().pooling, Pooling::Mean);
        assert_eq!(Family::Other.profile().max_length, None);
    }
}

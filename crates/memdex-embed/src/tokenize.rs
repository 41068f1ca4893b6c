//! The model's tokenizer as a shareable handle: text to token ids (the kind's prefix applied,
//! truncated to the model's length, special tokens included) on any thread. A serving engine
//! tokenizes in its callers' threads, before the model's queue, so that the model thread runs
//! only the model (TEI's router does the same).

use std::sync::Arc;

use memdex_core::TextKind;
use tokenizers::Tokenizer;

use crate::EmbedError;

/// A tokenizer with the query and passage prefixes of its model; cheap to clone.
#[derive(Clone)]
pub struct TextTokenizer {
    tokenizer: Arc<Tokenizer>,
    query_prefix: String,
    passage_prefix: String,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer")
            .field("query_prefix", &self.query_prefix)
            .field("passage_prefix", &self.passage_prefix)
            .finish_non_exhaustive()
    }
}

impl TextTokenizer {
    /// `tokenizer` already set to truncate as its model requires and not to pad.
    pub(crate) fn new(tokenizer: Tokenizer, query_prefix: &str, passage_prefix: &str) -> Self {
        Self {
            tokenizer: Arc::new(tokenizer),
            query_prefix: query_prefix.to_string(),
            passage_prefix: passage_prefix.to_string(),
        }
    }

    /// Token ids of each text, in input order.
    pub fn tokenize(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<u32>>, EmbedError> {
        let prefix = match kind {
            TextKind::Query => self.query_prefix.as_str(),
            TextKind::Passage => self.passage_prefix.as_str(),
        };
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let encodings =
            self.tokenizer
                .encode_batch(inputs, true)
                .map_err(|e| EmbedError::Tokenize {
                    index: 0,
                    message: e.to_string(),
                })?;
        Ok(encodings
            .into_iter()
            .map(|e| e.get_ids().to_vec())
            .collect())
    }
}

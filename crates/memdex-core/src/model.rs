use serde::{Deserialize, Serialize};

/// How token vectors become one sentence vector (sentence-transformers `1_Pooling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    Mean,
    Cls,
    Max,
    MeanSqrtLen,
}

/// Whether a text is a query or a stored passage (models like E5 prefix them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Query,
    Passage,
}

/// Identity of the embedding model a store was built with. Two stores agree on a model when
/// name, fingerprint and dimension agree; searching with another model is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Human name (directory or hub repo name), e.g. `all-MiniLM-L6-v2`.
    pub name: String,
    /// Hex digest over config, tokenizer, pooling settings and sampled weight bytes.
    pub fingerprint: String,
    pub dim: usize,
    pub pooling: Pooling,
    pub normalize: bool,
    pub max_length: usize,
    #[serde(default)]
    pub query_prefix: String,
    #[serde(default)]
    pub passage_prefix: String,
}

impl ModelInfo {
    /// Describes the first difference to `other` that makes their vectors incomparable.
    pub fn incompatibility(&self, other: &ModelInfo) -> Option<String> {
        if self.dim != other.dim {
            return Some(format!("dimension {} vs {}", self.dim, other.dim));
        }
        if self.fingerprint != other.fingerprint {
            let why = if self.name == other.name {
                ": same name, other weights or settings (weight files, e.g. --weights gguf \
                 against dense; max length; prefixes; pooling)"
            } else {
                ""
            };
            return Some(format!(
                "model {} ({}) vs {} ({}){why}",
                self.name,
                short(&self.fingerprint),
                other.name,
                short(&other.fingerprint)
            ));
        }
        None
    }
}

fn short(s: &str) -> &str {
    &s[..s.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, fingerprint: &str, dim: usize) -> ModelInfo {
        ModelInfo {
            name: name.into(),
            fingerprint: fingerprint.into(),
            dim,
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 512,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        }
    }

    #[test]
    fn incompatibility_names_what_differs() {
        let a = info("e5", "aaaa", 384);
        assert_eq!(a.incompatibility(&a.clone()), None);
        let dim = a.incompatibility(&info("e5", "aaaa", 768)).unwrap();
        assert_eq!(dim, "dimension 384 vs 768");
        let other = a.incompatibility(&info("minilm", "bbbb", 384)).unwrap();
        assert_eq!(other, "model e5 (aaaa) vs minilm (bbbb)");
        let same_name = a.incompatibility(&info("e5", "bbbb", 384)).unwrap();
        assert!(same_name.contains("same name") && same_name.contains("--weights gguf"));
    }
}

//! memdex structures: the two seed systems organised over the items, locally (no LLM).
//!
//! * [`thoughts`]: TiM's thought memory. After each appended session, (subject, relation,
//!   object) triples are extracted ([`ThoughtExtractor`]; [`RuleThoughts`] by default, any
//!   [`memdex_extract::FactExtractor`] through [`FromFacts`]), hashed into LSH buckets
//!   (`argmax([xR; −xR])`) and organised: insert, forget (contradicted, negated, "forget
//!   that…", sources deleted), merge (restated, near-duplicate). Every change is an event
//!   in the store: the audit log.
//! * [`tree`]: MemTree. Items inserted online under the depth-adaptive threshold
//!   `θ(d) = θ0·e^{λd}`; aggregate nodes' content from their children's salient sentences
//!   and key phrases, their embeddings recomputed in batches; collapsed retrieval.
//! * [`Maintainer`]: keeps both in step with the store's items (the writer's side).
//! * [`TenantView`]: the read side for the ranking (two-stage thought retrieval, collapsed
//!   tree retrieval, per-item lifts).
//!
//! Both are persisted as the store's structure segments (`memdex_store::Structures`) and
//! rebuilt by replaying them; a rebuild from the same items in the same order gives the same
//! structures.

mod error;
pub mod report;
mod sync;
pub mod thoughts;
pub mod tree;
mod view;

pub use error::StructuresError;
pub use sync::{live_ids, thought_lsh, user_text, EmbedTexts, Maintainer, SyncReport};
pub use thoughts::extract::{
    Context, FromFacts, Polarity, RuleThoughts, ThoughtExtractor, ThoughtInput, Triple, RULES_NAME,
};
pub use thoughts::memory::{Successor, Thought, ThoughtMemory};
pub use tree::{MemTree, TreeParams, TreeStats};
pub use view::{Retrieved, TenantView, ThoughtIndex, TreeIndex};

use memdex_store::{ThoughtsConfig, TreeConfig};

/// TiM defaults: the rule extractor, 16 buckets × 4 tables (seed 42), merge at cosine ≥ 0.9.
pub fn default_thoughts() -> ThoughtsConfig {
    ThoughtsConfig {
        extractor: RULES_NAME.to_string(),
        buckets: 16,
        tables: 4,
        seed: 42,
        merge_cosine: 0.9,
    }
}

/// MemTree defaults: θ0 0.4, λ 0.1, aggregates of at most 400 characters.
pub fn default_tree() -> TreeConfig {
    TreeConfig {
        theta0: 0.4,
        lambda: 0.1,
        content_chars: 400,
    }
}

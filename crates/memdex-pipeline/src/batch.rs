//! A cut of admitted items on its way to a segment: which keys it embeds, and the write that
//! turns it and its vectors into one committed segment. The append pipeline runs the two in a
//! row; the overlapped build (`build`) runs them on different threads, several batches apart.

use std::collections::HashSet;

use memdex_core::MemoryItem;
use memdex_embed::Embeddings;
use memdex_score::text::Analyzer;
use memdex_store::{Derived, StoreWriter, WordTable};
use rayon::prelude::*;

use memdex_kernels::HashKernels;

use crate::keys::KeyCache;
use crate::vectors::derive_from_vectors;
use crate::PipelineError;

/// What one commit wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Committed {
    /// Id of the first pending item (the others follow in admission order).
    pub first_id: u64,
    pub manifest_version: u64,
    pub rows: u64,
    pub keys_embedded: u64,
    /// Terms added to the word table.
    pub words_embedded: u64,
    /// Items whose key a live row (or an earlier item of the same commit) already held.
    pub keys_reused: u64,
    pub tokens_embedded: u64,
    pub embed_seconds: f64,
}

/// Embeds key texts for a commit (passages).
pub type EmbedFn<'a> = dyn FnMut(&[&str]) -> Result<Embeddings, PipelineError> + 'a;

/// Where an item's key vector comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// A live row of the store holds the key.
    Stored,
    /// An earlier batch of the same run embeds it (committed before this batch is written).
    Earlier,
    /// This batch embeds it: slot in [`ItemBatch::fresh`].
    Fresh(usize),
}

/// Keys scheduled for embedding by batches not yet committed (by key hash; a collision only
/// costs an extra lookup, the text is compared when the vector is copied), and the word
/// table's terms those batches add.
#[derive(Debug, Default)]
pub struct InFlight {
    keys: HashSet<u64>,
    terms: HashSet<String>,
}

impl InFlight {
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.keys
            .contains(&memdex_core::content_hash(key.as_bytes()))
    }

    pub(crate) fn insert(&mut self, key: &str) {
        self.keys.insert(memdex_core::content_hash(key.as_bytes()));
    }

    /// Takes `term` for the batch being cut: false when the store's word table or an
    /// earlier batch has it.
    pub(crate) fn take_term(&mut self, term: &str, table: &WordTable) -> bool {
        !table.contains(term) && self.terms.insert(term.to_string())
    }
}

/// Admitted items and the plan for their key vectors.
#[derive(Debug)]
pub struct ItemBatch {
    pub(crate) items: Vec<MemoryItem>,
    pub(crate) derived: Vec<Derived>,
    pub(crate) sources: Vec<KeySource>,
    /// Distinct keys this batch embeds.
    pub fresh: Vec<String>,
    /// Terms of the fresh keys the store's word table lacks, each with the word embedded
    /// for it (after the keys, in the same encoder call).
    pub fresh_words: Vec<(String, String)>,
    /// Analyse terms on the rayon pool (a batch job) or inline (a server).
    pub(crate) parallel: bool,
    /// The (tenant, session id) of the sessions the batch stores.
    pub(crate) sessions: Vec<(String, String)>,
}

impl ItemBatch {
    pub fn items(&self) -> usize {
        self.items.len()
    }

    /// The fresh keys' vectors, then the fresh words', through `embed` (nothing to embed: an
    /// empty result).
    pub fn embed(&self, embed: &mut EmbedFn<'_>, dim: usize) -> Result<Embeddings, PipelineError> {
        let keys: Vec<&str> = (self.fresh.iter().map(String::as_str))
            .chain(self.fresh_words.iter().map(|(_, w)| w.as_str()))
            .collect();
        let emb = if keys.is_empty() {
            Embeddings {
                dim,
                data: Vec::new(),
                tokens: Vec::new(),
            }
        } else {
            embed(&keys)?
        };
        if emb.dim != dim || emb.data.len() != keys.len() * dim {
            return Err(PipelineError::Invalid {
                message: format!(
                    "the encoder returned {} values of dimension {} for {} texts; the store holds dimension {dim}",
                    emb.data.len(),
                    emb.dim,
                    keys.len()
                ),
            });
        }
        Ok(emb)
    }
}

/// Writes `batch` with the fresh keys' and words' vectors `emb` as one segment: the words
/// first (the word table), then the rows: stored and earlier keys' vectors and terms copied
/// through `keys` (the writer's view, refreshed after the commit), fresh keys' terms
/// analysed, neighbours and bucket ids derived (bucket ids on `accel`'s device when given).
pub fn write_batch(
    writer: &mut StoreWriter,
    keys: &mut KeyCache,
    batch: ItemBatch,
    emb: Embeddings,
    accel: Option<&dyn HashKernels>,
) -> Result<Committed, PipelineError> {
    let ItemBatch {
        items,
        mut derived,
        sources,
        fresh,
        fresh_words,
        parallel,
        ..
    } = batch;
    let dim = emb.dim;
    writer.append_words(&fresh_words, &emb.data[fresh.len() * dim..])?;
    let analyzer = Analyzer::english();
    let fresh_terms: Vec<Vec<String>> = if parallel {
        fresh.par_iter().map(|k| analyzer.terms(k)).collect()
    } else {
        fresh.iter().map(|k| analyzer.terms(k)).collect()
    };
    let mut data = Vec::with_capacity(items.len() * dim);
    for ((it, src), d) in items.iter().zip(&sources).zip(derived.iter_mut()) {
        match *src {
            KeySource::Fresh(slot) => {
                data.extend_from_slice(emb.row(slot));
                d.terms = fresh_terms[slot].clone();
            }
            KeySource::Stored | KeySource::Earlier => {
                let (v, terms) = keys.get(&it.key).ok_or_else(|| PipelineError::Invalid {
                    message: format!(
                        "the vector of key {:?} is not in the store any more (deleted or \
                         compacted while the batch was in flight); index again",
                        memdex_core::clip(&it.key, 64)
                    ),
                })?;
                data.extend_from_slice(v);
                d.terms = terms;
            }
        }
    }
    derive_from_vectors(keys.store(), writer, &items, &data, &mut derived, accel);
    let first_id = writer.manifest().next_item_id();
    let report = writer.append_derived(&items, &data, &derived)?;
    keys.refresh_or_mark_stale();
    Ok(Committed {
        first_id,
        manifest_version: report.manifest_version,
        rows: report.segment.rows,
        keys_embedded: fresh.len() as u64,
        words_embedded: fresh_words.len() as u64,
        keys_reused: (items.len() - fresh.len()) as u64,
        tokens_embedded: emb.tokens.iter().sum::<usize>() as u64,
        embed_seconds: 0.0,
    })
}

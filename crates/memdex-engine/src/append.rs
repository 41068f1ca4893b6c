//! The one append pipeline, shared by `memdex index` and the server's writer thread:
//!
//! ```text
//! sessions ─► itemize ─► idempotency ─► extraction ─► key reuse ─► terms ─► vectors ─► segment
//!             (admit: per request, all or nothing)      (commit: one segment for everything admitted)
//! ```
//!
//! [`AppendPipeline::admit`] itemizes a request's sessions, checks each against what is stored
//! and what is already admitted (same content: `unchanged`; other content: a conflict that
//! refuses the whole request), and runs the extractors. [`AppendPipeline::commit`] embeds the
//! keys no live row holds yet (through whatever embeds: the encoder directly, or the model
//! thread's queue), derives terms, neighbours and bucket ids, and writes one segment.

use std::collections::HashMap;
use std::time::Instant;

use memdex_core::{MemoryItem, Session};
use memdex_embed::Embeddings;
use memdex_extract::invalid_dates;
use memdex_index::text::Analyzer;
use memdex_ingest::{itemize, ItemizeOptions};
use memdex_store::{session_hash, Derived, Store, StoreWriter};
use rayon::prelude::*;
use serde::Serialize;

use crate::extract::Extractors;
use crate::keys::KeyCache;
use crate::structures::StructureSync;
use memdex_structures::SyncReport;
use crate::vectors::derive_from_vectors;
use crate::EngineError;

/// What became of one offered session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// New: its items are (or, once committed, will be) stored.
    Stored,
    /// Already stored with the same content: nothing written (an idempotent retry).
    Unchanged,
}

/// One admitted session: its status and where its items lie among the pending ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    pub session_id: String,
    pub status: SessionStatus,
    /// Index of its first item among the pending items, and how many.
    pub start: usize,
    pub items: usize,
    /// Items with an extracted event date, and date-shaped words naming no day.
    pub with_events: usize,
    pub invalid_dates: usize,
}

/// What one commit wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Committed {
    /// Id of the first pending item (the others follow in admission order).
    pub first_id: u64,
    pub manifest_version: u64,
    pub rows: u64,
    pub keys_embedded: u64,
    /// Items whose key a live row (or an earlier item of the same commit) already held.
    pub keys_reused: u64,
    pub tokens_embedded: u64,
    pub embed_seconds: f64,
}

/// Embeds key texts for a commit (passages).
pub type EmbedFn<'a> = dyn FnMut(&[&str]) -> Result<Embeddings, EngineError> + 'a;

/// Sessions admitted and waiting for one commit, with what committing needs.
#[derive(Debug)]
pub struct AppendPipeline {
    itemize: ItemizeOptions,
    extract: Extractors,
    /// Run extraction and term analysis on the rayon pool (a batch job) or inline (a server,
    /// whose pool serves queries).
    parallel: bool,
    keys: KeyCache,
    /// Idempotency hash of each live stored session, by (tenant, session id).
    known: HashMap<(String, String), u64>,
    /// The same for admitted, uncommitted sessions.
    staged: HashMap<(String, String), u64>,
    pending: Vec<MemoryItem>,
    derived: Vec<Derived>,
    /// The view failed to refresh after a commit; retried before the next one.
    stale: bool,
    /// The store's TiM thoughts and MemTree, synced after each commit (None: it keeps none).
    structures: Option<StructureSync>,
    /// What the last structure sync did.
    last_sync: Option<SyncReport>,
}

impl AppendPipeline {
    /// A pipeline over `store` (the committed view the writer appends to), with the
    /// extraction its manifest records.
    pub fn new(store: Store, itemize: ItemizeOptions, parallel: bool) -> Result<Self, EngineError> {
        let extract = Extractors::for_store(&store.manifest().extraction)?;
        Ok(Self::with_extractors(store, itemize, extract, parallel))
    }

    /// [`Self::new`] with extractors given by the caller (a model-based fact extractor).
    pub fn with_extractors(
        store: Store,
        itemize: ItemizeOptions,
        extract: Extractors,
        parallel: bool,
    ) -> Self {
        AppendPipeline {
            itemize,
            extract,
            parallel,
            structures: StructureSync::for_store(&store),
            last_sync: None,
            known: store.session_hashes(),
            keys: KeyCache::new(store),
            staged: HashMap::new(),
            pending: Vec::new(),
            derived: Vec::new(),
            stale: false,
        }
    }

    /// The committed view the pipeline reads (key reuse, neighbours, idempotency).
    pub fn store(&self) -> &Store {
        self.keys.store()
    }

    /// Items admitted and not committed yet.
    pub fn pending_items(&self) -> usize {
        self.pending.len()
    }

    /// Offers one request's sessions: either every one is admitted (stored or unchanged) or
    /// none is (a conflicting or empty session refuses the request).
    pub fn admit(&mut self, sessions: &[Session]) -> Result<Vec<Admitted>, EngineError> {
        let mut mine: HashMap<(String, String), u64> = HashMap::new();
        let mut plans: Vec<(Admitted, Vec<MemoryItem>)> = Vec::with_capacity(sessions.len());
        let mut start = self.pending.len();
        for s in sessions {
            let items = itemize(s, &self.itemize);
            let key = (s.tenant.clone(), s.session_id.clone());
            if items.is_empty() {
                return Err(EngineError::EmptySession {
                    tenant: key.0,
                    session_id: key.1,
                });
            }
            // the hash covers the items as read, so changing extractors never makes a stored
            // session look changed
            let hash = session_hash(items.iter().map(|i| i.content_hash));
            let prev = (self.known.get(&key))
                .or_else(|| self.staged.get(&key))
                .or_else(|| mine.get(&key));
            let status = match prev {
                Some(&h) if h == hash => SessionStatus::Unchanged,
                Some(_) => {
                    return Err(EngineError::SessionConflict {
                        tenant: key.0,
                        session_id: key.1,
                    })
                }
                None => SessionStatus::Stored,
            };
            let n = if status == SessionStatus::Stored {
                items.len()
            } else {
                0
            };
            let admitted = Admitted {
                session_id: s.session_id.clone(),
                status,
                start,
                items: n,
                with_events: 0,
                invalid_dates: 0,
            };
            if status == SessionStatus::Stored {
                mine.insert(key, hash);
                plans.push((admitted, items));
            } else {
                plans.push((admitted, Vec::new()));
            }
            start += n;
        }
        self.staged.extend(mine);
        Ok(plans
            .into_iter()
            .map(|(mut a, items)| {
                self.stage(&mut a, items);
                a
            })
            .collect())
    }

    /// Runs the extractors over a session's items and queues them.
    fn stage(&mut self, a: &mut Admitted, mut items: Vec<MemoryItem>) {
        let x = &self.extract;
        let derived: Vec<Derived> = if self.parallel {
            items.par_iter_mut().map(|it| x.derive(it)).collect()
        } else {
            items.iter_mut().map(|it| x.derive(it)).collect()
        };
        if x.events {
            a.with_events = derived.iter().filter(|d| !d.events.is_empty()).count();
            a.invalid_dates = items.iter().map(|it| invalid_dates(&it.value)).sum();
        }
        self.pending.extend(items);
        self.derived.extend(derived);
    }

    /// Forgets everything admitted and not committed.
    pub fn discard(&mut self) {
        self.staged.clear();
        self.pending.clear();
        self.derived.clear();
    }

    /// Embeds the pending keys no live row holds (each distinct key once), derives terms,
    /// neighbours and bucket ids, and commits the pending items as one segment. On failure
    /// nothing admitted stays pending. Once the segment is committed the call succeeds, even
    /// if re-reading the store afterwards fails (retried before the next commit).
    pub fn commit(
        &mut self,
        writer: &mut StoreWriter,
        embed: &mut EmbedFn<'_>,
    ) -> Result<Committed, EngineError> {
        if self.stale {
            self.refresh()?;
        }
        if self.pending.is_empty() {
            self.staged.clear();
            // catches up on what an earlier sync did not finish
            self.after_commit(writer, embed);
            return Ok(Committed {
                first_id: writer.manifest().next_item_id(),
                manifest_version: writer.manifest().version,
                ..Committed::default()
            });
        }
        let result = self.write(writer, embed);
        match result {
            Ok(c) => {
                self.known.extend(self.staged.drain());
                self.pending.clear();
                self.derived.clear();
                if let Err(e) = self.refresh() {
                    tracing::warn!("committed; re-reading the store failed (retried later): {e}");
                }
                self.after_commit(writer, embed);
                Ok(c)
            }
            Err(e) => {
                self.discard();
                Err(e)
            }
        }
    }

    fn write(
        &mut self,
        writer: &mut StoreWriter,
        embed: &mut EmbedFn<'_>,
    ) -> Result<Committed, EngineError> {
        let t = Instant::now();
        let (data, fresh_terms, sources, emb) = self.vectors(embed)?;
        let embed_seconds = t.elapsed().as_secs_f64();
        let unique = fresh_terms.len();
        for (d, s) in self.derived.iter_mut().zip(sources) {
            d.terms = match s {
                Source::Stored(terms) => terms,
                Source::Fresh(slot) => fresh_terms[slot].clone(),
            };
        }
        derive_from_vectors(
            self.keys.store(),
            writer,
            &self.pending,
            &data,
            &mut self.derived,
        );
        let first_id = writer.manifest().next_item_id();
        let report = writer.append_derived(&self.pending, &data, &self.derived)?;
        Ok(Committed {
            first_id,
            manifest_version: report.manifest_version,
            rows: report.segment.rows,
            keys_embedded: unique as u64,
            keys_reused: (self.pending.len() - unique) as u64,
            tokens_embedded: emb.tokens.iter().sum::<usize>() as u64,
            embed_seconds,
        })
    }

    /// The pending items' vectors (stored ones copied, the others embedded once per
    /// distinct key) and the terms of the fresh keys.
    fn vectors(&self, embed: &mut EmbedFn<'_>) -> Result<Vectors, EngineError> {
        let mut slot_of: HashMap<&str, usize> = HashMap::new();
        let mut unique: Vec<&str> = Vec::new();
        let mut stored: Vec<Option<&[f32]>> = Vec::with_capacity(self.pending.len());
        let mut sources = Vec::with_capacity(self.pending.len());
        for it in &self.pending {
            match self.keys.get(&it.key) {
                Some((v, terms)) => {
                    stored.push(Some(v));
                    sources.push(Source::Stored(terms));
                }
                None => {
                    let slot = *slot_of.entry(it.key.as_str()).or_insert_with(|| {
                        unique.push(it.key.as_str());
                        unique.len() - 1
                    });
                    stored.push(None);
                    sources.push(Source::Fresh(slot));
                }
            }
        }
        let dim = self.keys.store().dim();
        let emb = if unique.is_empty() {
            Embeddings {
                dim,
                data: Vec::new(),
                tokens: Vec::new(),
            }
        } else {
            embed(&unique)?
        };
        if emb.dim != dim || emb.data.len() != unique.len() * dim {
            return Err(EngineError::Invalid {
                message: format!(
                    "the encoder returned {} values of dimension {} for {} keys; the store holds dimension {dim}",
                    emb.data.len(),
                    emb.dim,
                    unique.len()
                ),
            });
        }
        let mut data = Vec::with_capacity(self.pending.len() * dim);
        for (v, s) in stored.iter().zip(&sources) {
            match (v, s) {
                (Some(v), _) => data.extend_from_slice(v),
                (None, Source::Fresh(slot)) => data.extend_from_slice(emb.row(*slot)),
                (None, Source::Stored(_)) => unreachable!("stored sources carry their vector"),
            }
        }
        let analyzer = Analyzer::english();
        let terms: Vec<Vec<String>> = if self.parallel {
            unique.par_iter().map(|k| analyzer.terms(k)).collect()
        } else {
            unique.iter().map(|k| analyzer.terms(k)).collect()
        };
        Ok((data, terms, sources, emb))
    }

    /// Re-reads the committed store (after this pipeline's commits, or a delete or compaction
    /// by the same writer) and the idempotency hashes of `sessions` (None: all).
    pub fn refresh(&mut self) -> Result<(), EngineError> {
        self.keys.refresh()?;
        self.stale = false;
        Ok(())
    }

    /// After a delete: the hashes of the touched sessions of `tenant` (None: every session of
    /// the tenant) are re-read from the refreshed store, so a re-append of a forgotten session
    /// stores it again.
    pub fn forget(&mut self, tenant: &str, sessions: Option<&[String]>) -> Result<(), EngineError> {
        self.refresh()?;
        match sessions {
            None => self.known.retain(|(t, _), _| t != tenant),
            Some(ids) => {
                for sid in ids {
                    let key = (tenant.to_string(), sid.clone());
                    match session_hash_of(self.store(), tenant, sid) {
                        Some(h) => self.known.insert(key, h),
                        None => self.known.remove(&key),
                    };
                }
            }
        }
        Ok(())
    }
}

impl AppendPipeline {
    /// Uses `x` for the store's thoughts (a model extractor; its name must be the one the
    /// store records).
    pub fn set_thought_extractor(
        &mut self,
        x: std::sync::Arc<dyn memdex_structures::ThoughtExtractor>,
    ) -> Result<(), EngineError> {
        self.structures = StructureSync::with_extractor(self.store(), x)?;
        Ok(())
    }

    /// Brings the store's structures up to the committed items (new items since the last
    /// sync; deleted items of the tenants touched and of `deleted_in`). A no-op for stores
    /// without structures. Items committed are never undone by a failure here: the
    /// structures stay behind and the next sync catches up.
    pub fn sync_structures(
        &mut self,
        writer: &mut StoreWriter,
        embed: &mut EmbedFn<'_>,
        deleted_in: &[&str],
    ) -> Result<Option<SyncReport>, EngineError> {
        let Some(sync) = self.structures.as_mut() else {
            return Ok(None);
        };
        if self.stale {
            return Ok(None);
        }
        let report = sync.sync(self.keys.store(), writer, embed, deleted_in)?;
        self.last_sync = Some(report.clone());
        Ok(Some(report))
    }

    /// What the last structure sync did (None: none ran).
    pub fn last_sync(&self) -> Option<&SyncReport> {
        self.last_sync.as_ref()
    }

    fn after_commit(&mut self, writer: &mut StoreWriter, embed: &mut EmbedFn<'_>) {
        if let Err(e) = self.sync_structures(writer, embed, &[]) {
            tracing::warn!("committed; the structures stay behind (caught up later): {e}");
        }
    }
}

type Vectors = (Vec<f32>, Vec<Vec<String>>, Vec<Source>, Embeddings);

/// Where a pending item's vector and terms come from.
enum Source {
    Stored(Vec<String>),
    Fresh(usize),
}

/// Idempotency hash of one live session (None: no live items), as in
/// [`Store::session_hashes`].
pub fn session_hash_of(store: &Store, tenant: &str, session_id: &str) -> Option<u64> {
    let mut parts: Vec<(u32, u64)> = Vec::new();
    for s in store.tenant_slices(tenant) {
        for r in (0..s.rows).filter(|&r| s.session_id(r) == session_id) {
            let it = s.item(r);
            parts.push((it.turn, it.content_hash));
        }
    }
    if parts.is_empty() {
        return None;
    }
    parts.sort_unstable();
    Some(session_hash(parts.iter().map(|p| p.1)))
}

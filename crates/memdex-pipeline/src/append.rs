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
use memdex_ingest::{itemize, ItemizeOptions};
use memdex_store::{session_hash, Derived, Store, StoreWriter};
use serde::Serialize;

use crate::batch::{write_batch, Committed, EmbedFn, InFlight, ItemBatch, KeySource};
use crate::extract::Extractors;
use crate::keys::KeyCache;
use crate::structure_sync::StructureSync;
use crate::PipelineError;
use memdex_structures::SyncReport;

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
}

/// What the extractors found, summed since the last [`AppendPipeline::take_extracted`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Items with an extracted event date.
    pub with_events: u64,
    /// Date-shaped words naming no calendar day.
    pub invalid_dates: u64,
}

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
    /// Seconds spent itemizing and extracting since the last [`Self::take_profile`].
    profile: PrepareSeconds,
    extracted: Extracted,
}

/// Where the prepare stage of a build spends its time (busy seconds, summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PrepareSeconds {
    /// Reading and parsing the input into sessions (JSON, dates, session hashes).
    pub read: f64,
    /// Turning sessions into items and checking each against what is stored or admitted.
    pub itemize: f64,
    /// Fact, event and key extraction over the admitted items.
    pub extract: f64,
    /// Cutting batches: which keys are fresh, stored, or in flight.
    pub plan: f64,
}

impl AppendPipeline {
    /// A pipeline over `store` (the committed view the writer appends to), with the
    /// extraction its manifest records.
    pub fn new(
        store: Store,
        itemize: ItemizeOptions,
        parallel: bool,
    ) -> Result<Self, PipelineError> {
        let extract = Extractors::for_store(&store.manifest().extraction)?;
        Ok(Self::with_extractors(store, itemize, extract, parallel))
    }

    /// [`Self::new`] with extractors given by the caller (a model-based fact extractor).
    /// The key context is the store's (its manifest records it), whatever `itemize` says.
    pub fn with_extractors(
        store: Store,
        mut itemize: ItemizeOptions,
        extract: Extractors,
        parallel: bool,
    ) -> Self {
        itemize.context = store.manifest().extraction.key_context;
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
            profile: PrepareSeconds::default(),
            extracted: Extracted::default(),
        }
    }

    /// What the extractors found since the last call.
    pub fn take_extracted(&mut self) -> Extracted {
        std::mem::take(&mut self.extracted)
    }

    /// The itemize, extract and plan seconds since the last call (the read field is the
    /// caller's to fill).
    pub fn take_profile(&mut self) -> PrepareSeconds {
        std::mem::take(&mut self.profile)
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
    pub fn admit(&mut self, sessions: &[Session]) -> Result<Vec<Admitted>, PipelineError> {
        let t = Instant::now();
        let mut mine: HashMap<(String, String), u64> = HashMap::new();
        let mut plans: Vec<(Admitted, Vec<MemoryItem>)> = Vec::with_capacity(sessions.len());
        let mut start = self.pending.len();
        for s in sessions {
            let items = itemize(s, &self.itemize);
            let key = (s.tenant.clone(), s.session_id.clone());
            if items.is_empty() {
                return Err(PipelineError::EmptySession {
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
                    return Err(PipelineError::SessionConflict {
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
        self.profile.itemize += t.elapsed().as_secs_f64();
        let mut admitted = Vec::with_capacity(plans.len());
        for (a, items) in plans {
            self.pending.extend(items);
            admitted.push(a);
        }
        if !self.defers_extraction() {
            self.extract_pending();
        }
        Ok(admitted)
    }

    /// A batch job with rule extractors extracts a whole batch at once, when it is cut: one
    /// parallel pass over thousands of items instead of one per session of a few (a model
    /// extractor keeps its per-request batches; a server extracts each request inline).
    fn defers_extraction(&self) -> bool {
        self.parallel && !self.extract.batched()
    }

    /// Runs the extractors over the pending items not extracted yet.
    fn extract_pending(&mut self) {
        let from = self.derived.len();
        if from == self.pending.len() {
            return;
        }
        let t = Instant::now();
        let (derived, bad) = self
            .extract
            .derive_all(&mut self.pending[from..], self.parallel);
        self.extracted.with_events +=
            derived.iter().filter(|d| !d.events.is_empty()).count() as u64;
        self.extracted.invalid_dates += bad;
        self.derived.extend(derived);
        self.profile.extract += t.elapsed().as_secs_f64();
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
    ) -> Result<Committed, PipelineError> {
        if self.stale {
            self.refresh()?;
        }
        let Some(batch) = self.cut(&mut InFlight::default()) else {
            // catches up on what an earlier sync did not finish
            self.after_commit(writer, embed);
            return Ok(Committed {
                first_id: writer.manifest().next_item_id(),
                manifest_version: writer.manifest().version,
                ..Committed::default()
            });
        };
        let t = Instant::now();
        let emb = batch.embed(embed, self.keys.store().dim());
        let embed_seconds = t.elapsed().as_secs_f64();
        let sessions = batch.sessions.clone();
        let result = emb.and_then(|emb| write_batch(writer, &mut self.keys, batch, emb, None));
        match result {
            Ok(mut c) => {
                c.embed_seconds = embed_seconds;
                self.stale = self.keys.stale();
                self.after_commit(writer, embed);
                Ok(c)
            }
            Err(e) => {
                // the batch's sessions went to `known` when it was cut: not stored after all
                for s in sessions {
                    self.known.remove(&s);
                }
                Err(e)
            }
        }
    }

    /// Moves what is admitted into a [`ItemBatch`] whose key vectors are planned: a live row's
    /// (`Stored`), a key of an earlier batch of this run still in flight (`Earlier`, in
    /// `inflight`), or embedded with this batch. The batch's sessions count as stored from
    /// now on (a later failure fails the whole run or request).
    pub fn cut(&mut self, inflight: &mut InFlight) -> Option<ItemBatch> {
        if self.pending.is_empty() {
            self.staged.clear();
            return None;
        }
        self.extract_pending();
        let t = Instant::now();
        let items = std::mem::take(&mut self.pending);
        let derived = std::mem::take(&mut self.derived);
        let sessions: Vec<(String, String)> = self.staged.keys().cloned().collect();
        self.known.extend(self.staged.drain());
        let mut slot_of: HashMap<String, usize> = HashMap::new();
        let mut fresh: Vec<String> = Vec::new();
        let sources = items
            .iter()
            .map(|it| {
                if self.keys.get(&it.key).is_some() {
                    KeySource::Stored
                } else if let Some(&slot) = slot_of.get(&it.key) {
                    KeySource::Fresh(slot)
                } else if inflight.contains(&it.key) {
                    KeySource::Earlier
                } else {
                    fresh.push(it.key.clone());
                    slot_of.insert(it.key.clone(), fresh.len() - 1);
                    inflight.insert(&it.key);
                    KeySource::Fresh(fresh.len() - 1)
                }
            })
            .collect();
        let fresh_words = self.new_words(&fresh, inflight);
        self.profile.plan += t.elapsed().as_secs_f64();
        Some(ItemBatch {
            items,
            derived,
            sources,
            fresh,
            fresh_words,
            parallel: self.parallel,
            sessions,
        })
    }

    /// The terms of `fresh` keys that neither the store's word table nor a batch in flight
    /// has, each with the first word seen for it.
    fn new_words(&self, fresh: &[String], inflight: &mut InFlight) -> Vec<(String, String)> {
        let analyzer = memdex_score::text::Analyzer::english();
        let table = self.keys.store().words();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for key in fresh {
            for (term, word) in analyzer.expansion_words(key, &mut seen) {
                if inflight.take_term(&term, table) {
                    out.push((term, word));
                }
            }
        }
        out
    }

    /// Re-reads the committed store (after this pipeline's commits, or a delete or compaction
    /// by the same writer) and the idempotency hashes of `sessions` (None: all).
    pub fn refresh(&mut self) -> Result<(), PipelineError> {
        self.keys.refresh()?;
        self.stale = false;
        Ok(())
    }

    /// The pipeline's key cache (the build's writer stage keeps its own, see `build`).
    pub fn keys(&self) -> &KeyCache {
        &self.keys
    }

    /// After a delete: the hashes of the touched sessions of `tenant` (None: every session of
    /// the tenant) are re-read from the refreshed store, so a re-append of a forgotten session
    /// stores it again.
    pub fn forget(
        &mut self,
        tenant: &str,
        sessions: Option<&[String]>,
    ) -> Result<(), PipelineError> {
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
    ) -> Result<(), PipelineError> {
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
    ) -> Result<Option<SyncReport>, PipelineError> {
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

use std::collections::HashMap;
use std::time::Instant;

use memdex_core::{MemoryItem, OnError, TextKind};
use memdex_embed::Embedder;
use memdex_extract::time::ms_day;
use memdex_extract::{expand_key, extract_events, invalid_dates, FactExtractor, HeuristicFacts};
use memdex_index::text::Analyzer;
use memdex_ingest::{itemize, ItemizeOptions, SessionSource};
use memdex_store::{session_hash, Derived, Extraction, Manifest, Store, StoreWriter};
use rayon::prelude::*;
use serde::Serialize;

use crate::EngineError;

/// How an index run behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexOptions {
    pub itemize: ItemizeOptions,
    /// `abort`: stop at the first bad record or conflicting session; every session before it
    /// is committed (a re-run skips those), nothing after it is read. `skip`: report and go on.
    pub on_error: OnError,
    /// Items per segment: pending items are embedded and committed once this many collect
    /// (always at a session boundary). Bounds memory and the work a crash can lose.
    pub flush_items: usize,
    pub extract: ExtractOptions,
}

/// What is extracted from each item at index time (LongMemEval §5.3–5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Event dates in the value, resolved against the session date, into the `events` column
    /// (the ranking's time stage reads them).
    pub events: bool,
    /// Key expansion: facts from the value are prepended to the key before embedding and
    /// BM25, and kept in the `facts` column.
    pub facts: bool,
    /// FragRel's semantic relation: each new item's `m` most similar items of its tenant
    /// (cosine over the stored vectors, weight `max(0, cos)`) into the `neighbors` columns
    /// (0: off).
    pub neighbors: usize,
}

impl Default for ExtractOptions {
    /// Both on: the time stage needs events, and key expansion raised every LoCoMo dev
    /// metric (docs/evaluation.md).
    fn default() -> Self {
        Self {
            events: true,
            facts: true,
            neighbors: 0,
        }
    }
}

impl ExtractOptions {
    /// The manifest record of these settings with the built-in extractor.
    pub fn extraction(&self) -> Extraction {
        Extraction {
            events: self.events,
            facts: self
                .facts
                .then(|| HeuristicFacts::default().name().to_string()),
            neighbors: self.neighbors,
        }
    }
}

/// Extracts events and facts from `item` (expanding its key when `facts` is given).
pub fn derive_item(
    item: &mut MemoryItem,
    events: bool,
    facts: Option<&dyn FactExtractor>,
) -> Derived {
    let anchor = ms_day(item.timestamp_ms);
    let mut d = Derived::default();
    if let (true, Some(a)) = (events, anchor) {
        for e in extract_events(&item.value, a) {
            let (start, end) = e.range.to_ms();
            d.events.extend([start, end]);
        }
    }
    if let Some(f) = facts {
        let found = f.extract(&item.value, anchor);
        if !found.is_empty() {
            item.key = expand_key(&found, &item.key);
            d.facts = found.join("\n");
        }
    }
    d
}

/// Callbacks for progress display.
pub trait IndexProgress {
    fn on_session(&mut self) {}
    fn on_embedded(&mut self, _items: usize) {}
    fn on_committed(&mut self, _rows: u64) {}
}

impl IndexProgress for () {}

/// What an index run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IndexReport {
    pub sessions_read: u64,
    pub sessions_indexed: u64,
    /// Already stored with identical content: skipped (idempotent re-runs).
    pub sessions_unchanged: u64,
    /// Bad records and conflicting sessions skipped under `--on-error skip`.
    pub sessions_rejected: u64,
    pub items_written: u64,
    /// Key texts run through the model: each distinct key once per store.
    pub keys_embedded: u64,
    /// Items whose key was already embedded (earlier in this run, in another tenant, or in an
    /// earlier run): their vector was copied, not recomputed.
    pub keys_reused: u64,
    pub tokens_embedded: u64,
    /// Items with at least one extracted event date.
    pub items_with_events: u64,
    /// Date-shaped words that name no calendar day (`2023-02-30`): counted, not fatal; the
    /// item keeps its session date.
    pub invalid_dates: u64,
    pub segments_written: u64,
    pub embed_seconds: f64,
    pub seconds: f64,
    /// Messages of rejected records, with file and line.
    pub errors: Vec<String>,
}

/// Reads every session of `source`, embeds its items and appends them to `writer`, with the
/// built-in fact extractor when `opts.extract.facts` is on.
pub fn index_sessions<S: SessionSource>(
    source: S,
    writer: &mut StoreWriter,
    embedder: &Embedder,
    opts: &IndexOptions,
    progress: &mut dyn IndexProgress,
) -> Result<IndexReport, EngineError> {
    let heuristic = HeuristicFacts::default();
    let facts: Option<&dyn FactExtractor> = opts.extract.facts.then_some(&heuristic);
    index_sessions_with(source, writer, embedder, opts, facts, progress)
}

/// [`index_sessions`] with any [`FactExtractor`] (a model-based one, say); `facts` overrides
/// `opts.extract.facts`. The store must have been created with the same extraction settings.
pub fn index_sessions_with<S: SessionSource>(
    mut source: S,
    writer: &mut StoreWriter,
    embedder: &Embedder,
    opts: &IndexOptions,
    facts: Option<&dyn FactExtractor>,
    progress: &mut dyn IndexProgress,
) -> Result<IndexReport, EngineError> {
    let start = Instant::now();
    let store = Store::open(writer.dir())?;
    let mut known: HashMap<(String, String), u64> = store.session_hashes();
    let mut batch = Batch {
        writer,
        embedder,
        cache: KeyCache::new(store),
        pending: Vec::new(),
        derived: Vec::new(),
        report: IndexReport::default(),
        progress,
    };
    let mut failure: Option<EngineError> = None;

    for next in source.by_ref() {
        let session = match next {
            Ok(s) => s,
            Err(e) => {
                failure = Some(e.into());
                break;
            }
        };
        batch.report.sessions_read += 1;
        batch.progress.on_session();
        let mut items = itemize(&session, &opts.itemize);
        // the hash covers the items as read, so changing extractors never makes a stored
        // session look changed
        let hash = session_hash(items.iter().map(|i| i.content_hash));
        let key = (session.tenant.clone(), session.session_id.clone());
        match known.get(&key) {
            Some(&h) if h == hash => {
                batch.report.sessions_unchanged += 1;
                continue;
            }
            Some(_) => {
                let err = EngineError::SessionConflict {
                    tenant: key.0,
                    session_id: key.1,
                    origin: "same tenant and session id".into(),
                };
                if opts.on_error == OnError::Skip {
                    tracing::warn!("skipping: {err}");
                    batch.report.sessions_rejected += 1;
                    batch.report.errors.push(err.to_string());
                    continue;
                }
                failure = Some(err);
                break;
            }
            None => {}
        }
        known.insert(key, hash);
        batch.report.sessions_indexed += 1;
        let derived: Vec<Derived> = items
            .par_iter_mut()
            .map(|it| derive_item(it, opts.extract.events, facts))
            .collect();
        if opts.extract.events {
            let r = &mut batch.report;
            r.items_with_events += derived.iter().filter(|d| !d.events.is_empty()).count() as u64;
            r.invalid_dates += items
                .iter()
                .map(|it| invalid_dates(&it.value) as u64)
                .sum::<u64>();
        }
        batch.derived.extend(derived);
        batch.pending.extend(items);
        if batch.pending.len() >= opts.flush_items {
            batch.flush()?;
        }
    }
    batch.flush()?;
    let mut report = batch.report;
    for e in source.skipped() {
        report.sessions_rejected += 1;
        report.errors.push(e.to_string());
    }
    report.seconds = start.elapsed().as_secs_f64();
    match failure {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// Where each distinct key's vector already lives: rows of committed segments, found by
/// key hash (and confirmed by comparing the key text).
struct KeyCache {
    store: Store,
    rows: HashMap<u64, (u32, u32)>,
}

impl KeyCache {
    fn new(store: Store) -> Self {
        let mut cache = KeyCache {
            store,
            rows: HashMap::new(),
        };
        cache.add_segments(0);
        cache
    }

    fn add_segments(&mut self, from: usize) {
        for (si, seg) in self.store.segments().iter().enumerate().skip(from) {
            for (row, &h) in seg.key_hashes().iter().enumerate() {
                self.rows.entry(h).or_insert((si as u32, row as u32));
            }
        }
    }

    /// The stored vector of `key`, if any.
    fn get(&self, key: &str) -> Option<(&[f32], Vec<String>)> {
        let &(si, row) = self.rows.get(&memdex_core::content_hash(key.as_bytes()))?;
        let (seg, row) = (&self.store.segments()[si as usize], row as usize);
        let dim = self.store.dim();
        (seg.key(row) == key).then(|| {
            let terms = seg.terms(row).map(str::to_string).collect();
            (&seg.embeddings()[row * dim..(row + 1) * dim], terms)
        })
    }

    /// Re-reads the manifest after a commit and indexes the new segments' keys.
    fn refresh(&mut self) -> Result<(), EngineError> {
        let seen = self.store.segments().len();
        self.store.refresh()?;
        self.add_segments(seen);
        Ok(())
    }
}

/// Items waiting to be embedded and committed, with what committing needs.
struct Batch<'a> {
    writer: &'a mut StoreWriter,
    embedder: &'a Embedder,
    cache: KeyCache,
    pending: Vec<MemoryItem>,
    /// Events and facts of `pending` (terms are added at flush).
    derived: Vec<Derived>,
    report: IndexReport,
    progress: &'a mut dyn IndexProgress,
}

impl Batch<'_> {
    /// Embeds the pending keys not stored yet (each distinct key once) and commits the
    /// pending items as one segment.
    fn flush(&mut self) -> Result<(), EngineError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let t = Instant::now();
        enum Source<'a> {
            Stored(&'a [f32], Vec<String>),
            Fresh(usize),
        }
        let mut slot_of: HashMap<&str, usize> = HashMap::new();
        let mut unique: Vec<&str> = Vec::new();
        let sources: Vec<Source<'_>> = self
            .pending
            .iter()
            .map(|it| match self.cache.get(&it.key) {
                Some((v, terms)) => Source::Stored(v, terms),
                None => Source::Fresh(*slot_of.entry(it.key.as_str()).or_insert_with(|| {
                    unique.push(it.key.as_str());
                    unique.len() - 1
                })),
            })
            .collect();
        let progress = &mut *self.progress;
        let emb = self
            .embedder
            .embed_with_progress(&unique, TextKind::Passage, &mut |n| progress.on_embedded(n))?;
        let dim = emb.dim;
        let mut data = Vec::with_capacity(self.pending.len() * dim);
        for s in &sources {
            match s {
                Source::Stored(v, _) => data.extend_from_slice(v),
                Source::Fresh(slot) => data.extend_from_slice(emb.row(*slot)),
            }
        }
        let report = &mut self.report;
        report.embed_seconds += t.elapsed().as_secs_f64();
        report.keys_embedded += unique.len() as u64;
        report.keys_reused += (self.pending.len() - unique.len()) as u64;
        report.tokens_embedded += emb.tokens.iter().sum::<usize>() as u64;
        let fresh_terms: Vec<Vec<String>> = {
            let analyzer = Analyzer::english();
            unique.par_iter().map(|k| analyzer.terms(k)).collect()
        };
        for (d, s) in self.derived.iter_mut().zip(sources) {
            d.terms = match s {
                Source::Stored(_, t) => t,
                Source::Fresh(slot) => fresh_terms[slot].clone(),
            };
        }
        derive_from_vectors(
            &self.cache.store,
            self.writer.manifest(),
            &self.pending,
            &data,
            &mut self.derived,
        );
        let committed = self
            .writer
            .append_derived(&self.pending, &data, &self.derived)?;
        report.items_written += committed.segment.rows;
        report.segments_written += 1;
        self.progress.on_committed(committed.segment.rows);
        self.pending.clear();
        self.derived.clear();
        self.cache.refresh()
    }
}

/// Fills what needs the items' vectors, as the store's manifest asks: FragRel semantic
/// neighbours (`extraction.neighbors > 0`) and TiM bucket ids (`lsh`). Shared by
/// [`index_sessions`] and the server's writer thread.
pub(crate) fn derive_from_vectors(
    store: &Store,
    manifest: &Manifest,
    items: &[MemoryItem],
    data: &[f32],
    derived: &mut [Derived],
) {
    let m = manifest.extraction.neighbors;
    if m > 0 {
        for (d, n) in derived.iter_mut().zip(neighbors(store, items, data, m)) {
            d.neighbors = n;
        }
    }
    if let Some(meta) = manifest.lsh {
        let ids = crate::lsh::bucket_ids(&crate::lsh::projections(&meta), data);
        let t = meta.tables as usize;
        for (d, ids) in derived.iter_mut().zip(ids.chunks_exact(t)) {
            d.lsh = ids.to_vec();
        }
    }
}

/// The `m` most similar items (tenant position, `max(0, cos)`) of each pending item among its
/// tenant's stored items and the other pending items of that tenant, whose positions follow
/// the stored ones in input order (as the writer assigns them).
pub(crate) fn neighbors(
    store: &Store,
    pending: &[MemoryItem],
    data: &[f32],
    m: usize,
) -> Vec<Vec<(u64, f32)>> {
    let dim = store.dim();
    let mut next = store.next_positions();
    let mut by_tenant: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut position = vec![0u64; pending.len()];
    for (i, it) in pending.iter().enumerate() {
        let p = next.entry(it.tenant.clone()).or_insert(0);
        position[i] = *p;
        *p += 1;
        by_tenant.entry(it.tenant.as_str()).or_default().push(i);
    }
    let mut out = vec![Vec::new(); pending.len()];
    for (tenant, rows) in by_tenant {
        let slices = store.tenant_slices(tenant);
        let fresh: Vec<f32> = rows
            .iter()
            .flat_map(|&i| data[i * dim..(i + 1) * dim].iter().copied())
            .collect();
        let mut blocks: Vec<&[f32]> = slices.iter().map(|s| s.embeddings(dim)).collect();
        blocks.push(&fresh);
        let found: Vec<Vec<(u64, f32)>> = rows
            .par_iter()
            .map(|&i| {
                memdex_index::top_k(&data[i * dim..(i + 1) * dim], &blocks, dim, m + 1)
                    .into_iter()
                    .map(|h| {
                        let (b, r) = (h.block as usize, h.row as usize);
                        let pos = match slices.get(b) {
                            Some(s) => s.positions()[r],
                            None => position[rows[r]],
                        };
                        (pos, h.score.max(0.0))
                    })
                    .filter(|&(p, w)| p != position[i] && w > 0.0)
                    .take(m)
                    .collect()
            })
            .collect();
        for (&i, n) in rows.iter().zip(found) {
            out[i] = n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use memdex_core::Role;

    use super::*;

    fn item(text: &str) -> MemoryItem {
        MemoryItem {
            tenant: "t".into(),
            session_id: "s".into(),
            turn: 0,
            // 2023-05-08 10:00 UTC
            timestamp_ms: 1_683_540_000_000,
            role: Role::User,
            value: text.into(),
            key: text.into(),
            content_hash: 0,
        }
    }

    #[test]
    fn events_are_resolved_against_the_session_date() {
        let mut it = item("Caroline: I went to a support group yesterday.");
        let d = derive_item(&mut it, true, None);
        // 7 May 2023, the whole UTC day
        assert_eq!(d.events, [1_683_417_600_000, 1_683_503_999_999]);
        assert!(d.facts.is_empty());
        assert_eq!(it.key, it.value, "no facts: key unchanged");
        assert!(derive_item(&mut item("hello there"), true, None)
            .events
            .is_empty());
        assert!(derive_item(&mut it, false, None).events.is_empty());
    }

    #[test]
    fn neighbours_cover_stored_and_pending_items_but_not_the_item_itself() {
        use memdex_core::{Granularity, ModelInfo, Pooling};
        let tmp = tempfile::tempdir().expect("tempdir");
        let model = ModelInfo {
            name: "m".into(),
            fingerprint: "f".into(),
            dim: 2,
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 8,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        };
        let mut w = StoreWriter::open_or_create(tmp.path(), &model, Granularity::Turn, None)
            .expect("store");
        let mut other = item("x");
        other.tenant = "other".into();
        // stored: t@0 = (1, 0), other@0 = (0.6, 0.8) (another tenant: never a neighbour)
        w.append(&[item("a"), other], &[1.0, 0.0, 0.6, 0.8])
            .expect("append");
        let store = Store::open(tmp.path()).expect("open");
        // pending: t@1 = (0.8, 0.6), t@2 = (0, 1)
        let pending = [item("b"), item("c")];
        let data = [0.8, 0.6, 0.0, 1.0];
        let n = neighbors(&store, &pending, &data, 2);
        assert_eq!(n.len(), 2);
        let pos = |v: &[(u64, f32)]| v.iter().map(|e| e.0).collect::<Vec<_>>();
        assert_eq!(
            pos(&n[0]),
            [0, 2],
            "stored item first (cos 0.8), then pending (0.6)"
        );
        assert!((n[0][0].1 - 0.8).abs() < 1e-6 && (n[0][1].1 - 0.6).abs() < 1e-6);
        // (0, 1) vs (1, 0): cosine 0, weight 0 → dropped
        assert_eq!(pos(&n[1]), [1]);
    }

    #[test]
    fn facts_are_prepended_to_the_key_and_kept() {
        let facts = HeuristicFacts::default();
        let mut it = item("Caroline: I went to a support group yesterday.");
        let d = derive_item(&mut it, true, Some(&facts));
        assert!(d.facts.starts_with("Caroline went"), "{}", d.facts);
        assert!(it.key.starts_with("Caroline went"), "{}", it.key);
        assert_eq!(
            d.events.len(),
            2,
            "the resolved date is in the events column"
        );
        assert!(it.key.ends_with(&it.value), "value kept after the facts");
        assert_eq!(it.value, "Caroline: I went to a support group yesterday.");
    }
}

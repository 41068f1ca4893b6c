use std::collections::HashMap;
use std::time::Instant;

use memdex_core::{MemoryItem, OnError, TextKind};
use memdex_embed::Embedder;
use memdex_index::text::Analyzer;
use memdex_ingest::{itemize, ItemizeOptions, SessionSource};
use memdex_store::{session_hash, Store, StoreWriter};
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
    pub segments_written: u64,
    pub embed_seconds: f64,
    pub seconds: f64,
    /// Messages of rejected records, with file and line.
    pub errors: Vec<String>,
}

/// Reads every session of `source`, embeds its items and appends them to `writer`.
pub fn index_sessions<S: SessionSource>(
    mut source: S,
    writer: &mut StoreWriter,
    embedder: &Embedder,
    opts: &IndexOptions,
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
        let items = itemize(&session, &opts.itemize);
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
        let terms: Vec<Vec<String>> = sources
            .into_iter()
            .map(|s| match s {
                Source::Stored(_, t) => t,
                Source::Fresh(slot) => fresh_terms[slot].clone(),
            })
            .collect();
        // TiM LSH bucket ids, when the store hashes (its manifest records the projection)
        let lsh_ids = match self.writer.manifest().lsh {
            Some(meta) => crate::lsh::bucket_ids(&crate::lsh::projections(&meta), &data),
            None => Vec::new(),
        };
        let committed = self
            .writer
            .append_with_lsh(&self.pending, &data, &terms, &lsh_ids)?;
        report.items_written += committed.segment.rows;
        report.segments_written += 1;
        self.progress.on_committed(committed.segment.rows);
        self.pending.clear();
        self.cache.refresh()
    }
}

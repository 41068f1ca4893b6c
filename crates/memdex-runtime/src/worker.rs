//! The engine's two threads: the model thread (token-budget batching of embedding jobs) and
//! the writer thread (group commit of appends, deletes, compaction). See `engine`.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use memdex_core::{MemoryItem, Session, TextKind};
use memdex_embed::{Embedder, Embeddings};
use memdex_extract::{FactExtractor, HeuristicFacts};
use memdex_index::text::Analyzer;
use memdex_ingest::{itemize, ItemizeOptions};
use memdex_store::{session_hash, CompactReport, Derived, Store, StoreWriter};
use tokio::sync::oneshot;

use crate::engine::{
    internal, AppendReport, DeleteReport, DeleteTarget, EngineOptions, EngineStats, SessionOutcome,
    Snapshot,
};
use crate::indexer::{derive_from_vectors, derive_item};
use crate::scan::{DeviceScan, ScanRequest};
use crate::EngineError;

type Reply<T> = oneshot::Sender<Result<T, EngineError>>;

/// Texts to embed for one caller.
#[derive(Debug)]
pub(crate) struct EmbedJob {
    pub texts: Vec<String>,
    pub kind: TextKind,
    /// A search's query (one text) with its tenant's rows: scored on the device together
    /// with the batch's other searches when the engine scans there.
    pub scan: Option<ScanRequest>,
    pub reply: Reply<Embedded>,
}

/// What the model thread answers: the vectors, and for a search scored on the device the
/// dense scores of its tenant's live rows (timeline order).
#[derive(Debug)]
pub struct Embedded {
    pub vectors: Embeddings,
    pub dense: Option<Vec<f32>>,
}

/// Work for the writer thread.
#[derive(Debug)]
pub(crate) enum WriteJob {
    Append {
        sessions: Vec<Session>,
        reply: Reply<AppendReport>,
    },
    Delete {
        target: DeleteTarget,
        reply: Reply<DeleteReport>,
    },
    Compact {
        reply: Reply<CompactReport>,
    },
}

/// The model thread: waits for a job, then takes more while their estimated tokens fit the
/// budget, embeds each text kind in one call and answers every job with its rows.
pub(crate) fn embed_loop(
    embedder: Embedder,
    rx: Receiver<EmbedJob>,
    budget: usize,
    stats: &EngineStats,
    mut scan: Option<DeviceScan>,
) {
    let max_len = embedder.info().max_length.max(1);
    let estimate =
        |j: &EmbedJob| -> usize { j.texts.iter().map(|t| (t.len() / 4 + 2).min(max_len)).sum() };
    while let Ok(first) = rx.recv() {
        stats.embed_queue_depth.fetch_sub(1, Ordering::Relaxed);
        let mut tokens = estimate(&first);
        let mut jobs = vec![first];
        while tokens < budget {
            match rx.try_recv() {
                Ok(j) => {
                    stats.embed_queue_depth.fetch_sub(1, Ordering::Relaxed);
                    tokens += estimate(&j);
                    jobs.push(j);
                }
                Err(_) => break,
            }
        }
        let (queries, passages): (Vec<_>, Vec<_>) =
            jobs.into_iter().partition(|j| j.kind == TextKind::Query);
        embed_group(&embedder, queries, TextKind::Query, stats, scan.as_mut());
        embed_group(&embedder, passages, TextKind::Passage, stats, None);
    }
}

/// Dense scores of the group's searches (jobs with a scan request), by job index; None for
/// the others, or for all when the device fails (the ranking then scores on the CPU).
fn scan_group(
    scan: &mut DeviceScan,
    group: &[EmbedJob],
    e: &Embeddings,
    stats: &EngineStats,
) -> Vec<Option<Vec<f32>>> {
    let mut out = vec![None; group.len()];
    let mut rows = Vec::new();
    let (mut reqs, mut which) = (Vec::new(), Vec::new());
    let mut off = 0;
    for (i, j) in group.iter().enumerate() {
        if let (Some(r), 1) = (&j.scan, j.texts.len()) {
            rows.extend_from_slice(e.row(off));
            reqs.push(r);
            which.push(i);
        }
        off += j.texts.len();
    }
    if reqs.is_empty() {
        return out;
    }
    // a failing (or panicking) device costs the scan, never the model thread
    match catch_unwind(AssertUnwindSafe(|| scan.score(&rows, e.dim, &reqs)))
        .unwrap_or_else(|_| Err(candle_core::Error::Msg("the device scan panicked".into())))
    {
        Ok(scores) => {
            stats.scan_batches.fetch_add(1, Ordering::Relaxed);
            stats
                .scan_queries
                .fetch_add(reqs.len() as u64, Ordering::Relaxed);
            for (i, s) in which.into_iter().zip(scores) {
                out[i] = Some(s);
            }
        }
        Err(err) => tracing::warn!(
            "device scan of {} searches failed, ranking scores them: {err}",
            reqs.len()
        ),
    }
    out
}

fn embed_group(
    embedder: &Embedder,
    group: Vec<EmbedJob>,
    kind: TextKind,
    stats: &EngineStats,
    scan: Option<&mut DeviceScan>,
) {
    if group.is_empty() {
        return;
    }
    let texts: Vec<&str> = group
        .iter()
        .flat_map(|j| j.texts.iter().map(String::as_str))
        .collect();
    stats.observe_batch(texts.len());
    let result = catch_unwind(AssertUnwindSafe(|| embedder.embed(&texts, kind)));
    match result {
        Ok(Ok(e)) => {
            let dim = e.dim;
            let mut dense = match scan {
                Some(scan) => scan_group(scan, &group, &e, stats),
                None => vec![None; group.len()],
            };
            let mut off = 0;
            for (i, j) in group.into_iter().enumerate() {
                let n = j.texts.len();
                let rows = Embeddings {
                    dim,
                    data: e.data[off * dim..(off + n) * dim].to_vec(),
                    tokens: e.tokens[off..off + n].to_vec(),
                };
                off += n;
                let _ = j.reply.send(Ok(Embedded {
                    vectors: rows,
                    dense: dense[i].take(),
                }));
            }
        }
        Ok(Err(e)) => {
            let msg = e.to_string();
            for j in group {
                let _ = j
                    .reply
                    .send(Err(internal(format!("embedding failed: {msg}"))));
            }
        }
        Err(_) => {
            tracing::error!("the model panicked on a batch of {} texts", texts.len());
            for j in group {
                let _ = j.reply.send(Err(internal("the model panicked".into())));
            }
        }
    }
}

/// What the writer thread owns.
#[derive(Debug)]
pub(crate) struct WriterState {
    pub writer: StoreWriter,
    /// The writer's own reader view, refreshed after each commit and published as snapshots.
    pub store: Store,
    pub itemize: ItemizeOptions,
    pub embed_tx: SyncSender<EmbedJob>,
    pub snapshot: Arc<RwLock<Arc<Snapshot>>>,
    pub stats: Arc<EngineStats>,
    pub opts: EngineOptions,
}

/// Jobs taken from the queue for one round of commits at most.
const MAX_JOBS_PER_ROUND: usize = 256;

pub(crate) fn writer_loop(mut st: WriterState, rx: Receiver<WriteJob>) {
    let mut known = st.current().session_hashes();
    let mut last_compact = Instant::now();
    let tick = st.opts.compact_every.unwrap_or(Duration::from_secs(3600));
    loop {
        if st.opts.compact_every.is_some() && last_compact.elapsed() >= tick {
            last_compact = Instant::now();
            st.background_compact();
        }
        let first = match rx.recv_timeout(tick) {
            Ok(j) => j,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        st.stats.write_queue_depth.fetch_sub(1, Ordering::Relaxed);
        let mut jobs = vec![first];
        while jobs.len() < MAX_JOBS_PER_ROUND {
            match rx.try_recv() {
                Ok(j) => {
                    st.stats.write_queue_depth.fetch_sub(1, Ordering::Relaxed);
                    jobs.push(j);
                }
                Err(_) => break,
            }
        }
        let mut appends = Vec::new();
        for job in jobs {
            match job {
                WriteJob::Append { sessions, reply } => appends.push((sessions, reply)),
                WriteJob::Delete { target, reply } => {
                    st.commit_appends(std::mem::take(&mut appends), &mut known);
                    let _ = reply.send(st.delete(target, &mut known));
                }
                WriteJob::Compact { reply } => {
                    st.commit_appends(std::mem::take(&mut appends), &mut known);
                    let _ = reply.send(st.compact());
                }
            }
        }
        st.commit_appends(appends, &mut known);
    }
    tracing::info!("writer thread: queue drained, stopping");
}

/// One session of an accepted request: its outcome and where its items start in the group.
type Planned = (SessionOutcome, usize, usize);

impl WriterState {
    fn current(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Re-reads the committed manifest and publishes it to readers. `changed`: the tenants
    /// whose live rows the commit changed (their ranking caches are rebuilt; others kept).
    fn publish(&mut self, changed: Option<&HashSet<String>>) -> Result<(), EngineError> {
        self.store.refresh()?;
        let prev = self.current();
        let snap = Arc::new(Snapshot::succeed(self.store.clone(), &prev, changed));
        // after a store-wide change (compaction, deletes) every tenant's caches are rebuilt in
        // the background; a tenant an append touched rebuilds its own on its next query
        // (rebuilding it here would put tens of ms per tenant on every commit's latency)
        if changed.is_none() {
            snap.warm_all_in_background();
        }
        *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = snap;
        Ok(())
    }

    /// Validates each request on its own (a conflicting session fails only its request), then
    /// embeds and commits all accepted sessions as one segment and answers every caller.
    fn commit_appends(
        &mut self,
        reqs: Vec<(Vec<Session>, Reply<AppendReport>)>,
        known: &mut HashMap<(String, String), u64>,
    ) {
        if reqs.is_empty() {
            return;
        }
        let mut items: Vec<MemoryItem> = Vec::new();
        let mut group_known: HashMap<(String, String), u64> = HashMap::new();
        let mut accepted: Vec<(Reply<AppendReport>, Vec<Planned>)> = Vec::new();
        for (sessions, reply) in reqs {
            let mut mine: HashMap<(String, String), u64> = HashMap::new();
            let mut req_items: Vec<MemoryItem> = Vec::new();
            let mut planned = Vec::new();
            let mut conflict = None;
            for s in &sessions {
                let its = itemize(s, &self.itemize);
                let hash = session_hash(its.iter().map(|i| i.content_hash));
                let key = (s.tenant.clone(), s.session_id.clone());
                let prev = known
                    .get(&key)
                    .or_else(|| group_known.get(&key))
                    .or_else(|| mine.get(&key));
                let status = match prev {
                    Some(&h) if h == hash => "unchanged",
                    Some(_) => {
                        conflict = Some(EngineError::SessionConflict {
                            tenant: key.0,
                            session_id: key.1,
                            origin: "same tenant and session id".into(),
                        });
                        break;
                    }
                    None => "stored",
                };
                let start = items.len() + req_items.len();
                let n = if status == "stored" { its.len() } else { 0 };
                if status == "stored" {
                    mine.insert(key, hash);
                    req_items.extend(its);
                }
                let outcome = SessionOutcome {
                    session_id: s.session_id.clone(),
                    status,
                    item_ids: Vec::new(),
                };
                planned.push((outcome, start, n));
            }
            if let Some(e) = conflict {
                let _ = reply.send(Err(e));
                continue;
            }
            group_known.extend(mine);
            items.extend(req_items);
            accepted.push((reply, planned));
        }
        let result = if items.is_empty() {
            Ok((self.writer.manifest().version, 0))
        } else {
            self.write_items(&items)
        };
        match result {
            Ok((version, first_id)) => {
                known.extend(group_known);
                self.stats
                    .appends_grouped
                    .fetch_add(accepted.len() as u64, Ordering::Relaxed);
                for (reply, planned) in accepted {
                    let mut written = 0;
                    let sessions = planned
                        .into_iter()
                        .map(|(mut o, start, n)| {
                            o.item_ids = (0..n).map(|i| first_id + (start + i) as u64).collect();
                            written += n as u64;
                            o
                        })
                        .collect();
                    let _ = reply.send(Ok(AppendReport {
                        sessions,
                        items_written: written,
                        manifest_version: version,
                    }));
                }
            }
            Err(e) => {
                let msg = e.to_string();
                tracing::error!("append failed: {msg}");
                for (reply, _) in accepted {
                    let _ = reply.send(Err(internal(format!("append not committed: {msg}"))));
                }
            }
        }
    }

    /// Embeds the items' distinct keys through the model thread, commits one segment
    /// (durable) and publishes it. Returns (manifest version, id of `items[0]`).
    fn write_items(&mut self, items: &[MemoryItem]) -> Result<(u64, u64), EngineError> {
        // the store's index-time extraction (events, facts, neighbours), as `memdex index`
        let extraction = self.writer.manifest().extraction.clone();
        let heuristic = HeuristicFacts::default();
        let facts: Option<&dyn FactExtractor> = match &extraction.facts {
            None => None,
            Some(name) if name == heuristic.name() => Some(&heuristic),
            Some(name) => {
                return Err(EngineError::Invalid {
                    message: format!(
                        "the store expands keys with fact extractor {name:?}, which this server does not have"
                    ),
                })
            }
        };
        let mut items = items.to_vec();
        let mut derived: Vec<Derived> = items
            .iter_mut()
            .map(|it| derive_item(it, extraction.events, facts))
            .collect();
        let items = &items[..];
        let mut slot_of: HashMap<&str, usize> = HashMap::new();
        let mut unique: Vec<&str> = Vec::new();
        let slots: Vec<usize> = items
            .iter()
            .map(|it| {
                *slot_of.entry(it.key.as_str()).or_insert_with(|| {
                    unique.push(it.key.as_str());
                    unique.len() - 1
                })
            })
            .collect();
        let vectors = self.embed(&unique)?;
        let dim = self.writer.manifest().model.dim;
        let mut data = Vec::with_capacity(items.len() * dim);
        for &s in &slots {
            data.extend_from_slice(&vectors[s * dim..(s + 1) * dim]);
        }
        let analyzer = Analyzer::english();
        let fresh: Vec<Vec<String>> = unique.iter().map(|k| analyzer.terms(k)).collect();
        for (d, &s) in derived.iter_mut().zip(&slots) {
            d.terms = fresh[s].clone();
        }
        derive_from_vectors(
            &self.store,
            self.writer.manifest(),
            items,
            &data,
            &mut derived,
        );
        let first_id = self.writer.manifest().next_item_id();
        let report = self.writer.append_derived(items, &data, &derived)?;
        self.stats.commits.fetch_add(1, Ordering::Relaxed);
        let changed: HashSet<String> = items.iter().map(|i| i.tenant.clone()).collect();
        self.publish(Some(&changed))?;
        Ok((report.manifest_version, first_id))
    }

    /// Embeds passages through the model thread, in chunks so queries get in between.
    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EngineError> {
        let mut out = Vec::new();
        for chunk in texts.chunks(self.opts.append_chunk.max(1)) {
            let (tx, rx) = oneshot::channel();
            let job = EmbedJob {
                texts: chunk.iter().map(|s| s.to_string()).collect(),
                kind: TextKind::Passage,
                scan: None,
                reply: tx,
            };
            self.stats.embed_queue_depth.fetch_add(1, Ordering::Relaxed);
            if self.embed_tx.send(job).is_err() {
                self.stats.embed_queue_depth.fetch_sub(1, Ordering::Relaxed);
                return Err(EngineError::ShuttingDown);
            }
            let e = rx
                .blocking_recv()
                .map_err(|_| EngineError::ShuttingDown)??;
            out.extend_from_slice(&e.vectors.data);
        }
        Ok(out)
    }

    fn delete(
        &mut self,
        target: DeleteTarget,
        known: &mut HashMap<(String, String), u64>,
    ) -> Result<DeleteReport, EngineError> {
        let snap = self.current();
        let (ids, what) = match &target {
            DeleteTarget::Item { tenant, item_id } => (
                snap.live_ids(tenant, |s, r| s.segment.item_ids()[s.start + r] == *item_id),
                format!("item {item_id} of tenant {tenant:?}"),
            ),
            DeleteTarget::Session { tenant, session_id } => (
                snap.live_ids(tenant, |s, r| s.session_id(r) == session_id),
                format!("session {session_id:?} of tenant {tenant:?}"),
            ),
            DeleteTarget::Tenant { tenant } => (
                snap.live_ids(tenant, |_, _| true),
                format!("tenant {tenant:?}"),
            ),
        };
        if ids.is_empty() {
            return Err(EngineError::NotFound { what });
        }
        // the sessions whose idempotency hash changes (None: every session of the tenant)
        let touched: Option<HashSet<String>> = match &target {
            DeleteTarget::Item { tenant, .. } => {
                let set: HashSet<u64> = ids.iter().copied().collect();
                Some(snap.sessions_of(tenant, &set))
            }
            DeleteTarget::Session { session_id, .. } => Some(HashSet::from([session_id.clone()])),
            DeleteTarget::Tenant { .. } => None,
        };
        drop(snap);
        let version = self.writer.delete_items(&ids)?;
        self.stats.commits.fetch_add(1, Ordering::Relaxed);
        let tenant = match &target {
            DeleteTarget::Item { tenant, .. }
            | DeleteTarget::Session { tenant, .. }
            | DeleteTarget::Tenant { tenant } => tenant.clone(),
        };
        self.publish(Some(&HashSet::from([tenant.clone()])))?;
        match touched {
            None => known.retain(|(t, _), _| *t != tenant),
            Some(sessions) => {
                let snap = self.current();
                for sid in sessions {
                    let key = (tenant.clone(), sid);
                    match snap.session_hash(&key.0, &key.1) {
                        Some(h) => known.insert(key, h),
                        None => known.remove(&key),
                    };
                }
            }
        }
        Ok(DeleteReport {
            items_deleted: ids.len() as u64,
            manifest_version: version,
        })
    }

    /// Compaction keeps every live row, so the idempotency hashes stay as they are.
    fn compact(&mut self) -> Result<CompactReport, EngineError> {
        let report = self.writer.compact(&self.opts.compact)?;
        self.stats.compactions.fetch_add(1, Ordering::Relaxed);
        // compaction keeps every tenant's live rows and their order: all caches stay valid
        self.publish(Some(&HashSet::new()))?;
        Ok(report)
    }

    fn background_compact(&mut self) {
        let m = self.writer.manifest();
        let small = m
            .segments
            .iter()
            .filter(|s| s.rows < self.opts.compact.small_rows)
            .count();
        if m.deleted.is_empty() && small < self.opts.compact_min_small {
            return;
        }
        match self.compact() {
            Ok(r) => tracing::info!(
                "background compaction: {} → {} segments, {} deleted rows removed",
                r.segments_before,
                r.segments_after,
                r.rows_removed
            ),
            Err(e) => tracing::error!("background compaction failed: {e}"),
        }
    }
}

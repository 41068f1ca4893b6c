//! The serving façade: one store, one model, many concurrent callers.
//!
//! * A dedicated **model thread** owns the [`Embedder`]. Callers put embedding jobs on a bounded
//!   queue; the thread takes jobs until a token budget is reached (TEI's queue), embeds them
//!   in one call per text kind and answers each job on its own oneshot channel. A full queue
//!   answers [`EngineError::Busy`] at once.
//! * A dedicated **writer thread** owns the [`StoreWriter`]. Appends waiting on its queue are
//!   group-committed: one segment and one manifest version (fsynced) for all of them, then
//!   each caller is answered. Deletes commit tombstones the same way; compaction runs on
//!   request and in the background.
//! * Readers take an `Arc<Snapshot>`: an immutable view of one manifest version with its
//!   tombstones. The writer publishes a new snapshot after each commit, before it answers, so
//!   readers never wait for writers and a deleted item is never ranked once its delete returned.
//!
//! The tenant is a partition key: a snapshot ranks only the named tenant's live rows (slices
//! of the segments), so another tenant's rows are never candidates.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use memdex_core::{ModelInfo, Session, TextKind};
use memdex_embed::Embedder;
use memdex_ingest::ItemizeOptions;
use memdex_store::{CompactOptions, CompactReport, Store, StoreWriter, TenantSlice};
use serde::Serialize;
use tokio::sync::oneshot;

use crate::rank::{rank, Query, RankOptions, TenantCache};
use crate::scan::{DeviceScan, ScanRequest};
use crate::search::check_columns;
use crate::worker::{embed_loop, writer_loop, EmbedJob, Embedded, WriteJob, WriterState};
use crate::{EngineError, SearchHit};

/// How the engine queues and commits.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Estimated tokens the model thread takes from its queue for one batch.
    pub token_budget: usize,
    /// Embedding jobs waiting at most; one more is refused with `Busy`.
    pub embed_queue: usize,
    /// Write jobs (appends, deletes) waiting at most.
    pub write_queue: usize,
    /// Texts per embedding job sent by the writer, so queries interleave with big appends.
    pub append_chunk: usize,
    /// Background compaction check interval (None: only on request).
    pub compact_every: Option<Duration>,
    /// Background compaction runs when this many segments are small (or any tombstone waits).
    pub compact_min_small: usize,
    pub compact: CompactOptions,
    /// Recorded in a new store's manifest: where the model came from.
    pub model_source: Option<String>,
    /// Score searches' dense stage on the model's device, all searches of a model batch
    /// together whatever their tenants ([`crate::scan`]). None: only when the model runs on
    /// CUDA.
    pub device_scan: Option<bool>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            token_budget: 8192,
            embed_queue: 1024,
            write_queue: 1024,
            append_chunk: 64,
            compact_every: Some(Duration::from_secs(30)),
            compact_min_small: 16,
            compact: CompactOptions::default(),
            model_source: None,
            device_scan: None,
        }
    }
}

/// Counters and gauges for `/metrics`.
#[derive(Debug, Default)]
pub struct EngineStats {
    pub embed_queue_depth: AtomicUsize,
    pub write_queue_depth: AtomicUsize,
    pub embed_batches: AtomicU64,
    /// Texts per model batch: counts per bucket of [`BATCH_BUCKETS`] (+ overflow).
    pub batch_size_buckets: [AtomicU64; BATCH_BUCKETS.len() + 1],
    pub batch_texts: AtomicU64,
    pub commits: AtomicU64,
    pub appends_grouped: AtomicU64,
    pub compactions: AtomicU64,
    pub busy_rejections: AtomicU64,
    /// Model batches whose searches were scored on the device, and those searches.
    pub scan_batches: AtomicU64,
    pub scan_queries: AtomicU64,
}

/// Upper bounds of the batch-size histogram buckets.
pub const BATCH_BUCKETS: [u64; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

impl EngineStats {
    pub(crate) fn observe_batch(&self, texts: usize) {
        self.embed_batches.fetch_add(1, Ordering::Relaxed);
        self.batch_texts.fetch_add(texts as u64, Ordering::Relaxed);
        let i = BATCH_BUCKETS.partition_point(|&b| b < texts as u64);
        self.batch_size_buckets[i].fetch_add(1, Ordering::Relaxed);
    }
}

/// What a caller waits on: the answer of the model or writer thread.
pub type Ticket<T> = oneshot::Receiver<Result<T, EngineError>>;

/// What to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteTarget {
    Item { tenant: String, item_id: u64 },
    Session { tenant: String, session_id: String },
    Tenant { tenant: String },
}

/// What a delete committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeleteReport {
    pub items_deleted: u64,
    pub manifest_version: u64,
}

/// What an append committed, per session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppendReport {
    pub sessions: Vec<SessionOutcome>,
    pub items_written: u64,
    pub manifest_version: u64,
}

/// One appended session: `stored` (with its new item ids) or `unchanged` (already stored with
/// the same content; idempotent retry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionOutcome {
    pub session_id: String,
    pub status: &'static str,
    pub item_ids: Vec<u64>,
}

/// Store size per tenant (live rows).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StoreSummary {
    pub manifest_version: u64,
    pub segments: usize,
    pub bytes: u64,
    pub rows: u64,
    pub deleted_pending: u64,
    pub tenants: usize,
}

/// An immutable view of one committed store version and its tombstones.
#[derive(Debug)]
pub struct Snapshot {
    store: Store,
    deleted: HashSet<u64>,
    cache: TenantCache,
}

impl Snapshot {
    pub(crate) fn new(store: Store) -> Snapshot {
        let deleted = store.manifest().deleted.iter().copied().collect();
        Snapshot {
            store,
            deleted,
            cache: TenantCache::default(),
        }
    }

    /// A view of `store` that keeps `prev`'s ranking caches of every tenant but `changed`
    /// (None: all changed).
    pub(crate) fn succeed(
        store: Store,
        prev: &Snapshot,
        changed: Option<&std::collections::HashSet<String>>,
    ) -> Snapshot {
        let next = Snapshot::new(store);
        if let Some(changed) = changed {
            next.cache.carry_from(&prev.cache, |t| !changed.contains(t));
        }
        next
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Builds the default pipeline's per-tenant caches (memdex BM25, importance, session
    /// groups) of `tenant` and maps its column pages now, so its first query does not pay.
    pub(crate) fn warm(&self, tenant: &str) {
        let slices = self.live_slices(tenant);
        if !slices.is_empty() {
            self.cache.warm(tenant, &slices, self.store.dim());
        }
    }

    /// [`Self::warm`] for every tenant, on a background thread (first queries of a tenant not
    /// warmed yet build its caches themselves).
    pub(crate) fn warm_all_in_background(self: &Arc<Self>) {
        let snap = self.clone();
        let spawned = std::thread::Builder::new()
            .name("memdex-warm".into())
            .spawn(move || {
                let tenants: Vec<String> =
                    snap.store.tenants().keys().map(|t| t.to_string()).collect();
                for t in tenants {
                    snap.warm(&t);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cache warm-up thread not started: {e}");
        }
    }

    pub fn is_deleted(&self, item_id: u64) -> bool {
        self.deleted.contains(&item_id)
    }

    /// The tenant's rows that are not deleted, as contiguous runs in timeline order. Only
    /// these are ever ranked (deletion and tenancy are enforced here, not after ranking).
    pub fn live_slices(&self, tenant: &str) -> Vec<TenantSlice<'_>> {
        let mut out = Vec::new();
        for s in self.store.tenant_slices(tenant) {
            if self.deleted.is_empty() {
                out.push(s);
                continue;
            }
            let ids = &s.segment.item_ids()[s.start..s.start + s.rows];
            let mut run_start = None;
            for (i, id) in ids.iter().enumerate() {
                match (self.deleted.contains(id), run_start) {
                    (false, None) => run_start = Some(i),
                    (true, Some(st)) => {
                        out.push(sub_slice(&s, st, i));
                        run_start = None;
                    }
                    _ => {}
                }
            }
            if let Some(st) = run_start {
                out.push(sub_slice(&s, st, ids.len()));
            }
        }
        out
    }

    /// Live item ids of the tenant that match `pred` (given the slice and row within it).
    pub(crate) fn live_ids(
        &self,
        tenant: &str,
        pred: impl Fn(&TenantSlice<'_>, usize) -> bool,
    ) -> Vec<u64> {
        let mut out = Vec::new();
        for s in self.live_slices(tenant) {
            let ids = &s.segment.item_ids()[s.start..s.start + s.rows];
            out.extend((0..s.rows).filter(|&r| pred(&s, r)).map(|r| ids[r]));
        }
        out
    }

    /// Session ids of the tenant's live items among `ids`.
    pub(crate) fn sessions_of(&self, tenant: &str, ids: &HashSet<u64>) -> HashSet<String> {
        let mut out = HashSet::new();
        for s in self.live_slices(tenant) {
            let seg_ids = &s.segment.item_ids()[s.start..s.start + s.rows];
            for (r, id) in seg_ids.iter().enumerate() {
                if ids.contains(id) {
                    out.insert(s.session_id(r).to_string());
                }
            }
        }
        out
    }

    /// Idempotency hash of one live session (None: no live items), as in `session_hashes`.
    pub(crate) fn session_hash(&self, tenant: &str, session_id: &str) -> Option<u64> {
        let mut parts: Vec<(u32, u64)> = Vec::new();
        for s in self.live_slices(tenant) {
            for r in (0..s.rows).filter(|&r| s.session_id(r) == session_id) {
                let it = s.item(r);
                parts.push((it.turn, it.content_hash));
            }
        }
        if parts.is_empty() {
            return None;
        }
        parts.sort_unstable();
        Some(memdex_store::session_hash(parts.iter().map(|p| p.1)))
    }

    /// Ranks the tenant's live items for a query (text + vector) and returns the top `k`.
    pub fn search(
        &self,
        tenant: &str,
        query: &Query<'_>,
        k: usize,
        opts: &RankOptions,
    ) -> Result<Vec<SearchHit>, EngineError> {
        let slices = self.live_slices(tenant);
        if slices.is_empty() {
            return Err(EngineError::UnknownTenant {
                tenant: tenant.to_string(),
                store: self.store.dir().display().to_string(),
            });
        }
        check_columns(&self.store, opts)?;
        Ok(rank(&self.store, slices, tenant, query, opts, &self.cache).hits(k))
    }

    /// Live rows per tenant.
    pub fn tenant_rows(&self) -> HashMap<String, u64> {
        let mut out: HashMap<String, u64> = HashMap::new();
        for (t, _) in self.store.tenants() {
            let n: usize = self.live_slices(t).iter().map(|s| s.rows).sum();
            if n > 0 {
                out.insert(t.to_string(), n as u64);
            }
        }
        out
    }

    pub fn summary(&self) -> StoreSummary {
        let m = self.store.manifest();
        StoreSummary {
            manifest_version: m.version,
            segments: m.segments.len(),
            bytes: m.segments.iter().map(|s| s.bytes).sum(),
            rows: m.rows().saturating_sub(m.deleted.len() as u64),
            deleted_pending: m.deleted.len() as u64,
            tenants: self.tenant_rows().len(),
        }
    }

    /// Hash of each live session's items, keyed by (tenant, session id): what idempotent
    /// appends compare with.
    pub(crate) fn session_hashes(&self) -> HashMap<(String, String), u64> {
        let mut parts: HashMap<(String, String), Vec<(u32, u64)>> = HashMap::new();
        for seg in self.store.segments() {
            for (row, id) in seg.item_ids().iter().enumerate() {
                if self.deleted.contains(id) {
                    continue;
                }
                let it = seg.item(row);
                parts
                    .entry((it.tenant.to_string(), it.session_id.to_string()))
                    .or_default()
                    .push((it.turn, it.content_hash));
            }
        }
        parts
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_unstable();
                (k, memdex_store::session_hash(v.iter().map(|p| p.1)))
            })
            .collect()
    }
}

fn sub_slice<'a>(s: &TenantSlice<'a>, from: usize, to: usize) -> TenantSlice<'a> {
    TenantSlice {
        segment: s.segment,
        start: s.start + from,
        rows: to - from,
    }
}

/// The serving engine. Cheap to clone; every clone talks to the same threads.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    info: ModelInfo,
    device: String,
    snapshot: Arc<RwLock<Arc<Snapshot>>>,
    embed_tx: Mutex<Option<SyncSender<EmbedJob>>>,
    write_tx: Mutex<Option<SyncSender<WriteJob>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stats: Arc<EngineStats>,
    device_scan: bool,
}

impl Engine {
    /// Opens (or creates) the store in `dir` for `embedder`'s model and starts the model and
    /// writer threads. Refused while another writer holds the store.
    pub fn start(
        dir: &Path,
        embedder: Embedder,
        opts: EngineOptions,
    ) -> Result<Engine, EngineError> {
        let info = embedder.info().clone();
        // an existing store keeps its granularity and extraction; a new one gets `index`'s
        // defaults (round items, event dates and facts)
        let (granularity, extraction) = match memdex_store::Manifest::load(dir) {
            Ok(m) => (m.granularity, m.extraction),
            Err(memdex_store::StoreError::NotAStore { .. }) => (
                memdex_core::Granularity::Round,
                crate::ExtractOptions::default().extraction(),
            ),
            Err(e) => return Err(e.into()),
        };
        let writer = StoreWriter::open_or_create_with(
            dir,
            &info,
            granularity,
            opts.model_source.clone(),
            &extraction,
        )?;
        let store = Store::open_for_model(dir, &info)?;
        let device = memdex_embed::device_name(embedder.device()).to_string();
        let first = Arc::new(Snapshot::new(store.clone()));
        first.warm_all_in_background();
        let snapshot = Arc::new(RwLock::new(first));
        let stats = Arc::new(EngineStats::default());
        let (embed_tx, embed_rx) = sync_channel::<EmbedJob>(opts.embed_queue);
        let (write_tx, write_rx) = sync_channel::<WriteJob>(opts.write_queue);
        let spawn = |name: &str| std::thread::Builder::new().name(name.to_string());
        let device_scan = opts
            .device_scan
            .unwrap_or_else(|| embedder.device().is_cuda());
        let embed_thread = {
            let (stats, budget) = (stats.clone(), opts.token_budget);
            let scan = device_scan.then(|| DeviceScan::new(embedder.device().clone()));
            spawn("memdex-model")
                .spawn(move || embed_loop(embedder, embed_rx, budget, &stats, scan))
                .map_err(|e| internal(format!("cannot start the model thread: {e}")))?
        };
        let state = WriterState {
            writer,
            store,
            itemize: ItemizeOptions::new(granularity),
            embed_tx: embed_tx.clone(),
            snapshot: snapshot.clone(),
            stats: stats.clone(),
            opts,
        };
        let writer_thread = spawn("memdex-writer")
            .spawn(move || writer_loop(state, write_rx))
            .map_err(|e| internal(format!("cannot start the writer thread: {e}")))?;
        Ok(Engine {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                info,
                device,
                snapshot,
                embed_tx: Mutex::new(Some(embed_tx)),
                write_tx: Mutex::new(Some(write_tx)),
                threads: Mutex::new(vec![writer_thread, embed_thread]),
                stats,
                device_scan,
            }),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn model(&self) -> &ModelInfo {
        &self.inner.info
    }

    /// The device the model runs on, in words.
    pub fn device(&self) -> &str {
        &self.inner.device
    }

    pub fn stats(&self) -> &EngineStats {
        &self.inner.stats
    }

    /// The latest committed view (never blocks on the writer).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner
            .snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether searches' dense stage runs on the model's device ([`crate::scan`]).
    pub fn device_scan(&self) -> bool {
        self.inner.device_scan
    }

    /// Queues texts for the model thread; `Busy` when its queue is full.
    pub fn embed(
        &self,
        texts: Vec<String>,
        kind: TextKind,
    ) -> Result<Ticket<Embedded>, EngineError> {
        self.queue(texts, kind, None)
    }

    /// Queues a search's query for the model thread. With the device scan on, the answer also
    /// carries the dense scores of `tenant`'s live rows in `snapshot` (the view to rank), the
    /// batch's searches of all tenants scored together; pass them as [`Query::dense`].
    pub fn embed_query(
        &self,
        text: String,
        tenant: &str,
        snapshot: &Arc<Snapshot>,
    ) -> Result<Ticket<Embedded>, EngineError> {
        let scan = self
            .inner
            .device_scan
            .then(|| ScanRequest::new(snapshot.clone(), tenant));
        self.queue(vec![text], TextKind::Query, scan)
    }

    fn queue(
        &self,
        texts: Vec<String>,
        kind: TextKind,
        scan: Option<ScanRequest>,
    ) -> Result<Ticket<Embedded>, EngineError> {
        let (reply, rx) = oneshot::channel();
        let job = EmbedJob {
            texts,
            kind,
            scan,
            reply,
        };
        send(
            &self.inner.embed_tx,
            job,
            "embedding",
            &self.inner.stats,
            |s| &s.embed_queue_depth,
        )?;
        Ok(rx)
    }

    /// Queues sessions of one tenant for a group commit. The ticket resolves once they are
    /// durable (segment and manifest fsynced) and visible to searches.
    pub fn append(
        &self,
        tenant: &str,
        sessions: Vec<Session>,
    ) -> Result<Ticket<AppendReport>, EngineError> {
        if let Some(s) = sessions.iter().find(|s| s.tenant != tenant) {
            return Err(EngineError::Invalid {
                message: format!(
                    "session {:?} belongs to tenant {:?}",
                    s.session_id, s.tenant
                ),
            });
        }
        let (tx, rx) = oneshot::channel();
        self.write(WriteJob::Append {
            sessions,
            reply: tx,
        })?;
        Ok(rx)
    }

    /// Queues a delete; the ticket resolves once the tombstones are durable and searches no
    /// longer see the items. `NotFound` when nothing live matches.
    pub fn delete(&self, target: DeleteTarget) -> Result<Ticket<DeleteReport>, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteJob::Delete { target, reply: tx })?;
        Ok(rx)
    }

    /// Queues a compaction (deleted rows physically removed, small segments merged).
    pub fn compact(&self) -> Result<Ticket<CompactReport>, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteJob::Compact { reply: tx })?;
        Ok(rx)
    }

    fn write(&self, job: WriteJob) -> Result<(), EngineError> {
        send(&self.inner.write_tx, job, "write", &self.inner.stats, |s| {
            &s.write_queue_depth
        })
    }

    /// Stops taking work, lets both threads finish what is queued (every queued append is
    /// committed and answered) and joins them. Idempotent.
    pub fn shutdown(&self) {
        drop(lock(&self.inner.write_tx).take());
        let mut threads = std::mem::take(&mut *lock(&self.inner.threads));
        // the writer first: it may still need the model thread for queued appends
        if !threads.is_empty() {
            let writer = threads.remove(0);
            if writer.join().is_err() {
                tracing::error!("the writer thread panicked");
            }
        }
        drop(lock(&self.inner.embed_tx).take());
        for t in threads {
            if t.join().is_err() {
                tracing::error!("the model thread panicked");
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn send<J>(
    tx: &Mutex<Option<SyncSender<J>>>,
    job: J,
    queue: &'static str,
    stats: &EngineStats,
    depth: impl Fn(&EngineStats) -> &AtomicUsize,
) -> Result<(), EngineError> {
    let guard = lock(tx);
    let Some(tx) = guard.as_ref() else {
        return Err(EngineError::ShuttingDown);
    };
    depth(stats).fetch_add(1, Ordering::Relaxed);
    match tx.try_send(job) {
        Ok(()) => Ok(()),
        Err(e) => {
            depth(stats).fetch_sub(1, Ordering::Relaxed);
            match e {
                TrySendError::Full(_) => {
                    stats.busy_rejections.fetch_add(1, Ordering::Relaxed);
                    Err(EngineError::Busy { queue })
                }
                TrySendError::Disconnected(_) => Err(EngineError::ShuttingDown),
            }
        }
    }
}

pub(crate) fn internal(message: String) -> EngineError {
    EngineError::Internal { message }
}

//! Batch indexing, overlapped: three stages on their own threads joined by bounded queues, so
//! the encoder — the expensive stage — never waits for parsing or writing:
//!
//! ```text
//!  prepare thread                 calling thread (owns the encoder)     write thread
//!  read → itemize → idempotency →  embed the batch's fresh keys      →  terms, neighbours,
//!  extract → plan keys → cut      ─┘ (queue of 1)                     ─┘ segment (fsync),
//!  a batch every flush_items       (queue of 1)                          key cache refresh
//! ```
//!
//! A batch's keys already held by a live row, or by an earlier batch still in flight, are
//! copied at write time (batches commit in order), so every distinct key is embedded once.
//! Each batch is one committed segment: a kill loses at most the batches in flight, and a
//! re-run skips the committed sessions and reuses their vectors.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

use memdex_core::{OnError, Session, TextKind};
use memdex_embed::{Embeddings, Encoder};
use memdex_ingest::{ItemizeOptions, SessionSource};
use memdex_store::StoreWriter;
use serde::Serialize;

use crate::append::{AppendPipeline, PrepareSeconds, SessionStatus};
use crate::batch::{write_batch, InFlight, ItemBatch};
use crate::extract::Extractors;
use crate::keys::KeyCache;
use crate::structure_sync::StructureSync;
use crate::PipelineError;
use memdex_structures::SyncReport;

/// Default items per segment. Peak memory of a build is about three batches in flight (one
/// being prepared, one queued, one embedding) at ~6 KB an item plus its vector: measured on the
/// realistic M profile (docs/scale.md), 50,000 held 0.9 GB of anonymous memory on a 10 % slice and
/// 10,000 held 0.3 GB; 20,000 keeps a full M build well under 2 GB with few segments.
pub const DEFAULT_FLUSH_ITEMS: usize = 20_000;

/// How an index run behaves.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    pub itemize: ItemizeOptions,
    /// `abort`: stop at the first bad record or conflicting session; every session before it
    /// is committed (a re-run skips those), nothing after it is read. `skip`: report and go on.
    pub on_error: OnError,
    /// Items per segment: pending items are cut into a batch once this many collect (always
    /// at a session boundary). Bounds memory and the work a crash can lose.
    pub flush_items: usize,
    /// memdex's kernels on a device (CUDA): TiM bucket ids of a hashing store are computed
    /// there (`lsh_project`). None: on the CPU.
    pub accel: Option<crate::KernelHandle>,
}

/// Callbacks for progress display, called from the stages' threads.
pub trait IndexProgress: Sync {
    fn on_session(&self) {}
    fn on_embedded(&self, _keys: usize) {}
    /// A segment of `rows` committed; `position`: (input bytes behind it, input bytes).
    fn on_committed(&self, _rows: u64, _position: Option<(u64, u64)>) {}
}

impl IndexProgress for () {}

/// Seconds each stage was busy (not waiting on its queues), and the run's wall time: with the
/// stages overlapped, the busiest one bounds the wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StageSeconds {
    /// Reading, itemizing, idempotency, extraction, key planning.
    pub prepare: f64,
    /// The prepare stage's busy seconds by part.
    pub prepare_parts: PrepareSeconds,
    pub embed: f64,
    /// Terms, neighbours, bucket ids, the segment and manifest (fsynced), key-cache refresh.
    pub write: f64,
    pub wall: f64,
}

/// Rates of a build over its wall time, and each stage's busy seconds over the wall time: with
/// the stages overlapped, the busiest stage bounds the build (the embed stage is the device's
/// share when the model runs on one; prepare and write are the host's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Throughput {
    pub rows_per_s: f64,
    pub keys_per_s: f64,
    pub tokens_per_s: f64,
    pub prepare_busy: f64,
    pub embed_busy: f64,
    pub write_busy: f64,
}

/// What an index run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IndexReport {
    pub sessions_read: u64,
    pub sessions_indexed: u64,
    /// Already stored with identical content: skipped (idempotent re-runs).
    pub sessions_unchanged: u64,
    /// Sessions with no text (every turn blank): nothing to remember, not stored.
    pub sessions_empty: u64,
    /// Bad records and conflicting sessions skipped under `--on-error skip`.
    pub sessions_rejected: u64,
    pub items_written: u64,
    /// Key texts run through the model: each distinct key once per store.
    pub keys_embedded: u64,
    /// Terms added to the store's word table (query expansion's vectors).
    pub words_embedded: u64,
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
    pub stages: StageSeconds,
    /// Messages of rejected records, with file and line.
    pub errors: Vec<String>,
    /// The structures' sync after the last batch (None: the store keeps none).
    pub structures: Option<SyncReport>,
}

impl IndexReport {
    /// Rates over the run's wall time, and how busy each stage was.
    pub fn throughput(&self) -> Throughput {
        let wall = self.stages.wall.max(1e-9);
        Throughput {
            rows_per_s: self.items_written as f64 / wall,
            keys_per_s: self.keys_embedded as f64 / wall,
            tokens_per_s: self.tokens_embedded as f64 / wall,
            prepare_busy: self.stages.prepare / wall,
            embed_busy: self.stages.embed / wall,
            write_busy: self.stages.write / wall,
        }
    }
}

/// Reads every session of `source`, embeds its items with `encoder` and appends them to
/// `writer`, with the extraction the store's manifest records.
pub fn index_sessions<S: SessionSource + Send>(
    source: S,
    writer: &mut StoreWriter,
    encoder: &dyn Encoder,
    opts: &IndexOptions,
    progress: &dyn IndexProgress,
) -> Result<IndexReport, PipelineError> {
    let extract = Extractors::for_store(&writer.manifest().extraction)?;
    index_sessions_with(source, writer, encoder, opts, extract, progress)
}

/// A batch on its way, with where the input stood when it was cut.
struct Cut {
    batch: ItemBatch,
    position: Option<(u64, u64)>,
}

/// [`index_sessions`] with the caller's extractors (a model-based fact extractor, say); the
/// store must record the same extraction.
pub fn index_sessions_with<S: SessionSource + Send>(
    source: S,
    writer: &mut StoreWriter,
    encoder: &dyn Encoder,
    opts: &IndexOptions,
    extract: Extractors,
    progress: &dyn IndexProgress,
) -> Result<IndexReport, PipelineError> {
    let start = Instant::now();
    let store = writer.view()?.clone();
    store.check_model(encoder.info())?;
    let pipeline = AppendPipeline::with_extractors(store.clone(), opts.itemize, extract, true);
    let writer_keys = KeyCache::new(store);
    let dim = encoder.info().dim;
    let (cut_tx, cut_rx) = sync_channel::<Cut>(1);
    let (emb_tx, emb_rx) = sync_channel::<(Cut, Embeddings)>(1);
    let (prep, embed, write) = std::thread::scope(|sc| {
        // the prepare stage's parallel work (extraction) runs on a pool of its own: on the
        // global pool its jobs queued behind the encoder's, and the stage waited on them
        let prep = sc.spawn(|| match prepare_pool() {
            Some(pool) => pool.install(|| prepare(source, pipeline, opts, cut_tx, progress)),
            None => prepare(source, pipeline, opts, cut_tx, progress),
        });
        let write =
            sc.spawn(|| write_stage(writer, writer_keys, emb_rx, progress, opts.accel.as_ref()));
        let embed = embed_stage(encoder, dim, cut_rx, emb_tx, progress);
        (join(prep), embed, join(write))
    });
    let (mut report, prep_failure) = prep?;
    let (embed_report, embed_failure) = embed;
    let (write_report, write_failure) = write?;
    report.keys_embedded = embed_report.keys_embedded;
    report.words_embedded = embed_report.words_embedded;
    report.tokens_embedded = embed_report.tokens_embedded;
    report.embed_seconds = embed_report.embed_seconds;
    report.items_written = write_report.items_written;
    report.segments_written = write_report.segments_written;
    report.keys_reused = write_report.keys_reused;
    report.stages.embed = embed_report.embed_seconds;
    report.stages.write = write_report.stages.write;
    // post-thinking over what was committed, also when a stage failed (the committed
    // batches stay; a re-run catches the structures up either way)
    let synced = sync_structures(writer, encoder);
    report.seconds = start.elapsed().as_secs_f64();
    report.stages.wall = report.seconds;
    // the first failure in pipeline order explains the others (a closed queue)
    match write_failure.or(embed_failure).or(prep_failure) {
        Some(e) => Err(e),
        None => {
            report.structures = synced?;
            Ok(report)
        }
    }
}

/// A thread pool for the prepare stage, one thread per core (None: it could not be built;
/// the global pool serves).
fn prepare_pool() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("memdex-prepare-{i}"))
        .build()
        .ok()
}

/// Brings the store's TiM thoughts and MemTree (when it keeps them) up to the committed
/// items, embedding their texts with `encoder`.
fn sync_structures(
    writer: &mut StoreWriter,
    encoder: &dyn Encoder,
) -> Result<Option<SyncReport>, PipelineError> {
    let store = writer.view()?.clone();
    let Some(mut sync) = StructureSync::for_store(&store) else {
        return Ok(None);
    };
    let mut embed = |t: &[&str]| -> Result<Embeddings, PipelineError> {
        Ok(encoder.embed(t, TextKind::Passage)?)
    };
    sync.sync(&store, writer, &mut embed, &[]).map(Some)
}

fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> Result<T, PipelineError> {
    h.join().map_err(|p| PipelineError::Model {
        message: format!("an index stage panicked: {}", panic_text(&*p)),
    })
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// The prepare stage: reads and admits sessions, cuts a batch every `flush_items` items.
fn prepare<S: SessionSource>(
    mut source: S,
    mut pipeline: AppendPipeline,
    opts: &IndexOptions,
    tx: SyncSender<Cut>,
    progress: &dyn IndexProgress,
) -> (IndexReport, Option<PipelineError>) {
    let mut r = IndexReport::default();
    let mut inflight = InFlight::default();
    let mut failure = None;
    let mut busy = Instant::now();
    let mut send = |pipeline: &mut AppendPipeline, r: &mut IndexReport, busy: &mut Instant, pos| {
        let Some(batch) = pipeline.cut(&mut inflight) else {
            return true;
        };
        r.stages.prepare += busy.elapsed().as_secs_f64();
        let sent = tx
            .send(Cut {
                batch,
                position: pos,
            })
            .is_ok();
        *busy = Instant::now();
        sent
    };
    loop {
        let t = Instant::now();
        let Some(next) = source.next() else { break };
        r.stages.prepare_parts.read += t.elapsed().as_secs_f64();
        let session = match next {
            Ok(s) => s,
            Err(e) => {
                failure = Some(e.into());
                break;
            }
        };
        r.sessions_read += 1;
        progress.on_session();
        if let Err(e) = admit(&mut pipeline, &session, opts.on_error, &mut r) {
            failure = Some(e);
            break;
        }
        if pipeline.pending_items() >= opts.flush_items
            && !send(&mut pipeline, &mut r, &mut busy, source.position())
        {
            return (r, failure); // a later stage stopped; it reports why
        }
    }
    send(&mut pipeline, &mut r, &mut busy, source.position());
    r.stages.prepare += busy.elapsed().as_secs_f64();
    let found = pipeline.take_extracted();
    r.items_with_events = found.with_events;
    r.invalid_dates = found.invalid_dates;
    let read = r.stages.prepare_parts.read;
    r.stages.prepare_parts = PrepareSeconds {
        read,
        ..pipeline.take_profile()
    };
    for e in source.skipped() {
        r.sessions_rejected += 1;
        r.errors.push(e.to_string());
    }
    (r, failure)
}

/// Offers one session; a conflict is skipped or fatal as `on_error` says.
fn admit(
    pipeline: &mut AppendPipeline,
    session: &Session,
    on_error: OnError,
    r: &mut IndexReport,
) -> Result<(), PipelineError> {
    match pipeline.admit(std::slice::from_ref(session)) {
        Ok(admitted) => {
            for a in admitted {
                match a.status {
                    SessionStatus::Stored => r.sessions_indexed += 1,
                    SessionStatus::Unchanged => r.sessions_unchanged += 1,
                }
            }
            Ok(())
        }
        Err(PipelineError::EmptySession { tenant, session_id }) => {
            tracing::warn!("tenant {tenant:?}, session {session_id:?}: no text; not stored");
            r.sessions_empty += 1;
            Ok(())
        }
        Err(e @ PipelineError::SessionConflict { .. }) if on_error == OnError::Skip => {
            tracing::warn!("skipping: {e}");
            r.sessions_rejected += 1;
            r.errors.push(e.to_string());
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The embed stage, on the thread that owns the encoder.
fn embed_stage(
    encoder: &dyn Encoder,
    dim: usize,
    rx: Receiver<Cut>,
    tx: SyncSender<(Cut, Embeddings)>,
    progress: &dyn IndexProgress,
) -> (IndexReport, Option<PipelineError>) {
    let mut r = IndexReport::default();
    for cut in rx {
        let t = Instant::now();
        let mut embed = |keys: &[&str]| -> Result<Embeddings, PipelineError> {
            Ok(encoder
                .embed_with_progress(keys, TextKind::Passage, &mut |n| progress.on_embedded(n))?)
        };
        let emb = match cut.batch.embed(&mut embed, dim) {
            Ok(e) => e,
            Err(e) => return (r, Some(e)),
        };
        r.embed_seconds += t.elapsed().as_secs_f64();
        r.keys_embedded += cut.batch.fresh.len() as u64;
        r.words_embedded += cut.batch.fresh_words.len() as u64;
        r.tokens_embedded += emb.tokens.iter().sum::<usize>() as u64;
        if tx.send((cut, emb)).is_err() {
            break; // the write stage stopped; it reports why
        }
    }
    (r, None)
}

/// The write stage: one segment per batch, in order.
fn write_stage(
    writer: &mut StoreWriter,
    mut keys: KeyCache,
    rx: Receiver<(Cut, Embeddings)>,
    progress: &dyn IndexProgress,
    accel: Option<&crate::KernelHandle>,
) -> (IndexReport, Option<PipelineError>) {
    let mut r = IndexReport::default();
    for (cut, emb) in rx {
        let t = Instant::now();
        let kernels = accel.map(|a| &*a.0 as &dyn memdex_kernels::HashKernels);
        let c = match write_batch(writer, &mut keys, cut.batch, emb, kernels) {
            Ok(c) => c,
            Err(e) => return (r, Some(e)),
        };
        r.stages.write += t.elapsed().as_secs_f64();
        r.items_written += c.rows;
        r.segments_written += 1;
        r.keys_reused += c.keys_reused;
        progress.on_committed(c.rows, cut.position);
    }
    (r, None)
}

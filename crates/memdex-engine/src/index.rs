//! Batch indexing: every session of a [`SessionSource`] through the [`AppendPipeline`], one
//! committed segment every `flush_items` items (at a session boundary), so a crash loses at
//! most one flush and a re-run skips what is stored.

use std::time::Instant;

use memdex_core::{OnError, TextKind};
use memdex_embed::Encoder;
use memdex_ingest::{ItemizeOptions, SessionSource};
use memdex_store::{Store, StoreWriter};
use serde::Serialize;

use crate::append::{AppendPipeline, SessionStatus};
use crate::extract::Extractors;
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
    /// Sessions with no text (every turn blank): nothing to remember, not stored.
    pub sessions_empty: u64,
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

/// Reads every session of `source`, embeds its items with `encoder` and appends them to
/// `writer`, with the extraction the store's manifest records.
pub fn index_sessions<S: SessionSource>(
    source: S,
    writer: &mut StoreWriter,
    encoder: &dyn Encoder,
    opts: &IndexOptions,
    progress: &mut dyn IndexProgress,
) -> Result<IndexReport, EngineError> {
    let store = Store::open(writer.dir())?;
    let extract = Extractors::for_store(&store.manifest().extraction)?;
    index_sessions_with(source, writer, encoder, opts, extract, progress)
}

/// [`index_sessions`] with the caller's extractors (a model-based fact extractor, say); the
/// store must record the same extraction.
pub fn index_sessions_with<S: SessionSource>(
    mut source: S,
    writer: &mut StoreWriter,
    encoder: &dyn Encoder,
    opts: &IndexOptions,
    extract: Extractors,
    progress: &mut dyn IndexProgress,
) -> Result<IndexReport, EngineError> {
    let start = Instant::now();
    let store = Store::open(writer.dir())?;
    store.check_model(encoder.info())?;
    let mut run = Run {
        pipeline: AppendPipeline::with_extractors(store, opts.itemize, extract, true),
        writer,
        encoder,
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
        run.report.sessions_read += 1;
        run.progress.on_session();
        if let Err(e) = run.admit(&session, opts.on_error) {
            failure = Some(e);
            break;
        }
        if run.pipeline.pending_items() >= opts.flush_items {
            run.flush()?;
        }
    }
    run.flush()?;
    let mut report = run.report;
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

/// One index run's state.
struct Run<'a> {
    pipeline: AppendPipeline,
    writer: &'a mut StoreWriter,
    encoder: &'a dyn Encoder,
    report: IndexReport,
    progress: &'a mut dyn IndexProgress,
}

impl Run<'_> {
    /// Offers one session; a conflict is skipped or fatal as `on_error` says.
    fn admit(
        &mut self,
        session: &memdex_core::Session,
        on_error: OnError,
    ) -> Result<(), EngineError> {
        let r = &mut self.report;
        match self.pipeline.admit(std::slice::from_ref(session)) {
            Ok(admitted) => {
                for a in admitted {
                    match a.status {
                        SessionStatus::Stored => r.sessions_indexed += 1,
                        SessionStatus::Unchanged => r.sessions_unchanged += 1,
                    }
                    r.items_with_events += a.with_events as u64;
                    r.invalid_dates += a.invalid_dates as u64;
                }
                Ok(())
            }
            Err(EngineError::EmptySession { tenant, session_id }) => {
                tracing::warn!("tenant {tenant:?}, session {session_id:?}: no text; not stored");
                r.sessions_empty += 1;
                Ok(())
            }
            Err(e @ EngineError::SessionConflict { .. }) if on_error == OnError::Skip => {
                tracing::warn!("skipping: {e}");
                r.sessions_rejected += 1;
                r.errors.push(e.to_string());
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Embeds and commits what is pending.
    fn flush(&mut self) -> Result<(), EngineError> {
        let (encoder, progress) = (self.encoder, &mut *self.progress);
        let mut embed = |keys: &[&str]| -> Result<_, EngineError> {
            Ok(encoder
                .embed_with_progress(keys, TextKind::Passage, &mut |n| progress.on_embedded(n))?)
        };
        let c = self.pipeline.commit(self.writer, &mut embed)?;
        if c.rows == 0 {
            return Ok(());
        }
        let r = &mut self.report;
        r.items_written += c.rows;
        r.segments_written += 1;
        r.keys_embedded += c.keys_embedded;
        r.keys_reused += c.keys_reused;
        r.tokens_embedded += c.tokens_embedded;
        r.embed_seconds += c.embed_seconds;
        self.progress.on_committed(c.rows);
        Ok(())
    }
}

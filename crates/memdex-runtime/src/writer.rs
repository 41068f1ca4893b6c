//! The writer thread: the one owner of the store's writer. Appends waiting on its queue go
//! through the shared append pipeline (admitted per request, committed as one segment and one
//! manifest), deletes commit tombstones, compaction runs on request and in the background;
//! after each commit a new [`Snapshot`] is published before anyone is answered.
//!
//! A panic inside one round fails that round's requests (500 with the message) and the thread
//! goes on serving; a commit that is durable is answered as committed even if publishing the
//! new view fails (it is retried), so a client's retry never stores twice.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use memdex_core::{Session, TextKind};
use memdex_embed::TextTokenizer;
use memdex_pipeline::{AppendPipeline, Committed, PipelineError, SessionStatus};
use memdex_store::{CompactReport, StoreWriter};
use serde::Serialize;
use tokio::sync::oneshot;

use crate::delete::DeleteTarget;
use crate::job::{EmbedJob, ModelJob, Reply};
use crate::options::EngineOptions;
use crate::stats::EngineStats;
use crate::RuntimeError;
use memdex_rank::Snapshot;

/// What a delete committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeleteReport {
    pub items_deleted: u64,
    pub manifest_version: u64,
}

/// What an append committed, per session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppendReport {
    pub sessions: Vec<SessionOutcome>,
    pub items_written: u64,
    pub manifest_version: u64,
}

/// One appended session: `stored` (with its new item ids) or `unchanged` (already stored with
/// the same content; an idempotent retry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionOutcome {
    pub session_id: String,
    pub status: SessionStatus,
    pub item_ids: Vec<u64>,
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

impl WriteJob {
    /// Answers the job with an error (its round failed before it was answered).
    fn fail(self, e: RuntimeError) {
        match self {
            WriteJob::Append { reply, .. } => drop(reply.send(Err(e))),
            WriteJob::Delete { reply, .. } => drop(reply.send(Err(e))),
            WriteJob::Compact { reply } => drop(reply.send(Err(e))),
        }
    }
}

/// What the writer thread owns.
#[derive(Debug)]
pub(crate) struct WriterState {
    pub writer: StoreWriter,
    pub pipeline: AppendPipeline,
    pub model: ModelQueue,
    pub view: Arc<RwLock<Arc<Snapshot>>>,
    pub stats: Arc<EngineStats>,
    pub opts: EngineOptions,
    /// A commit's view was not published (re-reading the store failed); retried each round.
    pub unpublished: bool,
    /// The last background compaction's failure (said once, not every interval).
    pub compact_failure: Option<String>,
}

/// The model workers' queue as the writer uses it: passages are tokenized on the writer
/// thread (when the encoder shares its tokenizer) and embedded by a model worker.
#[derive(Debug)]
pub(crate) struct ModelQueue {
    pub tx: SyncSender<ModelJob>,
    pub tokenizer: Option<TextTokenizer>,
}

/// Jobs taken from the queue for one round of commits at most.
const MAX_JOBS_PER_ROUND: usize = 256;

pub(crate) fn writer_loop(mut st: WriterState, rx: Receiver<WriteJob>) {
    let mut last_compact = Instant::now();
    let tick = st.opts.compact_every.unwrap_or(Duration::from_secs(3600));
    loop {
        if st.opts.compact_every.is_some() && last_compact.elapsed() >= tick {
            last_compact = Instant::now();
            st.guarded(|st| st.background_compact());
        }
        let first = match rx.recv_timeout(tick.min(Duration::from_secs(1))) {
            Ok(j) => j,
            Err(RecvTimeoutError::Timeout) => {
                if st.unpublished {
                    st.guarded(|st| st.publish(None));
                }
                continue;
            }
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
        st.round(jobs);
    }
    tracing::info!("writer thread: queue drained, stopping");
}

impl WriterState {
    fn current(&self) -> Arc<Snapshot> {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Runs `f`; a panic is logged and counted, and the thread goes on.
    fn guarded(&mut self, f: impl FnOnce(&mut Self)) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| f(self))) {
            self.after_panic(&crate::panic_message(&panic));
        }
    }

    fn after_panic(&mut self, msg: &str) {
        tracing::error!("the writer thread recovered from a panic: {msg}");
        self.stats.panics.fetch_add(1, Ordering::Relaxed);
        self.pipeline.discard();
        if let Err(e) = self.pipeline.refresh() {
            tracing::error!("re-reading the store after a panic failed: {e}");
        }
    }

    /// One round: appends are group-committed; a delete or compaction first commits the
    /// appends queued before it. A panic fails the requests not answered yet.
    fn round(&mut self, jobs: Vec<WriteJob>) {
        let mut appends: Vec<(Vec<Session>, Reply<AppendReport>)> = Vec::new();
        for job in jobs {
            match job {
                WriteJob::Append { sessions, reply } => appends.push((sessions, reply)),
                other => {
                    self.commit_guarded(std::mem::take(&mut appends));
                    self.other_guarded(other);
                }
            }
        }
        self.commit_guarded(appends);
    }

    fn commit_guarded(&mut self, reqs: Vec<(Vec<Session>, Reply<AppendReport>)>) {
        if reqs.is_empty() {
            return;
        }
        // replies live outside the closure, so a panic can still answer them
        let mut replies: Vec<Option<Reply<AppendReport>>> = Vec::new();
        let mut sessions = Vec::new();
        for (s, r) in reqs {
            sessions.push(s);
            replies.push(Some(r));
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.commit_appends(sessions, &mut replies)
        }));
        if let Err(panic) = result {
            let msg = crate::panic_message(&panic);
            self.after_panic(&msg);
            for r in replies.into_iter().flatten() {
                let _ = r.send(Err(RuntimeError::Internal {
                    message: format!("append not committed: {msg}"),
                }));
            }
        }
    }

    fn other_guarded(&mut self, job: WriteJob) {
        let mut slot = Some(job);
        let result = catch_unwind(AssertUnwindSafe(|| match slot.take() {
            Some(WriteJob::Delete { target, reply }) => {
                let _ = reply.send(self.delete(target));
            }
            Some(WriteJob::Compact { reply }) => {
                let _ = reply.send(self.compact());
            }
            Some(append @ WriteJob::Append { .. }) => slot = Some(append),
            None => {}
        }));
        if let Err(panic) = result {
            let msg = crate::panic_message(&panic);
            self.after_panic(&msg);
            if let Some(job) = slot {
                job.fail(RuntimeError::Internal { message: msg });
            }
        }
    }

    /// Re-reads the committed manifest and publishes it to readers. `changed`: the tenants
    /// whose live rows the commit changed (their ranking caches are rebuilt; others kept;
    /// None: all).
    fn publish(&mut self, changed: Option<&HashSet<String>>) {
        let store = match self.pipeline.refresh() {
            Ok(()) => self.pipeline.store().clone(),
            Err(e) => {
                tracing::error!("committed, but the new view is not published yet: {e}");
                self.unpublished = true;
                return;
            }
        };
        let prev = self.current();
        let changed = if self.unpublished { None } else { changed };
        let view = Arc::new(Snapshot::succeed(store, &prev, changed));
        // after a store-wide change (compaction, deletes) every tenant's caches are rebuilt in
        // the background; a tenant an append touched rebuilds its own on its next query
        if changed.is_none() {
            view.warm_all_in_background();
        }
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = view;
        self.unpublished = false;
    }

    /// Admits each request on its own (a conflicting or empty session fails only its
    /// request), commits all admitted sessions as one segment and answers every caller.
    fn commit_appends(
        &mut self,
        reqs: Vec<Vec<Session>>,
        replies: &mut [Option<Reply<AppendReport>>],
    ) {
        let mut accepted = Vec::new();
        for (i, sessions) in reqs.iter().enumerate() {
            match self.pipeline.admit(sessions) {
                Ok(admitted) => accepted.push((i, admitted)),
                Err(e) => {
                    if let Some(r) = replies[i].take() {
                        let _ = r.send(Err(e.into()));
                    }
                }
            }
        }
        if accepted.is_empty() {
            return;
        }
        let result = self.commit_pending(&reqs);
        match result {
            Ok(c) => {
                self.stats
                    .appends_grouped
                    .fetch_add(accepted.len() as u64, Ordering::Relaxed);
                for (i, admitted) in accepted {
                    let report = append_report(&admitted, &c);
                    if let Some(r) = replies[i].take() {
                        let _ = r.send(Ok(report));
                    }
                }
            }
            Err(e) => {
                tracing::error!("append failed: {e}");
                for (i, _) in accepted {
                    if let Some(r) = replies[i].take() {
                        let _ = r.send(Err(e.for_another_caller()));
                    }
                }
            }
        }
    }

    /// Commits what the pipeline holds, embedding through the model workers, and publishes.
    fn commit_pending(&mut self, reqs: &[Vec<Session>]) -> Result<Committed, RuntimeError> {
        let (model, stats, chunk) = (&self.model, &self.stats, self.opts.append_chunk);
        let mut embed = |keys: &[&str]| embed_passages(model, stats, chunk, keys);
        let c = self
            .pipeline
            .commit(&mut self.writer, &mut embed)
            .map_err(|e| RuntimeError::not_committed(&e))?;
        if c.rows > 0 {
            self.stats.commits.fetch_add(1, Ordering::Relaxed);
            let changed: HashSet<String> =
                reqs.iter().flatten().map(|s| s.tenant.clone()).collect();
            self.publish(Some(&changed));
        }
        Ok(c)
    }

    fn delete(&mut self, target: DeleteTarget) -> Result<DeleteReport, RuntimeError> {
        let view = self.current();
        let (ids, sessions) = crate::delete::select(view.store(), &target);
        drop(view);
        if ids.is_empty() {
            return Err(RuntimeError::NotFound {
                what: crate::delete::describe(&target),
            });
        }
        let version = self
            .writer
            .delete_items(&ids)
            .map_err(|e| RuntimeError::not_committed(&e.into()))?;
        self.stats.commits.fetch_add(1, Ordering::Relaxed);
        let tenant = target.tenant().to_string();
        if let Err(e) = self.pipeline.forget(&tenant, sessions.as_deref()) {
            tracing::error!("deleted; re-reading the store failed: {e}");
            self.unpublished = true;
        }
        self.forget_in_structures(&tenant);
        self.publish(Some(&HashSet::from([tenant])));
        Ok(DeleteReport {
            items_deleted: ids.len() as u64,
            manifest_version: version,
        })
    }

    /// The deleted items' thoughts and tree leaves go (readers skip them already; this
    /// records it, so the audit log says so and the tree is re-aggregated).
    fn forget_in_structures(&mut self, tenant: &str) {
        let (model, stats, chunk) = (&self.model, &self.stats, self.opts.append_chunk);
        let mut embed = |keys: &[&str]| embed_passages(model, stats, chunk, keys);
        let synced = self
            .pipeline
            .sync_structures(&mut self.writer, &mut embed, &[tenant]);
        if let Err(e) = synced {
            tracing::error!("deleted; the structures stay behind (caught up later): {e}");
        }
    }

    /// Compaction keeps every live row, their order and the idempotency hashes.
    fn compact(&mut self) -> Result<CompactReport, RuntimeError> {
        let report = self
            .writer
            .compact(&self.opts.compact)
            .map_err(|e| RuntimeError::not_committed(&e.into()))?;
        self.stats.compactions.fetch_add(1, Ordering::Relaxed);
        // every tenant's live rows and their order are unchanged: all caches stay valid
        self.publish(Some(&HashSet::new()));
        Ok(report)
    }

    fn background_compact(&mut self) {
        let m = self.writer.manifest();
        let small = m
            .segments
            .iter()
            .filter(|s| s.rows < self.opts.compact.small_rows)
            .count();
        // a store written before checksums gets them once the verification pass hashed it
        let record = self.writer.checksums_ready();
        if m.deleted.is_empty() && small < self.opts.compact_min_small && !record {
            return;
        }
        match self.compact() {
            Ok(r) => {
                self.compact_failure = None;
                tracing::info!(
                    "background compaction: {} → {} segments, {} deleted rows removed, {} \
                     checksums recorded",
                    r.segments_before,
                    r.segments_after,
                    r.rows_removed,
                    r.checksums_recorded
                )
            }
            // the same failure again (a damaged file refuses every compaction) is said once
            Err(e) if self.compact_failure.as_deref() == Some(&e.to_string()) => {
                tracing::debug!("background compaction failed again: {e}")
            }
            Err(e) => {
                tracing::error!("background compaction failed: {e}");
                self.compact_failure = Some(e.to_string());
            }
        }
    }
}

/// One request's answer: each admitted session with the ids its items got.
fn append_report(admitted: &[memdex_pipeline::Admitted], c: &Committed) -> AppendReport {
    let mut written = 0;
    let sessions = admitted
        .iter()
        .map(|a| {
            written += a.items as u64;
            SessionOutcome {
                session_id: a.session_id.clone(),
                status: a.status,
                item_ids: (0..a.items)
                    .map(|i| c.first_id + (a.start + i) as u64)
                    .collect(),
            }
        })
        .collect();
    AppendReport {
        sessions,
        items_written: written,
        manifest_version: c.manifest_version,
    }
}

/// Embeds passages through the model workers, in chunks so queries get in between.
fn embed_passages(
    model: &ModelQueue,
    stats: &EngineStats,
    chunk: usize,
    texts: &[&str],
) -> Result<memdex_embed::Embeddings, PipelineError> {
    let mut out = memdex_embed::Embeddings {
        dim: 0,
        data: Vec::new(),
        tokens: Vec::new(),
    };
    let gone = || PipelineError::Model {
        message: "the model workers stopped".into(),
    };
    for part in texts.chunks(chunk.max(1)) {
        let ids = match &model.tokenizer {
            Some(t) => {
                Some(
                    t.tokenize(part, TextKind::Passage)
                        .map_err(|e| PipelineError::Model {
                            message: e.to_string(),
                        })?,
                )
            }
            None => None,
        };
        let (reply, rx) = oneshot::channel();
        let job = EmbedJob {
            texts: part.iter().map(|s| s.to_string()).collect(),
            kind: TextKind::Passage,
            ids,
            then: Box::new(reply),
        };
        stats.embed_queue_depth.fetch_add(1, Ordering::Relaxed);
        if model.tx.send(job).is_err() {
            stats.embed_queue_depth.fetch_sub(1, Ordering::Relaxed);
            return Err(gone());
        }
        let e = rx
            .blocking_recv()
            .map_err(|_| gone())?
            .map_err(|e| PipelineError::Model {
                message: e.to_string(),
            })?;
        out.dim = e.dim;
        out.data.extend_from_slice(&e.data);
        out.tokens.extend_from_slice(&e.tokens);
    }
    Ok(out)
}

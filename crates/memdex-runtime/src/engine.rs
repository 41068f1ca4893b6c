//! The serving engine: one store, one model, many concurrent callers. Cheap to clone; every
//! clone talks to the same threads (see the crate docs).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use memdex_core::{Granularity, ModelInfo, Session, TextKind};
use memdex_embed::{Embeddings, Encoder, TextTokenizer};
use memdex_ingest::ItemizeOptions;
use memdex_pipeline::{AppendPipeline, ExtractOptions};
use memdex_rank::{BatchRanker, SharedRanker, Snapshot};
use memdex_store::{CompactReport, Manifest, StoreError, StoreWriter};
use tokio::sync::oneshot;

use crate::delete::DeleteTarget;
use crate::job::{EmbedJob, ModelJob, SearchClock, SearchJob, Searched, ToRank};
use crate::model::{model_loop, EmbedQueue};
use crate::options::EngineOptions;
use crate::rank_stage::{queue_for_ranking, rank_loop, rank_pool, RankWork};
use crate::stats::EngineStats;
use crate::writer::{writer_loop, AppendReport, DeleteReport, ModelQueue, WriteJob, WriterState};
use crate::RuntimeError;

/// What a caller waits on: the answer of the model or writer thread.
pub type Ticket<T> = oneshot::Receiver<Result<T, RuntimeError>>;

/// Whether the engine can do its work, for `/healthz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Ok,
    /// A thread is gone (it could not continue); the message says which.
    Failed(&'static str),
    ShuttingDown,
}

/// The serving engine.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    info: ModelInfo,
    device: String,
    view: Arc<RwLock<Arc<Snapshot>>>,
    embed_tx: Mutex<Option<SyncSender<ModelJob>>>,
    write_tx: Mutex<Option<SyncSender<WriteJob>>>,
    threads: Mutex<Threads>,
    stats: Arc<EngineStats>,
    ranker: SharedRanker,
    /// The encoder's tokenizer: callers tokenize before the model's queue.
    tokenizer: Option<TextTokenizer>,
}

/// The threads, joined in this order at shutdown: the writer first (it may still need the
/// model workers for queued appends), then the model workers, then the rank stage's workers
/// (they end when every model worker is gone).
#[derive(Debug, Default)]
struct Threads {
    writer: Option<JoinHandle<()>>,
    model: Vec<JoinHandle<()>>,
    rank: Vec<JoinHandle<()>>,
}

impl Engine {
    /// Opens (or creates, with `index`'s defaults: round items, event dates and facts) the
    /// store in `dir` for `encoder`'s model and starts the model workers (`encoder` and, for
    /// `opts.model_workers` > 1, its replicas), the rank stage (every search ranked through
    /// `ranker`: the door builds it, the CPU ranker or memdex-kernels' accelerated one) and
    /// the writer thread. Refused while another writer holds the store, and for
    /// `model_workers` 0 or > 1 with an encoder that cannot be replicated (before the store
    /// is opened).
    pub fn start(
        dir: &Path,
        encoder: Box<dyn Encoder>,
        ranker: SharedRanker,
        opts: EngineOptions,
    ) -> Result<Engine, RuntimeError> {
        let info = encoder.info().clone();
        let device = encoder.device();
        let tokenizer = encoder.tokenizer();
        let encoders = if opts.measure_model_workers {
            crate::calibrate::measured_encoders(encoder, opts.model_workers.max(1)).0
        } else {
            model_encoders(encoder, opts.model_workers)?
        };
        let (writer, pipeline, first) = open_store(dir, &info, &opts)?;
        let view = Arc::new(RwLock::new(first));
        let stats = Arc::new(EngineStats::default());
        let (embed_tx, embed_rx) = sync_channel::<ModelJob>(opts.embed_queue);
        let (write_tx, write_rx) = sync_channel::<WriteJob>(opts.write_queue);
        let (rank_tx, rank) = start_rank_stage(&ranker, &stats, opts.rank_workers)?;
        let embed_rx = Arc::new(Mutex::new(embed_rx));
        let model = start_model_workers(encoders, embed_rx, opts.token_budget, &stats, rank_tx)?;
        let state = WriterState {
            writer,
            pipeline,
            model: ModelQueue {
                tx: embed_tx.clone(),
                tokenizer: tokenizer.clone(),
            },
            view: view.clone(),
            stats: stats.clone(),
            opts,
            unpublished: false,
            compact_failure: None,
        };
        let writer = std::thread::Builder::new()
            .name("memdex-writer".into())
            .spawn(move || writer_loop(state, write_rx))
            .map_err(|e| internal(format!("cannot start the writer thread: {e}")))?;
        Ok(Engine {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                info,
                device,
                view,
                embed_tx: Mutex::new(Some(embed_tx)),
                write_tx: Mutex::new(Some(write_tx)),
                threads: Mutex::new(Threads {
                    writer: Some(writer),
                    model,
                    rank,
                }),
                stats,
                ranker,
                tokenizer,
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

    /// The latest committed snapshot (never blocks on the writer).
    pub fn view(&self) -> Arc<Snapshot> {
        self.inner
            .view
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The ranker every search goes through.
    pub fn ranker(&self) -> &dyn BatchRanker {
        self.inner.ranker.as_ref()
    }

    /// Whether every thread (writer, model workers, rank workers) is running.
    pub fn health(&self) -> Health {
        if lock(&self.inner.write_tx).is_none() {
            return Health::ShuttingDown;
        }
        let t = lock(&self.inner.threads);
        let gone = |h: &Option<JoinHandle<()>>| h.as_ref().is_none_or(JoinHandle::is_finished);
        if gone(&t.writer) {
            Health::Failed("the writer thread stopped")
        } else if t.model.is_empty() || t.model.iter().any(JoinHandle::is_finished) {
            Health::Failed("a model worker stopped")
        } else if t.rank.iter().any(JoinHandle::is_finished) {
            Health::Failed("the rank stage stopped")
        } else {
            Health::Ok
        }
    }

    /// Queues texts for the model workers; `Busy` when their queue is full.
    /// They are tokenized in the calling thread (the model workers run only the model).
    pub fn embed(
        &self,
        texts: Vec<String>,
        kind: TextKind,
    ) -> Result<Ticket<Embeddings>, RuntimeError> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ids = self.tokenize(&refs, kind)?;
        let (reply, rx) = oneshot::channel();
        self.queue(EmbedJob {
            texts,
            kind,
            ids,
            then: Box::new(reply),
        })?;
        Ok(rx)
    }

    /// Token ids of `texts` when the encoder has a tokenizer to share.
    fn tokenize(
        &self,
        texts: &[&str],
        kind: TextKind,
    ) -> Result<Option<Vec<Vec<u32>>>, RuntimeError> {
        let Some(t) = &self.inner.tokenizer else {
            return Ok(None);
        };
        t.tokenize(texts, kind)
            .map(Some)
            .map_err(|e| RuntimeError::Invalid {
                message: e.to_string(),
            })
    }

    /// Finishes a search: its query is embedded by a model worker and ranked over
    /// `search.snapshot` on the rank stage with the batch's other searches; the ticket
    /// resolves to its hits and its timings. `Busy` when the model workers' queue is full.
    /// Its query is tokenized in the calling thread.
    pub fn search(&self, search: SearchJob) -> Result<Ticket<Searched>, RuntimeError> {
        let t = std::time::Instant::now();
        let ids = self.tokenize(&[search.text.as_str()], TextKind::Query)?;
        let clock = SearchClock::new(t.elapsed().as_secs_f64());
        let (reply, rx) = oneshot::channel();
        self.queue(EmbedJob {
            texts: vec![search.text.clone()],
            kind: TextKind::Query,
            ids,
            then: Box::new(ToRank {
                search: Box::new(search),
                clock,
                reply,
            }),
        })?;
        Ok(rx)
    }

    fn queue(&self, job: ModelJob) -> Result<(), RuntimeError> {
        let stats = &self.inner.stats;
        send(
            &self.inner.embed_tx,
            job,
            "embedding",
            stats,
            &stats.embed_queue_depth,
        )
    }

    /// Queues sessions of one tenant for a group commit. The ticket resolves once they are
    /// durable (segment and manifest fsynced) and visible to searches.
    pub fn append(
        &self,
        tenant: &str,
        sessions: Vec<Session>,
    ) -> Result<Ticket<AppendReport>, RuntimeError> {
        if let Some(s) = sessions.iter().find(|s| s.tenant != tenant) {
            return Err(RuntimeError::Invalid {
                message: format!(
                    "session {:?} belongs to tenant {:?}",
                    s.session_id, s.tenant
                ),
            });
        }
        let (reply, rx) = oneshot::channel();
        self.write(WriteJob::Append { sessions, reply })?;
        Ok(rx)
    }

    /// Queues a delete; the ticket resolves once the tombstones are durable and searches no
    /// longer see the items. `NotFound` when nothing live matches.
    pub fn delete(&self, target: DeleteTarget) -> Result<Ticket<DeleteReport>, RuntimeError> {
        let (reply, rx) = oneshot::channel();
        self.write(WriteJob::Delete { target, reply })?;
        Ok(rx)
    }

    /// Queues a compaction (deleted rows physically removed, small segments merged).
    pub fn compact(&self) -> Result<Ticket<CompactReport>, RuntimeError> {
        let (reply, rx) = oneshot::channel();
        self.write(WriteJob::Compact { reply })?;
        Ok(rx)
    }

    fn write(&self, job: WriteJob) -> Result<(), RuntimeError> {
        let stats = &self.inner.stats;
        send(
            &self.inner.write_tx,
            job,
            "write",
            stats,
            &stats.write_queue_depth,
        )
    }

    /// Stops taking work, lets the threads finish what is queued (every queued append is
    /// committed and answered) and joins them. Idempotent.
    pub fn shutdown(&self) {
        drop(lock(&self.inner.write_tx).take());
        let threads = std::mem::take(&mut *lock(&self.inner.threads));
        if let Some(writer) = threads.writer {
            if writer.join().is_err() {
                tracing::error!("the writer thread panicked");
            }
        }
        drop(lock(&self.inner.embed_tx).take());
        for model in threads.model {
            if model.join().is_err() {
                tracing::error!("a model worker panicked");
            }
        }
        for rank in threads.rank {
            if rank.join().is_err() {
                tracing::error!("a rank stage worker panicked");
            }
        }
    }
}

/// The store in `dir` opened for writing (created with `index`'s defaults when there is none),
/// with the append pipeline and the first snapshot (warming in the background).
fn open_store(
    dir: &Path,
    info: &ModelInfo,
    opts: &EngineOptions,
) -> Result<(StoreWriter, AppendPipeline, Arc<Snapshot>), RuntimeError> {
    let store_err = memdex_pipeline::PipelineError::from;
    let (granularity, extraction) = match Manifest::load(dir) {
        Ok(m) => (m.granularity, m.extraction),
        Err(StoreError::NotAStore { .. }) => {
            let x = ExtractOptions::default().for_granularity(Granularity::Round);
            (Granularity::Round, x.extraction())
        }
        Err(e) => return Err(RuntimeError::from(store_err(e))),
    };
    let source = opts.model_source.clone();
    let mut writer = StoreWriter::open_or_create_with(dir, info, granularity, source, &extraction)
        .map_err(store_err)?;
    let (thoughts, tree) = opts.structures.clone();
    writer
        .enable_structures(thoughts, tree)
        .map_err(store_err)?;
    // the writer's view: every view of the engine shares what it learns of the files
    let store = writer.view().map_err(store_err)?.clone();
    crate::verify::at_start(&store, opts.verify)?;
    let pipeline = AppendPipeline::new(store.clone(), ItemizeOptions::new(granularity), false)?;
    let first = Arc::new(Snapshot::new(store, opts.cache_bytes));
    first.warm_all_in_background();
    Ok((writer, pipeline, first))
}

/// One encoder per model worker: `first` and `workers - 1` replicas of it. Refused for 0
/// workers, and for more than 1 when `first` cannot be replicated.
fn model_encoders(
    first: Box<dyn Encoder>,
    workers: usize,
) -> Result<Vec<Box<dyn Encoder>>, RuntimeError> {
    let refuse = |why: String| RuntimeError::Invalid {
        message: format!("model_workers = {workers}: {why}"),
    };
    if workers == 0 {
        return Err(refuse("at least 1 model worker is needed".into()));
    }
    let mut all = Vec::with_capacity(workers);
    for i in 1..workers {
        let replica = match first.replica() {
            None => {
                return Err(refuse(format!(
                    "the {} encoder cannot be replicated, and each model worker needs an \
                     instance of its own; use 1 model worker",
                    first.backend()
                )))
            }
            Some(r) => r.map_err(|e| internal(format!("loading model worker {i}'s copy: {e}")))?,
        };
        if replica.info() != first.info() {
            return Err(internal(format!(
                "model worker {i}'s copy is another model"
            )));
        }
        all.push(replica);
    }
    all.insert(0, first);
    Ok(all)
}

/// A model worker per encoder, all taking batches from `rx` and handing their searches to
/// the rank stage through `rank`.
fn start_model_workers(
    encoders: Vec<Box<dyn Encoder>>,
    rx: EmbedQueue<crate::job::Embedded>,
    budget: usize,
    stats: &Arc<EngineStats>,
    rank: SyncSender<RankWork>,
) -> Result<Vec<JoinHandle<()>>, RuntimeError> {
    stats.model_workers.store(encoders.len(), Ordering::Relaxed);
    let mut threads = Vec::with_capacity(encoders.len());
    for (i, encoder) in encoders.into_iter().enumerate() {
        let (rx, stats, rank) = (rx.clone(), stats.clone(), rank.clone());
        let t = std::thread::Builder::new()
            .name(format!("memdex-model-{i}"))
            .spawn(move || {
                let forward = |work: RankWork| queue_for_ranking(&rank, work);
                model_loop(encoder, rx, budget, &stats, &forward)
            })
            .map_err(|e| internal(format!("cannot start model worker {i}: {e}")))?;
        threads.push(t);
    }
    Ok(threads)
}

/// The rank stage: `workers` threads ranking through `ranker` on a pool of as many threads of
/// its own, fed by the model workers (two model batches queued: the models embed the next
/// while these are ranked).
fn start_rank_stage(
    ranker: &SharedRanker,
    stats: &Arc<EngineStats>,
    workers: usize,
) -> Result<(SyncSender<RankWork>, Vec<JoinHandle<()>>), RuntimeError> {
    let (tx, rx) = sync_channel::<RankWork>(2);
    let rx = Arc::new(Mutex::new(rx));
    let pool = rank_pool(workers);
    let mut threads = Vec::new();
    for i in 0..workers.max(1) {
        let (ranker, stats, rx, pool) = (ranker.clone(), stats.clone(), rx.clone(), pool.clone());
        let t = std::thread::Builder::new()
            .name(format!("memdex-rank-{i}"))
            .spawn(move || rank_loop(ranker, rx, pool, &stats))
            .map_err(|e| internal(format!("cannot start the rank stage: {e}")))?;
        threads.push(t);
    }
    Ok((tx, threads))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn send<J>(
    tx: &Mutex<Option<SyncSender<J>>>,
    job: J,
    queue: &'static str,
    stats: &EngineStats,
    depth: &AtomicUsize,
) -> Result<(), RuntimeError> {
    let guard = lock(tx);
    let Some(tx) = guard.as_ref() else {
        return Err(RuntimeError::ShuttingDown);
    };
    depth.fetch_add(1, Ordering::Relaxed);
    match tx.try_send(job) {
        Ok(()) => Ok(()),
        Err(e) => {
            depth.fetch_sub(1, Ordering::Relaxed);
            match e {
                TrySendError::Full(_) => {
                    stats.busy_rejections.fetch_add(1, Ordering::Relaxed);
                    Err(RuntimeError::Busy { queue })
                }
                TrySendError::Disconnected(_) => Err(RuntimeError::ShuttingDown),
            }
        }
    }
}

pub(crate) fn internal(message: String) -> RuntimeError {
    RuntimeError::Internal { message }
}

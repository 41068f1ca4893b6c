//! The rank stage: workers that rank the searches of each model batch through the engine's
//! ranker (CPU or device) while the model workers embed the next batches (a two-stage
//! pipeline). Every search is ranked here. A batch's searches are grouped by
//! (snapshot, k, explain, options) and each group is one ranker call; a failed call answers
//! its searches with the error. Each answer carries its timings (`SearchTimings`), which
//! `/metrics` sums.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use memdex_rank::{BatchQuery, BatchRanker, Query, RankError, SearchHit};

use crate::job::{Embedded, Searched};
use crate::stats::{EngineStats, Stage};
use crate::RuntimeError;

/// A model call's searches, embedded.
pub(crate) type RankWork = Vec<Embedded>;

/// Queues a model call's searches for the rank stage (what the model workers' `forward` is);
/// answers them `ShuttingDown` when the stage is gone.
pub(crate) fn queue_for_ranking(rank: &SyncSender<RankWork>, work: RankWork) {
    if let Err(back) = rank.send(work) {
        for s in back.0 {
            let _ = s.reply.send(Err(RuntimeError::ShuttingDown));
        }
    }
}

/// How many rank workers a machine gets: one per core, so that model batches ranked on the
/// CPU do not queue behind each other (each ranker call spreads its queries over the cores
/// too; a device ranker's calls simply overlap).
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The rank stage's thread pool: a ranker's parallel work (the CPU ranker spreads a group's
/// searches over it) runs here, never queued behind the encoder's jobs on the global pool.
pub(crate) fn rank_pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("memdex-rank-pool-{i}"))
        .build()
        .map_err(|e| tracing::warn!("no rank pool ({e}): the global pool ranks"))
        .ok()
        .map(Arc::new)
}

/// One worker's loop: takes the next model batch from the shared queue, ranks it (on `pool`
/// when there is one), answers its searches; returns when every model worker is gone.
pub(crate) fn rank_loop(
    ranker: Arc<dyn BatchRanker>,
    rx: Arc<Mutex<Receiver<RankWork>>>,
    pool: Option<Arc<rayon::ThreadPool>>,
    stats: &EngineStats,
) {
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(work) = next else { return };
        let rank = || rank_work(ranker.as_ref(), &work, stats);
        let start = Instant::now();
        let hits = stats.timed(Stage::Rank, || match &pool {
            Some(p) => p.install(rank),
            None => rank(),
        });
        let ranked = Instant::now();
        for (s, h) in work.into_iter().zip(hits) {
            let timings = s.clock.timings(start, ranked);
            stats.observe_answer(&timings);
            let _ = s.reply.send(h.map(|hits| Searched { hits, timings }));
        }
    }
}

/// The hits of each search of `work`, or why it has none.
fn rank_work(
    ranker: &dyn BatchRanker,
    work: &RankWork,
    stats: &EngineStats,
) -> Vec<Result<Vec<SearchHit>, RuntimeError>> {
    let mut out: Vec<Result<Vec<SearchHit>, RuntimeError>> = (0..work.len())
        .map(|_| {
            Err(RuntimeError::Internal {
                message: "not ranked".into(),
            })
        })
        .collect();
    for members in groups(work) {
        let first = &work[members[0]].search;
        let queries: Vec<BatchQuery<'_>> = (members.iter())
            .map(|&i| BatchQuery {
                tenant: &work[i].search.tenant,
                query: Query {
                    text: &work[i].search.text,
                    vector: work[i].vector.row(0),
                    date_ms: work[i].search.ask.date_ms,
                },
            })
            .collect();
        let (snapshot, ask) = (&first.snapshot, &first.ask);
        let ranked = catch_unwind(AssertUnwindSafe(|| {
            snapshot.top(ranker, &queries, &ask.opts, ask.top)
        }));
        match ranked {
            Ok(Ok(hits)) => {
                stats.rank_batches.fetch_add(1, Ordering::Relaxed);
                stats
                    .rank_queries
                    .fetch_add(members.len() as u64, Ordering::Relaxed);
                for (&i, h) in members.iter().zip(hits) {
                    out[i] = h.map_err(RuntimeError::Rank);
                }
            }
            Ok(Err(err)) => {
                for &i in &members[1..] {
                    out[i] = Err(copy(&err));
                }
                out[members[0]] = Err(RuntimeError::Rank(err));
            }
            Err(panic) => {
                stats.panics.fetch_add(1, Ordering::Relaxed);
                let message = format!("ranking failed: {}", crate::panic_message(&panic));
                tracing::error!("{message} ({} searches)", members.len());
                for &i in &members {
                    out[i] = Err(RuntimeError::Internal {
                        message: message.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The same ranking failure for another search of the group.
fn copy(e: &RankError) -> RuntimeError {
    match e.same_again() {
        Some(same) => RuntimeError::Rank(same),
        None => RuntimeError::Internal {
            message: format!("ranking failed: {e}"),
        },
    }
}

/// `work`'s searches (indices) grouped by snapshot, `k`, explain and options.
fn groups(work: &RankWork) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, s) in work.iter().enumerate() {
        let same = |g: &&mut Vec<usize>| {
            let o = &work[g[0]].search;
            let r = &s.search;
            Arc::ptr_eq(&o.snapshot, &r.snapshot)
                && o.ask.top == r.ask.top
                && o.ask.opts == r.ask.opts
        };
        match out.iter_mut().find(same) {
            Some(g) => g.push(i),
            None => out.push(vec![i]),
        }
    }
    out
}

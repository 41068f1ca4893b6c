//! The rank stage: a thread beside the model thread that ranks the searches of each model
//! batch through the engine's ranker while the model embeds the next batch (a two-stage
//! pipeline). Searches are grouped by (view, k, explain, options) and each group is one
//! ranker call. A search the ranker could not answer (its tenant vanished, the call failed)
//! is answered without hits and ranked by its caller.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use memdex_embed::Embeddings;
use memdex_rank::{Batch, BatchQuery, BatchRanker, Query, SearchHit};

use crate::job::{EmbedJob, Embedded, RankRequest};
use crate::stats::{EngineStats, Stage};

/// A model batch's searches, embedded: each job with its query's vector.
pub(crate) type RankWork = Vec<(EmbedJob, Embeddings)>;

/// The rank stage's loop; returns when the model thread is gone.
pub(crate) fn rank_loop(ranker: Arc<dyn BatchRanker>, rx: Receiver<RankWork>, stats: &EngineStats) {
    while let Ok(work) = rx.recv() {
        let mut hits = stats.timed(Stage::Rank, || rank_work(ranker.as_ref(), &work, stats));
        for ((job, vectors), h) in work.into_iter().zip(hits.iter_mut()) {
            let _ = job.reply.send(Ok(Embedded {
                vectors,
                hits: h.take(),
            }));
        }
    }
}

/// Hits of each search of `work` (None: its caller ranks it).
fn rank_work(
    ranker: &dyn BatchRanker,
    work: &RankWork,
    stats: &EngineStats,
) -> Vec<Option<Vec<SearchHit>>> {
    let mut out = vec![None; work.len()];
    for members in groups(work) {
        let r = members[0].1;
        let queries: Vec<BatchQuery<'_>> = (members.iter())
            .map(|&(i, req)| BatchQuery {
                tenant: &req.tenant,
                query: Query {
                    text: &work[i].0.texts[0],
                    vector: work[i].1.row(0),
                    date_ms: req.ask.date_ms,
                },
            })
            .collect();
        let batch = Batch {
            store: r.view.store(),
            cache: r.view.cache(),
            queries: &queries,
            opts: &r.ask.opts,
        };
        let ranked = catch_unwind(AssertUnwindSafe(|| ranker.top(&batch, r.ask.top)));
        match ranked {
            Ok(Ok(hits)) => {
                stats.rank_batches.fetch_add(1, Ordering::Relaxed);
                for (&(i, _), h) in members.iter().zip(hits) {
                    if let Ok(h) = h {
                        stats.rank_queries.fetch_add(1, Ordering::Relaxed);
                        out[i] = Some(h);
                    }
                }
            }
            Ok(Err(err)) => tracing::warn!(
                "ranking {} searches on {} failed, their callers rank them: {err}",
                queries.len(),
                ranker.describe()
            ),
            Err(panic) => {
                stats.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    "ranking {} searches panicked, their callers rank them: {}",
                    queries.len(),
                    crate::panic_message(&panic)
                )
            }
        }
    }
    out
}

/// `work`'s searches (index, request) grouped by view, `k`, explain and options.
fn groups(work: &RankWork) -> Vec<Vec<(usize, &RankRequest)>> {
    let mut out: Vec<Vec<(usize, &RankRequest)>> = Vec::new();
    for (i, (job, _)) in work.iter().enumerate() {
        let Some(r) = &job.rank else { continue };
        let same = |g: &&mut Vec<(usize, &RankRequest)>| {
            let o = g[0].1;
            Arc::ptr_eq(&o.view, &r.view) && o.ask.top == r.ask.top && o.ask.opts == r.ask.opts
        };
        match out.iter_mut().find(same) {
            Some(g) => g.push((i, r)),
            None => out.push(vec![(i, r)]),
        }
    }
    out
}

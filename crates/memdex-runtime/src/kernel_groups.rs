//! Searches ranked whole on the model thread: when the engine has fused kernels
//! (`EngineOptions::fused`, memdex-kernels' `rank_topk` — CUDA in practice), the searches of a
//! model batch that ask for it are ranked in one kernel call per (view, k, options) group right
//! after their queries are embedded, and their answers carry the hits. A search the fused
//! ranking could not answer (its tenant vanished, the kernel failed) carries none and is
//! ranked on its request thread as before.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use memdex_embed::Embeddings;
use memdex_kernels::Kernels;
use memdex_pipeline::{rank_fused, BatchQuery};
use memdex_rank::{Query, RankOptions, SearchHit};

use crate::job::EmbedJob;
use crate::stats::EngineStats;
use crate::view::View;

/// One group: searches of the same view with the same `k` and options.
struct Group<'a> {
    view: Arc<View>,
    k: usize,
    opts: RankOptions,
    jobs: Vec<Member<'a>>,
}

/// One search of a group.
struct Member<'a> {
    /// Index of its job in the model batch, and of its query's row in the embeddings.
    job: usize,
    row: usize,
    tenant: &'a str,
    date_ms: Option<i64>,
}

/// Hits of the batch's searches that asked for the fused ranking, by job index (None: rank it
/// on the request thread).
pub(crate) fn fused_group(
    kernels: &dyn Kernels,
    group: &[EmbedJob],
    e: &Embeddings,
    stats: &EngineStats,
) -> Vec<Option<Vec<SearchHit>>> {
    let mut out = vec![None; group.len()];
    for g in groups(group) {
        let batch: Vec<BatchQuery<'_>> = g
            .jobs
            .iter()
            .map(|m| BatchQuery {
                tenant: m.tenant,
                query: Query {
                    text: &group[m.job].texts[0],
                    vector: e.row(m.row),
                    date_ms: m.date_ms,
                },
            })
            .collect();
        let ranked = catch_unwind(AssertUnwindSafe(|| {
            rank_fused(
                g.view.store(),
                g.view.cache(),
                kernels,
                &batch,
                g.k,
                &g.opts,
            )
        }));
        match ranked {
            Ok(Ok(hits)) => {
                stats.fused_batches.fetch_add(1, Ordering::Relaxed);
                for (m, h) in g.jobs.iter().zip(hits) {
                    if let Ok(h) = h {
                        stats.fused_queries.fetch_add(1, Ordering::Relaxed);
                        out[m.job] = Some(h);
                    }
                }
            }
            Ok(Err(err)) => tracing::warn!(
                "fused ranking of {} searches on {} failed, ranking them on the CPU: {err}",
                batch.len(),
                kernels.device()
            ),
            Err(panic) => tracing::warn!(
                "fused ranking of {} searches panicked, ranking them on the CPU: {}",
                batch.len(),
                crate::panic_message(&panic)
            ),
        }
    }
    out
}

/// The batch's fused searches grouped by view, `k` and options.
fn groups(group: &[EmbedJob]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    let mut row = 0;
    for (j, job) in group.iter().enumerate() {
        if let (Some(scan), 1) = (&job.scan, job.texts.len()) {
            if let Some(ask) = scan.fused {
                let member = Member {
                    job: j,
                    row,
                    tenant: &scan.tenant,
                    date_ms: ask.date_ms,
                };
                let same = |g: &&mut Group<'_>| {
                    Arc::ptr_eq(&g.view, &scan.view) && g.k == ask.k && g.opts == ask.opts
                };
                match out.iter_mut().find(same) {
                    Some(g) => g.jobs.push(member),
                    None => out.push(Group {
                        view: scan.view.clone(),
                        k: ask.k,
                        opts: ask.opts,
                        jobs: vec![member],
                    }),
                }
            }
        }
        row += job.texts.len();
    }
    out
}

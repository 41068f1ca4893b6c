//! The model thread: the one thread that owns the encoder (and its device). It waits for a
//! job, takes more while their estimated tokens fit the budget (TEI's queue), embeds each text
//! kind in one call and answers every job with its rows. With a device scorer, the batch's
//! searches of all tenants are scored there together, and each answer carries its scores.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;

use memdex_core::TextKind;
use memdex_embed::{Embeddings, Encoder};
use memdex_kernels::Kernels;
use memdex_score::{Block, DenseScorer, Run};

use crate::job::{EmbedJob, Embedded};
use crate::kernel_groups::fused_group;
use crate::stats::{EngineStats, ModelStage};
use crate::view::View;
use crate::RuntimeError;
use memdex_pipeline::KernelHandle;

/// The model thread's loop; returns when every sender is gone.
pub(crate) fn model_loop(
    encoder: Box<dyn Encoder>,
    rx: Receiver<EmbedJob>,
    budget: usize,
    stats: &EngineStats,
    scorer: Option<Box<dyn DenseScorer>>,
    fused: Option<KernelHandle>,
) {
    let max_len = encoder.info().max_length.max(1);
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
        // a caller that gave up (its request timed out, its client left) costs nothing
        jobs.retain(|j| !j.reply.is_closed());
        let (queries, passages): (Vec<_>, Vec<_>) =
            jobs.into_iter().partition(|j| j.kind == TextKind::Query);
        let rankers = Rankers {
            scorer: scorer.as_deref(),
            fused: fused.as_ref().map(|f| &*f.0 as &dyn Kernels),
        };
        embed_group(encoder.as_ref(), queries, TextKind::Query, stats, rankers);
        let none = Rankers {
            scorer: None,
            fused: None,
        };
        embed_group(encoder.as_ref(), passages, TextKind::Passage, stats, none);
    }
}

/// What the model thread does with a batch's search queries besides embedding them.
#[derive(Clone, Copy)]
struct Rankers<'a> {
    /// Dense scores on the device (the device scan).
    scorer: Option<&'a dyn DenseScorer>,
    /// The whole ranking in one kernel call (the fused ranking).
    fused: Option<&'a dyn Kernels>,
}

fn embed_group(
    encoder: &dyn Encoder,
    group: Vec<EmbedJob>,
    kind: TextKind,
    stats: &EngineStats,
    rankers: Rankers<'_>,
) {
    if group.is_empty() {
        return;
    }
    let texts: Vec<&str> = group
        .iter()
        .flat_map(|j| j.texts.iter().map(String::as_str))
        .collect();
    stats.observe_batch(texts.len());
    let result = stats.timed(ModelStage::Embed, || {
        catch_unwind(AssertUnwindSafe(|| encoder.embed(&texts, kind)))
    });
    let e = match result {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => {
            let msg = e.to_string();
            for j in group {
                let _ = j.reply.send(Err(RuntimeError::Internal {
                    message: format!("embedding failed: {msg}"),
                }));
            }
            return;
        }
        Err(panic) => {
            let msg = crate::panic_message(&panic);
            tracing::error!(
                "the model panicked on a batch of {} texts: {msg}",
                texts.len()
            );
            stats.panics.fetch_add(1, Ordering::Relaxed);
            for j in group {
                let _ = j.reply.send(Err(RuntimeError::Internal {
                    message: format!("the model failed on this batch: {msg}"),
                }));
            }
            return;
        }
    };
    let mut hits = match rankers.fused {
        Some(kernels) => stats.timed(ModelStage::Fused, || {
            fused_group(kernels, &group, &e, stats)
        }),
        None => vec![None; group.len()],
    };
    let ranked: Vec<bool> = hits.iter().map(Option::is_some).collect();
    let mut dense = match rankers.scorer {
        Some(scorer) => stats.timed(ModelStage::Scan, || {
            scan_group(scorer, &group, &e, stats, &ranked)
        }),
        None => vec![None; group.len()],
    };
    let dim = e.dim;
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
            hits: hits[i].take(),
        }));
    }
}

/// Dense scores of the group's searches (jobs with a scan request that are not `ranked`
/// already), by job index; None for the others, or for all when the device fails (the
/// ranking then scores on the CPU).
fn scan_group(
    scorer: &dyn DenseScorer,
    group: &[EmbedJob],
    e: &Embeddings,
    stats: &EngineStats,
    ranked: &[bool],
) -> Vec<Option<Vec<f32>>> {
    let mut out = vec![None; group.len()];
    let batch = ScanBatch::new(group, e, ranked);
    if batch.which.is_empty() {
        return out;
    }
    // segments the newest view no longer has were compacted away: drop their copies
    if let Some(newest) = batch.newest() {
        let live: Vec<u64> = newest.store().vector_block_ids();
        scorer.retain(&live);
    }
    let scored = catch_unwind(AssertUnwindSafe(|| {
        let blocks: Vec<Block<'_>> = batch.blocks();
        scorer.score(e.dim, &batch.queries, &blocks, &batch.runs)
    }));
    match scored {
        Ok(Ok(scores)) => {
            stats.scan_batches.fetch_add(1, Ordering::Relaxed);
            stats
                .scan_queries
                .fetch_add(batch.which.len() as u64, Ordering::Relaxed);
            for (i, s) in batch.which.iter().zip(scores) {
                out[*i] = Some(s);
            }
        }
        Ok(Err(err)) => tracing::warn!(
            "device scan of {} searches failed, ranking scores them: {err}",
            batch.which.len()
        ),
        Err(panic) => tracing::warn!(
            "device scan of {} searches panicked, ranking scores them: {}",
            batch.which.len(),
            crate::panic_message(&panic)
        ),
    }
    out
}

/// A group's searches as one scoring request: blocks shared by vector block id across views
/// (block ids are never reused, blocks never change).
struct ScanBatch<'a> {
    /// Job index of each search.
    which: Vec<usize>,
    queries: Vec<f32>,
    runs: Vec<Vec<Run>>,
    blocks: Vec<Block<'a>>,
    /// The view of each search.
    views: Vec<&'a View>,
}

impl<'a> ScanBatch<'a> {
    fn new(group: &'a [EmbedJob], e: &Embeddings, ranked: &[bool]) -> ScanBatch<'a> {
        let mut batch = ScanBatch {
            which: Vec::new(),
            queries: Vec::new(),
            runs: Vec::new(),
            blocks: Vec::new(),
            views: Vec::new(),
        };
        let mut block_of: HashMap<u64, usize> = HashMap::new();
        let mut off = 0;
        for (i, j) in group.iter().enumerate() {
            if let (Some(r), 1, false) = (&j.scan, j.texts.len(), ranked[i]) {
                let view: &'a View = &r.view;
                let mut runs = Vec::new();
                for v in
                    (view.store().tenant_slices(&r.tenant).iter()).flat_map(|s| s.vector_runs())
                {
                    let block = *block_of.entry(v.block.id).or_insert_with(|| {
                        batch.blocks.push(Block {
                            id: v.block.id,
                            data: v.block.data,
                        });
                        batch.blocks.len() - 1
                    });
                    runs.push(Run {
                        block,
                        start: v.start,
                        rows: v.rows,
                    });
                }
                batch.queries.extend_from_slice(e.row(off));
                batch.runs.push(runs);
                batch.which.push(i);
                batch.views.push(view);
            }
            off += j.texts.len();
        }
        batch
    }

    fn blocks(&self) -> Vec<Block<'a>> {
        self.blocks.clone()
    }

    /// The view of the newest store version among the batch's searches.
    fn newest(&self) -> Option<&'a View> {
        self.views
            .iter()
            .copied()
            .max_by_key(|v| v.store().manifest().version)
    }
}

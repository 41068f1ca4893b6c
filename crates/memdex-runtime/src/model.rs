//! The model thread: the one thread that owns the encoder (and its device). It waits for a
//! job, takes more while their estimated tokens fit the budget (TEI's queue), embeds each text
//! kind in one call and answers every job with its rows. When the engine's ranker batches,
//! the batch's searches go on to the rank stage (`rank_stage`), which ranks them while this
//! thread embeds the next batch.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};

use memdex_core::TextKind;
use memdex_embed::{Embeddings, Encoder};

use crate::job::{EmbedJob, Embedded};
use crate::rank_stage::RankWork;
use crate::stats::{EngineStats, Stage};
use crate::RuntimeError;

/// The model thread's loop; returns when every sender is gone.
pub(crate) fn model_loop(
    encoder: Box<dyn Encoder>,
    rx: Receiver<EmbedJob>,
    budget: usize,
    stats: &EngineStats,
    rank: Option<SyncSender<RankWork>>,
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
        embed_group(
            encoder.as_ref(),
            queries,
            TextKind::Query,
            stats,
            rank.as_ref(),
        );
        embed_group(encoder.as_ref(), passages, TextKind::Passage, stats, None);
    }
}

fn embed_group(
    encoder: &dyn Encoder,
    group: Vec<EmbedJob>,
    kind: TextKind,
    stats: &EngineStats,
    rank: Option<&SyncSender<RankWork>>,
) {
    if group.is_empty() {
        return;
    }
    let texts: Vec<&str> = group
        .iter()
        .flat_map(|j| j.texts.iter().map(String::as_str))
        .collect();
    stats.observe_batch(texts.len());
    let result = stats.timed(Stage::Embed, || {
        catch_unwind(AssertUnwindSafe(|| encoder.embed(&texts, kind)))
    });
    let e = match result {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => {
            let msg = e.to_string();
            fail(group, format!("embedding failed: {msg}"));
            return;
        }
        Err(panic) => {
            let msg = crate::panic_message(&panic);
            tracing::error!(
                "the model panicked on a batch of {} texts: {msg}",
                texts.len()
            );
            stats.panics.fetch_add(1, Ordering::Relaxed);
            fail(group, format!("the model failed on this batch: {msg}"));
            return;
        }
    };
    let mut work: RankWork = Vec::new();
    let mut off = 0;
    for j in group {
        let n = j.texts.len();
        let rows = Embeddings {
            dim: e.dim,
            data: e.data[off * e.dim..(off + n) * e.dim].to_vec(),
            tokens: e.tokens[off..off + n].to_vec(),
        };
        off += n;
        if rank.is_some() && j.rank.is_some() && n == 1 {
            work.push((j, rows));
        } else {
            let _ = j.reply.send(Ok(Embedded {
                vectors: rows,
                hits: None,
            }));
        }
    }
    if let (Some(tx), false) = (rank, work.is_empty()) {
        if let Err(back) = tx.send(work) {
            // the rank stage is gone: answer with the vectors, the callers rank
            for (j, vectors) in back.0 {
                let _ = j.reply.send(Ok(Embedded {
                    vectors,
                    hits: None,
                }));
            }
        }
    }
}

/// Answers every job of `group` with an internal error.
fn fail(group: Vec<EmbedJob>, message: String) {
    for j in group {
        let _ = j.reply.send(Err(RuntimeError::Internal {
            message: message.clone(),
        }));
    }
}

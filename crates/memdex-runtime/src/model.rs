//! The model workers: threads that each own an encoder (and its device stream) and run only
//! the model; one by default (`EngineOptions::model_workers`). Jobs arrive tokenized (callers
//! tokenize with the encoder's shared tokenizer, as TEI's router does) on one queue that every
//! worker takes batches from: a worker waits for a job, takes more while their tokens fit the
//! budget (TEI's queue) — holding the queue only while it collects —, embeds each text kind in
//! one call and answers every job: texts with their rows; a search goes on, with its query's
//! vector, to the rank stage (`rank_stage`), which ranks it while the worker embeds the next
//! batch.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use memdex_core::TextKind;
use memdex_embed::{Embeddings, Encoder};

use crate::job::{EmbedJob, Embedded};
use crate::rank_stage::RankWork;
use crate::stats::{EngineStats, Stage};
use crate::RuntimeError;

/// The one embedding queue the model workers share.
pub(crate) type EmbedQueue = Arc<Mutex<Receiver<EmbedJob>>>;

/// A model worker's loop; returns when every sender is gone.
pub(crate) fn model_loop(
    encoder: Box<dyn Encoder>,
    rx: EmbedQueue,
    budget: usize,
    stats: &EngineStats,
    rank: SyncSender<RankWork>,
) {
    let max_len = encoder.info().max_length.max(1);
    let estimate = |j: &EmbedJob| -> usize {
        j.tokens().unwrap_or_else(|| {
            (j.texts().iter())
                .map(|t| (t.len() / 4 + 2).min(max_len))
                .sum()
        })
    };
    while let Some(mut jobs) = next_batch(&rx, budget, &estimate, stats) {
        // a caller that gave up costs nothing
        jobs.retain(|j| !j.abandoned());
        let (queries, passages): (Vec<_>, Vec<_>) =
            jobs.into_iter().partition(|j| j.kind() == TextKind::Query);
        embed_group(encoder.as_ref(), queries, TextKind::Query, stats, &rank);
        embed_group(encoder.as_ref(), passages, TextKind::Passage, stats, &rank);
    }
}

/// The next batch: the first job waiting (blocking) and those behind it while their
/// `estimate`d tokens fit `budget`. The queue is held only while collecting, so another
/// worker takes the next batch while this one embeds. None when every sender is gone.
fn next_batch(
    rx: &Mutex<Receiver<EmbedJob>>,
    budget: usize,
    estimate: &dyn Fn(&EmbedJob) -> usize,
    stats: &EngineStats,
) -> Option<Vec<EmbedJob>> {
    let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
    let first = rx.recv().ok()?;
    stats.embed_queue_depth.fetch_sub(1, Ordering::Relaxed);
    let mut tokens = estimate(&first);
    let mut jobs = vec![first];
    while tokens < budget {
        let Ok(j) = rx.try_recv() else { break };
        stats.embed_queue_depth.fetch_sub(1, Ordering::Relaxed);
        tokens += estimate(&j);
        jobs.push(j);
    }
    Some(jobs)
}

fn embed_group(
    encoder: &dyn Encoder,
    mut group: Vec<EmbedJob>,
    kind: TextKind,
    stats: &EngineStats,
    rank: &SyncSender<RankWork>,
) {
    if group.is_empty() {
        return;
    }
    let start = Instant::now();
    let e = match embed_texts(encoder, &mut group, kind, stats) {
        Ok(e) => e,
        Err(message) => return fail(group, message),
    };
    let work = answer(group, &e, start);
    if !work.is_empty() {
        if let Err(back) = rank.send(work) {
            for s in back.0 {
                let _ = s.reply.send(Err(RuntimeError::ShuttingDown));
            }
        }
    }
}

/// One model call for every text of `group`: their token ids when their callers tokenized
/// them all, else the texts; a failure or a panic as the message to answer them with.
fn embed_texts(
    encoder: &dyn Encoder,
    group: &mut [EmbedJob],
    kind: TextKind,
    stats: &EngineStats,
) -> Result<Embeddings, String> {
    let ids: Option<Vec<Vec<u32>>> = (group.iter_mut().map(EmbedJob::take_ids))
        .collect::<Option<Vec<_>>>()
        .map(|v| v.concat());
    let texts: Vec<&str> = group.iter().flat_map(EmbedJob::texts).collect();
    stats.observe_batch(texts.len());
    let result = stats.timed(Stage::Embed, || {
        catch_unwind(AssertUnwindSafe(|| match &ids {
            Some(ids) => encoder.embed_ids(ids),
            None => encoder.embed(&texts, kind),
        }))
    });
    match result {
        Ok(Ok(e)) => Ok(e),
        Ok(Err(e)) => Err(format!("embedding failed: {e}")),
        Err(panic) => {
            let msg = crate::panic_message(&panic);
            tracing::error!(
                "the model panicked on a batch of {} texts: {msg}",
                texts.len()
            );
            stats.panics.fetch_add(1, Ordering::Relaxed);
            Err(format!("the model failed on this batch: {msg}"))
        }
    }
}

/// Answers the texts jobs of `group` with their rows of `e`; returns its searches, each with
/// its query's vector, for the rank stage (`start`: when the model call began).
fn answer(group: Vec<EmbedJob>, e: &Embeddings, start: Instant) -> RankWork {
    let embedded = Instant::now();
    let mut work = Vec::new();
    let mut off = 0;
    for j in group {
        let n = j.texts().len();
        let rows = Embeddings {
            dim: e.dim,
            data: e.data[off * e.dim..(off + n) * e.dim].to_vec(),
            tokens: e.tokens[off..off + n].to_vec(),
        };
        off += n;
        match j {
            EmbedJob::Texts { reply, .. } => drop(reply.send(Ok(rows))),
            EmbedJob::Search {
                search,
                mut clock,
                reply,
                ..
            } => {
                clock.embed_start = Some(start);
                clock.embedded = Some(embedded);
                work.push(Embedded {
                    search,
                    vector: rows,
                    clock,
                    reply,
                })
            }
        }
    }
    work
}

/// Answers every job of `group` with an internal error.
fn fail(group: Vec<EmbedJob>, message: String) {
    for j in group {
        j.fail(RuntimeError::Internal {
            message: message.clone(),
        });
    }
}

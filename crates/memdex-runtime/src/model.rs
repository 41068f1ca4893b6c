//! The model workers: threads that each own an encoder (and its device stream) and run only
//! the model; one by default (`EngineOptions::model_workers`). Jobs arrive tokenized (callers
//! tokenize with the encoder's shared tokenizer, as TEI's router does) on one queue that every
//! worker takes batches from: a worker waits for a job, takes more while their tokens fit the
//! budget (TEI's queue) — holding the queue only while it collects —, embeds each text kind in
//! one call and hands every job its rows through the job's own continuation (`job`). What the
//! continuations hand on (`F`: the engine's searches, embedded) goes, one piece per model
//! call, to `forward` (the engine's: the rank stage's queue). The workers know nothing of
//! what a job is for.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use memdex_core::TextKind;
use memdex_embed::{Embeddings, Encoder};

use crate::job::{EmbedJob, EmbedSpan};
use crate::stats::{EngineStats, Stage};
use crate::RuntimeError;

/// The one embedding queue the model workers share.
pub(crate) type EmbedQueue<F> = Arc<Mutex<Receiver<EmbedJob<F>>>>;

/// A model worker's loop; returns when every sender is gone. `forward` takes what the
/// continuations of one model call handed on (never empty).
pub(crate) fn model_loop<F>(
    encoder: Box<dyn Encoder>,
    rx: EmbedQueue<F>,
    budget: usize,
    stats: &EngineStats,
    forward: &dyn Fn(Vec<F>),
) {
    let max_len = encoder.info().max_length.max(1);
    let estimate = |j: &EmbedJob<F>| -> usize {
        j.tokens().unwrap_or_else(|| {
            (j.texts.iter())
                .map(|t| (t.len() / 4 + 2).min(max_len))
                .sum()
        })
    };
    while let Some(mut jobs) = next_batch(&rx, budget, &estimate, stats) {
        // a caller that gave up costs nothing
        jobs.retain(|j| !j.then.abandoned());
        let (queries, passages): (Vec<_>, Vec<_>) =
            jobs.into_iter().partition(|j| j.kind == TextKind::Query);
        // queries first: their searches go on while the passages are embedded
        for (group, kind) in [(queries, TextKind::Query), (passages, TextKind::Passage)] {
            let onward = embed_group(encoder.as_ref(), group, kind, stats);
            if !onward.is_empty() {
                forward(onward);
            }
        }
    }
}

/// The next batch: the first job waiting (blocking) and those behind it while their
/// `estimate`d tokens fit `budget`. The queue is held only while collecting, so another
/// worker takes the next batch while this one embeds. None when every sender is gone.
fn next_batch<F>(
    rx: &Mutex<Receiver<EmbedJob<F>>>,
    budget: usize,
    estimate: &dyn Fn(&EmbedJob<F>) -> usize,
    stats: &EngineStats,
) -> Option<Vec<EmbedJob<F>>> {
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

/// Embeds `group` in one model call and resumes each job's continuation with its rows (or
/// the failure); returns what they handed on.
fn embed_group<F>(
    encoder: &dyn Encoder,
    mut group: Vec<EmbedJob<F>>,
    kind: TextKind,
    stats: &EngineStats,
) -> Vec<F> {
    if group.is_empty() {
        return Vec::new();
    }
    let start = Instant::now();
    let result = embed_texts(encoder, &mut group, kind, stats);
    let span = EmbedSpan {
        start,
        end: Instant::now(),
    };
    match result {
        Ok(e) => answer(group, &e, span),
        Err(message) => (group.into_iter())
            .filter_map(|j| {
                let message = message.clone();
                j.fail(RuntimeError::Internal { message }, span)
            })
            .collect(),
    }
}

/// One model call for every text of `group`: their token ids when their callers tokenized
/// them all, else the texts; a failure or a panic as the message to answer them with.
fn embed_texts<F>(
    encoder: &dyn Encoder,
    group: &mut [EmbedJob<F>],
    kind: TextKind,
    stats: &EngineStats,
) -> Result<Embeddings, String> {
    let ids: Option<Vec<Vec<u32>>> = (group.iter_mut().map(|j| j.ids.take()))
        .collect::<Option<Vec<_>>>()
        .map(|v| v.concat());
    let texts: Vec<&str> = (group.iter())
        .flat_map(|j| j.texts.iter().map(String::as_str))
        .collect();
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

/// Resumes each job of `group` with its rows of `e`; returns what the continuations handed
/// on.
fn answer<F>(group: Vec<EmbedJob<F>>, e: &Embeddings, span: EmbedSpan) -> Vec<F> {
    let mut onward = Vec::new();
    let mut off = 0;
    for j in group {
        let n = j.texts.len();
        let rows = Embeddings {
            dim: e.dim,
            data: e.data[off * e.dim..(off + n) * e.dim].to_vec(),
            tokens: e.tokens[off..off + n].to_vec(),
        };
        off += n;
        onward.extend(j.then.resume(Ok(rows), span));
    }
    onward
}

//! What callers hand the model workers: texts to embed, each job with its own continuation
//! (TEI's `Entry` with its `response_tx`). A texts job's continuation answers its caller; a
//! search's hands the search, with its query's vector, on to the rank stage. The model
//! workers only embed and call the continuation, so they know nothing of ranking.

use std::sync::Arc;
use std::time::Instant;

use memdex_core::TextKind;
use memdex_embed::Embeddings;
use memdex_rank::{RankOptions, SearchHit, Snapshot, TopK};
use tokio::sync::oneshot;

use crate::stats::SearchTimings;
use crate::RuntimeError;

pub(crate) type Reply<T> = oneshot::Sender<Result<T, RuntimeError>>;

/// When a model batch was embedded: its model call's start and end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EmbedSpan {
    pub start: Instant,
    pub end: Instant,
}

/// What becomes of an embedding job once a model worker has embedded it. `F` is what a
/// continuation may hand on (the model worker passes a batch's hand-ons to the next stage in
/// one piece, so a model batch's searches are ranked together).
pub(crate) trait Continuation<F>: Send {
    /// Whether nobody waits for the answer any more (a request timed out, a client left):
    /// the job is then dropped before the model call.
    fn abandoned(&self) -> bool;

    /// Called once with the job's rows (or why there are none) and its batch's model call;
    /// answers its caller, or returns what goes on to the next stage.
    fn resume(
        self: Box<Self>,
        rows: Result<Embeddings, RuntimeError>,
        span: EmbedSpan,
    ) -> Option<F>;
}

/// A texts job answers its caller with its rows.
impl<F> Continuation<F> for Reply<Embeddings> {
    fn abandoned(&self) -> bool {
        self.is_closed()
    }

    fn resume(self: Box<Self>, rows: Result<Embeddings, RuntimeError>, _: EmbedSpan) -> Option<F> {
        let _ = self.send(rows);
        None
    }
}

/// A job for the model workers: texts of one kind and what becomes of their rows.
pub(crate) struct EmbedJob<F> {
    pub texts: Vec<String>,
    pub kind: TextKind,
    /// Their token ids, when the caller tokenized them (the encoder has a tokenizer).
    pub ids: Option<Vec<Vec<u32>>>,
    pub then: Box<dyn Continuation<F>>,
}

impl<F> std::fmt::Debug for EmbedJob<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedJob")
            .field("texts", &self.texts.len())
            .field("kind", &self.kind)
            .field("tokenized", &self.ids.is_some())
            .finish()
    }
}

impl<F> EmbedJob<F> {
    /// Their tokens, when the caller tokenized them.
    pub fn tokens(&self) -> Option<usize> {
        (self.ids.as_ref()).map(|v| v.iter().map(Vec::len).sum())
    }

    /// Answers it with an error.
    pub fn fail(self, e: RuntimeError, span: EmbedSpan) -> Option<F> {
        self.then.resume(Err(e), span)
    }
}

/// The engine's model jobs: what a search's continuation hands on is the search, embedded.
pub(crate) type ModelJob = EmbedJob<Embedded>;

/// What a search asks besides its text and tenant.
#[derive(Debug, Clone, Copy)]
pub struct SearchAsk {
    pub date_ms: Option<i64>,
    pub top: TopK,
    pub opts: RankOptions,
}

/// A search for the engine to finish: the snapshot it ranks over (taken when it was
/// checked), its tenant, the text to embed and what it asks.
#[derive(Debug, Clone)]
pub struct SearchJob {
    pub snapshot: Arc<Snapshot>,
    pub tenant: String,
    pub text: String,
    pub ask: SearchAsk,
}

/// A finished search: its hits and the seconds it spent in each serving stage (the figures
/// `/metrics` sums).
#[derive(Debug, Clone)]
pub struct Searched {
    pub hits: Vec<SearchHit>,
    pub timings: SearchTimings,
}

/// When a search passed each serving stage.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchClock {
    /// Seconds its caller spent tokenizing it.
    pub tokenize: f64,
    /// When it was queued for the model workers.
    pub queued: Instant,
    /// Its model batch's model call.
    pub embedded: Option<EmbedSpan>,
}

impl SearchClock {
    pub fn new(tokenize: f64) -> Self {
        Self {
            tokenize,
            queued: Instant::now(),
            embedded: None,
        }
    }

    /// Its timings, ranked in the call from `rank_start` to `ranked`.
    pub fn timings(&self, rank_start: Instant, ranked: Instant) -> SearchTimings {
        let embed = self.embedded.unwrap_or(EmbedSpan {
            start: self.queued,
            end: self.queued,
        });
        let us = |s: f64| (s * 1e6) as u64;
        SearchTimings {
            tokenize_us: us(self.tokenize),
            model_queue_us: us(embed
                .start
                .saturating_duration_since(self.queued)
                .as_secs_f64()),
            embed_us: us(embed
                .end
                .saturating_duration_since(embed.start)
                .as_secs_f64()),
            rank_queue_us: us(rank_start
                .saturating_duration_since(embed.end)
                .as_secs_f64()),
            rank_us: us(ranked.saturating_duration_since(rank_start).as_secs_f64()),
        }
    }
}

/// A search's continuation: its embedded query goes on to the rank stage; a failed embedding
/// answers it.
#[derive(Debug)]
pub(crate) struct ToRank {
    pub search: Box<SearchJob>,
    pub clock: SearchClock,
    pub reply: Reply<Searched>,
}

impl Continuation<Embedded> for ToRank {
    fn abandoned(&self) -> bool {
        self.reply.is_closed()
    }

    fn resume(
        self: Box<Self>,
        rows: Result<Embeddings, RuntimeError>,
        span: EmbedSpan,
    ) -> Option<Embedded> {
        let ToRank {
            search,
            mut clock,
            reply,
        } = *self;
        match rows {
            Ok(vector) => {
                clock.embedded = Some(span);
                Some(Embedded {
                    search,
                    vector,
                    clock,
                    reply,
                })
            }
            Err(e) => {
                let _ = reply.send(Err(e));
                None
            }
        }
    }
}

/// One search on its way to the rank stage: the job, its query's vector, where to answer.
#[derive(Debug)]
pub(crate) struct Embedded {
    pub search: Box<SearchJob>,
    pub vector: Embeddings,
    pub clock: SearchClock,
    pub reply: Reply<Searched>,
}

//! What callers hand the model workers (texts to embed, or a search to finish) and what the
//! rank stage receives from it.

use std::sync::Arc;
use std::time::Instant;

use memdex_core::TextKind;
use memdex_embed::Embeddings;
use memdex_rank::{RankOptions, SearchHit, Snapshot, TopK};
use tokio::sync::oneshot;

use crate::RuntimeError;

pub(crate) type Reply<T> = oneshot::Sender<Result<T, RuntimeError>>;

/// A job for the model workers.
#[derive(Debug)]
pub(crate) enum EmbedJob {
    /// Texts to embed for a caller (an append's passages, `/v1/embeddings`).
    Texts {
        texts: Vec<String>,
        kind: TextKind,
        /// Their token ids, when the caller tokenized them (the encoder has a tokenizer).
        ids: Option<Vec<Vec<u32>>>,
        reply: Reply<Embeddings>,
    },
    /// A search: its query embedded by a model worker, then ranked on the rank stage.
    Search {
        search: Box<SearchJob>,
        /// Its query's token ids, when the caller tokenized it.
        ids: Option<Vec<u32>>,
        clock: SearchClock,
        reply: Reply<Vec<SearchHit>>,
    },
}

impl EmbedJob {
    /// The texts this job embeds.
    pub fn texts(&self) -> Vec<&str> {
        match self {
            EmbedJob::Texts { texts, .. } => texts.iter().map(String::as_str).collect(),
            EmbedJob::Search { search, .. } => vec![search.text.as_str()],
        }
    }

    /// Their tokens, when the caller tokenized them.
    pub fn tokens(&self) -> Option<usize> {
        match self {
            EmbedJob::Texts { ids, .. } => ids.as_ref().map(|v| v.iter().map(Vec::len).sum()),
            EmbedJob::Search { ids, .. } => ids.as_ref().map(Vec::len),
        }
    }

    /// Their token ids, when the caller tokenized them (taken: the texts stay).
    pub fn take_ids(&mut self) -> Option<Vec<Vec<u32>>> {
        match self {
            EmbedJob::Texts { ids, .. } => ids.take(),
            EmbedJob::Search { ids, .. } => ids.take().map(|v| vec![v]),
        }
    }

    pub fn kind(&self) -> TextKind {
        match self {
            EmbedJob::Texts { kind, .. } => *kind,
            EmbedJob::Search { .. } => TextKind::Query,
        }
    }

    /// Whether its caller gave up (a request timed out, a client left).
    pub fn abandoned(&self) -> bool {
        match self {
            EmbedJob::Texts { reply, .. } => reply.is_closed(),
            EmbedJob::Search { reply, .. } => reply.is_closed(),
        }
    }

    /// Answers it with an error.
    pub fn fail(self, e: RuntimeError) {
        match self {
            EmbedJob::Texts { reply, .. } => drop(reply.send(Err(e))),
            EmbedJob::Search { reply, .. } => drop(reply.send(Err(e))),
        }
    }
}

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

/// When a search passed each serving stage, for `/metrics`' seconds per answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchClock {
    /// Seconds its caller spent tokenizing it.
    pub tokenize: f64,
    /// When it was queued for the model workers.
    pub queued: Instant,
    /// When its model batch started embedding, and when it was embedded.
    pub embed_start: Option<Instant>,
    pub embedded: Option<Instant>,
}

impl SearchClock {
    pub fn new(tokenize: f64) -> Self {
        Self {
            tokenize,
            queued: Instant::now(),
            embed_start: None,
            embedded: None,
        }
    }
}

/// One search on its way to the rank stage: the job, its query's vector, where to answer.
#[derive(Debug)]
pub(crate) struct Embedded {
    pub search: Box<SearchJob>,
    pub vector: Embeddings,
    pub clock: SearchClock,
    pub reply: Reply<Vec<SearchHit>>,
}

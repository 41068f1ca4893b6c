//! What callers hand the model thread (texts to embed, or a search to finish) and what the
//! rank stage receives from it.

use std::sync::Arc;

use memdex_core::TextKind;
use memdex_embed::Embeddings;
use memdex_rank::{RankOptions, SearchHit, Snapshot, TopK};
use tokio::sync::oneshot;

use crate::RuntimeError;

pub(crate) type Reply<T> = oneshot::Sender<Result<T, RuntimeError>>;

/// A job for the model thread.
#[derive(Debug)]
pub(crate) enum EmbedJob {
    /// Texts to embed for a caller (an append's passages, `/v1/embeddings`).
    Texts {
        texts: Vec<String>,
        kind: TextKind,
        reply: Reply<Embeddings>,
    },
    /// A search: its query embedded on the model thread, then ranked on the rank stage.
    Search {
        search: Box<SearchJob>,
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

/// One search on its way to the rank stage: the job, its query's vector, where to answer.
#[derive(Debug)]
pub(crate) struct Embedded {
    pub search: Box<SearchJob>,
    pub vector: Embeddings,
    pub reply: Reply<Vec<SearchHit>>,
}

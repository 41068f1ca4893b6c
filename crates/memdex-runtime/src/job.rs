//! What callers hand the model thread: texts to embed (a search's query with what the rank
//! stage needs to rank it), and what the threads answer.

use std::sync::Arc;

use memdex_core::TextKind;
use memdex_embed::Embeddings;
use memdex_rank::{RankOptions, SearchHit, TopK};
use tokio::sync::oneshot;

use crate::view::View;
use crate::RuntimeError;

pub(crate) type Reply<T> = oneshot::Sender<Result<T, RuntimeError>>;

/// Texts to embed for one caller.
#[derive(Debug)]
pub(crate) struct EmbedJob {
    pub texts: Vec<String>,
    pub kind: TextKind,
    /// A search (one query text) the rank stage ranks with the batch's other searches, when
    /// the engine's ranker batches (a device).
    pub rank: Option<RankRequest>,
    pub reply: Reply<Embedded>,
}

/// What a search asks besides its text and tenant (`Engine::search_query`).
#[derive(Debug, Clone, Copy)]
pub struct SearchAsk {
    pub date_ms: Option<i64>,
    pub top: TopK,
    pub opts: RankOptions,
}

/// One search's share of a ranked batch.
#[derive(Debug, Clone)]
pub(crate) struct RankRequest {
    pub view: Arc<View>,
    pub tenant: String,
    pub ask: SearchAsk,
}

/// What the threads answer: the vectors, and for a search the rank stage ranked, its hits.
#[derive(Debug)]
pub struct Embedded {
    pub vectors: Embeddings,
    /// The search's top `k` (None: not ranked yet; the caller ranks it).
    pub hits: Option<Vec<SearchHit>>,
}

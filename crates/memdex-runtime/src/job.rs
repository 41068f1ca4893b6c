//! What callers hand the model thread: texts to embed (a search's query with the view and
//! tenant it ranks, and what it asks of the fused ranking), and what the thread answers.

use std::sync::Arc;

use memdex_core::TextKind;
use memdex_embed::Embeddings;
use memdex_rank::{RankOptions, SearchHit};
use tokio::sync::oneshot;

use crate::view::View;
use crate::RuntimeError;

pub(crate) type Reply<T> = oneshot::Sender<Result<T, RuntimeError>>;

/// Texts to embed for one caller.
#[derive(Debug)]
pub(crate) struct EmbedJob {
    pub texts: Vec<String>,
    pub kind: TextKind,
    /// A search's query (one text) with the view and tenant it ranks: scored on the device
    /// together with the batch's other searches when the engine scans there.
    pub scan: Option<ScanRequest>,
    pub reply: Reply<Embedded>,
}

/// One search's share of a device batch.
#[derive(Debug, Clone)]
pub(crate) struct ScanRequest {
    pub view: Arc<View>,
    pub tenant: String,
    /// Rank the search whole through the fused kernels (when the engine has them).
    pub fused: Option<FusedAsk>,
}

/// What the model thread answers: the vectors, and for a search scored on the device the
/// dense scores of its tenant's live rows in the view it ranks (timeline order).
#[derive(Debug)]
pub struct Embedded {
    pub vectors: Embeddings,
    pub dense: Option<Vec<f32>>,
    /// A search ranked whole by the fused kernels: its top `k`.
    pub hits: Option<Vec<SearchHit>>,
}

/// What a search asks of the fused ranking besides its query and tenant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FusedAsk {
    pub date_ms: Option<i64>,
    pub k: usize,
    pub opts: RankOptions,
}

//! Helpers shared by the runtime's integration tests.

#![allow(clippy::unwrap_used, dead_code)]

use memdex_rank::{Query, RankOptions};
use memdex_runtime::Engine;

/// The values of `tenant`'s top `k` items for `text`, embedded by the engine's model thread
/// and ranked with `opts` on the CPU scorer.
pub fn top_values(
    e: &Engine,
    tenant: &str,
    text: &str,
    k: usize,
    opts: &RankOptions,
) -> Vec<String> {
    let view = e.view();
    let emb = e
        .embed_query(text.into(), tenant, &view)
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    let q = Query {
        text,
        vector: emb.vectors.row(0),
        date_ms: None,
    };
    let top = memdex_rank::TopK { k, explain: false };
    view.search(tenant, &q, emb.dense.as_deref(), e.cpu_scorer(), opts, top)
        .unwrap()
        .into_iter()
        .map(|h| h.value)
        .collect()
}

//! Helpers shared by the runtime's integration tests.

#![allow(clippy::unwrap_used, dead_code)]

use memdex_rank::{Query, RankOptions};
use memdex_runtime::{Engine, SearchAsk};

/// The values of `tenant`'s top `k` items for `text`, embedded by the engine's model thread
/// and ranked with `opts` through the engine's ranker.
pub fn top_values(
    e: &Engine,
    tenant: &str,
    text: &str,
    k: usize,
    opts: &RankOptions,
) -> Vec<String> {
    let view = e.view();
    let top = memdex_rank::TopK { k, explain: false };
    let ask = SearchAsk {
        date_ms: None,
        top,
        opts: *opts,
    };
    let emb = e
        .search_query(text.into(), tenant, &view, ask)
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    if let Some(hits) = emb.hits {
        return hits.into_iter().map(|h| h.value).collect();
    }
    let q = Query {
        text,
        vector: emb.vectors.row(0),
        date_ms: None,
    };
    view.search(e.ranker(), tenant, &q, opts, top)
        .unwrap()
        .into_iter()
        .map(|h| h.value)
        .collect()
}

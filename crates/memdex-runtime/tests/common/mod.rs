//! Helpers shared by the runtime's integration tests.

#![allow(clippy::unwrap_used, dead_code)]

use memdex_rank::RankOptions;
use memdex_runtime::{Engine, SearchAsk, SearchJob};

/// The values of `tenant`'s top `k` items for `text`: the engine embeds the query on its
/// model thread and ranks it with `opts` on its rank stage.
pub fn top_values(
    e: &Engine,
    tenant: &str,
    text: &str,
    k: usize,
    opts: &RankOptions,
) -> Vec<String> {
    let job = SearchJob {
        snapshot: e.view(),
        tenant: tenant.into(),
        text: text.into(),
        ask: SearchAsk {
            date_ms: None,
            top: memdex_rank::TopK { k, explain: false },
            opts: *opts,
        },
    };
    let hits = e
        .search(job)
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap()
        .hits;
    hits.into_iter().map(|h| h.value).collect()
}

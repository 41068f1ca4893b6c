//! Searches ranked on the rank stage through memdex-kernels' accelerated ranker (here on the
//! kernels' CPU reference; CUDA on a GPU box): concurrent searches of several tenants come
//! back with the CPU ranker's hits, options the kernel does not run are ranked by its CPU
//! fallback, and a delete is never ranked.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use memdex_core::{Role, Session, Turn};
use memdex_kernels::{cpu::Cpu, KernelRanker, Kernels, Placement};
use memdex_rank::{CpuRanker, Query, RankOptions, Retriever, SearchHit, TopK};
use memdex_runtime::{DeleteTarget, Engine, EngineOptions, SearchAsk};
use memdex_testkit::HashEncoder;

const DAY: i64 = 86_400_000;
const WORDS: [&str; 8] = [
    "dog", "guitar", "marathon", "sister", "garden", "trip", "piano", "camera",
];

fn sessions(tenant: &str, n: usize) -> Vec<Session> {
    (0..n)
        .map(|s| Session {
            tenant: tenant.into(),
            session_id: format!("{tenant}-{s}"),
            timestamp_ms: 1_683_540_000_000 + s as i64 * 7 * DAY,
            turns: (0..4)
                .map(|i| Turn {
                    role: if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    content: format!(
                        "my {} and the {} in week {s}, turn {i}",
                        WORDS[(s + i) % 8],
                        WORDS[(3 * s + 5 * i + tenant.len()) % 8]
                    ),
                })
                .collect(),
        })
        .collect()
}

fn start(dir: &std::path::Path) -> Engine {
    let opts = EngineOptions {
        compact_every: None,
        ranker: Some(Arc::new(KernelRanker::new(
            Arc::new(Cpu) as Arc<dyn Kernels + Send + Sync>,
            Placement::Device,
        ))),
        ..EngineOptions::default()
    };
    let e = Engine::start(dir, Box::new(HashEncoder::new(32)), opts).unwrap();
    for t in ["ann", "ben", "cid"] {
        e.append(t, sessions(t, 8))
            .unwrap()
            .blocking_recv()
            .unwrap()
            .unwrap();
    }
    e
}

/// (hits from the rank stage if it ranked the search, the CPU ranker's hits).
fn both(
    e: &Engine,
    tenant: &str,
    text: &str,
    opts: RankOptions,
) -> (Option<Vec<SearchHit>>, Vec<SearchHit>) {
    let view = e.view();
    let ask = SearchAsk {
        date_ms: None,
        top: TopK {
            k: 10,
            explain: false,
        },
        opts,
    };
    let emb = e
        .search_query(text.into(), tenant, &view, ask)
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    let q = Query {
        text,
        vector: emb.vectors.row(0),
        date_ms: None,
    };
    let cpu = view
        .search(
            &CpuRanker::default(),
            tenant,
            &q,
            &opts,
            TopK {
                k: 10,
                explain: false,
            },
        )
        .unwrap();
    (emb.hits, cpu)
}

fn ids(h: &[SearchHit]) -> Vec<u64> {
    h.iter().map(|x| x.item_id).collect()
}

#[test]
fn concurrent_searches_come_back_ranked_as_the_cpu_pipeline_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let e = start(tmp.path());
    assert!(e.ranker().batched());
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let e = e.clone();
            std::thread::spawn(move || {
                let tenant = ["ann", "ben", "cid"][i % 3];
                for w in WORDS {
                    let (fused, cpu) = both(
                        &e,
                        tenant,
                        &format!("what about my {w}?"),
                        RankOptions::default(),
                    );
                    let fused = fused.expect("the rank stage ranked it");
                    assert_eq!(ids(&fused), ids(&cpu), "{tenant} {w}");
                    for (f, c) in fused.iter().zip(&cpu) {
                        assert!((f.score - c.score).abs() < 1e-3, "{f:?} vs {c:?}");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let st = e.stats();
    let ranked = st.rank_queries.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(ranked, 6 * WORDS.len() as u64);
    let counts = e.ranker().counts();
    let on = |d: &str| counts.iter().find(|c| c.device == d).unwrap().queries;
    assert_eq!(on("cpu"), 0, "the kernels ranked every search");

    // a stage the kernel does not run: the CPU fallback ranks it on the rank stage
    let dense = RankOptions {
        retriever: Retriever::Dense,
        ..RankOptions::dense()
    };
    let (fused, cpu) = both(&e, "ann", "dog", dense);
    assert_eq!(ids(&fused.expect("ranked on the rank stage")), ids(&cpu));
    let counts = e.ranker().counts();
    assert_eq!(
        counts.iter().find(|c| c.device == "cpu").unwrap().queries,
        1
    );

    // a deleted item is never ranked by the fused path either
    let (hits, _) = both(&e, "ann", "my dog", RankOptions::default());
    let top = hits.unwrap()[0].item_id;
    e.delete(DeleteTarget::Item {
        tenant: "ann".into(),
        item_id: top,
    })
    .unwrap()
    .blocking_recv()
    .unwrap()
    .unwrap();
    let (hits, cpu) = both(&e, "ann", "my dog", RankOptions::default());
    let hits = hits.unwrap();
    assert!(hits.iter().all(|h| h.item_id != top));
    assert_eq!(ids(&hits), ids(&cpu));
}

//! Searches ranked on the rank stage through memdex-kernels' accelerated ranker (here on the
//! kernels' CPU reference; CUDA on a GPU box): concurrent searches of several tenants come
//! back with the CPU ranker's hits, options the kernel does not run are ranked by its CPU
//! fallback, and a delete is never ranked.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use memdex_core::TextKind;
use memdex_core::{Role, Session, Turn};
use memdex_kernels::{cpu::Cpu, KernelRanker, Placement, RankKernels};
use memdex_rank::{BatchQuery, CpuRanker, Query, RankOptions, Retriever, SearchHit, TopK};
use memdex_runtime::{DeleteTarget, Engine, EngineOptions, SearchAsk, SearchJob};
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
        ..EngineOptions::default()
    };
    let ranker = Arc::new(KernelRanker::new(
        Arc::new(Cpu) as Arc<dyn RankKernels + Send + Sync>,
        Placement::Device,
    ));
    let e = Engine::start(dir, Box::new(HashEncoder::new(32)), ranker, opts).unwrap();
    for t in ["ann", "ben", "cid"] {
        e.append(t, sessions(t, 8))
            .unwrap()
            .blocking_recv()
            .unwrap()
            .unwrap();
    }
    e
}

/// (the engine's hits, ranked on its rank stage; the CPU ranker's over the same snapshot).
fn both(
    e: &Engine,
    tenant: &str,
    text: &str,
    opts: RankOptions,
) -> (Option<Vec<SearchHit>>, Vec<SearchHit>) {
    let snapshot = e.view();
    let top = TopK {
        k: 10,
        explain: false,
    };
    let job = SearchJob {
        snapshot: snapshot.clone(),
        tenant: tenant.into(),
        text: text.into(),
        ask: SearchAsk {
            date_ms: None,
            top,
            opts,
        },
    };
    let hits = e
        .search(job)
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap()
        .hits;
    let v = (e.embed(vec![text.into()], TextKind::Query).unwrap())
        .blocking_recv()
        .unwrap()
        .unwrap();
    let q = [BatchQuery {
        tenant,
        query: Query {
            text,
            vector: v.row(0),
            date_ms: None,
        },
    }];
    let mut cpu = snapshot.top(&CpuRanker::default(), &q, &opts, top).unwrap();
    (Some(hits), cpu.pop().unwrap().unwrap())
}

fn ids(h: &[SearchHit]) -> Vec<u64> {
    h.iter().map(|x| x.item_id).collect()
}

#[test]
fn concurrent_searches_come_back_ranked_as_the_cpu_pipeline_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let e = start(tmp.path());
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

/// A batching ranker that takes `pause` per call and records when each call ran.
#[derive(Debug)]
struct SlowRanker {
    cpu: CpuRanker,
    pause: std::time::Duration,
    calls: std::sync::Mutex<Vec<(std::time::Instant, std::time::Instant)>>,
}

impl memdex_rank::BatchRanker for SlowRanker {
    fn describe(&self) -> String {
        "slow".into()
    }
    fn top(
        &self,
        b: &memdex_rank::Batch<'_, '_>,
        top: TopK,
    ) -> Result<memdex_rank::BatchHits, memdex_rank::RankError> {
        let t = std::time::Instant::now();
        std::thread::sleep(self.pause);
        let out = self.cpu.top(b, top);
        self.calls
            .lock()
            .unwrap()
            .push((t, std::time::Instant::now()));
        out
    }
    fn all<'s>(
        &self,
        b: &memdex_rank::Batch<'_, 's>,
    ) -> Result<memdex_rank::BatchRankings<'s>, memdex_rank::RankError> {
        self.cpu.all(b)
    }
    fn counts(&self) -> Vec<memdex_rank::DeviceCount> {
        self.cpu.counts()
    }
}

/// The rank stage overlaps the model: while one batch's searches are being ranked, the model
/// thread embeds the next batch (it does not wait for the ranking).
#[test]
fn the_model_embeds_the_next_batch_while_one_is_ranked() {
    let tmp = tempfile::tempdir().unwrap();
    let embeds: Arc<std::sync::Mutex<Vec<std::time::Instant>>> = Arc::default();
    let seen = embeds.clone();
    let encoder = memdex_testkit::HookedEncoder::new(32, "hooked", move |_, kind| {
        if kind == memdex_core::TextKind::Query {
            seen.lock().unwrap().push(std::time::Instant::now());
        }
        Ok(())
    });
    let ranker = Arc::new(SlowRanker {
        cpu: CpuRanker::default(),
        pause: std::time::Duration::from_millis(300),
        calls: Default::default(),
    });
    let opts = EngineOptions {
        compact_every: None,
        ..EngineOptions::default()
    };
    let e = Engine::start(tmp.path(), Box::new(encoder), ranker.clone(), opts).unwrap();
    e.append("ann", sessions("ann", 4))
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    let ask = |e: &Engine, text: &str| {
        let ask = SearchAsk {
            date_ms: None,
            top: TopK {
                k: 3,
                explain: false,
            },
            opts: RankOptions::default(),
        };
        let job = SearchJob {
            snapshot: e.view(),
            tenant: "ann".into(),
            text: text.into(),
            ask,
        };
        e.search(job).unwrap()
    };
    let first = ask(&e, "my dog");
    std::thread::sleep(std::time::Duration::from_millis(100)); // the first is being ranked
    let second = ask(&e, "my garden");
    for t in [first, second] {
        let hits = t.blocking_recv().unwrap().unwrap().hits;
        assert_eq!(hits.len(), 3, "ranked on the rank stage");
    }
    let calls = ranker.calls.lock().unwrap().clone();
    let embeds = embeds.lock().unwrap().clone();
    assert_eq!(
        (calls.len(), embeds.len()),
        (2, 2),
        "two batches of one search each"
    );
    let (rank_start, rank_end) = calls[0];
    assert!(
        embeds[1] > rank_start && embeds[1] < rank_end,
        "the second query was embedded while the first was ranked"
    );
    let secs =
        |stage: usize| e.stats().stage_micros[stage].load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        secs(1) >= 600_000,
        "the rank stage's seconds are counted: {}",
        secs(1)
    );
}

//! The accelerated ranker (memdex-kernels' `KernelRanker` on the kernels' CPU reference, its
//! host fallback) against the CPU ranker (the reference): the same top-10 for every query
//! (order swaps only between near-equal scores), unknown tenants answered per query, and the
//! options the kernel does not run ranked by the CPU ranker it holds.

#![allow(clippy::unwrap_used)]

mod common;

use memdex_core::{Granularity, Role, Session, TextKind, Turn};
use memdex_embed::Encoder;
use memdex_ingest::ItemizeOptions;
use std::sync::Arc;

use memdex_kernels::{cpu::Cpu, KernelRanker, Placement, RankKernels};
use memdex_pipeline::{AppendPipeline, PipelineError};
use memdex_rank::{
    BatchHits, BatchQuery, BatchRanker, Query, RankError, RankOptions, Retriever, TopK,
};
use memdex_store::{Extraction, Store, StoreWriter};
use memdex_testkit::HashEncoder;

const DIM: usize = 32;
const DAY: i64 = 86_400_000;

const WORDS: [&str; 16] = [
    "dog",
    "guitar",
    "marathon",
    "sister",
    "garden",
    "trip",
    "piano",
    "doctor",
    "camera",
    "recipe",
    "bike",
    "interview",
    "painting",
    "apartment",
    "yoga",
    "movie",
];

/// Tenant `t`'s sessions: 12 sessions of 5 turns, a week apart, some naming dates, each
/// ending with a change the user states.
fn sessions(t: usize) -> Vec<Session> {
    (0..12)
        .map(|s| Session {
            tenant: format!("tenant-{t}"),
            session_id: format!("t{t}-s{s}"),
            timestamp_ms: 1_683_540_000_000 + (s as i64) * 7 * DAY,
            turns: (0..5)
                .map(|i| {
                    let (a, b) = (WORDS[(t + s + i) % 16], WORDS[(3 * s + i * 5 + t) % 16]);
                    let date = if i == 2 { " on May 20, 2023" } else { "" };
                    // the last turn states a change (the update stage's cue)
                    let change = if i == 4 {
                        "; since then I switched"
                    } else {
                        ""
                    };
                    Turn {
                        role: if i % 2 == 0 {
                            Role::User
                        } else {
                            Role::Assistant
                        },
                        content: format!(
                            "we talked about my {a} and the {b}{date}, turn {i}{change}"
                        ),
                    }
                })
                .collect(),
        })
        .collect()
}

fn store(dir: &std::path::Path) -> memdex_memory::Reader {
    let enc = HashEncoder::new(DIM);
    let x = Extraction {
        events: true,
        ..Extraction::default()
    };
    let mut w =
        StoreWriter::open_or_create_with(dir, enc.info(), Granularity::Turn, None, &x).unwrap();
    let mut p = AppendPipeline::new(
        Store::open(dir).unwrap(),
        ItemizeOptions::new(Granularity::Turn),
        false,
    )
    .unwrap();
    for t in 0..4 {
        p.admit(&sessions(t)).unwrap();
    }
    let mut embed =
        |keys: &[&str]| -> Result<_, PipelineError> { Ok(enc.embed(keys, TextKind::Passage)?) };
    p.commit(&mut w, &mut embed).unwrap();
    common::reader(dir, DIM)
}

/// The top `k` of `batch` through the accelerated ranker on `kernels`, every batch on them.
fn fused(
    searcher: &memdex_memory::Reader,
    kernels: Arc<dyn RankKernels + Send + Sync>,
    batch: &[BatchQuery<'_>],
    k: usize,
    opts: &RankOptions,
) -> Result<BatchHits, RankError> {
    fused_with(
        searcher,
        &KernelRanker::new(kernels, Placement::Device),
        batch,
        k,
        opts,
    )
}

fn fused_with(
    searcher: &memdex_memory::Reader,
    ranker: &KernelRanker,
    batch: &[BatchQuery<'_>],
    k: usize,
    opts: &RankOptions,
) -> Result<BatchHits, RankError> {
    let top = TopK { k, explain: false };
    ranker.top(&searcher.batch(batch, opts), top)
}

const QUERIES: [&str; 6] = [
    "what did I say about my dog?",
    "when did we talk about the guitar?",
    "which trip did I mention last month?",
    "the piano and the camera",
    "what happened on May 20, 2023?",
    "tell me about yoga",
];

/// Query `i` of the batch asks `tenants[i]` the `i`-th of [`QUERIES`] (cycling), its vector
/// from `vectors` (one row per query of `QUERIES`).
fn batch<'a>(
    tenants: &[&'a str],
    vectors: &'a memdex_embed::Embeddings,
    date_ms: Option<i64>,
) -> Vec<BatchQuery<'a>> {
    (tenants.iter().enumerate())
        .map(|(i, &tenant)| BatchQuery {
            tenant,
            query: Query {
                text: QUERIES[i % QUERIES.len()],
                vector: vectors.row(i % QUERIES.len()),
                date_ms,
            },
        })
        .collect()
}

#[test]
fn fused_ranking_returns_the_cpu_pipelines_top_10() {
    let tmp = tempfile::tempdir().unwrap();
    let searcher = store(tmp.path());
    let vectors = HashEncoder::new(DIM)
        .embed(&QUERIES, TextKind::Query)
        .unwrap();
    let date = Some(1_683_540_000_000 + 80 * DAY);
    let tenants = ["tenant-0", "tenant-1", "tenant-2", "tenant-3", "nobody"];
    let asked: Vec<&str> = (0..20).map(|i| tenants[i % tenants.len()]).collect();
    let batch = batch(&asked, &vectors, date);
    let opts = RankOptions::default();
    let fused = fused(&searcher, Arc::new(Cpu), &batch, 10, &opts).unwrap();
    let no_time = RankOptions {
        time: None,
        ..RankOptions::default()
    };
    let mut time_mattered = 0;
    for (q, got) in batch.iter().zip(fused) {
        let Ok(ranking) = searcher.rank(q.tenant, &q.query, &opts) else {
            assert!(
                matches!(got, Err(RankError::UnknownTenant { .. })),
                "{got:?}"
            );
            continue;
        };
        let (want, got) = (ranking.hits(10), got.unwrap());
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g.score - w.score).abs() < 1e-3 * (1.0 + w.score.abs()),
                "{}: {} vs {}",
                q.query.text,
                g.score,
                w.score
            );
            assert!(g.item_id == w.item_id || (g.score - w.score).abs() < 1e-3);
            assert_eq!((g.rank, &g.tenant), (w.rank, &w.tenant));
        }
        let plain = searcher
            .rank(q.tenant, &q.query, &no_time)
            .unwrap()
            .hits(10);
        let ids = |h: &[memdex_rank::SearchHit]| h.iter().map(|x| x.item_id).collect::<Vec<_>>();
        time_mattered += usize::from(ids(&plain) != ids(&want));
    }
    assert!(
        time_mattered > 0,
        "no query's top 10 depended on the time stage"
    );
}

#[test]
fn options_the_kernel_does_not_run_go_to_the_cpu_ranker() {
    let tmp = tempfile::tempdir().unwrap();
    let searcher = store(tmp.path());
    let v = HashEncoder::new(DIM)
        .embed(&["dog"], TextKind::Query)
        .unwrap();
    let q = [BatchQuery {
        tenant: "tenant-0",
        query: Query {
            text: "dog",
            vector: v.row(0),
            date_ms: None,
        },
    }];
    let ranker = KernelRanker::new(Arc::new(Cpu), Placement::Device);
    let dense = RankOptions {
        retriever: Retriever::Dense,
        ..RankOptions::default()
    };
    let on = |r: &KernelRanker, d: &str| {
        let c = r.counts();
        c.iter().find(|c| c.device == d).unwrap().queries
    };
    for (opts, k) in [(dense, 10), (RankOptions::default(), 500)] {
        let got = fused_with(&searcher, &ranker, &q, k, &opts).unwrap();
        let want = searcher
            .rank("tenant-0", &q[0].query, &opts)
            .unwrap()
            .hits(k);
        let ids = |h: &[memdex_rank::SearchHit]| h.iter().map(|x| x.item_id).collect::<Vec<_>>();
        assert_eq!(ids(got[0].as_ref().unwrap()), ids(&want));
    }
    assert_eq!((on(&ranker, "cpu"), on(&ranker, "kernels:cpu")), (2, 0));
    fused_with(&searcher, &ranker, &q, 10, &RankOptions::default()).unwrap();
    assert_eq!(
        on(&ranker, "kernels:cpu"),
        1,
        "the default options ran on the kernels"
    );
    let short = [BatchQuery {
        query: Query {
            vector: &v.row(0)[..3],
            ..q[0].query
        },
        ..q[0]
    }];
    let e = fused_with(&searcher, &ranker, &short, 10, &RankOptions::default()).unwrap_err();
    assert!(e.to_string().contains("query vector values"), "{e}");
}

/// Each tenant reaches the kernels as one keyed part: the same key batch after batch while
/// its rows do not change (what lets a device keep it resident), distinct per tenant and per
/// FragRel scope (the groups differ).
#[test]
fn tenants_reach_the_kernels_as_parts_with_stable_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let searcher = store(tmp.path());
    let v = HashEncoder::new(DIM)
        .embed(&QUERIES, TextKind::Query)
        .unwrap();
    let rec = Arc::new(memdex_testkit::SpyKernels::default());
    let spy = || rec.clone() as Arc<dyn RankKernels + Send + Sync>;
    let opts = RankOptions::default();
    let first = batch(&["tenant-0", "tenant-1", "tenant-0", "tenant-2"], &v, None);
    let second = batch(&["tenant-2", "tenant-0"], &v, None);
    let a = fused(&searcher, spy(), &first, 10, &opts).unwrap();
    fused(&searcher, spy(), &second, 10, &opts).unwrap();
    let whole = RankOptions {
        fragrel: opts.fragrel.map(|f| memdex_rank::FragRelStage {
            scope: memdex_rank::FragRelScope::History,
            ..f
        }),
        ..opts
    };
    fused(&searcher, spy(), &first, 10, &whole).unwrap();
    let calls = rec.part_calls();
    assert_eq!(calls.len(), 3);
    let (k0, k1, k2) = (calls[0][0].0, calls[0][1].0, calls[0][2].0);
    assert_eq!(calls[0].len(), 3, "one part per tenant of the batch");
    assert!(k0 != 0 && k0 != k1 && k1 != k2 && k0 != k2, "{calls:?}");
    assert_eq!(
        calls[1],
        vec![calls[0][2], calls[0][0]],
        "the same keys again"
    );
    assert!(calls[0].iter().all(|&(_, rows)| rows == 60), "{calls:?}");
    for (scoped, global) in calls[0].iter().zip(&calls[2]) {
        assert_ne!(
            scoped.0, global.0,
            "another scope, other groups, another key"
        );
    }
    // and the answers are the CPU pipeline's
    for (q, got) in first.iter().zip(a) {
        let want = searcher.rank(q.tenant, &q.query, &opts).unwrap().hits(10);
        let ids = |h: &[memdex_rank::SearchHit]| h.iter().map(|x| x.item_id).collect::<Vec<_>>();
        assert_eq!(ids(&got.unwrap()).len(), ids(&want).len());
    }
}

/// The update stage on the fused path: the kernel is asked for `fused_depth(k)` hits so the
/// stage sees the same top items as on the CPU; with k = 3 both paths answer the same three.
#[test]
fn the_update_stage_agrees_on_the_fused_path_for_a_small_k() {
    const PRESENT: [&str; 4] = [
        "what is my dog like?",
        "where is my sister?",
        "which guitar do I play?",
        "what does my doctor say about yoga?",
    ];
    let tmp = tempfile::tempdir().unwrap();
    let searcher = store(tmp.path());
    let vectors = HashEncoder::new(DIM)
        .embed(&PRESENT, TextKind::Query)
        .unwrap();
    let batch: Vec<BatchQuery<'_>> = (0..16)
        .map(|i| BatchQuery {
            tenant: ["tenant-0", "tenant-1", "tenant-2", "tenant-3"][i % 4],
            query: Query {
                text: PRESENT[i / 4],
                vector: vectors.row(i / 4),
                date_ms: None,
            },
        })
        .collect();
    let opts = RankOptions::default();
    let off = RankOptions {
        update: None,
        ..RankOptions::default()
    };
    let hits = fused(&searcher, Arc::new(Cpu), &batch, 3, &opts).unwrap();
    let mut moved = 0;
    for (q, got) in batch.iter().zip(hits) {
        let want = searcher.rank(q.tenant, &q.query, &opts).unwrap().hits(3);
        let ids = |h: &[memdex_rank::SearchHit]| h.iter().map(|x| x.item_id).collect::<Vec<_>>();
        let got = got.unwrap();
        assert_eq!(ids(&got), ids(&want), "{}", q.query.text);
        let plain = searcher.rank(q.tenant, &q.query, &off).unwrap().hits(3);
        moved += usize::from(ids(&plain) != ids(&want));
    }
    assert!(moved > 0, "the update stage changed no query's top 3");
}

//! Every ranker behind the seam serves what the CPU ranker serves: the device scan (the CPU
//! ranker with the searches of one model batch scored together on the model's device,
//! whatever their tenants) and memdex-kernels' accelerated ranker (the rank stage, one fused
//! call per group of a model batch). CI runs both on the CPU (candle's CPU backend, the
//! kernels' CPU reference); the CUDA build runs the same code on the GPU.

#![allow(clippy::unwrap_used)]

mod common;

use common::{session, TestServer};

use memdex_memory::{EngineOptions, RankChoice, RankDevice};
use memdex_server::ServerConfig;
use serde_json::{json, Value};

const TENANTS: [&str; 3] = ["ann", "ben", "cai"];

fn seed(s: &TestServer) -> u64 {
    let texts = [
        ["I adopted a dog named Rex.", "Congrats!"],
        ["My sister moved to Paris last spring.", "Nice city."],
        ["I started piano lessons on Tuesdays.", "Fun."],
        ["We bought a red car in March.", "Great."],
    ];
    // several appends per tenant: several segments, tenants interleaved in each
    for (round, pair) in texts.iter().enumerate() {
        for (ti, t) in TENANTS.iter().enumerate() {
            let text = [
                format!("{} ({t}, note {round})", pair[0]),
                pair[1].to_string(),
            ];
            let body = json!([session(
                &format!("{t}-{round}"),
                round as u32 + ti as u32 + 1,
                &[&text[0], &text[1]]
            )]);
            let (st, r) = s.json("POST", &format!("/v1/tenants/{t}/sessions"), None, &body);
            assert_eq!(st, 200, "{r}");
        }
    }
    // a delete splits one tenant's rows into runs
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/ben/search",
        None,
        &json!({"query": "piano lessons", "k": 1}),
    );
    assert_eq!(st, 200, "{r}");
    let id = r["hits"][0]["item_id"].as_u64().unwrap();
    let (st, r) = s.json(
        "DELETE",
        &format!("/v1/tenants/ben/items/{id}"),
        None,
        &Value::Null,
    );
    assert_eq!(st, 200, "{r}");
    id
}

const QUERIES: [&str; 4] = [
    "what is my dog's name?",
    "where did my sister move?",
    "when are my piano lessons?",
    "which car did we buy?",
];

/// Every (tenant, query) search: one at a time, or from 12 threads at once so that model
/// batches mix tenants.
fn search_all(s: &TestServer, concurrent: bool) -> Answers {
    std::thread::scope(|sc| {
        let handles: Vec<_> = TENANTS
            .iter()
            .flat_map(|t| QUERIES.iter().map(move |q| (*t, *q)))
            .map(|(t, q)| {
                let h = sc.spawn(move || {
                    let (st, r) = s.json(
                        "POST",
                        &format!("/v1/tenants/{t}/search"),
                        None,
                        &json!({"query": q, "k": 5, "date": "2024-01-01"}),
                    );
                    assert_eq!(st, 200, "{r}");
                    (t.to_string(), q.to_string(), r)
                });
                if !concurrent {
                    while !h.is_finished() {
                        std::thread::yield_now();
                    }
                }
                h
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn hits(v: &Value) -> Vec<(u64, f64, String)> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["item_id"].as_u64().unwrap(),
                h["score"].as_f64().unwrap(),
                h["tenant"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn metric(s: &TestServer, name: &str) -> u64 {
    let (_, text) = s.call("GET", "/metrics", None, b"");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .trim()
        .parse()
        .unwrap()
}

/// The store seeded and searched on the CPU ranker (on the rank stage, like every ranker), one
/// at a time and concurrently; the server stopped, its directory kept.
fn cpu_answers() -> (TestServer, u64, Answers, Answers) {
    let mut off = with(EngineOptions::default(), tempfile::tempdir().unwrap());
    assert_eq!(off.memory.ranker().describe(), "cpu");
    let deleted = seed(&off);
    let plain = search_all(&off, false);
    let plain_mixed = search_all(&off, true);
    // the CPU ranker ranks every search on the rank stage too (the seeding's own search
    // included)
    assert!(
        metric(&off, "memdex_rank_stage_queries_total")
            > 2 * (TENANTS.len() * QUERIES.len()) as u64
    );
    off.stop();
    off.memory.close();
    (off, deleted, plain, plain_mixed)
}

type Answers = Vec<(String, String, Value)>;

fn with(opts: EngineOptions, dir: tempfile::TempDir) -> TestServer {
    TestServer::start_in(dir, ServerConfig::default(), opts)
}

/// The same store, served again with `opts`, ranked as `rank` says.
fn again_ranked(off: &TestServer, opts: EngineOptions, rank: RankChoice) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(off.dir.path(), dir.path());
    TestServer::start_ranked(dir, ServerConfig::default(), opts, rank)
}

#[test]
fn device_scan_ranks_like_the_cpu_path() {
    let (off, deleted, plain, plain_mixed) = cpu_answers();
    let scan = RankChoice {
        device_scan: Some(true),
        ..RankChoice::default()
    };
    let on = again_ranked(&off, EngineOptions::default(), scan);
    assert!(on
        .memory
        .ranker()
        .describe()
        .starts_with("cpu, dense scores on"));
    let scanned = search_all(&on, false);
    let scanned_mixed = search_all(&on, true);
    assert_eq!(
        metric(&on, "memdex_rank_stage_queries_total"),
        2 * (TENANTS.len() * QUERIES.len()) as u64,
        "every search ranked on the rank stage"
    );
    assert!(metric(&on, "memdex_rank_stage_batches_total") >= 1);
    // one at a time, the query vectors are the same on both sides: same ranking, same scores
    compare(&plain, &scanned, deleted, 1e-5);
    // concurrent searches share model batches; a batch of more than 32 tokens takes the f32
    // weights instead of the f16 copies (cosine > 0.9999), so scores move in the 4th digit
    compare(&plain_mixed, &scanned_mixed, deleted, 5e-3);
}

#[test]
fn kernel_ranker_serves_like_the_cpu_ranker() {
    let (off, deleted, plain, plain_mixed) = cpu_answers();
    // the kernels on the model's device (the CPU reference here), every batch
    let kernels = RankChoice {
        device: RankDevice::Kernels,
        ..RankChoice::default()
    };
    let on = again_ranked(&off, EngineOptions::default(), kernels);
    assert_eq!(on.memory.ranker().describe(), "kernels on cpu");
    let fused = search_all(&on, false);
    let fused_mixed = search_all(&on, true);
    let n = 2 * (TENANTS.len() * QUERIES.len()) as u64;
    assert_eq!(metric(&on, "memdex_rank_stage_queries_total"), n);
    // the kernels' device answered them all (the CPU ranker none): the label says which
    let (_, text) = on.call("GET", "/metrics", None, b"");
    assert!(
        text.contains("memdex_rank_queries_total{device=\"cpu\"} 0"),
        "{text}"
    );
    let on_kernels = format!("memdex_rank_queries_total{{device=\"kernels:cpu\"}} {n}");
    assert!(text.contains(&on_kernels), "{text}");
    // the kernel ranks f16 rows in f32: scores agree to about 1e-3, and these searches have
    // no near ties, so the order is the same
    compare(&plain, &fused, deleted, 5e-3);
    compare(&plain_mixed, &fused_mixed, deleted, 5e-3);
}

fn compare(
    plain: &[(String, String, Value)],
    scanned: &[(String, String, Value)],
    deleted: u64,
    tol: f64,
) {
    assert_eq!(plain.len(), scanned.len(), "one answer per search");
    for ((t, q, a), (_, _, b)) in plain.iter().zip(scanned) {
        let (ha, hb) = (hits(a), hits(b));
        assert!(!ha.is_empty(), "{t}: {q}");
        assert_eq!(
            ha.iter().map(|h| h.0).collect::<Vec<_>>(),
            hb.iter().map(|h| h.0).collect::<Vec<_>>(),
            "{t}: {q}: same items in the same order"
        );
        for (x, y) in ha.iter().zip(&hb) {
            assert!(
                (x.1 - y.1).abs() < tol,
                "{t}: {q}: score {} vs {}",
                x.1,
                y.1
            );
            assert_eq!(&y.2, t, "only the tenant's own items");
            assert_ne!(y.0, deleted, "a deleted item is never ranked");
        }
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_dir(&e.path(), &dst);
        } else if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

//! The HTTP API end to end on a real loopback server: append (durable, idempotent), search,
//! forgetting (deleted text gone from disk after compaction), tenant keys, bad input,
//! shutdown, background compaction (answer shapes: `shapes.rs`).

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::{session, TestServer};
use memdex_memory::EngineOptions;
use memdex_server::{HttpLimits, Keys, ServerConfig};
use memdex_testkit::{contains, segment_bytes};
use serde_json::{json, Value};

fn ids(v: &Value) -> Vec<u64> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["item_id"].as_u64().unwrap())
        .collect()
}

fn values(v: &Value) -> Vec<String> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["value"].as_str().unwrap().to_string())
        .collect()
}

/// Whether `v` matches `schema` of the OpenAPI document `doc` (the JSON Schema keywords the
/// document uses: $ref, oneOf, allOf, type, enum, required, properties, items, minimum,
/// maximum); the first mismatch, named by its path.
#[test]
fn append_search_forget_compact_round_trip() {
    let s = TestServer::start(ServerConfig::default());
    let sessions = json!({"sessions": [
        session("s1", 1, &["I adopted a dog named Rex-zebra.", "Congrats!"]),
        session("s2", 2, &["My sister moved to Paris.", "Nice city.", "I love jazz music.", "Great taste."]),
    ]});
    let (st, r) = s.json("POST", "/v1/tenants/alice/sessions", None, &sessions);
    assert_eq!(st, 200, "{r}");
    let report = &r["report"];
    assert_eq!(report["items_written"], 3);
    assert_eq!(report["sessions"][0]["status"], "stored");
    let rex_id = report["sessions"][0]["item_ids"][0].as_u64().unwrap();

    // idempotent: the same sessions again store nothing
    let (st, r) = s.json("POST", "/v1/tenants/alice/sessions", None, &sessions);
    assert_eq!(st, 200);
    assert_eq!(r["report"]["items_written"], 0);
    assert_eq!(r["report"]["sessions"][1]["status"], "unchanged");
    // same id, other content: conflict, nothing stored
    let other = session("s1", 1, &["something else entirely"]);
    let (st, r) = s.json("POST", "/v1/tenants/alice/sessions", None, &other);
    assert_eq!(st, 409, "{r}");
    // a bare session object and an array also work; bob is created on append
    let (st, _) = s.json(
        "POST",
        "/v1/tenants/bob/sessions",
        None,
        &json!([session("b1", 3, &["bob has a cat", "ok"])]),
    );
    assert_eq!(st, 200);

    let q = json!({"query": "what is my dog's name?", "k": 10});
    let (st, r) = s.json("POST", "/v1/tenants/alice/search", None, &q);
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["hits"].as_array().unwrap().len(), 3, "only alice's items");
    assert!(ids(&r).contains(&rex_id));
    assert!(values(&r).iter().all(|v| !v.contains("bob")));
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/alice/search",
        None,
        &json!({"query": "dog", "context": true, "date": "2023-06-01"}),
    );
    assert_eq!(st, 200);
    assert!(r["prompt"].as_str().unwrap().contains("History Chats"));
    assert_eq!(r["question_date"], "2023-06-01 00:00");
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/alice/search",
        None,
        &json!({"query": "dog", "stages": {"retriever": "dense"}, "k": 1}),
    );
    assert_eq!((st, r["hits"].as_array().unwrap().len()), (200, 1));
    // explain: the same hits, each with its stage scores; not with context
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/alice/search",
        None,
        &json!({"query": "what is my dog's name?", "k": 10, "explain": true}),
    );
    assert_eq!(st, 200, "{r}");
    assert!(ids(&r).contains(&rex_id));
    for h in r["hits"].as_array().unwrap() {
        let e = &h["explain"];
        assert!(
            e["dense"].is_f64() && e["bm25"].is_f64() && e["first_stage"].is_f64(),
            "{h}"
        );
        assert!(e["score_rank"].as_u64().unwrap() >= 1, "{h}");
    }
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/alice/search",
        None,
        &json!({"query": "dog", "context": true, "explain": true}),
    );
    assert_eq!(st, 400, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("explain"),
        "{r}"
    );

    // BM25 caches: a commit to bob keeps alice's; a commit to alice rebuilds hers
    let bm25 = json!({"query": "xylophone lessons", "stages": {"retriever": "bm25", "fragrel_alpha": 0.0}, "k": 1});
    let (_, r) = s.json("POST", "/v1/tenants/alice/search", None, &bm25);
    assert!(!values(&r)[0].contains("xylophone"));
    s.json(
        "POST",
        "/v1/tenants/bob/sessions",
        None,
        &session("b2", 4, &["bob plays xylophone"]),
    );
    s.json(
        "POST",
        "/v1/tenants/alice/sessions",
        None,
        &session("s3", 4, &["I started xylophone lessons"]),
    );
    let (_, r) = s.json("POST", "/v1/tenants/alice/search", None, &bm25);
    assert!(values(&r)[0].contains("started xylophone"), "{r}");
    let (st, _) = s.json(
        "DELETE",
        "/v1/tenants/alice/sessions/s3",
        None,
        &Value::Null,
    );
    assert_eq!(st, 200);

    // forget one item: gone from results at once, k still filled from live items
    let (st, r) = s.json(
        "DELETE",
        &format!("/v1/tenants/alice/items/{rex_id}"),
        None,
        &Value::Null,
    );
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["items_deleted"], 1);
    let (_, r) = s.json(
        "POST",
        "/v1/tenants/alice/search",
        None,
        &json!({"query": "dog Rex", "k": 2}),
    );
    assert!(!ids(&r).contains(&rex_id));
    assert_eq!(ids(&r).len(), 2);
    // deleting it again, or a missing session or tenant: 404
    let (st, _) = s.json(
        "DELETE",
        &format!("/v1/tenants/alice/items/{rex_id}"),
        None,
        &Value::Null,
    );
    assert_eq!(st, 404);
    let (st, _) = s.json(
        "DELETE",
        "/v1/tenants/alice/sessions/nope",
        None,
        &Value::Null,
    );
    assert_eq!(st, 404);
    let (st, _) = s.json("DELETE", "/v1/tenants/nobody", None, &Value::Null);
    assert_eq!(st, 404);
    // an item id of another tenant is not found through this tenant
    let (st, _) = s.json("DELETE", "/v1/tenants/bob/items/1", None, &Value::Null);
    assert_eq!(st, 404);

    // the text is still in a segment file until compaction removes it
    assert!(contains(&segment_bytes(s.dir.path()), "Rex-zebra"));
    let (st, r) = s.json("POST", "/v1/admin/compact", None, &Value::Null);
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["rows_removed"], 2, "the rex item and session s3");
    let bytes = segment_bytes(s.dir.path());
    assert!(!contains(&bytes, "Rex-zebra"), "deleted text left on disk");
    assert!(!contains(&bytes, "started xylophone"));
    assert!(contains(&bytes, "sister moved to Paris"));

    // a deleted session may be appended again (it is new now)
    // (s1 had only the rex item, already deleted: nothing live to delete)
    let (st, _) = s.json(
        "DELETE",
        "/v1/tenants/alice/sessions/s1",
        None,
        &Value::Null,
    );
    assert_eq!(st, 404);
    let (st, r) = s.json("POST", "/v1/tenants/alice/sessions", None, &other);
    assert_eq!(st, 200, "after delete + compact s1 is new: {r}");

    // forget the tenant: search answers 404, bob untouched
    let (st, r) = s.json("DELETE", "/v1/tenants/alice", None, &Value::Null);
    assert_eq!(st, 200);
    assert_eq!(r["items_deleted"], 3);
    let (st, _) = s.json("POST", "/v1/tenants/alice/search", None, &q);
    assert_eq!(st, 404);
    let (st, r) = s.json("POST", "/v1/tenants/bob/search", None, &q);
    assert_eq!((st, values(&r).len()), (200, 2));
    drop(s);
}

#[test]
fn durable_across_restart_and_store_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let mut s = TestServer::start_in(dir, ServerConfig::default(), EngineOptions::default());
    let (st, _) = s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session("x", 1, &["remember the blue door", "ok"]),
    );
    assert_eq!(st, 200);
    let (st, _) = s.json("DELETE", "/v1/tenants/t/sessions/x", None, &Value::Null);
    assert_eq!(st, 200);
    let (st, _) = s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session("y", 2, &["the red car", "ok"]),
    );
    assert_eq!(st, 200);
    s.stop();
    let dir = std::mem::replace(&mut s.dir, tempfile::tempdir().unwrap());
    drop(s);
    let s = TestServer::start_in(dir, ServerConfig::default(), EngineOptions::default());
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "door car"}),
    );
    assert_eq!(st, 200);
    assert_eq!(
        values(&r),
        vec!["user: the red car\nassistant: ok".to_string()],
        "tombstones persist"
    );
    assert!(path.join("manifest.json").exists());
}

fn keyed() -> ServerConfig {
    ServerConfig {
        keys: Keys {
            admin: Some("admin-key".into()),
            tenants: HashMap::from([
                ("a".to_string(), "key-a".to_string()),
                ("b".to_string(), "key-b".to_string()),
            ]),
        },
        limits: HttpLimits::default(),
        ..ServerConfig::default()
    }
}

#[test]
fn tenant_keys_never_cross_tenants() {
    let s = TestServer::start(keyed());
    let sess = session("s", 1, &["secret of b", "ok"]);
    let (st, _) = s.json("POST", "/v1/tenants/b/sessions", Some("key-b"), &sess);
    assert_eq!(st, 200);
    let (st, _) = s.json(
        "POST",
        "/v1/tenants/a/sessions",
        Some("key-a"),
        &session("s", 1, &["note of a", "ok"]),
    );
    assert_eq!(st, 200);
    let q = json!({"query": "secret"});
    // A's key on B: search, append, delete item/session/tenant all forbidden
    assert_eq!(
        s.json("POST", "/v1/tenants/b/search", Some("key-a"), &q).0,
        403
    );
    assert_eq!(
        s.json("POST", "/v1/tenants/b/sessions", Some("key-a"), &sess)
            .0,
        403
    );
    assert_eq!(
        s.json(
            "DELETE",
            "/v1/tenants/b/items/0",
            Some("key-a"),
            &Value::Null
        )
        .0,
        403
    );
    assert_eq!(
        s.json(
            "DELETE",
            "/v1/tenants/b/sessions/s",
            Some("key-a"),
            &Value::Null
        )
        .0,
        403
    );
    assert_eq!(
        s.json("DELETE", "/v1/tenants/b", Some("key-a"), &Value::Null)
            .0,
        403
    );
    for admin in [
        "/v1/admin/compact",
        "/v1/admin/verify",
        "/v1/admin/snapshot",
    ] {
        assert_eq!(s.call("POST", admin, Some("key-a"), b"").0, 403, "{admin}");
        assert_eq!(s.call("POST", admin, None, b"").0, 401, "{admin}");
    }
    assert_eq!(s.call("GET", "/metrics", Some("key-a"), b"").0, 403);
    // no key, unknown key: 401
    assert_eq!(s.json("POST", "/v1/tenants/b/search", None, &q).0, 401);
    assert_eq!(
        s.json("POST", "/v1/tenants/b/search", Some("nope"), &q).0,
        401
    );
    // A's search sees only A even for B's words; B's and the admin key see B
    let (st, r) = s.json("POST", "/v1/tenants/a/search", Some("key-a"), &q);
    assert_eq!(st, 200);
    assert!(values(&r).iter().all(|v| v.contains("note of a")));
    let (st, r) = s.json("POST", "/v1/tenants/b/search", Some("key-b"), &q);
    assert!(st == 200 && values(&r)[0].contains("secret of b"));
    assert_eq!(
        s.json("POST", "/v1/tenants/b/search", Some("admin-key"), &q)
            .0,
        200
    );
    // B is intact after all of A's attempts
    let (_, r) = s.json("POST", "/v1/tenants/b/search", Some("admin-key"), &q);
    assert_eq!(values(&r).len(), 1);
    assert_eq!(
        s.call("GET", "/healthz", None, b"").0,
        200,
        "health needs no key"
    );
}

#[test]
fn bad_input_answers_4xx_and_harms_nothing() {
    let limits = HttpLimits {
        max_body_bytes: 64 << 10,
        memory: memdex_memory::Limits {
            max_call_turns: 10,
            max_turns: 10,
            max_text_bytes: 1000,
            max_k: 50,
            ..memdex_memory::Limits::default()
        },
        ..HttpLimits::default()
    };
    let s = TestServer::start(ServerConfig {
        limits,
        ..ServerConfig::default()
    });
    let good = session("ok", 1, &["a good session", "yes"]);
    assert_eq!(s.json("POST", "/v1/tenants/t/sessions", None, &good).0, 200);
    let post = |path: &str, body: &[u8]| s.call("POST", path, None, body);
    let (st, b) = post("/v1/tenants/t/sessions", b"{not json");
    assert_eq!(st, 400, "{b}");
    let (st, b) = post(
        "/v1/tenants/t/sessions",
        br#"{"session_id": "x", "turns": [], "colour": 1}"#,
    );
    assert!(
        st == 400 && b.contains("colour"),
        "unknown field named: {b}"
    );
    let (st, b) = post(
        "/v1/tenants/t/sessions",
        br#"{"session_id": 5, "turns": []}"#,
    );
    assert!(st == 400 && b.contains("invalid type"), "{b}");
    let (st, b) = post(
        "/v1/tenants/t/sessions",
        br#"{"session_id": "x", "turns": [{"role": "robot", "content": "hi"}]}"#,
    );
    assert!(st == 400 && b.contains("robot"), "{b}");
    let (st, b) = post(
        "/v1/tenants/t/sessions",
        b"{\"session_id\": \"x\xff\xfe\", \"turns\": []}",
    );
    assert_eq!(st, 400, "invalid UTF-8: {b}");
    let (st, b) = post(
        "/v1/tenants/t/sessions",
        br#"{"session_id": "x", "date": "yesterday", "turns": [{"role": "user", "content": "hi"}]}"#,
    );
    assert!(st == 400 && b.contains("yesterday"), "{b}");
    let (st, b) = post(
        "/v1/tenants/t/sessions",
        br#"{"session_id": "e", "turns": []}"#,
    );
    assert!(st == 400 && b.contains("no turns"), "{b}");
    let huge = vec![b'x'; 200 << 10];
    let (st, _) = post("/v1/tenants/t/sessions", &huge);
    assert_eq!(st, 413);
    let long = "w ".repeat(600);
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session("l", 1, &[&long]),
    );
    assert!(st == 413 && b.to_string().contains("limit"), "{b}");
    let many: Vec<&str> = vec!["hi"; 11];
    assert_eq!(
        s.json(
            "POST",
            "/v1/tenants/t/sessions",
            None,
            &session("m", 1, &many)
        )
        .0,
        413
    );
    assert_eq!(post("/v1/tenants/bad%20name/sessions", b"{}").0, 400);
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &json!({"tenant": "other", "session_id": "z", "turns": []}),
    );
    assert!(st == 400 && b.to_string().contains("other"), "{b}");
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "x", "k": 0}),
    );
    assert!(st == 400 && b.to_string().contains("k must be"), "{b}");
    assert_eq!(
        s.json(
            "POST",
            "/v1/tenants/t/search",
            None,
            &json!({"query": "x", "k": 51})
        )
        .0,
        400
    );
    assert_eq!(
        s.json(
            "POST",
            "/v1/tenants/t/search",
            None,
            &json!({"query": "  "})
        )
        .0,
        400
    );
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "x", "stages": {"retriever": "magic"}}),
    );
    assert!(st == 400 && b.to_string().contains("magic"), "{b}");
    // the quality stages are request options too
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "x last weekend", "date": "2023-05-08",
                "stages": {"time": "boost", "time_boost": 0.5, "when_boost": 0.1}}),
    );
    assert_eq!(st, 200, "{b}");
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "x", "stages": {"time_boost": 0.5}}),
    );
    assert!(st == 400 && b.to_string().contains("time_boost"), "{b}");
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "x", "top": 3}),
    );
    assert!(st == 400 && b.to_string().contains("top"), "{b}");
    assert_eq!(
        s.json(
            "POST",
            "/v1/tenants/nobody/search",
            None,
            &json!({"query": "x"})
        )
        .0,
        404
    );
    assert_eq!(
        s.json("DELETE", "/v1/tenants/t/items/abc", None, &Value::Null)
            .0,
        400
    );
    assert_eq!(
        s.json("DELETE", "/v1/tenants/t/items/99999", None, &Value::Null)
            .0,
        404
    );
    assert_eq!(s.call("GET", "/v1/nothing", None, b"").0, 404);
    // the error body has one shape
    let (_, b) = s.json(
        "POST",
        "/v1/tenants/nobody/search",
        None,
        &json!({"query": "x"}),
    );
    assert_eq!(b["error"]["status"], 404);
    assert_eq!(b["error"]["code"], "not_found");
    // still serving, store intact
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "good"}),
    );
    assert_eq!((st, values(&r).len()), (200, 1));
    memdex_store::Store::open(s.dir.path()).unwrap();
}

#[test]
fn concurrent_appends_all_acknowledged_and_present() {
    let s = TestServer::start(ServerConfig::default());
    let addr = s.addr;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..5 {
                    let body = session(
                        &format!("s{t}-{i}"),
                        1,
                        &[&format!("thread {t} note {i}"), "ok"],
                    );
                    let (st, b) = common::http(
                        addr,
                        "POST",
                        &format!("/v1/tenants/c{}/sessions", t % 3),
                        None,
                        body.to_string().as_bytes(),
                    );
                    assert_eq!(st, 200, "{b}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let snap = s.memory.snapshot();
    let rows: u64 = snap.store().tenants().values().sum();
    assert_eq!(rows, 40);
    // every append went through a group commit (that groups form under load is shown
    // deterministically in memdex-runtime's tests)
    let grouped = s
        .memory
        .stats()
        .appends_grouped
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(grouped, 40);
}

#[test]
fn requests_after_engine_shutdown_answer_503() {
    let s = TestServer::start(ServerConfig::default());
    s.memory.close();
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session("s", 1, &["x"]),
    );
    assert_eq!(st, 503, "{b}");
    assert_eq!(
        s.json("POST", "/v1/embeddings", None, &json!({"input": "x"}))
            .0,
        503
    );
    let (st, b) = s.json("GET", "/healthz", None, &Value::Null);
    assert!(st == 503 && b["status"] == "shutting down", "{st} {b}");
}

#[test]
fn background_compaction_merges_and_erases_without_being_asked() {
    let opts = EngineOptions {
        compact_every: Some(std::time::Duration::from_millis(100)),
        compact_min_small: 3,
        ..EngineOptions::default()
    };
    let s = TestServer::start_in(tempfile::tempdir().unwrap(), ServerConfig::default(), opts);
    for i in 0..4 {
        let text = format!("note {i} with marker-{i}-walrus");
        let (st, _) = s.json(
            "POST",
            "/v1/tenants/t/sessions",
            None,
            &session(&format!("s{i}"), 1, &[&text]),
        );
        assert_eq!(st, 200);
    }
    let (st, _) = s.json("DELETE", "/v1/tenants/t/sessions/s2", None, &Value::Null);
    assert_eq!(st, 200);
    let t0 = std::time::Instant::now();
    while s.memory.snapshot().store().manifest().segments.len() > 1
        || contains(&segment_bytes(s.dir.path()), "marker-2-walrus")
    {
        assert!(
            t0.elapsed().as_secs() < 20,
            "background compaction did not run"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (_, r) = s.json(
        "POST",
        "/v1/tenants/t/search",
        None,
        &json!({"query": "note"}),
    );
    assert_eq!(values(&r).len(), 3);
}

#[test]
fn idempotency_follows_deletes() {
    let s = TestServer::start(ServerConfig::default());
    let full = session("s", 1, &["first round", "ok", "second round", "ok"]);
    let (st, r) = s.json("POST", "/v1/tenants/t/sessions", None, &full);
    assert_eq!(st, 200);
    let first = r["report"]["sessions"][0]["item_ids"][0].as_u64().unwrap();
    s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session("other", 2, &["another", "ok"]),
    );
    // half the session deleted: the full session is now other content than what is stored
    let (st, _) = s.json(
        "DELETE",
        &format!("/v1/tenants/t/items/{first}"),
        None,
        &Value::Null,
    );
    assert_eq!(st, 200);
    assert_eq!(s.json("POST", "/v1/tenants/t/sessions", None, &full).0, 409);
    // compaction changes nothing about that
    assert_eq!(
        s.json("POST", "/v1/admin/compact", None, &Value::Null).0,
        200
    );
    assert_eq!(s.json("POST", "/v1/tenants/t/sessions", None, &full).0, 409);
    let (_, r) = s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session("other", 2, &["another", "ok"]),
    );
    assert_eq!(r["report"]["sessions"][0]["status"], "unchanged");
    // the whole session deleted: appending it again stores it anew
    assert_eq!(
        s.json("DELETE", "/v1/tenants/t/sessions/s", None, &Value::Null)
            .0,
        200
    );
    let (st, r) = s.json("POST", "/v1/tenants/t/sessions", None, &full);
    assert_eq!((st, r["report"]["items_written"].as_u64()), (200, Some(2)));
    // the whole tenant deleted: every session may come back
    assert_eq!(s.json("DELETE", "/v1/tenants/t", None, &Value::Null).0, 200);
    let (_, r) = s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session("other", 2, &["another", "ok"]),
    );
    assert_eq!(r["report"]["sessions"][0]["status"], "stored");
}

#[test]
fn explain_names_what_the_update_stage_linked() {
    let s = TestServer::start(ServerConfig::default());
    let sessions = json!([
        session("porto", 1, &["My sister lives in Porto.", "Lovely."]),
        session(
            "lisbon",
            20,
            &[
                "My sister moved to Lisbon and lives there now.",
                "Exciting!"
            ]
        ),
    ]);
    let (st, r) = s.json("POST", "/v1/tenants/alice/sessions", None, &sessions);
    assert_eq!(st, 200, "{r}");
    // lexical retrieval: the tiny model's vectors are random
    let q = json!({"query": "where does my sister live?", "k": 2, "explain": true,
                   "stages": {"retriever": "bm25"}});
    let (st, r) = s.json("POST", "/v1/tenants/alice/search", None, &q);
    assert_eq!(st, 200, "{r}");
    let top = &r["hits"][0];
    assert_eq!(top["session_id"], "lisbon", "{r}");
    assert_eq!(top["explain"]["update_moved_from"], 2, "{r}");
    let why = &top["explain"]["update"];
    assert_eq!(why["linked_session_id"], "porto", "{r}");
    assert_eq!(why["cue"], "moved", "{r}");
    assert_eq!(why["direction"], "newest_first", "{r}");
    // the stage off: nothing moved, nothing to explain
    let q = json!({"query": "where does my sister live?", "k": 2, "explain": true,
                   "stages": {"retriever": "bm25", "update_window": 0}});
    let (_, r) = s.json("POST", "/v1/tenants/alice/search", None, &q);
    assert_eq!(r["hits"][0]["session_id"], "porto", "{r}");
    assert!(r["hits"][0]["explain"].get("update").is_none(), "{r}");
}

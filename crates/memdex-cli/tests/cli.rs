//! End-to-end tests of the `memdex` binary with the tiny fixture model.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use memdex_testkit::{fails, ok, tiny_model};
use serde_json::Value;

fn memdex(args: &[&str]) -> Output {
    memdex_testkit::memdex(env!("CARGO_BIN_EXE_memdex"), args)
}

fn session(tenant: &str, id: &str, day: u32, texts: &[&str]) -> String {
    let turns: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            serde_json::json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": t})
        })
        .collect();
    serde_json::json!({
        "tenant": tenant, "session_id": id,
        "date": format!("2023-05-{day:02}T10:00:00Z"), "turns": turns
    })
    .to_string()
}

fn history() -> String {
    [
        session(
            "alice",
            "s1",
            1,
            &["i bought a new car", "great", "my dog is old", "ok"],
        ),
        session("alice", "s2", 2, &["my sister moved to paris", "nice"]),
        session("bob", "s1", 3, &["i love coffee and tea", "me too"]),
    ]
    .join("\n")
        + "\n"
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn index_json(input: &Path, store: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "index",
        "--input",
        input.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    memdex(&args)
}

/// `memdex search --store STORE --tenant TENANT --query QUERY [extra…]`.
/// `history()` indexed with the default options into `dir/store`.
fn indexed_history(dir: &Path) -> PathBuf {
    let store = dir.join("store");
    ok(&index_json(&write(dir, "h.jsonl", &history()), &store, &[]));
    store
}

fn search(store: &Path, tenant: &str, query: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "search",
        "--store",
        store.to_str().unwrap(),
        "--tenant",
        tenant,
        "--query",
        query,
    ];
    args.extend_from_slice(extra);
    memdex(&args)
}

fn hits(out: &Output) -> Vec<Value> {
    serde_json::from_str(&ok(out)).unwrap()
}

#[test]
fn index_search_info_round_trip_and_idempotent_reindex() {
    let tmp = tempfile::tempdir().unwrap();
    let input = write(tmp.path(), "h.jsonl", &history());
    let store = tmp.path().join("store");
    // keys unexpanded, so a query equal to a stored text has that key's exact vector
    let plain = ["--facts", "false"];
    let r: Value = serde_json::from_str(&ok(&index_json(&input, &store, &plain))).unwrap();
    assert_eq!(r["sessions_indexed"], 3);
    assert_eq!(r["items_written"], 4, "rounds: 2 + 1 + 1");
    assert_eq!(r["granularity"], "round");

    // scores descend when no stage reorders (the update stage may put a newer statement of a
    // change above an older, higher-scored one)
    let h = hits(&search(
        &store,
        "alice",
        "where does my sister live",
        &["-k", "2", "--json", "--update-window", "0"],
    ));
    assert_eq!(h.len(), 2);
    assert!(
        h.iter().all(|h| h["tenant"] == "alice"),
        "tenant isolation: {h:?}"
    );
    assert!(h[0]["score"].as_f64() >= h[1]["score"].as_f64());

    // a query equal to a stored key ranks that item first (same text, same vector)
    let h = hits(&search(
        &store,
        "alice",
        "my sister moved to paris",
        &["--json"],
    ));
    assert_eq!(h.len(), 3, "k larger than the tenant returns all of it");
    assert_eq!(h[0]["session_id"], "s2", "default pipeline (hybrid)");
    // the dense stage alone: cosine of identical vectors
    let h = hits(&search(
        &store,
        "alice",
        "my sister moved to paris",
        &["--retriever", "dense", "--importance", "0", "--json"],
    ));
    assert_eq!(h[0]["session_id"], "s2");
    assert!((h[0]["score"].as_f64().unwrap() - 1.0).abs() < 1e-4);
    let err = fails(&search(&store, "alice", "x", &["--dense-weight", "1.5"]));
    assert!(err.contains("--dense-weight"), "{err}");

    // reading-stage output: items sorted by time and a Chain-of-Note prompt
    let out = ok(&search(
        &store,
        "alice",
        "where does my sister live",
        &["--context", "--date", "2023-06-01"],
    ));
    let ctx: Value = serde_json::from_str(&out).unwrap();
    let items = ctx["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let ts: Vec<i64> = items
        .iter()
        .map(|i| i["timestamp_ms"].as_i64().unwrap())
        .collect();
    assert!(
        ts.windows(2).all(|w| w[0] <= w[1]),
        "sorted by time: {ts:?}"
    );
    let prompt = ctx["prompt"].as_str().unwrap();
    assert!(prompt.contains("first extract all the relevant information"));
    assert!(prompt.contains("Current Date: 2023-06-01 00:00"));
    assert!(prompt.contains("Question: where does my sister live"));

    let err = fails(&index_json(&input, &store, &[]));
    assert!(
        err.contains("extraction"),
        "one kind of key per store: {err}"
    );
    let r: Value = serde_json::from_str(&ok(&index_json(&input, &store, &plain))).unwrap();
    let counts = (
        r["sessions_indexed"].as_u64(),
        r["sessions_unchanged"].as_u64(),
    );
    assert_eq!(counts, (Some(0), Some(3)));
    assert_eq!(r["store_rows"], 4);

    let info: Value = serde_json::from_str(&ok(&memdex(&[
        "info",
        "--store",
        store.to_str().unwrap(),
        "--json",
        "--tenants",
    ])))
    .unwrap();
    assert_eq!(info["rows"], 4);
    assert_eq!(info["tenants"], 2);
    assert_eq!(info["tenant_rows"]["alice"], 3);
    assert_eq!(info["model"]["dim"], 32);
    assert_eq!(
        info["extraction"]["facts"],
        Value::Null,
        "built with --facts false"
    );
    assert_eq!(
        info["extraction"]["key_context"], 0,
        "rounds carry no key context"
    );
}

#[test]
fn bad_records_are_named_and_nothing_stored_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let good = write(tmp.path(), "good.jsonl", &history());
    ok(&index_json(&good, &store, &[]));

    let bad = format!(
        "{}\n{}\n{{\"tenant\": \"carol\", \"session_id\": \n{}\n",
        session("carol", "c1", 4, &["hello"]),
        session("carol", "c2", 5, &["bad date"])
            .replace("2023-05-05T10:00:00Z", "2023/02/30 (Thu) 10:00"),
        session("carol", "c3", 6, &["after"]),
    );
    let bad_path = write(tmp.path(), "bad.jsonl", &bad);
    let err = fails(&index_json(&bad_path, &store, &[]));
    assert!(err.contains("bad.jsonl:2") && err.contains("date"), "{err}");
    let info: Value = serde_json::from_str(&ok(&memdex(&[
        "info",
        "--store",
        store.to_str().unwrap(),
        "--json",
    ])))
    .unwrap();
    assert_eq!(
        info["rows"], 5,
        "old rows kept, session before the bad line committed"
    );

    let r: Value =
        serde_json::from_str(&ok(&index_json(&bad_path, &store, &["--on-error", "skip"]))).unwrap();
    assert_eq!(r["sessions_rejected"], 2);
    assert_eq!(r["sessions_indexed"], 1, "c3");
    assert_eq!(r["sessions_unchanged"], 1, "c1");
    let errors = r["errors"].to_string();
    assert!(
        errors.contains("bad.jsonl:2") && errors.contains("bad.jsonl:3: malformed JSON"),
        "{errors}"
    );

    // same session id, different content
    let conflict = write(
        tmp.path(),
        "conflict.jsonl",
        &session("alice", "s2", 2, &["something else"]),
    );
    let err = fails(&index_json(&conflict, &store, &[]));
    assert!(
        err.contains("\"s2\"") && err.contains("different content"),
        "{err}"
    );

    let missing = fails(&index_json(&tmp.path().join("nope.jsonl"), &store, &[]));
    assert!(missing.contains("nope.jsonl"), "{missing}");
}

#[test]
fn search_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let store = indexed_history(tmp.path());
    let s = store.to_str().unwrap();
    let err = fails(&memdex(&[
        "search", "--store", s, "--tenant", "zed", "--query", "x",
    ]));
    // the front door's message, as every front end says it
    assert!(err.contains("tenant \"zed\" has no memory"), "{err}");
    let err = fails(&memdex(&[
        "search", "--store", s, "--tenant", "alice", "--query", "  ",
    ]));
    assert!(err.contains("query is empty"), "{err}");
    let err = fails(&memdex(&[
        "search",
        "--store",
        tmp.path().join("x").to_str().unwrap(),
        "--tenant",
        "a",
        "--query",
        "q",
    ]));
    assert!(err.contains("no memdex store"), "{err}");
    let err = fails(&memdex(&[
        "search", "--store", s, "--tenant", "alice", "--query", "q", "--device", "cuda",
    ]));
    if !cfg!(feature = "cuda") {
        assert!(err.contains("`cuda` feature"), "{err}");
    }
    let err = fails(&memdex(&[
        "search", "--store", s, "--tenant", "alice", "--query", "q", "--device", "tpu",
    ]));
    assert!(err.contains("invalid device"), "{err}");
}

#[test]
fn store_refuses_another_model() {
    let tmp = tempfile::tempdir().unwrap();
    let store = indexed_history(tmp.path());
    // the same weights with CLS pooling produce incomparable vectors
    let other = tmp.path().join("tiny-cls");
    std::fs::create_dir_all(other.join("1_Pooling")).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
    ] {
        std::fs::copy(tiny_model().join(f), other.join(f)).unwrap();
    }
    std::fs::write(
        other.join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true}"#,
    )
    .unwrap();
    let s = store.to_str().unwrap();
    let o = other.to_str().unwrap();
    let err = fails(&memdex(&[
        "search", "--store", s, "--tenant", "alice", "--query", "dog", "--model", o,
    ]));
    assert!(err.contains("refusing") && err.contains(s), "{err}");
    let input = write(tmp.path(), "more.jsonl", &session("dave", "d1", 9, &["hi"]));
    let err = fails(&memdex(&[
        "index",
        "--input",
        input.to_str().unwrap(),
        "--store",
        s,
        "--model",
        o,
    ]));
    assert!(err.contains("refusing"), "{err}");
    let err = fails(&memdex(&[
        "index",
        "--input",
        input.to_str().unwrap(),
        "--store",
        s,
        "--granularity",
        "turn",
    ]));
    assert!(err.contains("round items"), "{err}");
}

#[test]
fn embed_writes_vectors_in_input_order() {
    let tmp = tempfile::tempdir().unwrap();
    let texts = [
        "",
        "hello",
        "the dog and the cat went to the house",
        "   ",
        "a",
    ];
    let input: String = texts
        .iter()
        .map(|t| format!("{}\n", serde_json::json!({"text": t})))
        .collect();
    let inp = write(tmp.path(), "t.jsonl", &input);
    let outp = tmp.path().join("o.jsonl");
    ok(&memdex(&[
        "embed",
        "--input",
        inp.to_str().unwrap(),
        "--output",
        outp.to_str().unwrap(),
    ]));
    let lines: Vec<Value> = std::fs::read_to_string(&outp)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), texts.len());
    for (l, t) in lines.iter().zip(texts) {
        assert_eq!(l["text"], t);
        let v: Vec<f32> = serde_json::from_value(l["embedding"].clone()).unwrap();
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert_eq!(v.len(), 32);
        assert!((norm - 1.0).abs() < 1e-4);
    }
    let bad = write(
        tmp.path(),
        "bad.jsonl",
        "{\"text\": \"ok\"}\n{\"txt\": 1}\n",
    );
    let err = fails(&memdex(&[
        "embed",
        "--input",
        bad.to_str().unwrap(),
        "--output",
        outp.to_str().unwrap(),
    ]));
    assert!(err.contains("bad.jsonl:2"), "{err}");
}

#[test]
fn recency_prefers_the_newer_of_equal_items() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let text = [
        session("ann", "old", 1, &["my dog is old"]),
        session("ann", "new", 20, &["my dog is old"]),
    ]
    .join("\n");
    ok(&index_json(
        &write(tmp.path(), "h.jsonl", &text),
        &store,
        &[],
    ));
    let top = |extra: &[&str]| -> String {
        let mut args = vec!["--json", "-k", "1", "--retriever", "dense"];
        args.extend_from_slice(extra);
        let h = hits(&search(&store, "ann", "my dog is old", &args));
        h[0]["session_id"].as_str().unwrap().to_string()
    };
    // dense: both cosines are 1.0 (hybrid min-max would flatten equal scores to 0)
    assert_eq!(top(&[]), "old", "equal scores keep timeline order");
    assert_eq!(top(&["--recency", "0.3", "--date", "2023-06-01"]), "new");
    let err = fails(&search(&store, "ann", "x", &["--recency", "2"]));
    assert!(err.contains("--recency"), "{err}");
}

#[test]
fn ambiguous_queries_use_recent_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let store = indexed_history(tmp.path());
    let top = |extra: &[&str]| -> String {
        let mut args = vec![
            "--json",
            "-k",
            "1",
            "--retriever",
            "bm25",
            "--bm25",
            "memdex",
        ];
        args.extend_from_slice(extra);
        let h = hits(&search(&store, "alice", "what about it?", &args));
        h[0]["session_id"].as_str().unwrap().to_string()
    };
    // alone, the query matches nothing (every score 0: storage order); with context it finds s2
    assert_eq!(top(&[]), "s1");
    assert_eq!(top(&["--recent", "my sister moved to paris"]), "s2");
}

#[test]
fn time_stage_prefers_items_in_the_query_range() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let text = [
        session("ann", "a", 1, &["i ate pasta with friends"]),
        session("ann", "d", 3, &["i went hiking in the hills"]),
        session("ann", "b", 5, &["i ate pasta with friends"]),
        // the event ("ten days ago" = 9 May) lies in the range, the session date does not
        session("ann", "c", 19, &["ten days ago i went hiking in the hills"]),
    ]
    .join("\n");
    let input = write(tmp.path(), "h.jsonl", &text);
    // keys unexpanded: the facts would add the dates' words to BM25
    ok(&index_json(&input, &store, &["--facts", "false"]));
    let top = |query: &str, extra: &[&str]| -> String {
        // BM25 (the tiny test model's vectors carry no meaning): equal texts, equal scores
        let mut args = vec!["--json", "-k", "1", "--retriever", "bm25"];
        args.extend_from_slice(extra);
        let h = hits(&search(&store, "ann", query, &args));
        h[0]["session_id"].as_str().unwrap().to_string()
    };
    let q = "which pasta on May 5, 2023?";
    assert_eq!(
        top(q, &["--time", "off"]),
        "a",
        "equal scores: timeline order"
    );
    assert_eq!(top(q, &[]), "b", "session date in range moves ahead");
    assert_eq!(top(q, &["--time", "boost", "--time-boost", "0.5"]), "b");
    let q = "where did i go hiking on 9 May 2023?";
    assert_eq!(top(q, &[]), "c", "extracted event date in range");
    // no time reference: no reordering
    assert_eq!(
        top("i went hiking in the hills", &["--importance", "0"]),
        "d"
    );

    // a store indexed without event dates: the stage is refused when asked for, skipped by
    // default
    let bare = tmp.path().join("bare");
    ok(&index_json(
        &input,
        &bare,
        &["--extract-events", "false", "--facts", "false"],
    ));
    let err = fails(&search(&bare, "ann", q, &["--time", "front"]));
    assert!(
        err.contains("re-index") && err.contains("event dates"),
        "{err}"
    );
    ok(&search(&bare, "ann", q, &[]));
    let err = fails(&search(&store, "ann", q, &["--time-boost", "1"]));
    assert!(err.contains("--time boost"), "{err}");
}

/// The ranking as (item id, score) pairs, checked to be alice's items in score order.
fn ranking(h: &[Value]) -> Vec<(u64, f64)> {
    let r: Vec<(u64, f64)> = h
        .iter()
        .map(|h| {
            assert_eq!(h["tenant"], "alice", "{h}");
            (h["item_id"].as_u64().unwrap(), h["score"].as_f64().unwrap())
        })
        .collect();
    assert!(
        r.iter().all(|x| x.1.is_finite()) && r.windows(2).all(|w| w[0].1 >= w[1].1),
        "{r:?}"
    );
    r
}

#[test]
fn long_and_non_english_queries_rank_normally() {
    let tmp = tempfile::tempdir().unwrap();
    let store = indexed_history(tmp.path());
    // 60 KB: analysed whole for BM25 (each of the 1,800 copies adds its terms' score; only
    // the sister item has them)…
    let q = "where did my sister move in March ";
    let long = q.repeat(1800);
    let bm25 = |text: &str| {
        let h = hits(&search(
            &store,
            "alice",
            text,
            &["--json", "-k", "1", "--retriever", "bm25"],
        ));
        assert!(
            h[0]["value"].as_str().unwrap().contains("my sister moved"),
            "{h:?}"
        );
        ranking(&h)[0].1
    };
    let (one, all) = (bm25(q), bm25(&long));
    assert!(
        one > 0.0 && (all / one - 1800.0).abs() < 0.5,
        "{one} × 1800 vs {all}"
    );
    // …and truncated to the model's window for the vector: as dense as a 300-copy query
    let dense = |text: &str| {
        ranking(&hits(&search(
            &store,
            "alice",
            text,
            &["--json", "-k", "3", "--retriever", "dense"],
        )))
    };
    let (a, b) = (dense(&long), dense(&q.repeat(300)));
    assert_eq!((a.len(), b.len()), (3, 3));
    assert!(
        a.iter()
            .zip(&b)
            .all(|(x, y)| x.0 == y.0 && (x.1 - y.1).abs() < 1e-6),
        "{a:?} vs {b:?}"
    );
    // words no stored key has: BM25 scores every item 0 (no NaN), so the hybrid ranks as its
    // dense half alone (every item of the tenant, in score order)
    for q in [
        "私の妹はどこに引っ越しましたか",
        "¿Dónde vive mi hermana? 😀",
    ] {
        let run = |extra: &[&str]| {
            let mut args = vec!["--json", "-k", "3"];
            args.extend_from_slice(extra);
            ranking(&hits(&search(&store, "alice", q, &args)))
        };
        let bm25 = run(&["--retriever", "bm25"]);
        assert!(
            bm25.len() == 3 && bm25.iter().all(|x| x.1 == 0.0),
            "{q}: {bm25:?}"
        );
        let hybrid = run(&[]);
        let dense_half = run(&["--dense-weight", "1"]);
        assert_eq!(hybrid.len(), 3, "{q}");
        let ids = |r: &[(u64, f64)]| r.iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids(&hybrid), ids(&dense_half), "{q}");
    }
}

#[test]
fn semantic_neighbours_are_stored_and_used_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let input = write(tmp.path(), "h.jsonl", &history());
    let with = tmp.path().join("with");
    ok(&index_json(&input, &with, &["--neighbors", "2"]));
    // stored: every item of a tenant with other items has neighbours, each another item of
    // that tenant with a weight in [0, 1]
    let store = memdex_store::Store::open(&with).unwrap();
    let mut linked = 0;
    for seg in store.segments() {
        for row in 0..seg.rows() {
            let n: Vec<(u64, f32)> = seg.neighbors(row).collect();
            assert!(n.len() <= 2, "{n:?}");
            assert!(n.iter().all(|&(_, w)| (0.0..=1.0).contains(&w)), "{n:?}");
            linked += usize::from(!n.is_empty());
        }
    }
    assert_eq!(
        linked, 3,
        "alice's three items have neighbours, bob's one has none"
    );
    // used: the scores move (each item takes β × its neighbours' weighted mean)
    let q = ["--json", "-k", "3"];
    let plain = ranking(&hits(&search(&with, "alice", "sister", &q)));
    let h = hits(&search(
        &with,
        "alice",
        "sister",
        &["--json", "-k", "3", "--fragrel-semantic", "0.5"],
    ));
    let semantic = ranking(&h);
    assert_eq!(h.len(), 3);
    let score = |r: &[(u64, f64)], id: u64| r.iter().find(|x| x.0 == id).map(|x| x.1);
    assert!(
        plain
            .iter()
            .any(|&(id, s)| score(&semantic, id).is_some_and(|t| (t - s).abs() > 1e-6)),
        "{plain:?} vs {semantic:?}"
    );
    // a second append links new items to stored ones (positions continue)
    let more = write(
        tmp.path(),
        "more.jsonl",
        &(session("alice", "s3", 9, &["my sister likes paris"]) + "\n"),
    );
    ok(&index_json(&more, &with, &["--neighbors", "2"]));
    let h = hits(&search(
        &with,
        "alice",
        "sister",
        &["--json", "--fragrel-semantic", "0.5"],
    ));
    assert_eq!(h.len(), 4);
    let without = tmp.path().join("without");
    ok(&index_json(&input, &without, &[]));
    let store = memdex_store::Store::open(&without).unwrap();
    assert!(store
        .segments()
        .iter()
        .all(|seg| (0..seg.rows()).all(|r| seg.neighbors(r).next().is_none())));
    let err = fails(&search(
        &without,
        "alice",
        "sister",
        &["--fragrel-semantic", "0.5"],
    ));
    assert!(err.contains("--neighbors"), "{err}");
}

/// Every stored `(value, key)` of `store`.
fn stored_keys(store: &Path) -> Vec<(String, String)> {
    let store = memdex_store::Store::open(store).unwrap();
    let mut out = Vec::new();
    for seg in store.segments() {
        for row in 0..seg.rows() {
            out.push((seg.value(row).to_string(), seg.key(row).to_string()));
        }
    }
    out
}

#[test]
fn turn_keys_carry_the_message_they_answer_and_a_store_keeps_its_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let chat = session(
        "alice",
        "s1",
        1,
        &["which city do you like best?", "definitely lisbon"],
    ) + "\n";
    let input = write(tmp.path(), "c.jsonl", &chat);
    let turn = ["--granularity", "turn", "--facts", "false"];
    let store = tmp.path().join("store");
    ok(&index_json(&input, &store, &turn));
    let keys = stored_keys(&store);
    let reply = keys.iter().find(|(v, _)| v == "definitely lisbon").unwrap();
    assert_eq!(reply.1, "definitely lisbon\nwhich city do you like best?");
    // found by what it answers: BM25 alone, no word of the query in the reply itself
    let q = [
        "--retriever",
        "bm25",
        "--importance",
        "0",
        "--fragrel-alpha",
        "0",
    ];
    let q = [&q[..], &["--json", "-k", "2"]].concat();
    let reply_score = |store: &Path| {
        let h = hits(&search(store, "alice", "best city", &q));
        let r = h.iter().find(|h| h["value"] == "definitely lisbon");
        r.and_then(|r| r["score"].as_f64()).unwrap_or(0.0)
    };
    assert!(reply_score(&store) > 0.0);

    // off: the key is the message; the manifest records the setting
    let off = tmp.path().join("off");
    ok(&index_json(
        &input,
        &off,
        &[&turn[..], &["--key-context", "0"]].concat(),
    ));
    assert!(stored_keys(&off).iter().all(|(v, k)| v == k));
    assert_eq!(reply_score(&off), 0.0);
    let manifest = |dir: &Path| memdex_store::Manifest::load(dir).unwrap().extraction;
    assert_eq!(
        (manifest(&store).key_context, manifest(&off).key_context),
        (1, 0)
    );

    // a store written before the setting existed reads as 0 and keeps its keys when the
    // flag is not given; asking for another setting is refused by name
    let path = off.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let old = text.replace(",\n    \"key_context\": 0", "");
    assert_ne!(old, text, "the field is written");
    std::fs::write(&path, old).unwrap();
    memdex_store::Manifest::reseal(&off).unwrap();
    let more = write(
        tmp.path(),
        "m.jsonl",
        &(session("alice", "s2", 2, &["and food?", "pastel de nata"]) + "\n"),
    );
    ok(&index_json(&more, &off, &turn));
    assert!(stored_keys(&off).iter().all(|(v, k)| v == k));
    let err = fails(&index_json(
        &more,
        &off,
        &[&turn[..], &["--key-context", "1"]].concat(),
    ));
    assert!(err.contains("--key-context"), "{err}");
    let err = fails(&index_json(
        &input,
        &store,
        &[&turn[..], &["--key-context", "9"]].concat(),
    ));
    assert!(err.contains("--key-context"), "{err}");
    let rounds = tmp.path().join("rounds");
    let err = fails(&index_json(&input, &rounds, &["--key-context", "1"]));
    assert!(err.contains("turn stores only"), "{err}");
    assert!(!rounds.join("manifest.json").exists(), "nothing created");
}

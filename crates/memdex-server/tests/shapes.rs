//! Every HTTP answer in its ecosystem's shape: search answers (hits, explain, context) valid
//! against the served OpenAPI document, OpenAI-compatible embeddings (vectors, usage, errors in
//! OpenAI's shape), metrics, and the error body with its headers (405 `Allow`, 429
//! `Retry-After`).

#![allow(clippy::unwrap_used)]

mod common;

use base64::Engine as _;
use common::schema::conforms;
use common::{session, TestServer};
use memdex_server::{HttpLimits, ServerConfig};
use serde_json::{json, Value};

#[test]
fn search_answers_match_the_openapi_document() {
    let s = TestServer::start(ServerConfig::default());
    s.json(
        "POST",
        "/v1/tenants/dave/sessions",
        None,
        &session("d1", 1, &["my dog Rex is three", "nice"]),
    );
    let (_, doc) = s.json("GET", "/openapi.json", None, &Value::Null);
    let op = &doc["paths"]["/v1/tenants/{tenant}/search"]["post"]["responses"];
    let ok = &op["200"]["content"]["application/json"]["schema"];
    let err = &op["404"]["content"]["application/json"]["schema"];
    for body in [
        json!({"query": "and its age?", "recent_turns": ["my dog Rex"], "k": 2}),
        json!({"query": "dog", "k": 2, "explain": true}),
        json!({"query": "and its age?", "recent_turns": ["my dog Rex"],
               "stages": {"retriever": "dense"}, "context": true}),
    ] {
        let (st, r) = s.json("POST", "/v1/tenants/dave/search", None, &body);
        assert_eq!(st, 200, "{r}");
        conforms(&doc, ok, &r, "$").unwrap_or_else(|e| panic!("{body}: {e}\n{r}"));
    }
    // a hit the update stage moved carries its link
    s.json(
        "POST",
        "/v1/tenants/erin/sessions",
        None,
        &json!([
            session("e1", 1, &["My sister lives in Porto.", "ok"]),
            session(
                "e2",
                9,
                &["My sister moved to Lisbon and lives there now.", "ok"]
            ),
        ]),
    );
    let body = json!({"query": "where does my sister live?", "k": 2, "explain": true,
                      "stages": {"retriever": "bm25"}});
    let (_, r) = s.json("POST", "/v1/tenants/erin/search", None, &body);
    assert!(r["hits"][0]["explain"]["update"].is_object(), "{r}");
    let link = &doc["components"]["schemas"]["UpdateLink"]["properties"];
    assert!(
        link["linked_item_id"].is_object() && link["cue"].is_object(),
        "{link}"
    );
    conforms(&doc, ok, &r, "$").unwrap_or_else(|e| panic!("{body}: {e}\n{r}"));
    let (st, r) = s.json(
        "POST",
        "/v1/tenants/nobody/search",
        None,
        &json!({"query": "x"}),
    );
    assert_eq!(st, 404);
    conforms(&doc, err, &r, "$").unwrap();
    let (st, r) = s.json("POST", "/v1/embeddings", None, &json!({"input": 3}));
    assert_eq!(st, 400);
    let e = &doc["paths"]["/v1/embeddings"]["post"]["responses"]["400"]["content"]
        ["application/json"]["schema"];
    conforms(&doc, e, &r, "$").unwrap();
}

#[test]
fn openai_embeddings_metrics_openapi() {
    let s = TestServer::start(ServerConfig::default());
    let (st, r) = s.json(
        "POST",
        "/v1/embeddings",
        None,
        &json!({"input": "hello world"}),
    );
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["object"], "list");
    let v: Vec<f32> = serde_json::from_value(r["data"][0]["embedding"].clone()).unwrap();
    assert_eq!(v.len(), s.memory.model().dim);
    assert!(r["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    let (st, r) = s.json("POST", "/v1/embeddings", None, &json!({"input": ["hello world", "b"], "encoding_format": "base64", "model": s.memory.model().name}));
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["data"].as_array().unwrap().len(), 2);
    let raw = base64::engine::general_purpose::STANDARD
        .decode(r["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let decoded: Vec<f32> = raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    // same vector (batched with another text: float rounding may differ in the last bits)
    assert!(
        decoded.iter().zip(&v).all(|(a, b)| (a - b).abs() < 1e-5),
        "base64 = the float vector"
    );
    assert_eq!(
        s.json(
            "POST",
            "/v1/embeddings",
            None,
            &json!({"input": "x", "model": "gpt-4"})
        )
        .0,
        404
    );
    assert_eq!(
        s.json("POST", "/v1/embeddings", None, &json!({"input": []}))
            .0,
        400
    );
    assert_eq!(
        s.json("POST", "/v1/embeddings", None, &json!({"input": 3}))
            .0,
        400
    );
    // failures in OpenAI's shape, with plain messages naming the field
    let openai = |body: Value, status: u16, param: Value, want: &str| {
        let (st, r) = s.json("POST", "/v1/embeddings", None, &body);
        assert_eq!(st, status, "{body}: {r}");
        let e = &r["error"];
        let m = e["message"].as_str().unwrap_or_default();
        assert!(m.contains(want), "{body}: {r}");
        assert!(!m.contains("enum") && !m.contains("InputIn"), "{r}");
        assert!(e["type"].is_string() && e["code"].is_string(), "{r}");
        assert_eq!(e["param"], param, "{body}: {r}");
        assert!(e.get("status").is_none(), "OpenAI's shape only: {r}");
    };
    let want = "input must be a string or an array of strings";
    openai(json!({"input": 123}), 400, json!("input"), want);
    openai(json!({"input": ["a", null]}), 400, json!("input"), want);
    openai(
        json!({"input": [[101, 7592, 102]]}),
        400,
        json!("input"),
        "token ids are not supported",
    );
    openai(json!({}), 400, json!("input"), "missing field `input`");
    openai(
        json!({"input": "x", "colour": 1}),
        400,
        json!("colour"),
        "unknown field",
    );
    openai(
        json!({"input": "x", "encoding_format": "hex"}),
        400,
        json!("encoding_format"),
        "float",
    );
    openai(
        json!({"input": "x", "dimensions": 7}),
        400,
        json!("dimensions"),
        "this model gives",
    );
    openai(
        json!({"input": "x", "model": "gpt-4"}),
        404,
        json!("model"),
        "not served",
    );
    let (st, r) = s.json(
        "POST",
        "/v1/embeddings",
        None,
        &json!({"input": "x", "model": "gpt-4"}),
    );
    assert_eq!(
        (st, &r["error"]["code"]),
        (404, &json!("model_not_found")),
        "{r}"
    );
    let (st, body) = s.call("POST", "/v1/embeddings", None, b"{oops");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (st, &r["error"]["type"]),
        (400, &json!("invalid_request_error")),
        "{r}"
    );
    assert!(r["error"]["param"].is_null(), "{r}");
    let (st, headers, body) = s.call_headers("GET", "/v1/embeddings", b"");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(st, 405, "{body}");
    assert!(headers.contains("allow: post"), "{headers}");
    assert_eq!(r["error"]["type"], "invalid_request_error", "{r}");
    // the other routes keep memdex's shape
    let (_, r) = s.json("POST", "/v1/tenants/t/search", None, &json!({"query": 3}));
    assert_eq!(r["error"]["status"], 400, "{r}");

    s.json(
        "POST",
        "/v1/tenants/m/sessions",
        None,
        &session("s", 1, &["hi there", "ok"]),
    );
    let (st, headers, body) = s.call_headers("POST", "/v1/tenants/m/search", br#"{"query": "hi"}"#);
    assert_eq!(st, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let (st, m) = s.call("GET", "/metrics", None, b"");
    assert_eq!(st, 200);
    // the answer's timings are the figures /metrics sums (this is the one search answered)
    let timings = answer["timings"]
        .as_object()
        .expect("timings in the answer");
    for stage in ["tokenize", "model_queue", "embed", "rank_queue", "rank"] {
        let us = timings[&format!("{stage}_us")].as_u64().expect(stage);
        let sum = format!(
            "memdex_search_stage_seconds_sum{{stage=\"{stage}\"}} {:.6}\n",
            us as f64 / 1e6
        );
        assert!(m.contains(&sum), "{sum} missing in\n{m}");
        let header = format!("{stage};dur={:.3}", us as f64 / 1e3);
        assert!(headers.contains(&header), "{header} missing in {headers}");
    }
    assert!(
        headers.contains("server-timing: tokenize;dur="),
        "{headers}"
    );
    for name in [
        "memdex_http_requests_total{method=\"POST\",route=\"/v1/embeddings\",status=\"200\"} 2",
        "memdex_search_stage_seconds_count{stage=\"tokenize\"} 1",
        "memdex_search_stage_seconds_sum{stage=\"rank_queue\"} ",
        "memdex_http_request_duration_seconds_bucket",
        "memdex_embed_queue_depth 0",
        "memdex_model_workers 1",
        "memdex_embed_batch_size_count",
        "memdex_store_rows 1",
        "memdex_store_tenants 1",
        "memdex_store_bytes",
        "memdex_store_tenant_rows{tenant=\"m\"} 1",
        "memdex_stage_seconds_total{stage=\"rank\"} ",
        "memdex_ranker_info{ranker=\"cpu\"} 1",
        "memdex_rank_batches_total{device=\"cpu\"} ",
    ] {
        assert!(m.contains(name), "{name} missing in\n{m}");
    }
    // the model thread embedded texts: its embed stage took some time
    let embed_secs: f64 = m
        .lines()
        .find_map(|l| l.strip_prefix("memdex_stage_seconds_total{stage=\"embed\"} "))
        .and_then(|v| v.parse().ok())
        .expect("the embed stage's seconds");
    assert!(embed_secs > 0.0, "{embed_secs}");
    let per_answer: f64 = m
        .lines()
        .find_map(|l| l.strip_prefix("memdex_search_stage_seconds_sum{stage=\"embed\"} "))
        .and_then(|v| v.parse().ok())
        .expect("the search's embed seconds");
    assert!(per_answer > 0.0 && per_answer <= embed_secs, "{per_answer}");
    let (st, doc) = s.json("GET", "/openapi.json", None, &Value::Null);
    assert_eq!(st, 200);
    // the schema's k (a literal there) is the door's: its bound and its default
    let k = &doc["components"]["schemas"]["SearchIn"]["properties"]["k"];
    assert_eq!(
        k["maximum"].as_u64(),
        Some(memdex_memory::MAX_K as u64),
        "{k}"
    );
    let default = format!("default {}", memdex_memory::DEFAULT_K);
    assert!(k["description"].as_str().unwrap().contains(&default), "{k}");
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/v1/tenants/{tenant}/sessions",
        "/v1/tenants/{tenant}/search",
        "/v1/tenants/{tenant}/items/{id}",
        "/v1/tenants/{tenant}/sessions/{session_id}",
        "/v1/tenants/{tenant}",
        "/v1/admin/compact",
        "/v1/admin/verify",
        "/v1/admin/snapshot",
        "/v1/embeddings",
        "/healthz",
        "/metrics",
        "/openapi.json",
    ] {
        assert!(paths.contains_key(p), "{p} not documented");
    }
    // the OpenAI-compatible route documents OpenAI's error shape
    let bad = &doc["paths"]["/v1/embeddings"]["post"]["responses"]["400"];
    assert_eq!(
        bad["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/OpenAiErrorBody",
        "{bad}"
    );
    // /healthz is public: it documents 200 and 503 only
    let health = doc["paths"]["/healthz"]["get"]["responses"]
        .as_object()
        .unwrap();
    let mut codes: Vec<&str> = health.keys().map(String::as_str).collect();
    codes.sort_unstable();
    assert_eq!(codes, ["200", "503"], "{health:?}");
    // the schema's bounds are the validation's: k 1..=max_k
    let k = &doc["components"]["schemas"]["SearchIn"]["properties"]["k"];
    assert_eq!(
        (k["minimum"].as_f64(), k["maximum"].as_f64()),
        (Some(1.0), Some(1000.0)),
        "{k}"
    );
    let explain = &doc["components"]["schemas"]["SearchIn"]["properties"]["explain"];
    assert_eq!(explain["type"], "boolean", "{explain}");
    let hit = &doc["components"]["schemas"]["SearchHit"]["properties"];
    assert!(hit.get("explain").is_some(), "{hit}");
}

#[test]
fn wrong_methods_and_unknown_routes_answer_the_error_body() {
    let s = TestServer::start(ServerConfig::default());
    let (st, headers, body) = s.call_headers("GET", "/v1/tenants/bob/search", b"");
    assert_eq!(st, 405, "{body}");
    assert!(headers.contains("allow: post"), "{headers}");
    let b: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(b["error"]["code"], "method_not_allowed", "{b}");
    assert_eq!(b["error"]["status"], 405);
    assert!(
        b["error"]["message"].as_str().unwrap().contains("GET"),
        "{b}"
    );
    let (st, b) = s.json("GET", "/v1/nowhere", None, &Value::Null);
    assert_eq!((st, &b["error"]["code"]), (404, &json!("not_found")), "{b}");
}

#[test]
fn over_the_in_flight_limit_answers_429() {
    let limits = HttpLimits {
        max_in_flight: 0,
        ..HttpLimits::default()
    };
    let s = TestServer::start(ServerConfig {
        limits,
        ..ServerConfig::default()
    });
    let (st, b) = s.json("POST", "/v1/tenants/t/search", None, &json!({"query": "x"}));
    assert_eq!(st, 429, "{b}");
    assert_eq!(b["error"]["code"], "too_many_requests");
    let (st, headers, _) = s.call_headers("POST", "/v1/tenants/t/search", br#"{"query": "x"}"#);
    assert!(st == 429 && headers.contains("retry-after: 1"), "{headers}");
    let (st, headers, body) = s.call_headers("POST", "/v1/embeddings", br#"{"input": "x"}"#);
    assert_eq!(st, 429, "every authenticated route is limited");
    assert!(headers.contains("retry-after: 1"), "{headers}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        r["error"]["code"], "rate_limit_exceeded",
        "OpenAI's shape: {r}"
    );
    assert_eq!(
        s.call("GET", "/healthz", None, b"").0,
        200,
        "health answers whatever the load"
    );
}

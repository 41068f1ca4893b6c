//! `memdex mcp` end to end: a scripted JSON-RPC session over the child's stdio, byte for byte
//! what an MCP client sends (newline-delimited JSON-RPC 2.0): initialize, tools/list, every
//! tool, malformed calls and "nothing there" as tool errors with memdex's messages, clean exit.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Session {
    fn start(store: &std::path::Path, extra: &[&str]) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_memdex"))
            .arg("mcp")
            .arg("--store")
            .arg(store)
            .args(["--device", "cpu", "--compact-every", "0"])
            .args(extra)
            .env("MEMDEX_MODEL", memdex_testkit::tiny_model())
            .env_remove("MEMDEX_TENANT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("memdex mcp starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Session {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("open stdin");
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends a request and returns its response (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            // a bound so a broken server fails the test instead of hanging it
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC, got {line:?}: {e}"));
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            if v["id"] == json!(id) {
                return v;
            }
            assert!(v.get("id").is_none(), "answer to another request: {v}");
        }
    }

    /// Sends a raw line and returns the next line the server writes.
    fn raw(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().expect("open stdin");
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
        let answer = self
            .lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|e| panic!("no answer to {line:?}: {e}"));
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{answer:?}: {e}"))
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("exit")
    }
}

/// The result of a successful tool call (not a tool error).
fn ok(v: &Value) -> &Value {
    assert!(v.get("error").is_none(), "JSON-RPC error: {v}");
    let r = &v["result"];
    assert_ne!(r["isError"], json!(true), "tool error: {v}");
    r
}

/// A tool-level error (the call ran or its arguments were refused; the assistant sees the
/// message) whose text contains `want`; `code`: memdex's error class when memdex raised it.
fn tool_error_code(v: &Value, want: &str, code: Option<&str>) {
    assert!(
        v.get("error").is_none(),
        "JSON-RPC error, not a tool error: {v}"
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains(want), "{text:?} lacks {want:?}");
    if let Some(code) = code {
        assert_eq!(v["result"]["structuredContent"]["error"], code, "{v}");
    }
}

/// Arguments the SDK cannot read into the tool's types: a tool error naming the problem.
fn bad_args(v: &Value, want: &str) {
    tool_error_code(v, want, None)
}

/// Arguments memdex refuses: a tool error with memdex's message and class `invalid`.
fn invalid_params(v: &Value, want: &str) {
    tool_error_code(v, want, Some("invalid"))
}

/// memdex's "nothing there" (and the like): a tool error with the message and its class.
fn tool_error(v: &Value, want: &str, code: &str) {
    tool_error_code(v, want, Some(code))
}

fn initialize(s: &mut Session) -> Value {
    let init = s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "memdex-test", "version": "0"}}),
    );
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    init
}

#[test]
fn a_client_remembers_searches_lists_and_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("mem");
    let mut s = Session::start(&store, &["--tenant", "alice"]);
    let init = initialize(&mut s);
    let r = ok(&init);
    assert_eq!(r["serverInfo"]["name"], "memdex", "{init}");
    assert_eq!(r["protocolVersion"], "2025-06-18", "{init}");
    assert!(r["capabilities"]["tools"].is_object(), "{init}");
    assert!(r["instructions"].as_str().unwrap().contains("\"alice\""));

    let tools = s.request("tools/list", json!({}));
    let mut names: Vec<&str> = ok(&tools)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["forget", "list_memories", "remember", "search_memory"]
    );
    let search_tool = ok(&tools)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_memory")
        .unwrap()
        .clone();
    assert_eq!(search_tool["inputSchema"]["required"], json!(["query"]));
    // a server for one tenant: no tool offers a tenant argument
    for t in ok(&tools)["tools"].as_array().unwrap() {
        assert!(
            t["inputSchema"]["properties"].get("tenant").is_none(),
            "{t}"
        );
    }
    // the schema's bounds are the validation's, its default every front end's
    let k = &search_tool["inputSchema"]["properties"]["k"];
    assert_eq!(
        (k["minimum"].as_u64(), k["maximum"].as_u64()),
        (Some(1), Some(memdex_memory::MAX_K as u64)),
        "{k}"
    );
    let default = format!("default {}", memdex_memory::DEFAULT_K);
    assert!(k["description"].as_str().unwrap().contains(&default), "{k}");

    // JSON-RPC's own errors: a line that is not JSON, params the SDK cannot read
    let r = s.raw("this is not JSON");
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert!(r["id"].is_null() && r["jsonrpc"] == "2.0", "{r}");
    let r = s.request(
        "tools/call",
        json!({"name": "search_memory", "arguments": "oops"}),
    );
    assert_eq!(r["error"]["code"], -32602, "invalid params: {r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/call"),
        "{r}"
    );
    let r = s.request("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");

    // a new tenant's first search and listing: nothing yet, not an error
    let r = s.call("search_memory", json!({"query": "what is my dog called?"}));
    assert_eq!(ok(&r)["structuredContent"]["hits"], json!([]), "{r}");
    let r = s.call("list_memories", json!({}));
    assert_eq!(ok(&r)["structuredContent"]["sessions"], json!([]), "{r}");

    // remember: durable, idempotent without an id, conflicts named
    let conv = json!({"date": "2023-05-01T10:00:00Z", "turns": [
        {"role": "user", "content": "I adopted a dog named Rex."},
        {"role": "assistant", "content": "Congrats on Rex!"}]});
    let r = s.call("remember", conv.clone());
    let first = ok(&r)["structuredContent"].clone();
    assert_eq!(first["report"]["sessions"][0]["status"], "stored", "{r}");
    let id = first["report"]["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s.call("remember", conv);
    assert_eq!(
        ok(&r)["structuredContent"]["report"]["sessions"][0]["status"],
        "unchanged",
        "{r}"
    );
    let r = s.call(
        "remember",
        json!({"session_id": "trip", "date": "2023-05-20", "turns": [
            {"role": "user", "content": "My sister lives in Lisbon; I visit her in June."}]}),
    );
    ok(&r);
    let r = s.call(
        "remember",
        json!({"session_id": "trip", "turns": [{"role": "user", "content": "other"}]}),
    );
    tool_error(&r, "already stored with different content", "conflict");

    // search: hits as structured content and as text; date, recent turns and stages
    // (the tiny test model's vectors are random: lexical retrieval makes the ranking certain)
    let r = s.call(
        "search_memory",
        json!({"query": "what is my dog called?", "k": 1, "stages": {"retriever": "bm25"}}),
    );
    let hits = &ok(&r)["structuredContent"]["hits"];
    assert_eq!(hits.as_array().unwrap().len(), 1, "{r}");
    assert!(hits[0]["value"].as_str().unwrap().contains("Rex"), "{r}");
    assert!(ok(&r)["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Rex"));
    let r = s.call(
        "search_memory",
        json!({"query": "and where does she live?", "recent_turns": ["my sister"],
               "date": "2023-06-01", "k": 2, "stages": {"retriever": "bm25"}}),
    );
    let sc = &ok(&r)["structuredContent"];
    assert_ne!(sc["searched"], "and where does she live?", "{r}");
    assert_eq!(sc["date_ms"], 1_685_577_600_000i64, "{r}");
    let r = s.call("search_memory", json!({"query": "Lisbon", "context": true}));
    assert!(ok(&r)["structuredContent"]["prompt"].is_string(), "{r}");
    let r = s.call(
        "search_memory",
        json!({"query": "Lisbon", "k": 2, "explain": true}),
    );
    let why = &ok(&r)["structuredContent"]["hits"][0]["explain"];
    assert!(
        why["first_stage"].is_f64() && why["score_rank"].is_u64(),
        "{r}"
    );

    // malformed calls: tool errors with memdex's messages; an unknown tool: a JSON-RPC error
    invalid_params(
        &s.call(
            "search_memory",
            json!({"query": "x", "stages": {"colour": 1}}),
        ),
        "unknown field `colour`",
    );
    invalid_params(
        &s.call(
            "search_memory",
            json!({"query": "x", "stages": {"dense_weight": 3}}),
        ),
        "dense_weight must be in [0, 1]",
    );
    invalid_params(
        &s.call("search_memory", json!({"query": "x", "date": "soon"})),
        "date \"soon\"",
    );
    invalid_params(
        &s.call("search_memory", json!({"query": " "})),
        "the query is empty",
    );
    bad_args(
        &s.call("search_memory", json!({"k": 3})),
        "missing field `query`",
    );
    invalid_params(
        &s.call("search_memory", json!({"query": "x", "tenant": "bob"})),
        "serves only \"alice\"",
    );
    bad_args(
        &s.call(
            "remember",
            json!({"turns": [{"role": "system", "content": "x"}]}),
        ),
        "system",
    );
    invalid_params(&s.call("remember", json!({"turns": []})), "no turns");
    invalid_params(
        &s.call("forget", json!({"session_id": "trip", "everything": true})),
        "exactly one",
    );
    let r = s.call("no_such_tool", json!({}));
    assert!(r["error"]["code"].is_i64(), "{r}");

    // list, forget, and what is forgotten is gone
    let r = s.call("list_memories", json!({}));
    let sessions: Vec<&str> = ok(&r)["structuredContent"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, [id.as_str(), "trip"], "{r}");
    let r = s.call("list_memories", json!({"session_id": "trip"}));
    let item = ok(&r)["structuredContent"]["items"][0]["item_id"]
        .as_u64()
        .unwrap();
    let r = s.call("forget", json!({"item_id": item}));
    assert_eq!(ok(&r)["structuredContent"]["items_deleted"], 1, "{r}");
    tool_error(
        &s.call("list_memories", json!({"session_id": "trip"})),
        "not found",
        "not_found",
    );
    tool_error(
        &s.call("forget", json!({"item_id": item})),
        "not found",
        "not_found",
    );
    ok(&s.call("forget", json!({"everything": true})));
    let r = s.call("search_memory", json!({"query": "dog"}));
    assert_eq!(ok(&r)["structuredContent"]["hits"], json!([]), "{r}");
    assert!(s.close().success());
}

#[test]
fn an_unscoped_server_takes_the_tenant_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("mem");
    let mut s = Session::start(&store, &[]);
    initialize(&mut s);
    // every tool offers the tenant argument
    let tools = s.request("tools/list", json!({}));
    for t in ok(&tools)["tools"].as_array().unwrap() {
        assert!(t["inputSchema"]["properties"]["tenant"].is_object(), "{t}");
    }
    let turns = json!([{"role": "user", "content": "I play the cello."}]);
    ok(&s.call("remember", json!({"tenant": "bob", "turns": turns})));
    invalid_params(
        &s.call("remember", json!({"turns": turns})),
        "tenant: missing",
    );
    invalid_params(
        &s.call("remember", json!({"tenant": "a b", "turns": turns})),
        "tenant",
    );
    let r = s.call("search_memory", json!({"tenant": "bob", "query": "cello"}));
    assert_eq!(ok(&r)["structuredContent"]["hits"][0]["tenant"], "bob");
    let r = s.call(
        "search_memory",
        json!({"tenant": "carol", "query": "cello"}),
    );
    assert_eq!(ok(&r)["structuredContent"]["hits"], json!([]), "{r}");
    tool_error(
        &s.call(
            "list_memories",
            json!({"tenant": "carol", "session_id": "x"}),
        ),
        "not found",
        "not_found",
    );
    assert!(s.close().success());
    // the store was released and holds bob's memory
    let out = memdex_testkit::memdex(
        env!("CARGO_BIN_EXE_memdex"),
        &["info", "--store", store.to_str().unwrap(), "--tenants"],
    );
    assert!(memdex_testkit::ok(&out).contains("bob"));
}

#[test]
fn explain_names_what_the_update_stage_linked() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::start(&dir.path().join("mem"), &["--tenant", "alice"]);
    initialize(&mut s);
    for (id, date, text) in [
        ("porto", "2023-05-01", "My sister lives in Porto."),
        (
            "lisbon",
            "2023-09-01",
            "My sister moved to Lisbon and lives there now.",
        ),
    ] {
        let r = s.call(
            "remember",
            json!({"session_id": id, "date": date, "turns": [{"role": "user", "content": text}]}),
        );
        ok(&r);
    }
    // lexical retrieval: the tiny model's vectors are random
    let r = s.call(
        "search_memory",
        json!({"query": "where does my sister live?", "k": 2, "explain": true,
               "stages": {"retriever": "bm25"}}),
    );
    let hits = &ok(&r)["structuredContent"]["hits"];
    assert_eq!(hits[0]["session_id"], "lisbon", "{r}");
    let why = &hits[0]["explain"]["update"];
    assert_eq!(why["linked_session_id"], "porto", "{r}");
    assert_eq!(
        (why["cue"].as_str(), why["direction"].as_str()),
        (Some("moved"), Some("newest_first"))
    );
    assert!(why["sentence"].as_str().unwrap().contains("Lisbon"), "{r}");
    assert!(s.close().success());
}

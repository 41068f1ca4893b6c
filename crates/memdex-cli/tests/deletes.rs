//! A forgotten item is forgotten on every path: after `DELETE` over HTTP, the server's search,
//! `memdex search`, `memdex info`, a snapshot, a re-`index` of the same session (stored again,
//! as if it had never been written) and compaction all behave as if the item was never
//! written — before and after compaction.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::start_serve;
use memdex_testkit::{http, ok};
use serde_json::Value;

const SECRET: &str = "my locker code is 4711";

fn memdex(args: &[&str]) -> Output {
    memdex_testkit::memdex(env!("CARGO_BIN_EXE_memdex"), args)
}

fn cli_search(store: &Path, query: &str) -> String {
    let s = store.to_str().unwrap();
    ok(&memdex(&[
        "search", "--store", s, "--tenant", "carol", "--query", query, "--json",
    ]))
}

fn info_rows(store: &Path) -> Value {
    let out = ok(&memdex(&[
        "info",
        "--store",
        store.to_str().unwrap(),
        "--json",
    ]));
    serde_json::from_str(&out).unwrap()
}

fn jsonl_line(id: &str, text: &str) -> String {
    serde_json::json!({"tenant": "carol", "session_id": id, "date": "2023-05-01T10:00:00Z",
        "turns": [{"role": "user", "content": text}]})
    .to_string()
}

#[test]
fn a_deleted_session_is_gone_from_every_path() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("mem");
    let (mut child, addr) = start_serve(&store, 0);
    let body = format!(
        "[{}, {}]",
        jsonl_line("c1", SECRET),
        jsonl_line("c2", "I water the plants on Sundays")
    );
    let (st, b) = http(
        addr,
        "POST",
        "/v1/tenants/carol/sessions",
        None,
        body.as_bytes(),
    );
    assert_eq!(st, 200, "{b}");
    let (st, b) = http(addr, "DELETE", "/v1/tenants/carol/sessions/c1", None, b"");
    assert_eq!(st, 200, "{b}");
    // HTTP search
    let q = br#"{"query": "locker code", "k": 10}"#;
    let (st, b) = http(addr, "POST", "/v1/tenants/carol/search", None, q);
    assert!(
        st == 200 && !b.contains("4711") && b.contains("plants"),
        "{b}"
    );
    // a snapshot while serving
    let copy = tmp.path().join("copy");
    ok(&memdex(&[
        "snapshot",
        "--store",
        store.to_str().unwrap(),
        "--output",
        copy.to_str().unwrap(),
    ]));
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    assert!(child.wait().unwrap().success());
    for s in [&store, &copy] {
        let out = cli_search(s, "what is my locker code?");
        assert!(!out.contains("4711") && out.contains("plants"), "{out}");
        let info = info_rows(s);
        assert_eq!(info["rows"], 1, "live rows only: {info}");
        assert_eq!(info["deleted_pending"], 1, "{info}");
    }

    // re-index the forgotten session: stored again, not "unchanged", not a conflict
    let input = tmp.path().join("again.jsonl");
    std::fs::write(
        &input,
        format!(
            "{}\n{}\n",
            jsonl_line("c1", SECRET),
            jsonl_line("c2", "I water the plants on Sundays")
        ),
    )
    .unwrap();
    let out = ok(&memdex(&[
        "index",
        "--store",
        store.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--json",
    ]));
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["sessions_indexed"], 1, "{r}");
    assert_eq!(r["sessions_unchanged"], 1, "{r}");
    assert!(
        cli_search(&store, "locker code").contains("4711"),
        "remembered again"
    );

    // compaction removes the deleted bytes and nothing live
    let out = ok(&memdex(&[
        "compact",
        "--store",
        store.to_str().unwrap(),
        "--json",
    ]));
    let c: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(c["rows_removed"], 1, "{c}");
    assert_eq!(info_rows(&store)["rows"], 2);
    assert_eq!(info_rows(&store)["deleted_pending"], 0);
}

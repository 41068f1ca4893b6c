//! `memdex index --lsh-buckets/--lsh-tables` stores bucket ids; `memdex bench lsh` reads them.

#![allow(clippy::unwrap_used)]

use std::process::Output;

use memdex_testkit::ok;

use serde_json::Value;

fn memdex(args: &[&str]) -> Output {
    memdex_testkit::memdex(env!("CARGO_BIN_EXE_memdex"), args)
}

#[test]
fn stored_bucket_ids_feed_the_bucketed_search() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("chats.jsonl");
    let lines: Vec<String> = (0..40)
        .map(|i| {
            serde_json::json!({"tenant": "t", "session_id": format!("s{i}"),
                "date": "2023-05-01T10:00:00Z",
                "turns": [{"role": "user", "content": format!("topic {} note number {i}", i % 7)},
                          {"role": "assistant", "content": "ok"}]})
            .to_string()
        })
        .collect();
    std::fs::write(&input, lines.join("\n")).unwrap();
    let store = tmp.path().join("store");
    let (input, store) = (input.to_str().unwrap(), store.to_str().unwrap());
    ok(&memdex(&[
        "index",
        "--input",
        input,
        "--store",
        store,
        "--lsh-buckets",
        "16",
        "--lsh-tables",
        "4",
        "--json",
    ]));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(std::path::Path::new(store).join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["lsh"],
        serde_json::json!({"seed": 42, "buckets": 16, "tables": 4, "dim": manifest["model"]["dim"]})
    );
    // probing every bucket of a table finds exactly the exact scan's neighbours
    let out: Value = serde_json::from_str(&ok(&memdex(&[
        "bench",
        "lsh",
        "--store",
        store,
        "--queries",
        "20",
        "--probes",
        "16",
        "--json",
    ])))
    .unwrap();
    assert_eq!(out["stored"]["tables"], 4);
    assert_eq!(out["stored"]["recall_at_10"], 1.0, "{out}");
    // a lone flag is refused by the parser
    let lone = memdex(&[
        "index",
        "--input",
        input,
        "--store",
        store,
        "--lsh-buckets",
        "16",
    ]);
    assert!(!lone.status.success());
}

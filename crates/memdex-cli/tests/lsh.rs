//! `memdex index --lsh-buckets/--lsh-tables` stores bucket ids; `memdex bench lsh` reads them.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn memdex(args: &[&str]) -> Output {
    let model: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../memdex-embed/tests/fixtures/tiny-bert");
    Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args(args)
        .env("MEMDEX_MODEL", model)
        .env_remove("MEMDEX_STORE")
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
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
        &std::fs::read_to_string(Path::new(store).join("manifest.json")).unwrap(),
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

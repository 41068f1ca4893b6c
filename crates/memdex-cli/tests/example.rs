//! The bundled example is a test: every question of `examples/questions.tsv` (the ones the
//! quickstart asks) through the default `memdex index` and `memdex search` over
//! `examples/chat-history.jsonl`, with the real MiniLM, must put its right round first. A
//! moved hit explains the move: the item it was linked to and the cue of change.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use memdex_testkit::{minilm, ok};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn memdex(model: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args(args)
        .env("MEMDEX_MODEL", model)
        .env_remove("MEMDEX_STORE")
        .output()
        .unwrap();
    ok(&out)
}

#[test]
fn every_question_of_the_example_finds_its_round_first() {
    let Some(model) = minilm("example") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let input = root().join("examples/chat-history.jsonl");
    memdex(
        &model,
        &[
            "index",
            "--input",
            input.to_str().unwrap(),
            "--store",
            store,
        ],
    );
    let questions = std::fs::read_to_string(root().join("examples/questions.tsv")).unwrap();
    let mut wrong = Vec::new();
    let mut asked = 0;
    for line in questions.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let (tenant, q, session, round) = (f[0], f[1], f[2], f[3].parse::<u64>().unwrap());
        let args = ["search", "--store", store, "--tenant", tenant, "--query", q];
        let hits: Value = serde_json::from_str(&memdex(
            &model,
            &[&args[..], &["-k", "3", "--json"]].concat(),
        ))
        .unwrap();
        let top = &hits[0];
        asked += 1;
        if top["session_id"] != session || top["turn"] != round {
            wrong.push(format!(
                "{tenant}: {q} → {} #{}",
                top["session_id"], top["turn"]
            ));
        }
    }
    assert!(asked >= 6, "{asked} questions");
    assert!(wrong.is_empty(), "wrong first round: {wrong:?}");
    // the car question is right only because the update stage moved the newer statement
    let args = [
        "search",
        "--store",
        store,
        "--tenant",
        "bob",
        "--query",
        "what car do I drive?",
    ];
    let hits: Value = serde_json::from_str(&memdex(
        &model,
        &[&args[..], &["-k", "3", "--json", "--explain"]].concat(),
    ))
    .unwrap();
    let why = &hits[0]["explain"];
    assert!(why["update_moved_from"].as_u64().unwrap() > 1, "{why}");
    assert_eq!(why["update"]["linked_session_id"], "b-2023-02-08", "{why}");
    assert_eq!(why["update"]["cue"], "sold", "{why}");
    assert_eq!(why["update"]["direction"], "newest_first", "{why}");
    let off: Value = serde_json::from_str(&memdex(
        &model,
        &[&args[..], &["-k", "3", "--json", "--update-window", "0"]].concat(),
    ))
    .unwrap();
    assert_eq!(
        off[0]["session_id"], "b-2023-02-08",
        "the stage off: the older statement"
    );
}

//! Crash safety of `memdex index`: a process killed mid-run leaves a store whose manifest
//! names only complete segments, holding only complete sessions; a re-run finishes the job.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memdex_store::Store;
use memdex_testkit::tiny_model;

const WORDS: [&str; 12] = [
    "dog", "cat", "car", "house", "paris", "coffee", "book", "music", "trip", "job", "sister",
    "friend",
];

/// `n` sessions; session i has 1 + i % 3 rounds.
fn big_history(n: usize) -> (String, HashMap<String, usize>) {
    let mut out = String::new();
    let mut rounds = HashMap::new();
    for i in 0..n {
        let r = 1 + i % 3;
        let turns: Vec<serde_json::Value> = (0..r * 2)
            .map(|t| {
                let w = WORDS[(i * 7 + t) % WORDS.len()];
                serde_json::json!({"role": if t % 2 == 0 {"user"} else {"assistant"}, "content": format!("session {i} turn {t}: my {w} and the {w}")})
            })
            .collect();
        let s = serde_json::json!({"tenant": format!("t{}", i % 5), "session_id": format!("s{i}"), "date": "2023-01-01T00:00:00Z", "turns": turns});
        out.push_str(&s.to_string());
        out.push('\n');
        rounds.insert(format!("t{}/s{i}", i % 5), r);
    }
    (out, rounds)
}

fn index_cmd(input: &Path, store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_memdex"));
    c.args([
        "index",
        "--input",
        input.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--flush-items",
        "40",
    ])
    .arg("--model")
    .arg(tiny_model())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    c
}

/// Every committed session is complete: its stored rounds equal its rounds in the input.
fn assert_consistent(store: &Path, expected: &HashMap<String, usize>) -> u64 {
    let s = Store::open(store).expect("store must always open");
    let mut got: HashMap<String, usize> = HashMap::new();
    for seg in s.segments() {
        for row in 0..seg.rows() {
            let it = seg.item(row);
            *got.entry(format!("{}/{}", it.tenant, it.session_id))
                .or_default() += 1;
        }
    }
    for (k, n) in &got {
        assert_eq!(expected.get(k), Some(n), "session {k} is incomplete");
    }
    s.rows()
}

#[test]
fn sigkill_mid_index_leaves_only_complete_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let (text, expected) = big_history(1500);
    let input = tmp.path().join("big.jsonl");
    std::fs::write(&input, text).unwrap();
    let total: usize = expected.values().sum();
    let store = tmp.path().join("store");

    // kill at a few different moments
    let mut mid_run = 0;
    for wait_versions in [2u64, 5, 9] {
        let mut child = index_cmd(&input, &store).spawn().unwrap();
        let t0 = Instant::now();
        loop {
            let v = std::fs::read_to_string(store.join("manifest.json"))
                .ok()
                .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
                .and_then(|m| m["version"].as_u64())
                .unwrap_or(0);
            if v >= wait_versions || t0.elapsed() > Duration::from_secs(60) {
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let rows = assert_consistent(&store, &expected);
        assert!(rows <= total as u64);
        // the kill landed mid-run: the process died of it with sessions still to index
        if status.signal() == Some(9) && rows < total as u64 {
            mid_run += 1;
        }
    }
    // at least one kill interrupted indexing part-way (otherwise nothing above tested a crash)
    assert!(mid_run >= 1, "no kill landed mid-run");
    // a re-run completes the store, skipping what was committed
    let status = index_cmd(&input, &store).status().unwrap();
    assert!(status.success());
    assert_eq!(assert_consistent(&store, &expected), total as u64);
    let s = Store::open(&store).unwrap();
    let ids: std::collections::HashSet<u64> = s
        .segments()
        .iter()
        .flat_map(|g| g.item_ids().to_vec())
        .collect();
    assert_eq!(ids.len(), total, "item ids are unique across crashes");
}

#[test]
fn crash_between_segment_and_manifest_is_invisible() {
    let tmp = tempfile::tempdir().unwrap();
    let (text, expected) = big_history(60);
    let input = tmp.path().join("h.jsonl");
    std::fs::write(&input, text).unwrap();
    let store = tmp.path().join("store");
    let status = index_cmd(&input, &store)
        .env("MEMDEX_FAIL_POINT", "before-manifest")
        .status()
        .unwrap();
    assert!(!status.success(), "the fail point aborts the process");
    // a segment file (and its content file) exists on disk, but no manifest names it; the
    // batch's word file was committed just before (its terms' vectors, harmless unused)
    let mut names: Vec<String> = std::fs::read_dir(store.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "cnt-00000002.arrow",
            "seg-00000003.arrow",
            "wrd-00000001.arrow"
        ]
    );
    let manifest = memdex_store::Manifest::load(&store).unwrap();
    assert!(manifest.segments.is_empty());
    assert_eq!(manifest.words.len(), 1);
    assert_eq!(assert_consistent(&store, &expected), 0);
    assert!(index_cmd(&input, &store).status().unwrap().success());
    assert_eq!(
        assert_consistent(&store, &expected),
        expected.values().sum::<usize>() as u64
    );
}

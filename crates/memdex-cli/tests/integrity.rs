//! The operator's view of damage: `memdex verify` names a damaged file and what it holds and
//! exits non-zero; `memdex search` answers from the sound files, or names the damaged file
//! when all of a tenant's rows are in it; `memdex compact` refuses and writes nothing;
//! `memdex restore --repair` from a snapshot puts the file back and nothing is lost. A served
//! store: `POST /v1/admin/verify` finds damage made while it serves (the rows leave the
//! searches at once, `/healthz` says degraded), `POST /v1/admin/snapshot` copies it, and
//! `--verify-on-start` refuses to start on it.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{start_serve, tiny_model};
use memdex_testkit::{fails, http, memdex, ok};

const BIN: &str = env!("CARGO_BIN_EXE_memdex");

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-history.jsonl")
}

fn run(args: &[&str]) -> std::process::Output {
    memdex(BIN, args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The store's content files, oldest first.
fn content_files(store: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(store.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("cnt-"))
        .collect();
    out.sort();
    out
}

/// Flips one byte of `needle`'s first occurrence in `file`, in place (no truncation: a
/// server may have the file mapped): a bit rot inside stored text.
fn rot(file: &Path, needle: &str) {
    let bytes = std::fs::read(file).unwrap();
    let at = (bytes.windows(needle.len()))
        .position(|w| w == needle.as_bytes())
        .unwrap_or_else(|| panic!("{needle:?} not in {}", file.display()));
    let mut f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.seek(SeekFrom::Start(at as u64)).unwrap();
    f.write_all(&[bytes[at] ^ 0x01]).unwrap();
}

fn index(input: &Path, store: &Path) {
    ok(&run(&["index", "--input", s(input), "--store", s(store)]));
}

fn search(store: &Path, tenant: &str, query: &str) -> std::process::Output {
    let args = [
        "search",
        "--store",
        s(store),
        "--tenant",
        tenant,
        "--query",
        query,
        "--json",
    ];
    run(&args)
}

/// `memdex snapshot --to DIR [--copy]`: the copy's report.
fn snapshot(store: &Path, to: &Path, copy: bool) -> serde_json::Value {
    let mut args = vec!["snapshot", "--store", s(store), "--to", s(to), "--json"];
    if copy {
        args.push("--copy");
    }
    serde_json::from_str(&ok(&run(&args))).unwrap()
}

/// The example's store with a newer session of bob's in a second content file, a linked
/// and a copied snapshot taken before it; then one byte of the first content file rotted.
/// Returns (store, linked snapshot, copied snapshot, the damaged file's name).
fn damaged_store(tmp: &Path) -> (PathBuf, PathBuf, PathBuf, String) {
    let store = tmp.join("mem");
    index(&example(), &store);
    assert!(ok(&run(&["verify", "--store", s(&store)])).contains(", 0 damaged"));
    // a hard-linked snapshot shares the files' bytes; a copied one is a backup of them
    let (linked, snap) = (tmp.join("linked"), tmp.join("snap"));
    let r = snapshot(&store, &linked, false);
    assert_eq!(r["linked"], r["files"], "{r}");
    let r = snapshot(&store, &snap, true);
    assert!(r["linked"] == 0 && r["copied"] == r["files"], "{r}");
    let more = tmp.join("more.jsonl");
    let line = r#"{"tenant": "bob", "session_id": "b-new", "date": "2024-01-05", "turns": [{"role": "user", "content": "I started learning the cello this week."}]}"#;
    std::fs::write(&more, format!("{line}\n")).unwrap();
    index(&more, &store);
    let first = content_files(&store)[0].clone();
    rot(&first, "shellfish");
    let name = first.file_name().unwrap().to_string_lossy().to_string();
    (store, linked, snap, name)
}

/// `memdex verify` names the file and what it holds, and exits 1.
fn verify_names(store: &Path, name: &str) {
    let v = run(&["verify", "--store", s(store)]);
    let text = String::from_utf8_lossy(&v.stdout).to_string();
    assert!(!v.status.success(), "{text}");
    assert!(text.contains(&format!("DAMAGED segments/{name}")), "{text}");
    for part in ["checksum mismatch", "bob:", "b-2023-01-15", "alice:"] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let json = run(&["verify", "--store", s(store), "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(r["damaged"], 1, "{r}");
    let files = r["files"].as_array().unwrap();
    let bad = files.iter().find(|f| f["status"] == "damaged").unwrap();
    assert_eq!(bad["holds"]["tenants"].as_array().unwrap().len(), 3);
}

/// Compaction (every segment small: a merge) refuses and writes nothing.
fn compaction_refuses(store: &Path, name: &str) {
    let state = || {
        let files = std::fs::read_dir(store.join("segments")).unwrap().count();
        (files, std::fs::read(store.join("manifest.json")).unwrap())
    };
    let before = state();
    let args = ["compact", "--store", s(store), "--small-rows", "100000"];
    let e = fails(&run(&args));
    assert!(e.contains(name) && e.contains("compaction refused"), "{e}");
    assert!(state() == before, "compaction wrote or removed a file");
}

#[test]
fn verify_search_compact_and_restore_on_a_damaged_store() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, linked, snap, name) = damaged_store(tmp.path());
    let e = fails(&run(&["verify", "--store", s(&linked)]));
    assert!(e.contains("1 damaged"), "the same bytes: {e}");
    verify_names(&store, &name);
    // bob: answered from the sound file only; alice: all her rows are in the damaged one
    let out = ok(&search(&store, "bob", "which food am I allergic to?"));
    let hits: serde_json::Value = serde_json::from_str(&out).unwrap();
    let sessions: Vec<&str> = (hits.as_array().unwrap().iter())
        .map(|h| h["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["b-new"], "{out}");
    let e = fails(&search(&store, "alice", "what is my dog called?"));
    assert!(e.contains(&name) && e.contains("damaged"), "{e}");
    compaction_refuses(&store, &name);
    // the copied snapshot holds the same file: repaired, bob's new session still there
    let args = [
        "restore",
        "--repair",
        "--from",
        s(&snap),
        "--store",
        s(&store),
    ];
    let out = ok(&run(&args));
    assert!(out.contains(&format!("copied segments/{name}")), "{out}");
    ok(&run(&["verify", "--store", s(&store)]));
    let out = ok(&search(&store, "bob", "which food am I allergic to?"));
    assert!(out.contains("shellfish"), "{out}");
    assert!(ok(&search(&store, "bob", "cello")).contains("b-new"));
}

/// The admin routes on a sound served store: verify, a copied snapshot, names checked.
fn admin_routes(addr: std::net::SocketAddr, store: &Path) -> PathBuf {
    let post = |path: &str, body: &str| http(addr, "POST", path, None, body.as_bytes());
    let (st, b) = post("/v1/admin/verify", "");
    let r: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert!(st == 200 && r["damaged"] == 0, "{b}");
    let (st, b) = post("/v1/admin/snapshot", r#"{"name": "first", "copy": true}"#);
    assert_eq!(st, 200, "{b}");
    let snap: serde_json::Value = serde_json::from_str(&b).unwrap();
    let snap_dir = PathBuf::from(snap["path"].as_str().unwrap());
    assert_eq!(snap_dir, store.join("snapshots/first"));
    ok(&run(&["verify", "--store", s(&snap_dir)]));
    assert_eq!(post("/v1/admin/snapshot", r#"{"name": "first"}"#).0, 409);
    assert_eq!(post("/v1/admin/snapshot", r#"{"name": "../x"}"#).0, 400);
    assert_eq!(post("/v1/admin/snapshot", r#"{"nme": "x"}"#).0, 400);
    snap_dir
}

/// A file rotted while served: the admin check finds it, its rows leave the searches at
/// once (cached rankings dropped), `/healthz` and `/metrics` say so.
fn damage_while_serving(addr: std::net::SocketAddr, store: &Path) -> String {
    let post = |path: &str, body: &str| http(addr, "POST", path, None, body.as_bytes());
    // carol says something new (a second content file) and her rankings are cached
    let new = r#"{"session_id": "c-new", "turns": [{"role": "user", "content": "I bought a red kayak for the lake."}]}"#;
    assert_eq!(post("/v1/tenants/carol/sessions", new).0, 200);
    let kayak = r#"{"query": "kayak", "k": 20}"#;
    let (st, b) = post("/v1/tenants/carol/search", kayak);
    assert!(
        st == 200 && b.contains("c-new") && b.contains("c-2023"),
        "{b}"
    );
    let first = content_files(store)[0].clone();
    let name = first.file_name().unwrap().to_string_lossy().to_string();
    rot(&first, "shellfish");
    let (st, b) = post("/v1/admin/verify", "");
    let r: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert!(st == 200 && r["damaged"] == 1, "{b}");
    let (st, b) = http(addr, "GET", "/healthz", None, b"");
    let degraded = b.contains("\"degraded\"") && b.contains("\"damaged_files\":1");
    assert!(st == 200 && degraded, "{b}");
    let (st, b) = post(
        "/v1/tenants/bob/search",
        r#"{"query": "what am I allergic to?"}"#,
    );
    assert!(st == 500 && b.contains(&name), "{st} {b}");
    let (st, b) = post("/v1/tenants/carol/search", kayak);
    assert!(
        st == 200 && b.contains("c-new") && !b.contains("c-2023"),
        "{b}"
    );
    let (_, metrics) = http(addr, "GET", "/metrics", None, b"");
    assert!(
        metrics.contains("memdex_store_damaged_files 1"),
        "{metrics}"
    );
    name
}

#[test]
fn a_served_store_is_verified_snapshotted_and_refused_when_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("mem");
    index(&example(), &store);
    let (mut child, addr) = start_serve(&store, 0);
    let snap_dir = admin_routes(addr, &store);
    let name = damage_while_serving(addr, &store);
    child.kill().unwrap();
    child.wait().unwrap();
    // restarted with --verify-on-start: refused, the file named, never listening
    let out = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--verify-on-start"])
        .args(["--store", s(&store)])
        .arg("--model")
        .arg(tiny_model())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains(&name), "{e}");
    assert!(out.stdout.is_empty(), "it never listened");
    // the snapshot taken before is sound and restores the store
    let args = [
        "restore",
        "--repair",
        "--from",
        s(&snap_dir),
        "--store",
        s(&store),
    ];
    ok(&run(&args));
    ok(&run(&["verify", "--store", s(&store)]));
}

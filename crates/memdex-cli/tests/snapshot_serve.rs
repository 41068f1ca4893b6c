//! `memdex snapshot` of a store while `memdex serve` takes appends and deletes (and compacts
//! every second): every copy is exactly one committed version — the sessions whose append was
//! acknowledged at or before the copy's manifest version, less those whose delete was — and
//! every file of it checks out.
//!
//! `cargo test --release -p memdex-cli --test snapshot_serve -- --nocapture` prints the figures.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ledger::{live_sessions, rounds_of, session_json};
use common::start_serve;

/// What the server acknowledged: (tenant, session) appended at version, deleted at version.
#[derive(Default)]
struct Acks {
    appended: Vec<((String, String), u64)>,
    deleted: Vec<((String, String), u64)>,
}

fn client(addr: SocketAddr, c: usize, acks: Arc<Mutex<Acks>>, stop: Arc<AtomicBool>) {
    let mut mine: Vec<String> = Vec::new();
    let tenant = format!("t{c}");
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let id = format!("c{c}-s{i}");
        let body = serde_json::json!({ "sessions": [session_json(&id)] }).to_string();
        let path = format!("/v1/tenants/{tenant}/sessions");
        let (st, b) = memdex_testkit::http(addr, "POST", &path, None, body.as_bytes());
        assert_eq!(st, 200, "{b}");
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        let version = v["report"]["manifest_version"].as_u64().unwrap();
        acks.lock()
            .unwrap()
            .appended
            .push(((tenant.clone(), id.clone()), version));
        mine.push(id);
        if i % 4 == 3 {
            let gone = mine.remove(i % mine.len());
            let path = format!("/v1/tenants/{tenant}/sessions/{gone}");
            let (st, b) = memdex_testkit::http(addr, "DELETE", &path, None, b"");
            assert_eq!(st, 200, "{b}");
            let v: serde_json::Value = serde_json::from_str(&b).unwrap();
            let version = v["manifest_version"].as_u64().unwrap();
            acks.lock()
                .unwrap()
                .deleted
                .push(((tenant.clone(), gone), version));
        }
    }
}

/// Live sessions (with their item counts) at manifest version `v`.
fn expected(acks: &Acks, v: u64) -> BTreeMap<(String, String), usize> {
    let gone: BTreeSet<&(String, String)> = (acks.deleted.iter())
        .filter(|(_, at)| *at <= v)
        .map(|(k, _)| k)
        .collect();
    (acks.appended.iter())
        .filter(|(k, at)| *at <= v && !gone.contains(k))
        .map(|(k, _)| (k.clone(), rounds_of(&k.1)))
        .collect()
}

/// `memdex snapshot` run back to back for 6 s (at least 8 copies): each copy's version and
/// directory, and each run's time.
fn snapshot_for_a_while(store: &Path, tmp: &Path) -> (Vec<(u64, PathBuf)>, Vec<Duration>) {
    let mut copies = Vec::new();
    let (start, mut took) = (Instant::now(), Vec::new());
    while start.elapsed() < Duration::from_secs(6) || copies.len() < 8 {
        let out = tmp.join(format!("copy{}", copies.len()));
        let t = Instant::now();
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_memdex"))
            .args(["snapshot", "--json", "--store"])
            .arg(store)
            .arg("--to")
            .arg(&out)
            .output()
            .unwrap();
        took.push(t.elapsed());
        let r: serde_json::Value = serde_json::from_str(&memdex_testkit::ok(&run)).unwrap();
        assert_eq!(r["verified"], r["files"], "{r}");
        copies.push((r["manifest_version"].as_u64().unwrap(), out));
    }
    (copies, took)
}

#[test]
fn snapshots_of_a_served_store_under_load_are_one_version_each() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("mem");
    let (mut child, addr) = start_serve(&store, 1);
    let acks = Arc::new(Mutex::new(Acks::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|c| {
            let (acks, stop) = (acks.clone(), stop.clone());
            std::thread::spawn(move || client(addr, c, acks, stop))
        })
        .collect();
    let (copies, mut took) = snapshot_for_a_while(&store, tmp.path());
    stop.store(true, Ordering::Relaxed);
    clients.into_iter().for_each(|c| c.join().unwrap());
    child.kill().unwrap();
    child.wait().unwrap();
    let acks = acks.lock().unwrap();
    let mut versions = BTreeSet::new();
    for (v, dir) in &copies {
        let have: BTreeMap<(String, String), usize> = live_sessions(dir).into_iter().collect();
        assert_eq!(
            have,
            expected(&acks, *v),
            "copy of version {v} ({})",
            dir.display()
        );
        assert!(memdex_store::verify(Path::new(dir)).unwrap().is_sound());
        versions.insert(*v);
    }
    took.sort();
    eprintln!(
        "served store under load: {} snapshots ({} distinct versions, last {}) while 2 clients \
         had {} appends and {} deletes acknowledged (background compaction every 1 s); each copy \
         equal to its version's acknowledged sessions and verified; `memdex snapshot` process \
         p50 {:?}, max {:?}",
        copies.len(),
        versions.len(),
        versions.last().unwrap(),
        acks.appended.len(),
        acks.deleted.len(),
        took[took.len() / 2],
        took[took.len() - 1]
    );
    assert!(versions.len() > 1, "the copies span several versions");
}

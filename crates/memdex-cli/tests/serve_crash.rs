//! Crash safety of `memdex serve`: clients stream appends (and some deletes) while the server
//! is killed with SIGKILL at a random moment, then restarted, over and over. After every
//! kill: the store opens; every acknowledged append is present in full; every
//! unacknowledged append is wholly present or wholly absent (never half); every acknowledged
//! delete stays deleted. Background compaction runs every second, so kills land inside
//! compactions too.
//!
//! CI runs a few cycles; `scripts/crash-serve.sh` runs 100 (`MEMDEX_CRASH_CYCLES`).

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::start_serve;
use memdex_store::Store;

fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    if !out.contains("\r\n\r\n") {
        return None;
    }
    out.split(' ').nth(1)?.parse().ok()
}

/// Rounds of session `id` (each round = user + assistant turn).
fn rounds_of(id: &str) -> usize {
    1 + id.bytes().map(usize::from).sum::<usize>() % 3
}

fn session_json(id: &str) -> serde_json::Value {
    let turns: Vec<serde_json::Value> = (0..rounds_of(id) * 2)
        .map(|t| serde_json::json!({"role": if t % 2 == 0 {"user"} else {"assistant"}, "content": format!("{id} turn {t} about my dog and coffee")}))
        .collect();
    serde_json::json!({"session_id": id, "date": "2023-01-01T00:00:00Z", "turns": turns})
}

#[derive(Default)]
struct Ledger {
    /// Appends acknowledged with 200: (tenant, [session ids]).
    acked: Vec<(String, Vec<String>)>,
    /// Appends sent without a complete answer.
    unknown: Vec<(String, Vec<String>)>,
    /// Sessions whose delete was acknowledged.
    deleted: HashSet<(String, String)>,
    /// Sessions whose delete was sent without an answer.
    maybe_deleted: HashSet<(String, String)>,
}

/// Live items per (tenant, session) in the store on disk.
fn live_sessions(dir: &Path) -> HashMap<(String, String), usize> {
    let store = Store::open(dir).unwrap_or_else(|e| panic!("store does not open: {e}"));
    let deleted: HashSet<u64> = store.manifest().deleted.iter().copied().collect();
    let mut out = HashMap::new();
    for seg in store.segments() {
        for row in 0..seg.rows() {
            let it = seg.item(row);
            if !deleted.contains(&it.item_id) {
                *out.entry((it.tenant.to_string(), it.session_id.to_string()))
                    .or_insert(0) += 1;
            }
        }
    }
    out
}

fn check(dir: &Path, ledger: &Ledger) -> (usize, usize) {
    let live = live_sessions(dir);
    let present = |t: &str, s: &str| live.get(&(t.to_string(), s.to_string())).copied();
    let mut acked_present = 0;
    for (t, ids) in &ledger.acked {
        for id in ids {
            let key = (t.clone(), id.clone());
            if ledger.deleted.contains(&key) || ledger.maybe_deleted.contains(&key) {
                continue;
            }
            assert_eq!(
                present(t, id),
                Some(rounds_of(id)),
                "acknowledged {t}/{id} lost or partial"
            );
            acked_present += 1;
        }
    }
    for key in &ledger.deleted {
        assert_eq!(present(&key.0, &key.1), None, "deleted {key:?} is back");
    }
    let mut unknown_present = 0;
    for (t, ids) in &ledger.unknown {
        let there: Vec<Option<usize>> = ids.iter().map(|id| present(t, id)).collect();
        let all = ids
            .iter()
            .zip(&there)
            .all(|(id, p)| *p == Some(rounds_of(id)));
        let none = there.iter().all(Option::is_none);
        assert!(
            all || none,
            "unacknowledged append {t}/{ids:?} is half present: {there:?}"
        );
        unknown_present += usize::from(all);
    }
    // nothing appears that nobody sent
    let sent: HashSet<(String, String)> = (ledger.acked.iter().chain(&ledger.unknown))
        .flat_map(|(t, ids)| ids.iter().map(move |id| (t.clone(), id.clone())))
        .collect();
    for key in live.keys() {
        assert!(sent.contains(key), "{key:?} was never sent");
    }
    (acked_present, unknown_present)
}

fn client(addr: SocketAddr, worker: usize, cycle: usize, ledger: Arc<Mutex<Ledger>>, seed: u64) {
    let mut rng = seed;
    for i in 0.. {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let tenant = format!("t{}", rng % 4);
        if i % 7 == 6 {
            // delete a session this worker had acknowledged, if any
            let target = {
                let l = ledger.lock().unwrap();
                l.acked
                    .iter()
                    .rev()
                    .find(|(t, _)| *t == tenant)
                    .map(|(t, ids)| (t.clone(), ids[0].clone()))
            };
            if let Some((t, id)) = target {
                if ledger
                    .lock()
                    .unwrap()
                    .deleted
                    .contains(&(t.clone(), id.clone()))
                {
                    continue;
                }
                let path = format!("/v1/tenants/{t}/sessions/{id}");
                ledger
                    .lock()
                    .unwrap()
                    .maybe_deleted
                    .insert((t.clone(), id.clone()));
                match call(addr, "DELETE", &path, "") {
                    Some(200) => {
                        let mut l = ledger.lock().unwrap();
                        l.maybe_deleted.remove(&(t.clone(), id.clone()));
                        l.deleted.insert((t, id));
                    }
                    Some(404) => {
                        ledger.lock().unwrap().maybe_deleted.remove(&(t, id));
                    }
                    Some(s) => panic!("delete answered {s}"),
                    None => return,
                }
            }
            continue;
        }
        let ids: Vec<String> = (0..2)
            .map(|k| format!("c{cycle}-w{worker}-{i}-{k}"))
            .collect();
        let body = serde_json::json!({"sessions": ids.iter().map(|id| session_json(id)).collect::<Vec<_>>()});
        let path = format!("/v1/tenants/{tenant}/sessions");
        match call(addr, "POST", &path, &body.to_string()) {
            Some(200) => ledger.lock().unwrap().acked.push((tenant, ids)),
            Some(s) => panic!("append answered {s}"),
            None => {
                ledger.lock().unwrap().unknown.push((tenant, ids));
                return;
            }
        }
    }
}

#[test]
fn sigkill_during_streaming_appends_loses_nothing_acknowledged() {
    let cycles: usize = std::env::var("MEMDEX_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let t0 = Instant::now();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(std::process::id());
    for cycle in 0..cycles {
        let (mut child, addr) = start_serve(&dir, 1);
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let l = ledger.clone();
                let s = seed.wrapping_add(w as u64 * 7919 + cycle as u64);
                std::thread::spawn(move || client(addr, w, cycle, l, s | 1))
            })
            .collect();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(50 + seed % 700));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for w in workers {
            w.join().unwrap();
        }
        let (acked, unknown) = check(&dir, &ledger.lock().unwrap());
        println!(
            "cycle {cycle}: ok ({acked} acknowledged sessions present, {unknown} unacknowledged appends fully present, {:.1}s)",
            t0.elapsed().as_secs_f64()
        );
        assert!(
            t0.elapsed() < Duration::from_secs(900),
            "time bound exceeded"
        );
    }
    let l = ledger.lock().unwrap();
    println!(
        "{cycles} cycles: {} appends acknowledged, {} cut by the kill, {} deletes acknowledged; every check passed",
        l.acked.len(),
        l.unknown.len(),
        l.deleted.len()
    );
    assert!(!l.acked.is_empty(), "no append was ever acknowledged");
}

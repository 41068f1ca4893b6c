//! What crash tests share: a ledger of what a server acknowledged, clients that stream appends
//! (and deletes and compactions) until the server dies, and the check that the store on disk
//! holds exactly what was acknowledged — every acknowledged append whole, no acknowledged
//! delete back, every unacknowledged append all or nothing, nothing nobody sent, ids unique.

#![allow(clippy::unwrap_used, dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memdex_store::Store;

pub fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> Option<u16> {
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
pub fn rounds_of(id: &str) -> usize {
    1 + id.bytes().map(usize::from).sum::<usize>() % 3
}

pub fn session_json(id: &str) -> serde_json::Value {
    let turns: Vec<serde_json::Value> = (0..rounds_of(id) * 2)
        .map(|t| serde_json::json!({"role": if t % 2 == 0 {"user"} else {"assistant"}, "content": format!("{id} turn {t} about my dog and coffee")}))
        .collect();
    serde_json::json!({"session_id": id, "date": "2023-01-01T00:00:00Z", "turns": turns})
}

#[derive(Default)]
pub struct Ledger {
    /// Appends acknowledged with 200: (tenant, [session ids]).
    pub acked: Vec<(String, Vec<String>)>,
    /// Appends sent without a complete answer.
    pub unknown: Vec<(String, Vec<String>)>,
    /// Sessions whose delete was acknowledged.
    pub deleted: HashSet<(String, String)>,
    /// Sessions whose delete was sent without an answer.
    pub maybe_deleted: HashSet<(String, String)>,
}

/// Live items per (tenant, session) in the store on disk.
pub fn live_sessions(dir: &Path) -> HashMap<(String, String), usize> {
    let store = Store::open(dir).unwrap_or_else(|e| panic!("store does not open: {e}"));
    let deleted: HashSet<u64> = store.manifest().deleted.iter().copied().collect();
    let mut out = HashMap::new();
    let mut ids = HashSet::new();
    for seg in store.segments() {
        for row in 0..seg.rows() {
            let it = seg.item(row);
            assert!(
                ids.insert(it.item_id),
                "item id {} stored twice",
                it.item_id
            );
            if !deleted.contains(&it.item_id) {
                *out.entry((it.tenant.to_string(), it.session_id.to_string()))
                    .or_insert(0) += 1;
            }
        }
    }
    out
}

pub fn check(dir: &Path, ledger: &Ledger) -> (usize, usize) {
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

/// What a client mixes into its appends.
#[derive(Debug, Clone, Copy)]
pub struct Ops {
    /// Every n-th operation deletes a session this worker had acknowledged (0: never).
    pub delete_every: usize,
    /// Every n-th operation asks for a compaction (0: never).
    pub compact_every: usize,
}

/// Appends (and deletes, compactions) until the server stops answering, recording what was
/// acknowledged.
pub fn client(
    addr: SocketAddr,
    worker: usize,
    cycle: usize,
    ledger: Arc<Mutex<Ledger>>,
    seed: u64,
    ops: Ops,
) {
    let mut rng = seed;
    for i in 0.. {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let tenant = format!("t{}", rng % 4);
        if ops.compact_every > 0 && i % ops.compact_every == ops.compact_every - 1 {
            match call(addr, "POST", "/v1/admin/compact", "") {
                Some(200) => continue,
                Some(s) => panic!("compaction answered {s}"),
                None => return,
            }
        }
        if ops.delete_every > 0 && i % ops.delete_every == ops.delete_every - 1 {
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

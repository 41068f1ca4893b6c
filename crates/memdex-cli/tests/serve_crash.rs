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

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ledger::{check, client, Ledger, Ops};
use common::start_serve;

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
                let ops = Ops {
                    delete_every: 7,
                    compact_every: 0,
                };
                std::thread::spawn(move || client(addr, w, cycle, l, s | 1, ops))
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

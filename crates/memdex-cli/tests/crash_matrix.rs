//! The crash matrix: `memdex serve` aborted at every fail point of the store (segment
//! written / manifest not yet; tombstones about to commit; compaction's rewrite durable /
//! manifest not yet; compaction committed / old files not yet removed), at a varying hit,
//! cycle after cycle on one store. After each abort: the store opens, every acknowledged
//! write is whole, no acknowledged delete is back, unacknowledged appends are all or
//! nothing, item ids are unique. Then a full disk: an injected "no space left" at the segment
//! and manifest writes, and (where tmpfs can be mounted) a real full filesystem: a clear 507,
//! reads go on, nothing acknowledged is lost.
//!
//! CI runs 2 cycles per point; `scripts/crash-matrix.sh N` runs N (`MEMDEX_CRASH_CYCLES`).

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ledger::{call, check, client, Ledger, Ops};
use common::{start_serve, start_serve_env};

const POINTS: [&str; 4] = [
    "before-manifest",
    "before-tombstones",
    "compact-before-manifest",
    "compact-before-cleanup",
];

fn cycles() -> usize {
    std::env::var("MEMDEX_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

/// Waits for the server to exit on its own (the fail point) within `limit`; kills it if not.
fn wait_abort(child: &mut Child, limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status.signal() == Some(libc_sigabrt());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    false
}

fn libc_sigabrt() -> i32 {
    6
}

fn one_cycle(dir: &Path, point: &str, cycle: usize, ledger: &Arc<Mutex<Ledger>>) -> bool {
    let after = (1 + cycle % 3).to_string();
    let env = [
        ("MEMDEX_FAIL_POINT", point),
        ("MEMDEX_FAIL_AFTER", after.as_str()),
    ];
    let (mut child, addr) = start_serve_env(dir, 0, &env);
    let ops = Ops {
        delete_every: 3,
        compact_every: 4,
    };
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let l = ledger.clone();
            let seed = 0x2545_F491_4F6C_DD1D ^ ((cycle * 31 + w) as u64) | 1;
            std::thread::spawn(move || client(addr, w, cycle, l, seed, ops))
        })
        .collect();
    let aborted = wait_abort(&mut child, Duration::from_secs(30));
    for w in workers {
        w.join().unwrap();
    }
    aborted
}

#[test]
fn every_fail_point_leaves_a_consistent_store() {
    let tmp = tempfile::tempdir().unwrap();
    for point in POINTS {
        let dir = tmp.path().join(point);
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let mut aborted = 0;
        for cycle in 0..cycles() {
            aborted += usize::from(one_cycle(&dir, point, cycle, &ledger));
            let (acked, _) = check(&dir, &ledger.lock().unwrap());
            println!("{point} cycle {cycle}: consistent, {acked} acknowledged sessions present");
        }
        assert_eq!(
            aborted,
            cycles(),
            "{point}: every cycle must end in the fail point's abort"
        );
        // a clean restart serves the same store
        let (mut child, addr) = start_serve(&dir, 0);
        assert_eq!(call(addr, "GET", "/healthz", ""), Some(200));
        child.kill().unwrap();
        child.wait().unwrap();
        check(&dir, &ledger.lock().unwrap());
    }
}

/// Appends `n` one-session requests; returns the statuses.
fn appends(addr: std::net::SocketAddr, tag: &str, n: usize) -> Vec<u16> {
    (0..n)
        .map(|i| {
            let body = common::ledger::session_json(&format!("{tag}-{i}"));
            call(addr, "POST", "/v1/tenants/d/sessions", &body.to_string()).unwrap()
        })
        .collect()
}

#[test]
fn an_injected_full_disk_fails_one_write_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    for (point, after) in [("before-manifest", "2"), ("compact-before-manifest", "1")] {
        let spec = format!("{point}:enospc");
        let env = [
            ("MEMDEX_FAIL_POINT", spec.as_str()),
            ("MEMDEX_FAIL_AFTER", after),
        ];
        let (mut child, addr) = start_serve_env(&dir, 0, &env);
        let st = appends(addr, point, 3);
        if point == "before-manifest" {
            assert_eq!(st, [200, 507, 200], "the second commit hits the full disk");
        } else {
            assert_eq!(st, [200, 200, 200]);
            let compact = |addr| call(addr, "POST", "/v1/admin/compact", "");
            assert_eq!(compact(addr), Some(507), "the rewrite hits the full disk");
            assert_eq!(compact(addr), Some(200), "and succeeds once there is room");
        }
        let q = r#"{"query": "dog and coffee", "k": 3}"#;
        assert_eq!(
            call(addr, "POST", "/v1/tenants/d/search", q),
            Some(200),
            "reads go on"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // nothing half-written stayed behind, and the store opens
    let names: Vec<String> = std::fs::read_dir(dir.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    let live = common::ledger::live_sessions(&dir);
    assert_eq!(live.len(), 5, "2 + 3 appends acknowledged: {live:?}");
}

/// A real full filesystem (a 1 MiB tmpfs), when this machine lets the test mount one.
#[test]
fn a_real_full_disk_answers_507_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        if std::env::var("MEMDEX_REQUIRE_TMPFS").as_deref() == Ok("1") {
            panic!("MEMDEX_REQUIRE_TMPFS=1 but tmpfs cannot be mounted here");
        }
        eprintln!("skipping the real full-disk test: cannot mount a tmpfs (the injected one ran)");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&mnt);
    let dir = mnt.join("store");
    let (mut child, addr) = start_serve(&dir, 0);
    let mut acked = 0;
    let mut full = false;
    for i in 0..400 {
        let body = common::ledger::session_json(&format!("fill-{i}"));
        match call(addr, "POST", "/v1/tenants/d/sessions", &body.to_string()) {
            Some(200) => acked += 1,
            Some(507) => {
                full = true;
                break;
            }
            other => panic!("append {i} answered {other:?}"),
        }
    }
    assert!(full && acked > 0, "the disk filled after {acked} appends");
    println!("real tmpfs: full after {acked} acknowledged appends");
    let q = r#"{"query": "dog and coffee", "k": 3}"#;
    assert_eq!(
        call(addr, "POST", "/v1/tenants/d/search", q),
        Some(200),
        "reads go on"
    );
    assert_eq!(call(addr, "GET", "/healthz", ""), Some(200));
    child.kill().unwrap();
    child.wait().unwrap();
    let live = common::ledger::live_sessions(&dir);
    assert_eq!(
        live.len(),
        acked,
        "every acknowledged append is there after a restart"
    );
}

//! `memdex serve` as a process: serves on loopback, drains and exits 0 on SIGTERM (every
//! acknowledged append durable), refuses a non-loopback address without a key; then
//! `memdex compact` removes the deleted text from the segment files. `--model-workers`: the
//! workers asked for serve searches; 0 (and more than 64) is refused.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use common::{start_serve, tiny_model};

fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    memdex_testkit::http(addr, method, path, None, body.as_bytes())
}

fn segment_text(dir: &Path) -> String {
    String::from_utf8_lossy(&memdex_testkit::segment_bytes(dir)).to_string()
}

#[test]
fn serve_sigterm_then_compact_removes_deleted_text() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("mem");
    let (mut child, addr) = start_serve(&store, 0);
    let body = r#"{"sessions": [
        {"session_id": "a", "turns": [{"role": "user", "content": "my locker code is 4711-quokka"}]},
        {"session_id": "b", "turns": [{"role": "user", "content": "I like green tea"}]}]}"#;
    let (st, b) = call(addr, "POST", "/v1/tenants/u/sessions", body);
    assert_eq!(st, 200, "{b}");
    let (st, _) = call(addr, "DELETE", "/v1/tenants/u/sessions/a", "");
    assert_eq!(st, 200);
    let (st, b) = call(
        addr,
        "POST",
        "/v1/tenants/u/search",
        r#"{"query": "locker code"}"#,
    );
    assert!(st == 200 && !b.contains("quokka"), "{b}");

    // a consistent copy while serving
    let copy = tmp.path().join("copy");
    let out = Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args(["snapshot", "--store"])
        .arg(&store)
        .arg("--output")
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap = memdex_store::Store::open(&copy).unwrap();
    assert_eq!(snap.rows(), 1, "the copy sees live rows only");
    assert_eq!(snap.stored_rows(), 2);
    assert_eq!(
        snap.manifest().deleted.len(),
        1,
        "tombstones travel with the copy"
    );

    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert!(status.success(), "SIGTERM: graceful exit, got {status}");
    assert!(
        segment_text(&store).contains("quokka"),
        "tombstoned, not yet compacted"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args(["compact", "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rows_removed"], 1);
    let text = segment_text(&store);
    assert!(!text.contains("quokka"), "deleted text still on disk");
    assert!(text.contains("green tea"));
}

#[test]
fn serve_refuses_open_non_loopback_address() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args(["serve", "--addr", "0.0.0.0:0", "--store"])
        .arg(tmp.path().join("mem"))
        .arg("--model")
        .arg(tiny_model())
        .env_remove("MEMDEX_API_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without an API key"), "{err}");
}

#[test]
fn serve_refuses_zero_model_workers() {
    let tmp = tempfile::tempdir().unwrap();
    for (n, why) in [("0", "at least 1"), ("65", "at most 64")] {
        let out = Command::new(env!("CARGO_BIN_EXE_memdex"))
            .args(["serve", "--addr", "127.0.0.1:0", "--model-workers", n])
            .arg("--store")
            .arg(tmp.path().join("mem"))
            .arg("--model")
            .arg(tiny_model())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--model-workers") && err.contains(why),
            "{err}"
        );
    }
    assert!(!tmp.path().join("mem").exists(), "refused before the store");
}

/// `--model-workers 2` on the CPU: two copies of the model serve searches (`/metrics` says
/// how many); the default on the CPU is 1.
#[test]
fn serve_runs_the_model_workers_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("mem");
    for (env, workers) in [(None, "1"), (Some("2"), "2")] {
        let mut vars = vec![("MEMDEX_DEVICE", "cpu")];
        vars.extend(env.map(|n| ("MEMDEX_MODEL_WORKERS", n)));
        let (mut child, addr) = common::start_serve_env(&store, 0, &vars);
        let body = format!(
            r#"{{"sessions": [{{"session_id": "w{workers}", "turns": [{{"role": "user", "content": "my locker code is 4711-quokka"}}]}}]}}"#
        );
        let (st, b) = call(addr, "POST", "/v1/tenants/u/sessions", &body);
        assert_eq!(st, 200, "{b}");
        for _ in 0..4 {
            let (st, b) = call(
                addr,
                "POST",
                "/v1/tenants/u/search",
                r#"{"query": "locker"}"#,
            );
            assert!(st == 200 && b.contains("quokka"), "{b}");
        }
        let (st, m) = call(addr, "GET", "/metrics", "");
        assert_eq!(st, 200);
        assert!(
            m.contains(&format!("\nmemdex_model_workers {workers}\n")),
            "{m}"
        );
        let pid = child.id().to_string();
        let term = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(term.unwrap().success());
        assert!(child.wait().unwrap().success(), "a graceful exit");
    }
}

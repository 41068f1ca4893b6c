#!/usr/bin/env bash
# Crash test of `memdex serve`: 100 cycles (MEMDEX_CRASH_CYCLES) of three clients streaming
# appends (two sessions per request) and some deletes while the server is killed with SIGKILL
# at a random moment (50-750 ms in), then restarted. After each kill the store must open,
# every acknowledged append must be present in full, every unacknowledged one wholly present
# or absent, every acknowledged delete still deleted. Background compaction runs every second.
# Bounded: the test fails past 15 minutes. The test itself is
# crates/memdex-cli/tests/serve_crash.rs (CI runs 4 cycles of it).
#
# usage: scripts/crash-serve.sh [cycles]   (results: docs/serving.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export MEMDEX_CRASH_CYCLES="${1:-${MEMDEX_CRASH_CYCLES:-100}}"
timeout 1200 cargo test --release -p memdex-cli --test serve_crash -- --nocapture 2>&1 \
  | grep -E '^(cycle|[0-9]+ cycles|test |test result)'

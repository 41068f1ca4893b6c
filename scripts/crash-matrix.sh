#!/usr/bin/env bash
# The crash matrix of `memdex serve`: N cycles (MEMDEX_CRASH_CYCLES, default 25) per fail
# point of the store — before-manifest (segment durable, manifest not), before-tombstones,
# compact-before-manifest (rewrite durable, manifest not), compact-before-cleanup (committed,
# old files not removed) — each aborting the server at its 1st, 2nd or 3rd hit while two
# clients stream appends, deletes and compactions; after each abort the store must open with
# every acknowledged write whole, no acknowledged delete back, unacknowledged appends all or
# nothing, ids unique. Then a full disk: injected ENOSPC at the segment and compaction
# commits, and a real 1 MiB tmpfs when it can be mounted (MEMDEX_REQUIRE_TMPFS=1 makes that
# a must). The test is crates/memdex-cli/tests/crash_matrix.rs (CI runs 2 cycles per point).
#
# usage: scripts/crash-matrix.sh [cycles]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export MEMDEX_CRASH_CYCLES="${1:-${MEMDEX_CRASH_CYCLES:-25}}"
timeout 1800 cargo test --release -p memdex-cli --test crash_matrix -- --nocapture --test-threads 1 2>&1 \
  | grep -E '(cycle [0-9]+:|real tmpfs|skipping|^test |test result)'

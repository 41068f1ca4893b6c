#!/usr/bin/env bash
# Soak test of `memdex serve` on loopback: MINUTES (default 30) of mixed traffic from 8
# clients over 50 tenants — 70 % searches, 15 % appends, 15 % deletes (the live data levels
# off), a compaction a minute
# (and background compaction) — with the real all-MiniLM-L6-v2 on the CPU. One JSON line a
# minute: requests, errors, p50/p99 per operation, the server's RSS and anonymous memory;
# then a summary, a graceful stop (SIGTERM, exit 0) and a consistency check of the store
# (live rows = rows of acknowledged, undeleted sessions).
#
# usage: scripts/soak.sh [MINUTES]   (results: docs/serving.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
minutes="${1:-30}"
cargo build --release -p memdex-cli >/dev/null
scripts/fetch-model.sh >/dev/null
work="$(mktemp -d)"
log="$work/server.log"
target/release/memdex serve --store "$work/mem" --addr 127.0.0.1:0 --model models/all-MiniLM-L6-v2 \
  --compact-every 20 >"$work/out" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 300); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.2; done
addr="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["listening"])' "$work/out")"
echo "== soak: $minutes min on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), server pid $pid at $addr"
python3 scripts/load/soak.py "$addr" "$pid" "$minutes" | tee "$work/soak.jsonl"
kill -TERM "$pid"
wait "$pid" && echo "server: graceful exit 0"
trap 'rm -rf "$work"' EXIT
expected="$(tail -1 "$work/soak.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["expected_live_rows"])')"
rows="$(target/release/memdex info --store "$work/mem" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["rows"])')"
echo "store after the soak: $rows live rows; rows of acknowledged, undeleted sessions: $expected"
echo "server log lines with panic or error: $(grep -ciE 'panic|error' "$log" || true)"
[ "$rows" = "$expected" ] || { echo "MISMATCH: the store does not hold exactly what was acknowledged" >&2; exit 1; }

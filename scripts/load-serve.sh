#!/usr/bin/env bash
# Load test of `memdex serve` on loopback with wrk (Debian package `wrk`), bounded in time
# (~2.5 minutes): seed 100 tenants x 5,000 rounds in total (bulk appends), then search at
# 1, 8 and 64 concurrent connections, append throughput, and a 90/10 search/append mix.
# The server runs the real all-MiniLM-L6-v2 on the CPU; every search embeds its query.
#
# usage: scripts/load-serve.sh [DURATION_SECONDS per phase, default 15]   (results: docs/serving.md)
#   MEMDEX_LOAD_STORE=DIR: serve a copy of a store built beforehand instead of seeding through
#   the API — the full-scale run, 100 tenants x 5,000 rounds each:
#     python3 scripts/load/make-history.py /tmp/full.jsonl 100 5000
#     target/release/memdex index --input /tmp/full.jsonl --store /tmp/fullstore
#     MEMDEX_LOAD_STORE=/tmp/fullstore scripts/load-serve.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dur="${1:-15}"
command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
cargo build --release -p memdex-cli >/dev/null
scripts/fetch-model.sh >/dev/null
store="$(mktemp -d)"
if [ -n "${MEMDEX_LOAD_STORE:-}" ]; then
  cp -r "$MEMDEX_LOAD_STORE" "$store/mem"
  rm -f "$store/mem/LOCK"
fi
log="$(mktemp)"
addr="127.0.0.1:${MEMDEX_LOAD_PORT:-7788}"
target/release/memdex serve --store "$store/mem" --addr "$addr" --model models/all-MiniLM-L6-v2 \
  --compact-every 5 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$store" "$log"' EXIT
for _ in $(seq 600); do curl -sf "http://$addr/healthz" >/dev/null && break; sleep 0.2; done

echo "== machine: $(nproc) cores, $(uname -srm); server: memdex serve (2 HTTP threads + model + writer)"
echo "== seed"
if [ -n "${MEMDEX_LOAD_STORE:-}" ]; then
  # the server warms every tenant's BM25/importance caches in the background at start
  sleep "${MEMDEX_LOAD_WARMUP:-30}"
  echo "serving a copy of $MEMDEX_LOAD_STORE: $(curl -s "http://$addr/metrics" | grep -E '^memdex_store_(rows|tenants) ' | tr '\n' ' ')"
else
  python3 scripts/load/seed.py "$addr" 100 5000
fi
# One wrk thread per connection: each thread pairs an answer with the one request it has in
# flight, so scripts/load/common.lua checks the tenant asked for and, for a planted question
# (one search in 4), the right first hit. A phase fails on any wrong answer.
run() {  # name connections script
  echo "== $1: wrk -t$2 -c$2 -d${dur}s -s scripts/load/$3 --latency"
  local out
  out=$(timeout $((dur + 30)) wrk -t"$2" -c"$2" -d"${dur}s" --timeout 10s -s "scripts/load/$3" --latency "http://$addr")
  grep -E 'Requests/sec|Non-2xx|Socket errors|statuses|checks|body_checked|planted_checked|latency_us|requests in' <<< "$out"
  grep -q 'body_checked ok=[1-9][0-9]* wrong=0 ' <<< "$out" || { echo "wrong answers in phase: $1" >&2; exit 1; }
}
run "search, 1 client" 1 search.lua
run "search, 8 clients" 8 search.lua
run "search, 64 clients" 64 search.lua
run "append, 8 clients (1 session = 2 rounds per request)" 8 append.lua
run "mixed 90% search / 10% append, 8 clients" 8 mixed.lua
echo "== after"
curl -s "http://$addr/metrics" | grep -E '^memdex_(store_(rows|segments|tenants|bytes)|embed_batch_size_(sum|count)|store_commits_total|append_requests_committed_total|compactions_total|busy)'
kill -TERM $pid; wait $pid || true
echo "== graceful shutdown: exit after SIGTERM ok"

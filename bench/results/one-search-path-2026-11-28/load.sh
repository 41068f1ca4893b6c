#!/usr/bin/env bash
# before/after `memdex bench load`: the same store copied fresh for each server, the same
# client, before and after alternating for 3 rounds; a 15 s closed loop at 64 connections, then
# an open loop at 80 % of that round's closed-loop rate; /metrics kept after each.
#   BEFORE=/path/to/old/memdex AFTER=target/release/memdex STORE=seeded-store OUTD=out \
#     [MEMDEX_CPU_ISA=avx2] bash load.sh
# seed STORE with: python3 scripts/load/seed.py 100 10000 (100 tenants x 100 rounds)
set -u
export MEMDEX_CPU_ISA=${MEMDEX_CPU_ISA:-}
export MEMDEX_MODEL=${MEMDEX_MODEL:-models/all-MiniLM-L6-v2}
AFTER=${AFTER:-target/release/memdex}
CLIENT=$AFTER
mkdir -p "$OUTD"
for round in 1 2 3; do
  for side in before after; do
    bin=$BEFORE; [ $side = after ] && bin=$AFTER
    rm -rf "$OUTD/store-$side"; cp -r "$STORE" "$OUTD/store-$side"; rm -f "$OUTD/store-$side/LOCK"
    $bin serve --store "$OUTD/store-$side" --addr 127.0.0.1:7812 --device cpu --compact-every 0 > "$OUTD/serve-$side-$round.log" 2>&1 &
    pid=$!
    for i in $(seq 200); do curl -sf http://127.0.0.1:7812/healthz >/dev/null && break; sleep 0.2; done
    sleep 5
    $CLIENT bench load --addr 127.0.0.1:7812 --tenants 100 --connections 64 --seconds 15 --warmup-seconds 3 --planted 4 --json > "$OUTD/closed-$side-$round.json" 2> "$OUTD/closed-$side-$round.err"
    rate=$(python3 -c "import json;r=json.load(open('$OUTD/closed-$side-$round.json'));print(int(0.8*r['ok_per_s']))" 2>/dev/null || echo 100)
    $CLIENT bench load --addr 127.0.0.1:7812 --tenants 100 --connections 64 --seconds 15 --rate $rate --planted 4 --json > "$OUTD/open-$side-$round.json" 2> "$OUTD/open-$side-$round.err"
    curl -s http://127.0.0.1:7812/metrics > "$OUTD/metrics-$side-$round.txt"
    kill -TERM $pid; wait $pid
    rm -rf "$OUTD/store-$side"
    echo "$round $side done rate=$rate"
  done
done

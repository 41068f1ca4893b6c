#!/usr/bin/env bash
# The two store layouts side by side on one realistic LongMemEval_M slice: the same input
# indexed into a shared and an inline store, then each store's bytes (scripts/store-bytes.py),
# the ranking of every question (`memdex eval --preset default`, whose metrics must agree) and
# the search latency (`memdex bench search`). Everything lands in $OUT.
#
# usage: OUT=DIR [QUESTIONS=50] [MODEL=models/all-MiniLM-L6-v2] [MEMDEX=target/release/memdex]
#        [PYTHON=.venv-test/bin/python] scripts/layout-bench.sh
#
# MODEL only sets the dimension and the per-token cost: a 1-layer cut of MiniLM (its
# config.json with num_hidden_layers 1) gives the same 384-d bytes and ranking cost in a
# sixth of the build time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${OUT:?set OUT to a directory for the results}"
questions="${QUESTIONS:-50}"
model="${MODEL:-$root/models/all-MiniLM-L6-v2}"
memdex="${MEMDEX:-$root/target/release/memdex}"
python="${PYTHON:-$root/.venv-test/bin/python}"
mkdir -p "$OUT"
input="$OUT/m.json"
[ -s "$input" ] || "$memdex" synth --profile longmemeval-m --questions "$questions" --output "$input"
for layout in shared inline; do
    store="$OUT/$layout"
    rm -rf "$store"
    /usr/bin/time -v -o "$OUT/index-$layout.time" "$memdex" index --format longmemeval \
        --granularity turn --layout "$layout" --input "$input" --store "$store" --model "$model" \
        --json >"$OUT/index-$layout.json"
    "$python" "$root/scripts/store-bytes.py" "$store" --json >"$OUT/bytes-$layout.json"
done
# rankings alternate so neither layout always runs on a warmer machine
for round in 1 2; do
    for layout in shared inline; do
        store="$OUT/$layout"
        "$memdex" eval --format longmemeval --preset default --input "$input" --store "$store" \
            --model "$model" --json >"$OUT/eval-$layout-$round.json"
        "$memdex" bench search --store "$store" --model "$model" --queries 1000 \
            --json >"$OUT/search-$layout-$round.json"
    done
done
echo "results in $OUT"

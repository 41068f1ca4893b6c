#!/usr/bin/env bash
# The device run: every GPU figure of docs/benchmarks.md in one call of at most BUDGET seconds
# (default 540, a 9-minute call), on the GPU box, from the repository root with dist/gpu carried
# (`scripts/build-cuda.sh` first, here, at the commit to test). The device tool's command:
#
#   OUT=$OUT bash scripts/gpu-first.sh                 # every stage of PLAN
#   OUT=$OUT PLAN="load:300" bash scripts/gpu-first.sh # a spare call: one stage again
#
# Each stage of PLAN (stage:timeout-seconds, in order) runs `dist/gpu/scripts/gpu-check.sh
# STAGE` under its own timeout, cut to what is left of BUDGET; a stage with under 20 s left is
# skipped and counted as a failure. The reports (gpu-check.sh's files), summary.json (a verdict
# per target, the figures each stage measured), targets.json and summary.txt are tarred into
# $OUT/run.tgz; verdicts.jsonl, summary.json and README.md (gpu-report.py readme: the pack's
# commit, dirty flag and source hash, every verdict with FAIL and MISS in capitals, the
# issue's targets, every invocation and raw file) also come back alone, with the chart of this
# device kind ($OUT/gpu-h100.png/.svg, scripts/gpu-run-chart.py).
#
# The model path's call (#58: the fused encoder, per-batch embed time, serving with both
# encoders and the serving default, eval, bulk embedding; stage times estimated, ~9 minutes;
# bench/results/gpu-model-path-2026-11-28/README.md says what each stage measures and why 128
# connections: at 25,000/s a closed loop of 256 waits 10.2 ms on average, over the p99 goal):
#   OUT=$OUT BUDGET=520 PLAN="env:15 fused:60 embed-batch:50 load:240 eval:60 embed:90" \
#     LOAD_CONFIGS="cuda:cuda:8:1:fused:128 cuda:auto:8:auto:fused:128 cuda:auto:8:auto:candle cpu:cpu:14" \
#     LOAD_SECONDS=8 OPEN_SECONDS=8 LOAD_WARMUP=6 LOAD_RANK_RUNS=1 LOAD_NCU=0 \
#     TOKEN_BUDGETS="16384 65536" ST_REPEATS=3 ST_BATCHES=128,512,2048 TEXT_REPEAT=5 \
#     EVAL_ENCODERS="candle fused" bash scripts/gpu-first.sh
#
# Exit status: 1 if any stage failed, timed out or was skipped, 3 if every check passed but a
# performance goal was missed, 0 only when everything passed.
# Smoke test without a GPU (numbers meaningless): DEVICE=cpu ST_DTYPE=fp32 TEXT_REPEAT=1
# BENCH_LIMIT=300 LOAD_SECONDS=3 LOAD_RUNS=3 PLAN="env kernels eval load" OUT=/tmp/o bash …
set -uo pipefail
export PYTHONUNBUFFERED=1 WORK=${WORK:-/tmp/gc}
# The staged ranking batch (one copy, one wait) is opt-in until measured: the plan turns it on
# for every stage, so the kernel checks and the sanitizers run it; the batch stage compares it
# with the separate uploads (MEMDEX_GPU_STAGING=0).
export MEMDEX_GPU_STAGING=${MEMDEX_GPU_STAGING:-1}
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
CHECK=dist/gpu/scripts/gpu-check.sh
[[ -f $CHECK ]] || { echo "no $CHECK: carry dist/gpu (scripts/build-cuda.sh)" >&2; exit 1; }
R=${REPORT_DIR:-/tmp/rep-run}
rm -rf "$R" && mkdir -p "$R"
BUDGET=${BUDGET:-540}
t0=$SECONDS
# Sized for one call from the stage times measured on an H100 (bench/results/
# gpu-2026-11-26-h100): env 11 s, kernels 25, scan 26, ncu 9, embed ~70 (7 ST batch sizes, one
# timed pass each, 13,800 texts), eval 28, load 265 (3 x 30 s closed + 20 s open loop per
# served configuration): ~435 s; the sanitizers last, in what is left (~100 s). The sanitize
# stage shares the time it gets (STAGE_SECONDS, exported below) among its runs and fails when
# one does not fit; its full run (memcheck over every check, synccheck and racecheck over the
# rank and top-k checks at the sanitizer's input sizes) has its own call:
#   OUT=$OUT PLAN="env:30 kernels:60 sanitize:240" bash scripts/gpu-first.sh
# The tensor-core scan, the sanitizers over every kernel group and the ranking batch (#59), one
# call of ~560 s (timeout_s 595): scan (both scans and torch, goals >= 1.5x torch grouped at
# 10 per tenant and >= 1.2x at 1, host grouping counted), ncu (their instruction, pipe and
# shared-memory counters), batch (bench rank at 100 x 5,000 x 256, median of 3 >= 12x the CPU
# ranker on all cores, per-batch split from nsys and ncu), sanitize (memcheck, racecheck, synccheck over
# every group and the scan bench; its runs also check every kernel on cuda:0):
#   OUT=$OUT BUDGET=560 PLAN="env:15 scan:70 ncu:45 batch:110 sanitize:310" bash scripts/gpu-first.sh
export TEXT_REPEAT=${TEXT_REPEAT:-5} ST_REPEATS=${ST_REPEATS:-1} TOKEN_BUDGETS=${TOKEN_BUDGETS:-16384 65536}
export SCAN_REPEATS=${SCAN_REPEATS:-5} LOAD_SECONDS=${LOAD_SECONDS:-30} OPEN_SECONDS=${OPEN_SECONDS:-20}
plan=${PLAN:-env:30 kernels:40 scan:60 ncu:60 embed:100 eval:60 load:290 sanitize:200}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,memory.total \
  --format=csv > "$R/smi.csv" 2>&1
# the pack's provenance (scripts/build-cuda.sh): commit, dirty flag, source hash
cp dist/gpu/COMMIT dist/gpu/DIRTY dist/gpu/SOURCES "$R/" 2>/dev/null
# fail STAGE DETAIL: a stage this driver stopped or never started, as gpu-check.sh's verdicts
fail() {
  echo "$1: FAIL $2" >> "$R/summary.txt"
  echo "{\"stage\": \"$1\", \"status\": \"FAIL\", \"detail\": \"$2\"}" >> "$R/verdicts.jsonl"
}
for spec in $plan; do
  st=${spec%%:*} t=${spec##*:}
  [[ $t == "$spec" ]] && t=120
  left=$((BUDGET - (SECONDS - t0)))
  if ((left < 20)); then fail "$st" "skipped: call budget spent"; continue; fi
  ((t > left)) && t=$left
  echo "== $st (timeout ${t}s, $((SECONDS - t0)) s in)" >&2
  # STAGE_SECONDS: the stage's own time, for a stage that plans its parts within it (sanitize)
  OUT=$R STAGE_SECONDS=$t timeout -k 5 "$t" bash $CHECK "$st" > "$R/stage-$st.out" 2>&1
  rc=$?
  echo "$(date -u +%H:%M:%S) rc=$rc stage $st (timeout ${t}s, $((SECONDS - t0)) s in)" >> "$R/invocations.log"
  ((rc == 124 || rc == 137)) && fail "$st" "timed out after ${t}s"
done
echo "== done in $((SECONDS - t0)) s" >&2
python3 dist/gpu/scripts/gpu-report.py summary "$R"
python3 dist/gpu/scripts/gpu-report.py readme "$R"
tar -C "$R" -cJf "$OUT/run.tar.xz" . 2>/dev/null || tar -C "$R" -czf "$OUT/run.tgz" .
cp "$R/summary.json" "$R/verdicts.jsonl" "$R/README.md" "$R/targets.json" "$OUT/" 2>/dev/null
# the chart of this device kind (the box's python3 has matplotlib): gpu-h100, gpu-h200, ...
kind=$(sed -n 2p "$R/smi.csv" | grep -oiE 'H100|H200|A100|L40S|B200' | head -1 | tr 'A-Z' 'a-z')
python3 scripts/gpu-run-chart.py "$R" --out "$OUT/gpu-${kind:-device}" > /dev/null 2>&1 \
  || echo "chart: not drawn (draw it here: scripts/gpu-run-chart.py DIR --out docs/charts/gpu-KIND)"
cat "$R/summary.txt"
if grep -q '"status": "FAIL"' "$R/verdicts.jsonl"; then exit 1; fi
if grep -q '"status": "MISS"' "$R/verdicts.jsonl"; then exit 3; fi
exit 0

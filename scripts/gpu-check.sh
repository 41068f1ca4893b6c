#!/usr/bin/env bash
# Runs ON the GPU box, from the pack that scripts/build-cuda.sh wrote (dist/gpu, carried to the
# box): parity, kernel tests and benchmarks of memdex's CUDA build, reports under $OUT.
#
#   bash dist/gpu/scripts/gpu-check.sh STAGE...      stages: env parity kernels embed scan rank e2e serve load
#                                                    (all = every stage; default all)
# Each stage fits one 10-minute device call; run them in separate calls if needed (each call
# unpacks again into $WORK, a fresh temp dir unless set). Every stage writes $OUT/STAGE.log
# and STAGE.json where it has numbers; $OUT/summary.txt collects the verdicts.
# The box: driver 580 (libcuda.so.1), PyTorch 2.11 + sentence-transformers with CUDA 13
# libraries under site-packages/nvidia/cu13/lib, no Rust, no network.
set -uo pipefail
PACK=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:?set OUT to a directory for the reports}
mkdir -p "$OUT"
WORK=${WORK:-$(mktemp -d)}
PY=${PYTHON:-python3}
STAGES=("$@")
[[ ${#STAGES[@]} -eq 0 || "${STAGES[0]}" == all ]] && STAGES=(env parity kernels embed scan rank e2e serve)
SUMMARY=$OUT/summary.txt
verdict() { echo "$1: $2" | tee -a "$SUMMARY"; }

# --- unpack (once per $WORK: later invocations with the same WORK reuse it) -----------------
if [[ ! -f "$WORK/.unpacked" ]]; then
  mkdir -p "$WORK/bin" "$WORK/data"
  for b in memdex memdex-kernels-check memdex-gpu-bench; do
    [[ -f "$PACK/bin/$b.xz" ]] && xz -T0 -dc "$PACK/bin/$b.xz" > "$WORK/bin/$b" && chmod +x "$WORK/bin/$b"
  done
  for f in "$PACK"/data/*.xz; do xz -dc "$f" > "$WORK/data/$(basename "${f%.xz}")"; done
  rm -rf "$WORK/model" && cp -r "$PACK/model" "$WORK/model" && xz -d "$WORK/model/model.safetensors.xz"
  touch "$WORK/.unpacked"
fi
MEMDEX=$WORK/bin/memdex
MODEL=$WORK/model
# Smoke-testing this script without a GPU: DEVICE=cpu (memdex and sentence-transformers on the
# CPU), ST_DTYPE=fp32 TEXT_REPEAT=1 BENCH_LIMIT=300 E2E_SCALES=s E2E_CPU_SCALES=none.
# The numbers then mean nothing.
DEVICE=${DEVICE:-cuda}
TEXT_REPEAT=${TEXT_REPEAT:-10}
BENCH_LIMIT=${BENCH_LIMIT:-}
ST_DTYPE=${ST_DTYPE:-fp16}
GOLDEN=$WORK/data/minilm-reference.jsonl

# CUDA user-space libraries: the ones PyTorch ships (same sonames the build linked against).
. "$PACK/scripts/gpu-libs.sh"

# One e2e build: index $1 (s|m) with the model on $2, then rank every question on the store.
e2e_one() {
  local sc=$1 d=$2 store="$WORK/store-$1-$2"
  rm -rf "$store"
  local t0 t1 t2
  t0=$(date +%s.%N)
  if "$MEMDEX" index --model "$MODEL" --device "$d" --input "$WORK/$sc.json" \
    --format longmemeval --granularity turn --store "$store" --json > "$WORK/index-$sc-$d.json" 2>> "$OUT/e2e.log" \
    && t1=$(date +%s.%N) \
    && "$MEMDEX" eval --model "$MODEL" --device "$d" --input "$WORK/$sc.json" \
      --format longmemeval --preset default --store "$store" --json > "$WORK/eval-$sc-$d.json" 2>> "$OUT/e2e.log"; then
    t2=$(date +%s.%N)
    "$PY" - "$WORK/index-$sc-$d.json" "$sc" "$d" "$t0" "$t1" "$t2" "$(du -sb "$store" | cut -f1)" \
      >> "$OUT/e2e.jsonl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = json.load(open(sys.argv[1].replace("/index-", "/eval-")))
t0, t1, t2 = map(float, sys.argv[4:7])
r.update(scale=sys.argv[2], device=sys.argv[3], index_wall_s=t1 - t0, eval_wall_s=t2 - t1,
         store_bytes=int(sys.argv[7]), eval_dense_scorer=e["config"].get("dense_scorer"),
         eval_rank_seconds=e["config"]["run"]["rank_seconds"], eval_latency_ms=e["latency_ms"],
         eval_session_recall_all_5=e["levels"]["session"]["recall_all@5"])
print(json.dumps(r))
PY
  else echo "{\"scale\": \"$sc\", \"device\": \"$d\", \"failed\": true}" >> "$OUT/e2e.jsonl"; fi
  rm -rf "$store"
}

# GET http://127.0.0.1:7811$1 (the load stage's server; no curl needed on the box)
http_get() {
  "$PY" -c 'import sys, urllib.request as u; print(u.urlopen("http://127.0.0.1:7811" + sys.argv[1], timeout=2).read().decode())' "$1"
}

run_stage() {
  local s=$1
  echo "== $s ($(date -u +%H:%M:%S))" >&2
  case $s in
  env)
    {
      nvidia-smi || true
      echo "cuda libs: ${CU13:-NOT FOUND}"
      cat "$PACK/MANIFEST" "$PACK/COMMIT" 2>/dev/null
      ldd "$MEMDEX"
      "$MEMDEX" --version
    } > "$OUT/env.log" 2>&1
    if ldd "$MEMDEX" | grep -q "not found"; then verdict env "FAIL (unresolved libraries, see env.log)"
    else verdict env ok; fi
    ;;
  parity)
    # memdex on cuda (f16) vs: sentence-transformers fp32 on CPU (the golden file), memdex's
    # CPU path (f32 weights, from the build machine; and f16 weights, here), and
    # sentence-transformers fp16 on this GPU. Goal: min cosine >= 0.999 everywhere.
    {
      "$MEMDEX" embed --model "$MODEL" --device "$DEVICE" --input "$GOLDEN" --output "$WORK/cuda.jsonl"
      "$MEMDEX" embed --model "$MODEL" --device cpu --input "$GOLDEN" --output "$WORK/cpu-f16w.jsonl"
      "$PY" "$PACK/scripts/gpu-st-embed.py" --model "$MODEL" --device "$DEVICE" --dtype "$ST_DTYPE" \
        --golden "$GOLDEN" --output "$WORK/st-fp16.jsonl"
    } > "$OUT/parity.log" 2>&1
    local ok=1
    for ref in "$GOLDEN:st-fp32-cpu" "$WORK/data/golden-cpu-f32.jsonl:memdex-cpu-f32" \
      "$WORK/cpu-f16w.jsonl:memdex-cpu-f16-weights" "$WORK/st-fp16.jsonl:st-fp16-cuda"; do
      local file=${ref%%:*} name=${ref##*:}
      if "$PY" "$PACK/scripts/parity.py" "$file" "$WORK/cuda.jsonl" --min 0.999 --json \
        > "$OUT/parity-$name.json" 2>> "$OUT/parity.log"; then :; else ok=0; fi
      cat "$OUT/parity-$name.json" >> "$OUT/parity.log"
    done
    # informational: the other precisions on the device against the golden vectors
    for prec in f32 bf16; do
      "$MEMDEX" embed --model "$MODEL" --device "$DEVICE" --precision "$prec" --input "$GOLDEN" \
        --output "$WORK/cuda-$prec.jsonl" >> "$OUT/parity.log" 2>&1
      "$PY" "$PACK/scripts/parity.py" "$GOLDEN" "$WORK/cuda-$prec.jsonl" --min 0 --json \
        > "$OUT/parity-info-cuda-$prec.json" 2>> "$OUT/parity.log"
    done
    ((ok)) && verdict parity "ok (memdex cuda f16 vs 4 references, min cosine >= 0.999)" \
      || verdict parity "FAIL (see parity*.json)"
    ;;
  kernels)
    # every check of memdex_kernels::checks on the CPU reference and on cuda:0 (JSON lines);
    # fails when a check fails or no CUDA device answers
    if "$WORK/bin/memdex-kernels-check" > "$OUT/kernels.jsonl" 2> "$OUT/kernels.log"; then
      verdict kernels "ok ($(tail -1 "$OUT/kernels.jsonl"))"
    else verdict kernels "FAIL ($(tail -1 "$OUT/kernels.jsonl"); see kernels.jsonl)"; fi
    ;;
  embed)
    # throughput, same texts, same f16 weights: memdex (candle CUDA, f16) vs sentence-transformers
    # fp16 (best of several batch sizes). Texts: every LoCoMo dev turn, repeated to ~50k texts.
    "$PY" "$PACK/scripts/make-bench-texts.py" --locomo "$WORK/data/locomo-dev.json" \
      -o "$WORK/turns.jsonl" 2>> "$OUT/embed.log"
    for _ in $(seq 1 "$TEXT_REPEAT"); do cat "$WORK/turns.jsonl"; done > "$WORK/texts.jsonl"
    if [[ -n "$BENCH_LIMIT" ]]; then
      head -n "$BENCH_LIMIT" "$WORK/texts.jsonl" > "$WORK/t" && mv "$WORK/t" "$WORK/texts.jsonl"
    fi
    # memdex at its default token budget and two others (best reported, like ST's batch sizes)
    : > "$OUT/embed-memdex-runs.json"
    for tb in ${TOKEN_BUDGETS:-16384 65536 262144}; do
      "$MEMDEX" bench embed --model "$MODEL" --device "$DEVICE" --input "$WORK/texts.jsonl" \
        --token-budget "$tb" --max-batch 4096 --repeats 5 --json \
        >> "$OUT/embed-memdex-runs.json" 2>> "$OUT/embed.log"
    done
    "$PY" - "$OUT/embed-memdex-runs.json" > "$OUT/embed-memdex.json" <<'PY'
import json, sys
text, dec, runs, i = open(sys.argv[1]).read(), json.JSONDecoder(), [], 0
while True:  # the reports are pretty-printed JSON objects, one after another
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    runs.append(obj)
print(json.dumps(max(runs, key=lambda r: r["tokens_per_s"])))
PY
    "$PY" "$PACK/scripts/gpu-st-embed.py" --model "$MODEL" --device "$DEVICE" --dtype "$ST_DTYPE" \
      --bench "$WORK/texts.jsonl" --repeats 5 > "$OUT/embed-st.json" 2>> "$OUT/embed.log"
    "$PY" - "$OUT" <<'PY' | tee -a "$OUT/embed.log"
import json, sys, os
d = sys.argv[1]
m = json.load(open(os.path.join(d, "embed-memdex.json")))
s = json.load(open(os.path.join(d, "embed-st.json")))
r = m["tokens_per_s"] / s["tokens_per_s"]
print(f"tokens: memdex {m['tokens']} st {s['tokens']}")
print(f"memdex cuda f16 {m['tokens_per_s']:.0f} tok/s (token budget {m['token_budget']}), "
      f"st fp16 {s['tokens_per_s']:.0f} tok/s (batch {s['best']['batch_size']}): "
      f"ratio {r:.2f}x (goal >= 1.2x)")
json.dump({"ratio": r, "memdex": m, "st": s}, open(os.path.join(d, "embed.json"), "w"))
PY
    [[ -s "$OUT/embed.json" ]] && verdict embed "$(tail -1 "$OUT/embed.log")" || verdict embed "FAIL (see embed.log)"
    ;;
  scan)
    # kernels vs their ceilings and vs PyTorch, same shapes: 1,000 tenants × 5,000 rows × 384
    "$WORK/bin/memdex-gpu-bench" --tenants 1000 --items 5000 --dim 384 --k 10 --repeats 10 \
      > "$OUT/scan-memdex.jsonl" 2> "$OUT/scan.log"
    "$PY" "$PACK/scripts/gpu-bench-torch.py" --tenants 1000 --items 5000 --dim 384 --k 10 \
      --repeats 10 > "$OUT/scan-torch.jsonl" 2>> "$OUT/scan.log"
    "$PY" - "$OUT" <<'PY' | tee -a "$OUT/scan.log"
import json, sys, os
d = sys.argv[1]
m = [json.loads(l) for l in open(os.path.join(d, "scan-memdex.jsonl"))]
t = [json.loads(l) for l in open(os.path.join(d, "scan-torch.jsonl"))]
copy = next(x for x in m if x["bench"] == "d2d_copy")["gb_per_s"]
tcopy = next(x for x in t if x["bench"] == "torch_d2d_copy")["gb_per_s"]
dev = next((x for x in m if x["bench"] == "device"), {})
print("device:", json.dumps(dev))
print(f"d2d copy: memdex-bench {copy:.0f} GB/s, torch {tcopy:.0f} GB/s "
      f"(theoretical {dev.get('theoretical_gb_per_s')})")
out = {}
for x in m:
    if x["bench"] != "segmented_topk":
        continue
    y = next((y for y in t if y.get("case") == x["case"]), None)
    speed = y["ms"] / x["ms"] if y else None
    ng = next((z for z in t if z.get("case") == x["case"] + "_no_gather"), None)
    if ng:  # torch's best case: query i on tenant i, no gather copy
        print(f"{x['case']}: vs torch without the gather {ng['ms']:.2f} ms -> "
              f"{ng['ms'] / x['ms']:.2f}x")
    out[x["case"]] = {"memdex_ms": x["ms"], "torch_ms": y and y["ms"], "speedup": speed,
                      "torch_no_gather_ms": ng and ng["ms"],
                      "fraction_of_copy_bw": x["fraction_of_copy_bw"],
                      "queries_per_s": x["queries_per_s"]}
    print(f"{x['case']}: {x['ms']:.2f} ms, {x['scan_gb_per_s']:.0f} GB/s = "
          f"{100 * x['fraction_of_copy_bw']:.0f}% of copy (goal >= 70%), "
          f"{x['queries_per_s']:.0f} q/s; ceilings {x['ceiling_bytes_ms']:.2f} ms (bytes), "
          f"{x['ceiling_flops_ms']} ms (FP32); torch {y and round(y['ms'], 2)} ms -> "
          f"{speed and round(speed, 2)}x (goal >= 1.5x)")
for x in m:
    if x["bench"] in ("segmented_topk_lsh", "fragrel_topk", "lsh_project"):
        print(json.dumps(x))
json.dump(out, open(os.path.join(d, "scan.json"), "w"))
PY
    [[ -s "$OUT/scan.json" ]] && verdict scan "see scan.log" || verdict scan "FAIL (see scan.log)"
    ;;
  e2e)
    # end to end, the offline-build issue's commands with --device: synth the realistic S and
    # M profiles, index (model on $DEVICE, and S on the CPU beside it), then rank every
    # question on the built store; wall time of each. E2E_QUESTIONS=N slices both profiles.
    # M alone fills a 10-minute call: run `e2e` with E2E_SCALES=s, then E2E_SCALES=m.
    local scales=${E2E_SCALES:-s m}
    : > "$OUT/e2e.jsonl"
    for sc in $scales; do
      "$MEMDEX" synth --profile "longmemeval-$sc" ${E2E_QUESTIONS:+--questions "$E2E_QUESTIONS"} \
        --output "$WORK/$sc.json" 2>> "$OUT/e2e.log"
      for dev in "$DEVICE" ${E2E_CPU_SCALES:-s}; do
        [[ $dev == "$DEVICE" || $dev == "$sc" ]] || continue
        local d=$DEVICE; [[ $dev == "$DEVICE" ]] || d=cpu
        e2e_one "$sc" "$d"
      done
      rm -f "$WORK/$sc.json"
    done
    cat "$OUT/e2e.jsonl" >&2
    grep -q failed "$OUT/e2e.jsonl" && verdict e2e "FAIL (see e2e.log)" \
      || verdict e2e "ok ($(tr '\n' ' ' < "$OUT/e2e.jsonl" | head -c 300)...)"
    ;;
  rank)
    # The fused default ranking (memdex_rank_topk, one launch per batch) against the CPU
    # pipeline: LoCoMo dev's questions (eval --fused-check) and 4,096 template queries in
    # batches of 256 (bench rank). Pass: >= 99 % of top-10s identical or near ties only.
    # The per-batch times of both sides are the "fused >= 20x the CPU pipeline" ratio.
    {
      "$MEMDEX" eval --model "$MODEL" --device "$DEVICE" --input "$WORK/data/locomo-dev.json" \
        --format locomo --preset default --store "$WORK/rank-store" --fused-check --json \
        > "$OUT/rank-eval.json"
      "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/rank-store" \
        --queries 4096 --batch 256 --json > "$OUT/rank-bench.json"
    } 2> "$OUT/rank.log"
    if "$PY" - "$OUT/rank-eval.json" "$OUT/rank-bench.json" > "$OUT/rank.json" 2>> "$OUT/rank.log" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["fused"]
be = json.load(open(sys.argv[2]))
out = {"eval": ev, "bench": be}
json.dump(out, sys.stdout)
bad = [g for g in (ev, be["agreement"]) if g["different"] > 0.01 * max(g["queries"], 1)]
sys.exit(1 if bad else 0)
PY
    then verdict rank "ok (eval: $(python3 -c "import json;g=json.load(open('$OUT/rank.json'))['eval'];print(g['identical'],'/',g['queries'],'identical; per batch: cpu',round(g['cpu_ms_per_batch'],1),'ms one at a time,',round(g.get('cpu_parallel_ms_per_batch',0),1),'ms on',g.get('cpu_threads'),'threads; fused',round(g['fused_ms_per_batch'],2),'ms')"))"
    else verdict rank "FAIL (see rank.log, rank.json)"; fi
    ;;
  serve)
    # device scan: `memdex serve` with searches of each model batch scored together on the
    # device vs the CPU scores, same answers (docs/serving.md)
    "$MEMDEX" synth --profile longmemeval-s --questions 100 --output "$WORK/serve.json" 2>> "$OUT/serve.log"
    rm -rf "$WORK/store-serve"
    "$MEMDEX" index --model "$MODEL" --device "$DEVICE" --input "$WORK/serve.json" \
      --format longmemeval --store "$WORK/store-serve" >> "$OUT/serve.log" 2>&1
    if "$PY" "$PACK/scripts/gpu-serve-check.py" "$MEMDEX" "$WORK/store-serve" "$MODEL" "$DEVICE" \
      "$WORK/serve.json" "${SERVE_QUERIES:-400}" 16 > "$OUT/serve.json" 2>> "$OUT/serve.log"; then
      verdict serve "ok ($(head -c 300 "$OUT/serve.json"))"
    else verdict serve "FAIL (see serve.json, serve.log)"; fi
    rm -rf "$WORK/store-serve" "$WORK/serve.json"
    ;;
  load)
    # the serving target: 100 tenants x 5,000 rounds (scripts/load/make-history.py, built
    # offline with the model on $DEVICE), `memdex serve` on $DEVICE, wrk's search scenario at
    # 64 connections (wrk + libluajit from the build machine under $PACK/tools); the same
    # store served on the CPU beside it. Goal: >= 5,000 searches/s with p99 < 20 ms on $DEVICE.
    local wrk=$PACK/tools/wrk dur=${LOAD_SECONDS:-10}
    [[ -x "$wrk" ]] || { verdict load "SKIP (no $wrk in the pack)"; return; }
    export LD_LIBRARY_PATH=$PACK/tools:$LD_LIBRARY_PATH
    "$PY" "$PACK/scripts/load/make-history.py" "$WORK/full.jsonl" 100 5000 2>> "$OUT/load.log"
    rm -rf "$WORK/fullstore"
    local t0; t0=$(date +%s.%N)
    "$MEMDEX" index --model "$MODEL" --device "$DEVICE" --input "$WORK/full.jsonl" \
      --store "$WORK/fullstore" >> "$OUT/load.log" 2>&1 || { verdict load "FAIL (index, see load.log)"; return; }
    echo "index 500,000 rounds on $DEVICE: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >> "$OUT/load.log"
    # the fused ranking against the CPU pipeline at this scale (5,000 rows per tenant)
    "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/fullstore" \
      --queries "${LOAD_RANK_QUERIES:-2048}" --batch 256 --json > "$OUT/load-rank.json" 2>> "$OUT/load.log"
    : > "$OUT/load.txt"
    # device:fused-rank:http-threads per served configuration (LOAD_CONFIGS overrides)
    local configs=${LOAD_CONFIGS:-"$DEVICE:auto:8 $DEVICE:on:8 cpu:off:14"}
    for cfg in $configs; do
      local d=${cfg%%:*} rest=${cfg#*:}; local fused=${rest%%:*} th=${rest##*:}
      "$MEMDEX" serve --store "$WORK/fullstore" --model "$MODEL" --device "$d" --fused-rank "$fused" \
        --http-threads "$th" --addr 127.0.0.1:7811 --compact-every 0 >> "$OUT/load.log" 2>&1 &
      local pid=$!
      for _ in $(seq 300); do http_get /healthz > /dev/null 2>&1 && break; sleep 0.2; done
      (cd "$PACK" && timeout 30 "$wrk" -t4 -c64 -d5s --timeout 10s -s scripts/load/search.lua \
        http://127.0.0.1:7811 > /dev/null 2>&1)   # warm-up: caches, pages, device uploads
      { echo "== device $d, fused-rank $fused, http threads $th: wrk -t4 -c64 -d${dur}s search.lua"
        (cd "$PACK" && timeout $((dur + 30)) "$wrk" -t4 -c64 -d"${dur}s" --timeout 10s \
          -s scripts/load/search.lua --latency http://127.0.0.1:7811) \
          | grep -E 'Requests/sec|Non-2xx|Socket errors|statuses|latency_us|requests in|99%|50%'
        http_get /metrics | grep -E '^memdex_(device_scan|fused_rank)_|^memdex_embed_batch_size_(sum|count)|^memdex_model_seconds' ; } >> "$OUT/load.txt" 2>&1
      kill -TERM $pid; wait $pid 2>/dev/null
    done
    rm -rf "$WORK/fullstore" "$WORK/full.jsonl"
    verdict load "$(grep -E '^== |Requests/sec' "$OUT/load.txt" | tr '\n' ' ' | head -c 400)"
    ;;
  *) echo "unknown stage $s" >&2; return 2 ;;
  esac
}

for s in "${STAGES[@]}"; do run_stage "$s"; done
echo "reports in $OUT" >&2
cat "$SUMMARY" >&2

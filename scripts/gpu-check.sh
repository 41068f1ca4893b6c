#!/usr/bin/env bash
# Runs ON the GPU box, from the pack that scripts/build-cuda.sh wrote (dist/gpu, carried to the
# box): parity, kernel tests and benchmarks of memdex's CUDA build, reports under $OUT.
#
#   bash dist/gpu/scripts/gpu-check.sh STAGE...      stages: env parity fused embed-batch
#                                                    kernels sanitize embed scan ncu rank batch
#                                                    eval e2e serve load
#                                                    (all = every stage; default all)
# Each stage fits one 10-minute device call; run them in separate calls if needed (each call
# unpacks again into $WORK, a fresh temp dir unless set). Every stage writes $OUT/STAGE.log
# and STAGE.json where it has numbers; $OUT/summary.txt collects the verdicts, one line each,
# and $OUT/verdicts.jsonl the same as JSON ({"stage", "status", "detail"}). status: ok, FAIL (a
# check failed or a stage broke), MISS (measured, goal not met), info (a measurement, no goal).
# Exits 1 if any verdict of this run is FAIL, else 3 if any is MISS, else 0: a device run
# never passes by staying quiet.
# The box: driver 580 (libcuda.so.1), PyTorch 2.11 + sentence-transformers with CUDA 13
# libraries under site-packages/nvidia/cu13/lib, no Rust, no network.
set -uo pipefail
PACK=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:?set OUT to a directory for the reports}
mkdir -p "$OUT"
WORK=${WORK:-$(mktemp -d)}
PY=${PYTHON:-python3}
STAGES=("$@")
[[ ${#STAGES[@]} -eq 0 || "${STAGES[0]}" == all ]] && STAGES=(env parity fused embed-batch kernels sanitize embed scan ncu eval load e2e serve)
SUMMARY=$OUT/summary.txt
FAILED=0 MISSED=0
# verdict STAGE STATUS DETAIL...
verdict() {
  local st=$1 status=$2; shift 2
  echo "$st: $status $*" | tee -a "$SUMMARY"
  "${PY:-python3}" -c 'import json,sys; print(json.dumps(dict(zip(("stage","status","detail"),sys.argv[1:4]))))' \
    "$st" "$status" "$*" >> "$OUT/verdicts.jsonl"
  case $status in FAIL) FAILED=1 ;; MISS) MISSED=1 ;; esac
}

# --- unpack (once per $WORK: later invocations with the same WORK reuse it) -----------------
if [[ ! -f "$WORK/.unpacked" ]]; then
  mkdir -p "$WORK/bin" "$WORK/data"
  xz -dc "$PACK/bin/bin.tar.xz" | tar -x -C "$WORK/bin"
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
# the --rank-device that puts every batch on memdex's kernels: cuda on the GPU box, kernels
# (their single-threaded CPU reference, a correctness check) in a DEVICE=cpu smoke run
RANK_KERNELS=$([[ $DEVICE == cpu ]] && echo kernels || echo cuda)
# on the GPU box every device test must find the device: test_device!'s CUDA half fails
# instead of skipping
[[ $DEVICE == cuda ]] && export MEMDEX_REQUIRE_CUDA=1
TEXT_REPEAT=${TEXT_REPEAT:-10}
BENCH_LIMIT=${BENCH_LIMIT:-}
ST_DTYPE=${ST_DTYPE:-fp16}
GOLDEN=$WORK/data/minilm-reference.jsonl

# CUDA user-space libraries: the ones PyTorch ships (same sonames the build linked against).
. "$PACK/scripts/gpu-libs.sh"
# the model path's stages (fused, embed-batch) and the load stage's configurations; inv
. "$PACK/scripts/gpu-model-stages.sh"

# One e2e build: index $1 (s|m) with the model on $2, then rank every question on the store.
# On the CPU the index runs under E2E_CPU_TIMEOUT seconds (default: none): a capped build
# records the rows it committed, the rows the same build has on the device, and the
# extrapolated wall time (resumable: the committed segments stay).
e2e_one() {
  local sc=$1 d=$2 store="$WORK/store-$1-$2"
  rm -rf "$store"
  local t0 t1 t2 cap=()
  [[ $d == cpu && -n ${E2E_CPU_TIMEOUT:-} ]] && cap=(timeout -s INT "$E2E_CPU_TIMEOUT")
  t0=$(date +%s.%N)
  "${cap[@]}" "$MEMDEX" index --model "$MODEL" --device "$d" --input "$WORK/$sc.json" \
    --format longmemeval --granularity turn --store "$store" --json > "$WORK/index-$sc-$d.json" 2>> "$OUT/e2e.log"
  local rc=$?
  if ((rc == 124 || rc == 130)) && [[ $d == cpu ]]; then
    "$PY" - "$store" "$sc" "$E2E_CPU_TIMEOUT" "$(grep -h "\"scale\": \"$sc\"" "$OUT/e2e.jsonl" | head -1)" \
      "$MEMDEX" >> "$OUT/e2e.jsonl" <<'PY'
import json, subprocess, sys
store, sc, cap, dev_line, memdex = sys.argv[1:6]
info = json.loads(subprocess.run([memdex, "info", "--store", store, "--json"],
                                 capture_output=True, text=True).stdout or "{}")
rows = info.get("rows") or info.get("store_rows") or 0
dev = json.loads(dev_line) if dev_line else {}
total = dev.get("items_written")
print(json.dumps({"scale": sc, "device": "cpu", "capped_at_s": float(cap), "rows_committed": rows,
                  "rows_total": total, "extrapolated_index_s": float(cap) * total / rows
                  if rows and total else None}))
PY
    rm -rf "$store"; return
  fi
  if ((rc == 0)) \
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
         store_bytes=int(sys.argv[7]), eval_ranker=e["config"].get("ranker"),
         eval_rank_batches=e["config"].get("rank_batches"),
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

# With LOAD_TIMELINE=1 (it costs ~30 s more than the load stage's usual 265 s, so it has its own
# call: scripts/README.md), one short serving burst under nsys (the load stage's first CUDA
# configuration): the server is
# launched in an nsys session, warmed, and traced (CUDA API and kernels) while wrk runs 2 s;
# `gpu-report.py overlap` then reads each kernel's stream from nsys's cuda_gpu_trace and says
# how long the ranking kernels ran beside the encoder's on another stream (#47: the model
# thread embedding the next batch while a rank worker ranks this one). Best effort: a step
# that fails is logged in load.log and the load verdict does not depend on it.
serve_timeline() {
  local d=$1 rd=$2 th=$3 nsys_bin session=memdex-serve-$$
  nsys_bin=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
  [[ -n $nsys_bin ]] || { echo "serve timeline: no nsys" >> "$OUT/load.log"; return; }
  timeout 180 "$nsys_bin" launch --session-new="$session" --trace=cuda,osrt \
    "$MEMDEX" serve --store "$WORK/fullstore" --model "$MODEL" --device "$d" --rank-device "$rd" \
    --http-threads "$th" --addr 127.0.0.1:7811 --compact-every 0 >> "$OUT/load.log" 2>&1 &
  local npid=$!
  for _ in $(seq 300); do http_get /healthz > /dev/null 2>&1 && break; sleep 0.2; done
  (cd "$PACK" && timeout 20 "$PACK/tools/wrk" -t64 -c64 -d2s --timeout 10s -s scripts/load/search.lua \
    http://127.0.0.1:7811 > /dev/null 2>&1)
  { timeout 30 "$nsys_bin" start --session="$session" --output="$WORK/serve-nsys" --force-overwrite=true &&
    (cd "$PACK" && timeout 20 "$PACK/tools/wrk" -t64 -c64 -d2s --timeout 10s -s scripts/load/search.lua \
      http://127.0.0.1:7811 > "$OUT/serve-nsys-wrk.txt" 2>&1)
    timeout 90 "$nsys_bin" stop --session="$session"; } >> "$OUT/load.log" 2>&1 || echo "serve timeline: nsys start/stop failed" >> "$OUT/load.log"
  timeout 30 "$nsys_bin" shutdown --session="$session" --kill=sigterm >> "$OUT/load.log" 2>&1
  timeout 30 tail --pid="$npid" -f /dev/null; kill -9 "$npid" 2>/dev/null
  if [[ -s $WORK/serve-nsys.nsys-rep ]]; then
    timeout 120 "$nsys_bin" stats --report cuda_gpu_trace --format csv --force-export=true \
      --output "$OUT/serve-nsys" "$WORK/serve-nsys.nsys-rep" >> "$OUT/load.log" 2>&1
    "$PY" "$PACK/scripts/gpu-report.py" overlap "$OUT" >> "$OUT/load.log" 2>&1 || echo "serve timeline: no kernels read" >> "$OUT/load.log"
  else echo "serve timeline: no report written" >> "$OUT/load.log"; fi
}

run_stage() {
  local s=$1
  echo "== $s ($(date -u +%H:%M:%S))" >&2
  case $s in
  env)
    # the pack's provenance (commit, whether the tree was dirty, a hash of the sources it was
    # built from: build-cuda.sh) and the box: GPU, driver, CPU model, cores, clock governor
    {
      nvidia-smi || true
      echo "cuda libs: ${CU13:-NOT FOUND}"
      cat "$PACK/MANIFEST" "$PACK/COMMIT" "$PACK/DIRTY" "$PACK/SOURCES" 2>/dev/null
      lscpu || cat /proc/cpuinfo | head -30
      echo "nproc $(nproc); governor $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo unknown)"
      ldd "$MEMDEX"
      "$MEMDEX" --version
    } > "$OUT/env.log" 2>&1
    cp "$PACK/COMMIT" "$PACK/DIRTY" "$PACK/SOURCES" "$OUT/" 2>/dev/null
    if ldd "$MEMDEX" | grep -q "not found"; then verdict env FAIL "(unresolved libraries, see env.log)"
    else verdict env ok "$(head -c 60 "$PACK/COMMIT" 2>/dev/null) $(head -1 "$PACK/DIRTY" 2>/dev/null) sources $(head -c 16 "$PACK/SOURCES" 2>/dev/null); $(lscpu 2>/dev/null | grep -m1 'Model name' | sed 's/  */ /g'), $(nproc) cpus"; fi
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
    if ((ok)); then verdict parity ok "(memdex cuda f16 vs 4 references, min cosine >= 0.999)"
    else verdict parity FAIL "(see parity*.json)"; fi
    ;;
  fused) stage_fused ;;
  embed-batch) stage_embed_batch ;;
  kernels)
    # every check of memdex_kernels::checks on the CPU reference and on cuda:0 (JSON lines,
    # counted per device), then the crate's own test binary (test_device!) with
    # MEMDEX_REQUIRE_CUDA=1: fails when a check fails or no CUDA device answers
    # (a check also fails when the device reported a fault during it, e.g. gather_parts.cu
    # building other rows than the per-part copies on its first batch: Kernels::faults)
    "$WORK/bin/memdex-kernels-check" > "$OUT/kernels.jsonl" 2> "$OUT/kernels.log"
    # without the test binary there is no kernels-tests.log, and the verdict fails
    if [[ -x $WORK/bin/memdex-kernels-tests ]]; then
      MEMDEX_REQUIRE_CUDA=$([[ $DEVICE == cuda ]] && echo 1 || echo 0) \
        "$WORK/bin/memdex-kernels-tests" --test-threads 1 > "$OUT/kernels-tests.log" 2>&1
    else echo "no memdex-kernels-tests in the pack" >> "$OUT/kernels.log"; fi
    local line
    if line=$("$PY" "$PACK/scripts/gpu-report.py" kernels "$OUT"); then verdict kernels ok "$line"
    else verdict kernels FAIL "$line (see kernels.jsonl, kernels-tests.log)"; fi
    ;;
  sanitize)
    # compute-sanitizer, each of memcheck, racecheck and synccheck over every kernel group, on
    # cuda:0 only (--cuda: the CPU reference gains nothing under it). Targets: the kernel
    # checks (memdex-kernels-check, the groups by check-name filter: selection, scores,
    # tensor — the tensor-core scan —, fragrel, lsh, rank, parts — gather_parts assembling
    # resident parts —, text — query_inputs), at their full sizes (dims 384 and 1024, k up to
    # 128, tiles of 1 to 16, ranges past one block: the instantiations and shared-memory layouts
    # the benchmarks launch) except where a column says `small` (the sanitizer's input sizes:
    # every kernel variant, fewer rows); and `@bench`, memdex-gpu-bench at the scan benchmark's
    # shapes with fewer tenants (5,000 rows per tenant, dim 384, k 10, 1 and 10 queries per
    # tenant, both scans, LSH projection and FragRel; SANITIZE_BENCH_TENANTS, default 8).
    # Each run writes the sanitizer's report (sanitize-NAME.log, --log-file) and the program's
    # output (sanitize-NAME.jsonl); the verdict (gpu-report.py sanitize: PASS/FAIL per group
    # and tool in sanitize.json) needs, for every run of sanitize-plan.txt, the sanitizer's
    # summary with 0 errors AND every planned check passed on cuda:0 (for @bench: exit 0 and
    # every bench line written). The runs share the stage's time (STAGE_SECONDS from
    # gpu-first.sh, else SANITIZE_BUDGET, default 325 s, 10 s kept for the report): each gets
    # at most its cap and what is left; a run that does not fit is not started, and the stage
    # fails. The caps (s, 315 in all) are estimates: the checks take ~10 s on cuda:0 at full size
    # and a racecheck of rank_matches at full size took ~50 s on an H100, no run of these
    # groups at these sizes has been timed yet; SANITIZE_CAP_SCALE (percent, default 100)
    # scales them all.
    local cs; cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
    [[ -n $cs ]] || { verdict sanitize FAIL "(compute-sanitizer not found)"; return; }
    # STAGE_SECONDS counts from this script's start (gpu-first.sh's timeout does), so $SECONDS
    # as it is; SANITIZE_BUDGET from here
    local budget=${STAGE_SECONDS:-${SANITIZE_BUDGET:-325}} began=$SECONDS
    [[ -n ${STAGE_SECONDS:-} ]] && began=0
    local name tool cap size filters left t target
    rm -f "$OUT"/sanitize-*
    while read -r name tool cap size filters; do
      echo "$name $tool ${filters:-all} $size" >> "$OUT/sanitize-plan.txt"
      cap=$((cap * ${SANITIZE_CAP_SCALE:-100} / 100))
      left=$((budget - 10 - (SECONDS - began)))
      t=$((cap < left ? cap : left))
      if ((left < 5)); then
        echo "not started: the stage's ${budget} s were spent" > "$OUT/sanitize-$name.log"
        continue
      fi
      target=("$WORK/bin/memdex-kernels-check" --cuda)
      [[ $size == small ]] && target+=(--small)
      if [[ $filters == @bench ]]; then
        target=("$WORK/bin/memdex-gpu-bench" --tenants "${SANITIZE_BENCH_TENANTS:-8}" --items 5000
          --dim 384 --k 10 --repeats 1 --scan both)
        filters=
      fi
      echo "== $name: $tool, ${filters:-every check} ($size), timeout ${t}s" >&2
      # shellcheck disable=SC2086  # $filters: one word per check-name filter
      timeout -k 5 "$t" "$cs" --tool "$tool" --print-limit 10 --log-file "$OUT/sanitize-$name.log" \
        "${target[@]}" $filters \
        < /dev/null > "$OUT/sanitize-$name.jsonl" 2> "$OUT/sanitize-$name.stderr"
      echo $? > "$OUT/sanitize-$name.rc"
    done <<PLAN
memcheck memcheck ${SANITIZE_MEMCHECK_S:-50} full
memcheck-bench memcheck 20 full @bench
synccheck synccheck ${SANITIZE_SYNCCHECK_S:-35} full
synccheck-bench synccheck 15 full @bench
racecheck-selection racecheck 20 full selection
racecheck-scores racecheck 20 full scores
racecheck-tensor racecheck 20 full tensor_scan
racecheck-fragrel racecheck 15 full fragrel
racecheck-lsh racecheck 10 full lsh
racecheck-rank_matches racecheck ${SANITIZE_RACECHECK_S:-30} small rank_matches
racecheck-rank_invalid racecheck 5 small rank_invalid
racecheck-rank_parts racecheck ${SANITIZE_RACECHECK_S:-25} small rank_parts
racecheck-rank_text racecheck ${SANITIZE_RACECHECK_S:-25} small rank_text
racecheck-bench racecheck 25 full @bench
PLAN
    local line
    if line=$("$PY" "$PACK/scripts/gpu-report.py" sanitize "$OUT"); then verdict sanitize ok "$line"
    else verdict sanitize FAIL "$line (see sanitize-*.log, sanitize-*.jsonl)"; fi
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
    # memdex per CUDA encoder (EMBED_ENCODERS, default candle fused) at each token budget, the
    # best budget reported (like ST's batch sizes); each invocation the median of 5 passes
    local enc tb
    rm -f "$OUT"/embed-memdex-runs*.json
    for enc in ${EMBED_ENCODERS:-candle fused}; do
      for tb in ${TOKEN_BUDGETS:-16384 65536 262144}; do
        # shellcheck disable=SC2046 # enc_env (gpu-model-stages.sh): the encoder's variables
        inv env $(enc_env "$enc") "$MEMDEX" bench embed --model "$MODEL" --device "$DEVICE" \
          --input "$WORK/texts.jsonl" --token-budget "$tb" --max-batch 4096 --repeats 5 --json \
          >> "$OUT/embed-memdex-runs-$enc.json" 2>> "$OUT/embed.log"
      done
    done
    inv "$PY" "$PACK/scripts/gpu-st-embed.py" --model "$MODEL" --device "$DEVICE" --dtype "$ST_DTYPE" \
      --bench "$WORK/texts.jsonl" --repeats "${ST_REPEATS:-3}" \
      --batch-sizes "${ST_BATCHES:-64,128,256,512,1024,2048,4096}" > "$OUT/embed-st.json" 2>> "$OUT/embed.log"
    # embed.json: each encoder's best run against ST's best (goal: the fused encoder >= 3x)
    local line rc
    line=$("$PY" "$PACK/scripts/gpu-report.py" embed "$OUT" "$DEVICE"); rc=$?
    echo "$line" >> "$OUT/embed.log"
    case $rc in 0) verdict embed ok "$line" ;; 3) verdict embed MISS "$line" ;;
      *) verdict embed FAIL "${line:-no report} (see embed.log)" ;; esac
    ;;
  scan)
    # kernels vs their ceilings and vs PyTorch, same shapes: 1,000 tenants × 5,000 rows × 384
    # both scans (--scan both: the CUDA-core tiled scan and the tensor-core one, tensor_topk.cu);
    # goals for the tensor-core scan against torch's grouped bmm, memdex's host grouping
    # counted: >= 1.5x at 10 queries per tenant, >= 1.2x at 1 (a MISS otherwise)
    "$WORK/bin/memdex-gpu-bench" --tenants 1000 --items 5000 --dim 384 --k 10 \
      --repeats "${SCAN_REPEATS:-10}" --scan both > "$OUT/scan-memdex.jsonl" 2> "$OUT/scan.log"
    "$PY" "$PACK/scripts/gpu-bench-torch.py" --tenants 1000 --items 5000 --dim 384 --k 10 \
      --repeats "${SCAN_REPEATS:-10}" > "$OUT/scan-torch.jsonl" 2>> "$OUT/scan.log"
    local rc
    line=$("$PY" "$PACK/scripts/gpu-report.py" scan "$OUT"); rc=$?
    case $rc in 0) verdict scan ok "$line" ;; 3) verdict scan MISS "$line" ;;
      *) verdict scan FAIL "$line (see scan.log)" ;; esac
    ;;
  ncu)
    # Nsight Compute on the scan kernel: DRAM bytes read, L2 hit rate and duration of the timed
    # launch of each case (caches flushed before each profiled launch, clocks left alone), the
    # DRAM bandwidth over the copy bandwidth the scan stage measured (run scan first)
    local ncu; ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
    [[ -n $ncu ]] || { verdict ncu FAIL "(ncu not found)"; return; }
    [[ -s $OUT/scan.json ]] || { verdict ncu FAIL "(no scan.json: run the scan stage first)"; return; }
    # both scans (12 launches: 3 cases x 2 scans x warm-up + timed), with the instruction count,
    # the FMA and tensor pipes' activity and the shared-memory loads and bank conflicts beside
    # the time (NCU_COUNTERS: another list if this ncu lacks one of them)
    local counters=${NCU_COUNTERS:-smsp__inst_executed.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum}
    timeout "${NCU_TIMEOUT:-120}" "$ncu" --clock-control none --cache-control all \
      -k regex:'memdex_(segmented|tensor)_topk' --launch-count 12 --csv --page raw --print-units base \
      --metrics "dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum${counters:+,$counters}" \
      "$WORK/bin/memdex-gpu-bench" --tenants 1000 --items 5000 --dim 384 --k 10 --repeats 1 \
      --scan both > "$OUT/ncu-scan.csv" 2> "$OUT/ncu.log"
    if line=$("$PY" "$PACK/scripts/gpu-report.py" ncu "$OUT"); then verdict ncu info "$line"
    else verdict ncu FAIL "$line (see ncu-scan.csv, ncu.log)"; fi
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
    if grep -q failed "$OUT/e2e.jsonl"; then verdict e2e FAIL "(see e2e.log)"
    else verdict e2e info "$(tr '\n' ' ' < "$OUT/e2e.jsonl" | head -c 300)..."; fi
    ;;
  lsh)
    # TiM hashing at index time on the device against the CPU (#48 item 4): the same synthetic
    # profile (LSH_SCALE, default m; E2E_QUESTIONS slices it) indexed twice with the model on
    # $DEVICE, bucket ids from lsh_project on the device (--lsh-device cuda; LSH_DEVICE=auto for
    # a CPU smoke test) and from the CPU (--lsh-device cpu). `memdex info --lsh-ids` writes
    # every row's ids of each; the verdict compares them id by id: ok when identical, MISS when
    # they differ in under 0.5 % of (row, table) pairs (the kernel sums in another order, so a
    # projection within rounding of 0 may take the other bucket), FAIL beyond. Each build's
    # write stage (where the ids are computed and stored) is reported with its wall.
    local sc=${LSH_SCALE:-m} dev=${LSH_DEVICE:-cuda}
    "$MEMDEX" synth --profile "longmemeval-$sc" ${E2E_QUESTIONS:+--questions "$E2E_QUESTIONS"} \
      --output "$WORK/lsh-$sc.json" 2>> "$OUT/lsh.log"
    local where
    for where in "$dev" cpu; do
      rm -rf "$WORK/lsh-store"
      "$MEMDEX" index --model "$MODEL" --device "$DEVICE" --input "$WORK/lsh-$sc.json" \
        --format longmemeval --granularity turn --lsh-buckets 64 --lsh-tables 4 \
        --lsh-device "$where" --store "$WORK/lsh-store" --json > "$OUT/lsh-index-$where.json" 2>> "$OUT/lsh.log"
      "$MEMDEX" info --store "$WORK/lsh-store" --lsh-ids "$WORK/lsh-$where.ids" --json \
        > "$OUT/lsh-info-$where.json" 2>> "$OUT/lsh.log"
    done
    rm -rf "$WORK/lsh-store" "$WORK/lsh-$sc.json"
    local line rc
    line=$("$PY" "$PACK/scripts/gpu-report.py" lsh "$OUT" "$WORK" "$dev"); rc=$?
    rm -f "$WORK"/lsh-*.ids
    case $rc in 0) verdict lsh ok "$line" ;; 3) verdict lsh MISS "$line" ;; *) verdict lsh FAIL "${line:-no report} (see lsh.log)" ;; esac
    ;;
  rank)
    # memdex's kernels behind the ranking seam (memdex_rank_topk, one launch per batch) against
    # the CPU ranker: LoCoMo dev's questions (eval --rank-check) and 4,096 template queries in
    # batches of 256 (bench rank), every batch on the kernels' device (--placement device) and
    # again as serving's auto places them (--placement auto: the cost model sends each batch
    # to the device or the CPU ranker; its split is rank_batches). Pass: >= 99 % of top-10s
    # identical or near ties only, in each. The per-batch times of both sides are the
    # "kernels >= 20x the CPU ranker" ratio. rank-bench-no-expand.json: the same without query
    # expansion (BM25 and the time flags from the resident texts, query_inputs.cu).
    {
      "$MEMDEX" eval --model "$MODEL" --device "$DEVICE" --input "$WORK/data/locomo-dev.json" \
        --format locomo --preset default --store "$WORK/rank-store" --rank-check --json \
        > "$OUT/rank-eval.json"
      "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/rank-store" \
        --queries 4096 --batch 256 --json > "$OUT/rank-bench.json"
      "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/rank-store" \
        --queries 4096 --batch 256 --placement auto --json > "$OUT/rank-bench-auto.json"
      # without query expansion (on by default, its keyword side computed on the host) the
      # kernels compute BM25 and the time flags themselves: that path's figures
      "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/rank-store" \
        --queries 4096 --batch 256 --expand-terms 0 --json > "$OUT/rank-bench-no-expand.json"
    } 2> "$OUT/rank.log"
    # where one batch's time goes on the device (uploads, query_inputs, rank, downloads):
    # nsys's CUDA kernel and memcpy summaries of 4 batches (bench rank's own split — host
    # prepare, kernel call, host finish — is kernel_batches in rank-bench.json)
    nsys_bin=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
    if [[ -n $nsys_bin && $DEVICE == cuda ]]; then
      timeout 60 "$nsys_bin" profile -t cuda -o "$WORK/rank-nsys" --force-overwrite true --stats=true \
        "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/rank-store" \
        --queries 1024 --batch 256 --json > "$OUT/nsys-rank.txt" 2>&1 || echo "nsys: rc $?" >> "$OUT/rank.log"
    fi
    # the verdict reads all four reports: a bench that failed (no report) fails the stage
    if "$PY" - "$OUT/rank-eval.json" "$OUT/rank-bench.json" "$OUT/rank-bench-auto.json" \
      "$OUT/rank-bench-no-expand.json" > "$OUT/rank.json" 2>> "$OUT/rank.log" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["agreement"]
be = json.load(open(sys.argv[2]))
auto = json.load(open(sys.argv[3]))
no_expand = json.load(open(sys.argv[4]))
out = {"eval": ev, "bench": be, "bench_auto": auto, "bench_no_expand": no_expand}
json.dump(out, sys.stdout)
bad = [g for g in (ev, be["agreement"], auto["agreement"], no_expand["agreement"])
       if g["different"] > 0.01 * max(g["queries"], 1)]
sys.exit(1 if bad else 0)
PY
    then verdict rank ok "($("$PY" - "$OUT/rank.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
# "[kernels on cuda:0: 1.23 ms, batches {'cuda:0': 17}]"
ms = lambda g: f"[{g['ranker']}: {g['ranker_ms_per_batch']:.2f} ms, batches {g.get('rank_batches')}]"  # noqa: E731
g, b, a = r["eval"], r["bench"]["agreement"], r["bench_auto"]["agreement"]
print(f"eval: {g['identical']} / {g['queries']} identical; per batch: cpu "
      f"{g['cpu_ms_per_batch']:.1f} ms one at a time, {g.get('cpu_parallel_ms_per_batch', 0):.1f} ms "
      f"on {g.get('cpu_threads')} threads; ranker {ms(g)}. bench rank, LoCoMo tenants, batch "
      f"{b['batch']}: placement device {ms(b)} {r['bench']['speedup_vs_parallel']:.2f}x all "
      f"cores, {b['different']} different; placement auto {ms(a)} "
      f"{r['bench_auto']['speedup_vs_parallel']:.2f}x all cores, {a['different']} different")
PY
)"
    else verdict rank FAIL "(see rank.log, rank.json)"; fi
    ;;
  batch)
    # the ranking batch at the serving target's size (#59 item 3): 100 tenants x 5,000 rounds
    # (scripts/load/make-history.py, indexed with the model on $DEVICE), `bench rank` with 256
    # queries per batch, BATCH_RUNS invocations (default 3): the kernels against the CPU ranker
    # on all cores, goal >= 12x (median); each invocation's host split (kernel_batches: host
    # prepare, kernel call, host finish per batch). Then one invocation under nsys (CUDA trace):
    # per batch, between consecutive memdex_rank_topk launches after the first, the device's
    # copies (count, bytes' time, each direction) and memdex's kernels; and under ncu the
    # kernels' device time per batch (kernel call - kernels = uploads, launches, downloads and
    # the synchronisation). gpu-report.py batch writes batch.json with the split host prepare /
    # transfers / kernels / host finish.
    "$PY" "$PACK/scripts/load/make-history.py" "$WORK/batch.jsonl" 100 5000 2>> "$OUT/batch.log"
    rm -rf "$WORK/batchstore"
    "$MEMDEX" index --model "$MODEL" --device "$DEVICE" --input "$WORK/batch.jsonl" \
      --store "$WORK/batchstore" >> "$OUT/batch.log" 2>&1 || { verdict batch FAIL "(index, see batch.log)"; return; }
    local br
    for br in $(seq 1 "${BATCH_RUNS:-3}"); do
      "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/batchstore" \
        --queries "${BATCH_QUERIES:-2048}" --batch 256 --json > "$OUT/rank-batch-run$br.json" 2>> "$OUT/batch.log"
    done
    # once more with the batch's inputs uploaded one by one and two waits for its top k (the
    # path before the staging copy, MEMDEX_GPU_STAGING=0): what the one copy and one wait gained
    # (BATCH_UNSTAGED=0 skips it)
    if [[ ${BATCH_UNSTAGED:-1} != 0 ]]; then
      MEMDEX_GPU_STAGING=0 "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/batchstore" \
        --queries "${BATCH_QUERIES:-2048}" --batch 256 --json > "$OUT/rank-batch-unstaged.json" 2>> "$OUT/batch.log" || true
    fi
    local nsys_b; nsys_b=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
    if [[ -n $nsys_b && $DEVICE == cuda ]]; then
      timeout 90 "$nsys_b" profile -t cuda -o "$WORK/batch-nsys" --force-overwrite true \
        "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/batchstore" \
        --queries 1280 --batch 256 --json > "$OUT/batch-nsys-bench.json" 2>> "$OUT/batch.log"
      timeout 60 "$nsys_b" stats --report cuda_gpu_trace --format csv --force-export=true \
        --output "$OUT/batch-nsys" "$WORK/batch-nsys.nsys-rep" >> "$OUT/batch.log" 2>&1
    else echo "batch: no nsys (or DEVICE=cpu): no copy counts" >> "$OUT/batch.log"; fi
    # the kernels' device time per batch from ncu as well (the lent boxes' nsys may write no
    # report): the four kernels of two batches after the warm-up batch
    local ncu_b; ncu_b=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
    if [[ -n $ncu_b && $DEVICE == cuda ]]; then
      timeout 90 "$ncu_b" --clock-control none -k regex:'memdex_(gather_parts|query_inputs|rank_dense|rank_topk)' \
        --launch-skip 4 --launch-count 8 --csv --page raw --print-units base --metrics gpu__time_duration.sum \
        "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/batchstore" \
        --queries 768 --batch 256 --json > "$OUT/batch-ncu.csv" 2>> "$OUT/batch.log"
    fi
    rm -rf "$WORK/batchstore" "$WORK/batch.jsonl" "$WORK"/batch-nsys.*
    local bline brc
    bline=$("$PY" "$PACK/scripts/gpu-report.py" batch "$OUT"); brc=$?
    case $brc in 0) verdict batch ok "$bline" ;; 3) verdict batch MISS "$bline" ;;
      *) verdict batch FAIL "${bline:-no report} (see batch.log)" ;; esac
    ;;
  eval)
    # LoCoMo dev, default preset, the same binary on this box's CPU (all cores) and on the
    # device: both reports and per-question logs kept, every metric diffed (overall <= 0.002,
    # per type <= one question's worth), each question whose top-10 differs listed with its
    # score margin (scripts/eval-diff.py). The device once per CUDA encoder (EVAL_ENCODERS,
    # default candle; eval-$DEVICE.json is the first, eval-$DEVICE-ENC.json the others), each
    # diffed against the CPU (eval-diff.json, eval-diff-ENC.json): every one must pass.
    local d enc first="" tag ok=1 lines=()
    inv env MEMDEX_CUDA_ENCODER=candle "$MEMDEX" eval --model "$MODEL" --device cpu \
      --input "$WORK/data/locomo-dev.json" --format locomo --preset default --json \
      --log "$OUT/eval-cpu.log.jsonl" > "$OUT/eval-cpu.json" 2>> "$OUT/eval.log"
    for enc in ${EVAL_ENCODERS:-candle}; do
      # (in a DEVICE=cpu smoke run every device run is eval-cpu-ENC: eval-cpu is the baseline)
      tag=$DEVICE; [[ -n $first || $DEVICE == cpu ]] && tag=$DEVICE-$enc; first=${first:-$enc}
      # shellcheck disable=SC2046
      inv env $(enc_env "$enc") "$MEMDEX" eval --model "$MODEL" --device "$DEVICE" \
        --input "$WORK/data/locomo-dev.json" --format locomo --preset default --json \
        --log "$OUT/eval-$tag.log.jsonl" > "$OUT/eval-$tag.json" 2>> "$OUT/eval.log"
      local diff=eval-diff.json; [[ $tag != "$DEVICE" ]] && diff=eval-diff-$enc.json
      if line=$("$PY" "$PACK/scripts/eval-diff.py" "$OUT/eval-cpu.json" "$OUT/eval-$tag.json" \
        --log-a "$OUT/eval-cpu.log.jsonl" --log-b "$OUT/eval-$tag.log.jsonl" \
        --out "$OUT/$diff" 2>> "$OUT/eval.log"); then :; else ok=0; fi
      # eval-diff's last line: the verdict, identical / near ties / different over every
      # question, the largest metric differences (the questions it lists are in the diff)
      lines+=("$enc: $(echo "$line" | tail -1)")
    done
    if ((ok)); then verdict eval ok "${lines[*]}"
    else verdict eval FAIL "${lines[*]} (see eval-diff*.json)"; fi
    # kept: each question's top 100 (the logs hold whole rankings, ~30 MB each)
    for d in "$OUT"/eval-*.log.jsonl; do
      "$PY" -c 'import json, sys
for line in open(sys.argv[1]):
    q = json.loads(line); q["ranked"] = q["ranked"][:100]; print(json.dumps(q))' "$d" > "$d.top100" \
        && mv "$d.top100" "$d" && xz -T0 -f "$d"
    done
    ;;
  serve)
    # the rankers behind `memdex serve` against the CPU ranker, same answers (docs/serving.md):
    # --rank-device cpu with the device scan off and on, --rank-device cuda (kernels on a CPU
    # model) and auto; the searches ran where asked, from /metrics (scripts/gpu-serve-check.py)
    "$MEMDEX" synth --profile longmemeval-s --questions 100 --output "$WORK/serve.json" 2>> "$OUT/serve.log"
    rm -rf "$WORK/store-serve"
    "$MEMDEX" index --model "$MODEL" --device "$DEVICE" --input "$WORK/serve.json" \
      --format longmemeval --store "$WORK/store-serve" >> "$OUT/serve.log" 2>&1
    if "$PY" "$PACK/scripts/gpu-serve-check.py" "$MEMDEX" "$WORK/store-serve" "$MODEL" "$DEVICE" \
      "$WORK/serve.json" "${SERVE_QUERIES:-400}" 16 > "$OUT/serve.json" 2>> "$OUT/serve.log"; then
      verdict serve ok "($(head -c 300 "$OUT/serve.json"))"
    else verdict serve FAIL "(see serve.json, serve.log)"; fi
    rm -rf "$WORK/store-serve" "$WORK/serve.json"
    ;;
  load)
    # the serving target: 100 tenants x 5,000 rounds (scripts/load/make-history.py, built
    # offline with the model on $DEVICE; 4 rounds of each tenant are its planted facts),
    # `memdex serve` per configuration (LOAD_CONFIGS, device:rank-device:http-threads
    # [:model-workers[:encoder[:connections]]], rank-device cpu|cuda|auto|kernels, model
    # workers auto|N, encoder candle|fused, connections default LOAD_CONNECTIONS or 64; default
    # the kernels on $DEVICE and the CPU ranker on the CPU, from the same binary), each: a
    # warm-up of LOAD_WARMUP s (default 10), LOAD_RUNS closed-loop wrk runs of LOAD_SECONDS at
    # its connections (one per wrk thread) whose Lua checks every body (a 200 with k hits of
    # the tenant asked for; for a planted question, one search in 4, the planted round first),
    # then one open-loop run (`memdex bench load --rate --planted 4`) at 80 % of the median
    # closed-loop rate, latency from when each request was due; per run /metrics before and
    # after and the CPU sampled; then /metrics: a configuration ranking on the kernels fails
    # unless memdex_rank_queries_total counts its searches on their device (cuda:0, or
    # kernels:cpu). Before serving: the kernels against the CPU ranker on all cores (bench
    # rank) and one ncu profile of them.
    local wrk=$PACK/tools/wrk
    [[ -x "$wrk" ]] || { verdict load FAIL "(no $wrk in the pack)"; return; }
    export LD_LIBRARY_PATH=$PACK/tools:$LD_LIBRARY_PATH
    "$PY" "$PACK/scripts/load/make-history.py" "$WORK/full.jsonl" 100 5000 2>> "$OUT/load.log"
    rm -rf "$WORK/fullstore"
    local t0; t0=$(date +%s.%N)
    inv "$MEMDEX" index --model "$MODEL" --device "$DEVICE" --input "$WORK/full.jsonl" \
      --store "$WORK/fullstore" >> "$OUT/load.log" 2>&1 || { verdict load FAIL "(index, see load.log)"; return; }
    echo "index 500,000 rounds on $DEVICE: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >> "$OUT/load.log"
    # the kernels against the CPU ranker on all cores: LOAD_RANK_RUNS invocations (default 3),
    # rank-load.json the one with the median ratio, every run's ratio beside it
    local rr
    for rr in $(seq 1 "${LOAD_RANK_RUNS:-3}"); do
      inv "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/fullstore" \
        --queries "${LOAD_RANK_QUERIES:-2048}" --batch 256 --json > "$OUT/rank-load-run$rr.json" 2>> "$OUT/load.log"
    done
    "$PY" "$PACK/scripts/gpu-report.py" rank-median "$OUT" >> "$OUT/load.log" 2>&1
    local ncu; ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
    # LOAD_NCU=0: no ncu profile (a short call that only serves)
    if [[ -n $ncu && $DEVICE == cuda && ${LOAD_NCU:-1} == 1 ]]; then
      # the three kernels of a batch (query_inputs: BM25, the expansion's scan, the time
      # flags; rank_dense: the cosines, a tenant's rows read once per tile of its queries;
      # rank_topk: the rest), the warm-up batch skipped, two timed batches
      timeout 90 "$ncu" --clock-control none --cache-control all \
        -k regex:'memdex_(rank_topk|rank_dense|query_inputs)' \
        --launch-skip 3 --launch-count 6 --csv --page raw --print-units base \
        --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
        "$MEMDEX" bench rank --model "$MODEL" --device "$DEVICE" --store "$WORK/fullstore" \
        --queries 768 --batch 256 --json > "$OUT/ncu-rank.csv" 2>> "$OUT/ncu.log"
      # the ncu stage ran before this store existed: its report gains the rank kernel now
      [[ -s $OUT/scan.json ]] && "$PY" "$PACK/scripts/gpu-report.py" ncu "$OUT" > /dev/null
      "$PY" "$PACK/scripts/gpu-report.py" ncu-rank "$OUT" >> "$OUT/load.log" 2>&1
    fi
    # configurations (gpu-model-stages.sh load_config): device:rank-device:http-threads
    # [:model-workers[:encoder[:connections]]]. Per run: wrk's report, /metrics before and after
    # (the model's seconds and batches of that run), the CPU's clock, steal and load sampled
    # (sample-NAME-runR.txt): gpu-report.py load says what moved with the rate.
    local configs=${LOAD_CONFIGS:-"$DEVICE:$RANK_KERNELS:8 cpu:cpu:14"} misplaced=()
    for cfg in $configs; do
      local rd; rd=$(cut -d: -f2 <<< "$cfg")
      load_config "$cfg" "$wrk"
      local name=$LOAD_NAME
      # the kernels' configurations: their searches ranked on the kernels' device
      if [[ $rd == cuda || $rd == kernels ]] \
        && ! grep -qE '^memdex_rank_queries_total\{device="(cuda:[0-9]+|kernels:cpu)"\} [1-9]' "$OUT/metrics-$name.txt"; then
        misplaced+=("$name")
      fi
      if [[ ${LOAD_TIMELINE:-0} == 1 && ${cfg%%:*} == cuda && ! -e $OUT/overlap.json ]]; then
        serve_timeline cuda "$rd" "$(cut -d: -f3 <<< "$cfg")"
      fi
    done
    rm -rf "$WORK/fullstore" "$WORK/full.jsonl"
    local line
    if line=$("$PY" "$PACK/scripts/gpu-report.py" load "$OUT") && ((${#misplaced[@]} == 0)); then verdict load ok "$line"
    elif ((${#misplaced[@]})); then
      verdict load FAIL "$line; ${misplaced[*]}: no searches ranked on the kernels' device (see metrics-*.txt)"
    else verdict load FAIL "$line (see load-*.txt, open-*.json)"; fi
    ;;
  *) echo "unknown stage $s" >&2; return 2 ;;
  esac
}

for s in "${STAGES[@]}"; do run_stage "$s"; done
echo "reports in $OUT" >&2
cat "$SUMMARY" >&2
((FAILED)) && exit 1
((MISSED)) && exit 3
exit 0

# Sourced by gpu-check.sh (runs ON the GPU box, from the pack): the model path's stages and
# the load stage's per-configuration run. Uses gpu-check.sh's globals: PACK WORK OUT MEMDEX MODEL
# DEVICE GOLDEN PY, and its functions verdict and http_get.

# inv CMD...: runs CMD, listing it (time, command, exit status) in $OUT/invocations.log, so the
# results README names every invocation, not only the ones its figures quote.
inv() {
  local t0=$SECONDS rc
  "$@"
  rc=$?
  printf '%s rc=%s %ss %s\n' "$(date -u +%H:%M:%S)" "$rc" "$((SECONDS - t0))" "$*" >> "$OUT/invocations.log"
  return $rc
}

# enc_env ENC [DEVICE]: the environment that picks encoder ENC (candle, fused, or fused-eager:
# the fused encoder launched kernel by kernel, no CUDA graphs) on DEVICE (default $DEVICE). On
# CUDA MEMDEX_CUDA_ENCODER and MEMDEX_CUDA_GRAPHS; on the CPU (a DEVICE=cpu smoke run) the CPU
# backend of that name, so the smoke run exercises the fused plans (on their CPU reference)
# and candle instead of running the fast CPU encoder under every name.
enc_env() {
  local e=${1%-eager} graphs=1
  [[ $1 == *-eager ]] && graphs=0
  if [[ ${2:-$DEVICE} == cuda ]]; then echo "MEMDEX_CUDA_ENCODER=$e MEMDEX_CUDA_GRAPHS=$graphs"
  else echo "MEMDEX_CPU_BACKEND=$e"; fi
}

# The fused encoder (memdex-fused-bert) on the device: its executor against the plan's CPU
# reference on random models (graphs replayed, and launched one by one), memdex-embed's test
# against candle's BERT on the golden texts (min cosine >= 0.9999, fused-cuda asserted: no
# silent fallback), then `memdex embed --cuda-encoder fused` on the golden texts against
# sentence-transformers fp32 (>= 0.999) and against candle on this device (>= 0.9999).
stage_fused() {
  local ok=1 t log=$OUT/fused.log require=0
  [[ $DEVICE == cuda ]] && require=1
  : > "$log"
  for t in memdex-fused-bert-cuda-tests memdex-embed-fused-tests; do
    if [[ -x $WORK/bin/$t ]]; then
      inv env MEMDEX_REQUIRE_CUDA=$require MEMDEX_REQUIRE_MODEL=1 MEMDEX_TEST_MODEL="$MODEL" \
        MEMDEX_TEST_GOLDEN="$GOLDEN" "$WORK/bin/$t" --test-threads 1 --nocapture \
        fused_cuda_matches_candle device_passes_match > "$OUT/fused-$t.log" 2>&1 || ok=0
      grep -q "test result: ok. [1-9]" "$OUT/fused-$t.log" || { ok=0; echo "$t: no passing test" >> "$log"; }
    else
      echo "no $t in the pack" >> "$log"
      ok=0
    fi
  done
  # shellcheck disable=SC2046 # enc_env's assignments are words
  inv env $(enc_env fused) "$MEMDEX" embed --model "$MODEL" --device "$DEVICE" --input "$GOLDEN" \
    --output "$WORK/fused.jsonl" >> "$log" 2>&1 || ok=0
  # shellcheck disable=SC2046
  inv env $(enc_env candle) "$MEMDEX" embed --model "$MODEL" --device "$DEVICE" --input "$GOLDEN" \
    --output "$WORK/candle.jsonl" >> "$log" 2>&1 || ok=0
  grep -q "running candle's BERT instead" "$log" && { ok=0; echo "the fused encoder fell back to candle" >> "$log"; }
  "$PY" "$PACK/scripts/parity.py" "$GOLDEN" "$WORK/fused.jsonl" --min 0.999 --json \
    > "$OUT/fused-parity-st.json" 2>> "$log" || ok=0
  "$PY" "$PACK/scripts/parity.py" "$WORK/candle.jsonl" "$WORK/fused.jsonl" --min 0.9999 --json \
    > "$OUT/fused-parity-candle.json" 2>> "$log" || ok=0
  local detail
  detail="$(tr '\n' ' ' < "$OUT/fused-parity-candle.json" | head -c 160); tests: $(grep -h "test result" "$OUT"/fused-*-tests.log 2>/dev/null | tr '\n' ' ')"
  if ((ok)); then verdict fused ok "($detail)"; else verdict fused FAIL "($detail; see fused*.log)"; fi
}

# Per-batch embed time for a batch of 32 queries (item 4: <= 0.5 ms with the fused encoder;
# 3.22 ms with candle on the H200 while serving): LoCoMo dev's questions (the first
# EMBED_BATCH_QUERIES, default 1,024; a CPU smoke run of the fused reference wants ~32),
# `memdex bench embed --max-batch 32` per encoder (EMBED_BATCH_ENCODERS, default candle fused
# fused-eager; -eager: MEMDEX_CUDA_GRAPHS=0), EMBED_BATCH_RUNS invocations each (default 3),
# each the median of 5 passes. gpu-report.py embed-batch: per batch = (pass - tokenize) /
# batches; the median of the invocations; ok when fused <= 0.5 ms, MISS above.
stage_embed_batch() {
  "$PY" - "$WORK/data/locomo-dev.json" "$WORK/queries.jsonl" "${EMBED_BATCH_QUERIES:-1024}" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
qs = [q["question"] for c in (data if isinstance(data, list) else [data]) for q in c.get("qa", [])
      if q.get("question")]
with open(sys.argv[2], "w") as f:
    for q in qs[:int(sys.argv[3])]:
        f.write(json.dumps({"text": q}) + "\n")
PY
  local enc r
  rm -f "$OUT"/embed-batch-*.json
  for enc in ${EMBED_BATCH_ENCODERS:-candle fused fused-eager}; do
    for r in $(seq 1 "${EMBED_BATCH_RUNS:-3}"); do
      # shellcheck disable=SC2046
      inv env $(enc_env "$enc") "$MEMDEX" bench embed --model "$MODEL" --device "$DEVICE" --input "$WORK/queries.jsonl" \
        --max-batch 32 --token-budget 65536 --repeats 5 --json \
        > "$OUT/embed-batch-$enc-run$r.json" 2>> "$OUT/embed-batch.log"
    done
  done
  local line rc
  line=$("$PY" "$PACK/scripts/gpu-report.py" embed-batch "$OUT" "$DEVICE"); rc=$?
  case $rc in 0) verdict embed-batch ok "$line" ;; 3) verdict embed-batch MISS "$line" ;;
    *) verdict embed-batch FAIL "${line:-no report} (see embed-batch.log)" ;; esac
}

# cpu_sample FILE: samples the CPU while a load run lasts (stop it with kill): /proc/stat's cpu
# line at start and every 2 s (user nice system idle iowait irq softirq steal), the mean core
# clock from /proc/cpuinfo, the load average. gpu-report.py reads it per run.
cpu_sample() {
  while :; do
    printf '%s stat %s mhz %s load %s\n' "$(date +%s)" "$(head -1 /proc/stat | cut -d' ' -f2-)" \
      "$(awk -F: '/^cpu MHz/ {s += $2; n++} END {if (n) printf "%.0f", s / n; else print "na"}' /proc/cpuinfo)" \
      "$(cut -d' ' -f1 /proc/loadavg)"
    sleep 2
  done > "$1"
}

# metrics_snapshot FILE: the serving counters the report diffs per run (model seconds and
# batches, rank seconds, searches per device).
metrics_snapshot() {
  http_get /metrics 2>/dev/null | grep -E '^memdex_stage_seconds_total|^memdex_embed_batch_size_(sum|count)|^memdex_rank_(queries|batches)_total|^memdex_model_workers' > "$1"
}

# load_config CFG WRK: serves one configuration of the load stage and runs its closed- and
# open-loop runs. CFG = device:rank-device:http-threads[:model-workers[:encoder[:connections]]]
# (model workers auto or N, default serve's own; encoder candle or fused, default
# MEMDEX_CUDA_ENCODER's; connections default LOAD_CONNECTIONS, else 64). Prints the name.
load_config() {
  local cfg=$1 wrk=$2 d rd th w enc c
  IFS=: read -r d rd th w enc c <<< "$cfg"
  c=${c:-${LOAD_CONNECTIONS:-64}}
  local name="$d-$rd-$th${w:+-w$w}${enc:+-$enc}"
  [[ $c != 64 ]] && name+="-c$c"
  local dur=${LOAD_SECONDS:-30} runs=${LOAD_RUNS:-3}
  # the calibration of --model-workers auto is logged at info (memdex_runtime)
  w=${w:-${MODEL_WORKERS:-}}
  local serve=(env MEMDEX_LOG="${MEMDEX_LOG:-warn,memdex_runtime=info}" ${enc:+$(enc_env "$enc" "$d")}
    "$MEMDEX" serve --store "$WORK/fullstore" --model "$MODEL" --device "$d" --rank-device "$rd"
    --http-threads "$th" --addr 127.0.0.1:7811 --compact-every 0 ${w:+--model-workers "$w"})
  "${serve[@]}" > "$OUT/serve-$name.log" 2>&1 &
  local pid=$!
  echo "$(date -u +%H:%M:%S) started (pid $pid, configuration $cfg) ${serve[*]}" >> "$OUT/invocations.log"
  for _ in $(seq 300); do http_get /healthz > /dev/null 2>&1 && break; sleep 0.2; done
  # warm-up (caches, pages, device uploads, graphs; on the CPU the clocks settle): LOAD_WARMUP s
  (cd "$PACK" && timeout $((${LOAD_WARMUP:-10} + 20)) "$wrk" -t"$c" -c"$c" -d"${LOAD_WARMUP:-10}s" \
    --timeout 10s -s scripts/load/search.lua http://127.0.0.1:7811 > /dev/null 2>&1)
  local r sampler
  for r in $(seq 1 "$runs"); do
    metrics_snapshot "$OUT/metrics-$name-run$r-before.txt"
    cpu_sample "$OUT/sample-$name-run$r.txt" &
    sampler=$!
    { echo "== device $d, rank-device $rd, http threads $th, workers ${w:-default}, encoder ${enc:-default}, run $r: wrk -t$c -c$c -d${dur}s search.lua"
      (cd "$PACK" && inv timeout $((dur + 30)) "$wrk" -t"$c" -c"$c" -d"${dur}s" --timeout 10s \
        -s scripts/load/search.lua --latency http://127.0.0.1:7811)
    } > "$OUT/load-$name-run$r.txt" 2>&1
    kill "$sampler" 2> /dev/null; wait "$sampler" 2> /dev/null
    metrics_snapshot "$OUT/metrics-$name-run$r-after.txt"
  done
  local rate; rate=$("$PY" "$PACK/scripts/gpu-report.py" open-rate "$OUT" "$name" 2>/dev/null)
  if [[ -n $rate && $rate -gt 0 ]]; then
    inv "$MEMDEX" bench load --addr 127.0.0.1:7811 --connections "$c" --seconds "${OPEN_SECONDS:-20}" \
      --rate "$rate" --k 10 --planted 4 --json > "$OUT/open-$name.json" 2>> "$OUT/load.log"
  fi
  http_get /metrics | grep -E '^memdex_rank_(stage_|batches_total|queries_total)|^memdex_ranker_info|^memdex_embed_batch_size_(sum|count)|^memdex_stage_seconds|^memdex_search_stage_seconds|^memdex_model_workers' \
    > "$OUT/metrics-$name.txt" 2>&1
  kill -TERM "$pid"; wait "$pid" 2> /dev/null
  cat "$OUT/serve-$name.log" >> "$OUT/load.log"
  LOAD_NAME=$name
}

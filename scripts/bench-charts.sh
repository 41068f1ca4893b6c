#!/usr/bin/env bash
# Runs the benchmarks the charts draw and leaves their --json outputs in one folder:
#   embed-memdex-fast.json, embed-memdex-candle.json  memdex bench embed (CPU encoders)
#   embed-st.json              sentence-transformers on the same texts (scripts/bench-st.sh;
#                              skipped with SKIP_ST=1: it installs PyTorch)
#   index-N.json               memdex index --json over N generated sessions, with the
#                              wall time and peak RSS of the process (GNU time) added
#   search.json                memdex bench search --json over the largest of those stores
#   machine.json               CPU, cores, memory, device, date
# then draws docs/charts/ with scripts/charts.py. A GPU run: DEVICE=cuda MEMDEX=<cuda build>
# OUT=bench/results/gpu-... (charts.py then fills the GPU slots from --gpu DIR).
#
# usage: OUT=bench/results/cpu-YYYY-MM-DD scripts/bench-charts.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-bench/results/cpu-$(date +%F)}"
device="${DEVICE:-cpu}"
model="${MODEL:-models/all-MiniLM-L6-v2}"
memdex="${MEMDEX:-target/release/memdex}"
sizes="${SIZES:-250 500 1000 2000}"
threads="${THREADS:-2}"
mkdir -p "$out"
scripts/fetch-model.sh "$model" >/dev/null
# the candle backend rows need the `candle` feature (a no-op when already built so)
[ -n "${MEMDEX:-}" ] || cargo build --release -p memdex-cli --features candle
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 - "$out/machine.json" "$device" <<'PY'
import json, os, platform, sys, datetime
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
mem = next(int(l.split()[1]) // 1024 for l in open("/proc/meminfo") if l.startswith("MemTotal"))
json.dump({"cpu": cpu, "cores": os.cpu_count(), "memory_mib": mem, "device": sys.argv[2],
           "load_1min": os.getloadavg()[0], "date": datetime.date.today().isoformat()},
          open(sys.argv[1], "w"), indent=1)
PY

texts="$work/texts.jsonl"
if [ -f ../shared/data/locomo/locomo-dev.json ]; then
  python3 scripts/make-bench-texts.py --locomo ../shared/data/locomo/locomo-dev.json --limit "${TEXTS:-2000}" -o "$texts"
else
  python3 scripts/make-bench-texts.py --jsonl examples/chat-history.jsonl -o "$texts"
fi
echo "== embed: memdex fast, candle ($device)" >&2
RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device "$device" \
  --input "$texts" --repeats 3 --json > "$out/embed-memdex-fast.json"
RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device "$device" \
  --cpu-backend candle --input "$texts" --repeats 3 --json > "$out/embed-memdex-candle.json"
if [ "${SKIP_ST:-0}" != 1 ]; then
  echo "== embed: sentence-transformers" >&2
  scripts/bench-st.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
    --max-length 256 --repeats 3 --json > "$out/embed-st.json"
fi

for n in $sizes; do
  echo "== index: $n sessions" >&2
  python3 scripts/gen-history.py --sessions "$n" -o "$work/h-$n.jsonl"
  /usr/bin/time -f '%e %M' -o "$work/time-$n" \
    "$memdex" index --model "$model" --device "$device" --input "$work/h-$n.jsonl" \
    --store "$work/store-$n" --json > "$work/index-$n.json"
  python3 - "$work/index-$n.json" "$work/time-$n" "$n" > "$out/index-$n.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
wall, rss_kib = open(sys.argv[2]).read().split()[-2:]
r.update({"input_sessions": int(sys.argv[3]), "wall_seconds": float(wall),
          "peak_rss_mib": int(rss_kib) / 1024})
print(json.dumps(r, indent=1))
PY
done
largest="${sizes##* }"
echo "== search latency over $largest sessions" >&2
RAYON_NUM_THREADS="$threads" "$memdex" bench search --model "$model" --device "$device" \
  --store "$work/store-$largest" --queries "${QUERIES:-300}" --json > "$out/search.json"

echo "== charts" >&2
scripts/charts.sh --cpu "$out"
echo "results in $out" >&2

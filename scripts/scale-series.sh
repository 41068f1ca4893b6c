#!/usr/bin/env bash
# Offline builds on realistic LongMemEval-shaped data at growing sizes: for each question
# count N, `memdex synth --profile P --questions N`, then `memdex index` (turn items, the
# granularity `memdex eval` ranks) and `memdex eval` ranking every question on the built store.
# Each size leaves $OUT/index-N.json: index's --json report plus wall and CPU seconds and peak
# RSS of each process (GNU time), the store's bytes and the eval's latency percentiles.
# scripts/scale-chart.py draws build time and memory against rows from them.
#
# usage: OUT=bench/results/scale-DATE [PROFILE=longmemeval-s] [SIZES="5 10 25 50"] \
#        [MODEL=models/all-MiniLM-L6-v2] [DEVICE=cpu] [MEMDEX=target/release/memdex] \
#        scripts/scale-series.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:?set OUT to a results folder}"
profile="${PROFILE:-longmemeval-s}"
sizes="${SIZES:-5 10 25 50}"
model="${MODEL:-$root/models/all-MiniLM-L6-v2}"
device="${DEVICE:-cpu}"
memdex="${MEMDEX:-$root/target/release/memdex}"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for n in $sizes; do
  echo "== $profile, $n questions" >&2
  "$memdex" synth --profile "$profile" --questions "$n" --output "$work/in.json" 2>> "$out/log"
  rm -rf "$work/store"
  /usr/bin/time -f '%e %U %S %M' -o "$work/time-index" \
    "$memdex" index --model "$model" --device "$device" --format longmemeval --granularity turn \
    --input "$work/in.json" --store "$work/store" --json > "$work/index.json" 2>> "$out/log"
  /usr/bin/time -f '%e %U %S %M' -o "$work/time-eval" \
    "$memdex" eval --model "$model" --device "$device" --format longmemeval \
    --preset default --input "$work/in.json" --store "$work/store" --json \
    > "$work/eval.json" 2>> "$out/log"
  python3 - "$work" "$n" "$profile" "$(du -sb "$work/store" | cut -f1)" "$(uptime)" \
    > "$out/index-$n.json" <<'PY'
import json, os, sys
work, n, profile, store_bytes, load = sys.argv[1:6]
r = json.load(open(os.path.join(work, "index.json")))
def timed(name):
    wall, user, sys_, rss = open(os.path.join(work, f"time-{name}")).read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss) / 1024
wall, cpu, rss = timed("index")
ewall, ecpu, erss = timed("eval")
ev = json.load(open(os.path.join(work, "eval.json")))
r.update(profile=profile, questions=int(n), wall_seconds=wall, cpu_seconds=cpu,
         peak_rss_mib=rss, store_bytes=int(store_bytes), eval_wall_seconds=ewall,
         eval_cpu_seconds=ecpu, eval_peak_rss_mib=erss, eval_latency_ms=ev.get("latency_ms"),
         load=load.strip())
print(json.dumps(r, indent=1))
PY
  rm -rf "$work/store" "$work/in.json"
done
echo "results in $out" >&2

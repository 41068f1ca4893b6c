#!/usr/bin/env bash
# Side-by-side CPU embedding throughput: memdex vs sentence-transformers and ONNX Runtime, same
# texts, same model, same threads, one run. Prints the reports and both ratios (memdex tokens/s
# ÷ sentence-transformers, ÷ ONNX Runtime).
#
# usage: scripts/bench-embed.sh [TEXTS.jsonl]
#   TEXTS.jsonl: {"text": ...} per line. Default: built from ../shared/data/locomo/locomo-dev.json
#   when present (first 2,000 chat turns), else from examples/chat-history.jsonl.
# env: THREADS (2), REPEATS (3), MODEL (models/all-MiniLM-L6-v2), MEMDEX (target/release/memdex),
#      ISA (auto | avx512 | avx2 | portable): forces both sides onto that instruction set —
#      memdex through MEMDEX_CPU_ISA, PyTorch through ATEN_CPU_CAPABILITY,
#      MKL_ENABLE_INSTRUCTIONS and ONEDNN_MAX_CPU_ISA. (candle's reference encoder keeps the
#      gemm crate's own dispatch; ONNX Runtime's MLAS has no switch and always dispatches to
#      the CPU's best.) CANDLE=0 skips the candle reference encoder. ORT=0 skips ONNX Runtime
#      (scripts/bench-ort.sh: the model exported to ONNX once, ONNX Runtime's own graph
#      optimisations, fp32, the same tokenizer, batches and pooling as sentence-transformers).
#      ROUNDS (1): after the first round (every engine as above), ROUNDS − 1 more rounds of
#      memdex fast-cpu, sentence-transformers, ONNX Runtime, alternating, so that drift in the
#      machine's speed (other load, clocks) hits every side alike; prints each round's ratios
#      and their medians, the numbers to quote.
#      QUIET (0): on a shared machine, before each engine's run wait until the CPUs were at
#      least 90 % idle over 2 s (at most QUIET seconds; the wait is logged), so that another
#      job's burst lands between runs rather than inside one engine's time.
# GFLOP/s: the encoder's useful arithmetic (no padding, `memdex bench embed`'s count) per
# second of each engine, to hold against the CPU's peak.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
threads="${THREADS:-2}"
repeats="${REPEATS:-3}"
model="${MODEL:-models/all-MiniLM-L6-v2}"
memdex="${MEMDEX:-target/release/memdex}"
out="${OUT:-$(mktemp -d)}"
isa="${ISA:-auto}"
case "$isa" in
  auto) ;;
  avx512) export MEMDEX_CPU_ISA=avx512 ATEN_CPU_CAPABILITY=avx512 MKL_ENABLE_INSTRUCTIONS=AVX512 ONEDNN_MAX_CPU_ISA=AVX512_CORE ;;
  avx2) export MEMDEX_CPU_ISA=avx2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ;;
  portable) export MEMDEX_CPU_ISA=portable ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41 ;;
  *) echo "ISA=$isa: use auto, avx512, avx2 or portable" >&2; exit 2 ;;
esac
mkdir -p "$out"
uptime > "$out/load-before.txt"

texts="${1:-}"
if [ -z "$texts" ]; then
  texts="$out/texts.jsonl"
  if [ -f ../shared/data/locomo/locomo-dev.json ]; then
    python3 scripts/make-bench-texts.py --locomo ../shared/data/locomo/locomo-dev.json --limit 2000 -o "$texts"
  else
    python3 scripts/make-bench-texts.py --jsonl examples/chat-history.jsonl -o "$texts"
  fi
fi
scripts/fetch-model.sh "$model" >/dev/null
# the candle backend rows need the `candle` feature (a no-op when already built so)
[ -n "${MEMDEX:-}" ] || cargo build --release -p memdex-cli --features candle

quiet() { # waits (≤ QUIET s) for ≥ 90 % idle CPUs over 2 s
  local limit="${QUIET:-0}" waited=0
  [ "$limit" -gt 0 ] || return 0
  while [ "$waited" -lt "$limit" ]; do
    local busy
    busy=$(python3 -c '
import time
def t():
    v = list(map(int, open("/proc/stat").readline().split()[1:]))
    return sum(v), v[3] + v[4]
a = t(); time.sleep(2); b = t()
print(int(100 * (1 - (b[1] - a[1]) / max(1, b[0] - a[0]))))')
    [ "$busy" -le 10 ] && break
    waited=$((waited + 2))
  done
  [ "$waited" -eq 0 ] || echo "   (waited ${waited}s for quiet CPUs)" >&2
  echo "$waited" >> "$out/quiet-waits.txt"
}
rm -f "$out/quiet-waits.txt"
quiet
echo "== memdex (fast CPU encoder)" >&2
RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --input "$texts" \
  --repeats "$repeats" --json > "$out/memdex.json"
if [ "${CANDLE:-1}" != 0 ]; then
  echo "== memdex (candle reference encoder)" >&2
  RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --cpu-backend candle \
    --input "$texts" --repeats "$repeats" --json > "$out/memdex-candle.json"
else
  rm -f "$out/memdex-candle.json"
fi
references() { # $1: the reports' suffix
  quiet
  echo "== sentence-transformers" >&2
  scripts/bench-st.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
    --max-length 256 --repeats "$repeats" --json > "$out/st$1.json"
  if [ "${ORT:-1}" != 0 ]; then
    quiet
    echo "== ONNX Runtime" >&2
    scripts/bench-ort.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
      --max-length 256 --repeats "$repeats" --json > "$out/ort$1.json"
  fi
}
rm -f "$out"/ort*.json "$out"/memdex-r*.json "$out"/st-r*.json
references ""

rounds="${ROUNDS:-1}"
for r in $(seq 2 "$rounds"); do
  echo "== round $r/$rounds: memdex, sentence-transformers, ONNX Runtime" >&2
  quiet
  RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --input "$texts" \
    --repeats "$repeats" --json > "$out/memdex-r$r.json"
  references "-r$r"
done

uptime > "$out/load-after.txt"

python3 - "$out" "$isa" <<'PY'
import json, sys, os
d, isa = sys.argv[1], sys.argv[2]
rd = lambda f: json.load(open(os.path.join(d, f))) if os.path.exists(os.path.join(d, f)) else None
m, s, o, c = rd("memdex.json"), rd("st.json"), rd("ort.json"), rd("memdex-candle.json")
for name, r in (("sentence-transformers", s), ("ONNX Runtime", o)):
    assert r is None or m["tokens"] == r["tokens"], f"token counts differ: memdex {m['tokens']} vs {name} {r['tokens']}"
load = lambda f: open(os.path.join(d, f)).read().split("load average:")[-1].strip()
print(f"texts {m['texts']}, tokens {m['tokens']}, threads {m['threads']}, ISA={isa}")
print(f"load average before: {load('load-before.txt')}, after: {load('load-after.txt')}")
print(f"ISA used: memdex fast-cpu {m.get('isa', '?')}; sentence-transformers: torch {s.get('isa', '?')}, "
      f"MKL_ENABLE_INSTRUCTIONS {s.get('mkl_enable_instructions', '?')}, ONEDNN_MAX_CPU_ISA {s.get('onednn_max_cpu_isa', '?')}"
      + (f"; ONNX Runtime {o['onnxruntime']}: {o['isa']}" if o else ""))
# the same useful arithmetic (no padding) for every engine: memdex counts it from the lengths
flops = m["effective_gflops"] * m["seconds"] if "effective_gflops" in m else None
for name, r in (("memdex fast-cpu", m), ("memdex candle", c), ("sentence-transformers", s), ("ONNX Runtime", o)):
    if r is None:
        continue
    runs = ", ".join(f"{t:.2f}" for t in r.get("all_seconds", []))
    gf = f" {flops / r['seconds']:6.1f} GFLOP/s" if flops else ""
    print(f"{name:24s} {r['texts_per_s']:8.1f} texts/s {r['tokens_per_s']:9.0f} tokens/s{gf}  (median {r['seconds']:.2f}s of {runs})")
tps = lambda r: r["tokens_per_s"]
print(f"ratio memdex fast-cpu / sentence-transformers: {tps(m) / tps(s):.2f}x")
if o is not None:
    print(f"ratio memdex fast-cpu / ONNX Runtime:          {tps(m) / tps(o):.2f}x")
if c is not None:
    print(f"ratio memdex candle   / sentence-transformers: {tps(c) / tps(s):.2f}x")
rounds = [(m, s, o)]
r = 2
while rd(f"memdex-r{r}.json"):
    rounds.append((rd(f"memdex-r{r}.json"), rd(f"st-r{r}.json"), rd(f"ort-r{r}.json")))
    mr, sr, orr = rounds[-1]
    line = f"round {r}: memdex {tps(mr):.0f} tokens/s, sentence-transformers {tps(sr):.0f} ({tps(mr) / tps(sr):.2f}x)"
    if orr:
        line += f", ONNX Runtime {tps(orr):.0f} ({tps(mr) / tps(orr):.2f}x)"
    print(line)
    r += 1
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
if len(rounds) > 1:
    for name, i in (("sentence-transformers", 1), ("ONNX Runtime", 2)):
        ratios = [tps(x[0]) / tps(x[i]) for x in rounds if x[i]]
        if ratios:
            print(f"ratio to {name} over {len(ratios)} alternating rounds: median {median(ratios):.2f}x "
                  f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x); memdex median {median([tps(x[0]) for x in rounds]):.0f}, "
                  f"{name} median {median([tps(x[i]) for x in rounds if x[i]]):.0f} tokens/s")
PY
echo "reports in $out" >&2

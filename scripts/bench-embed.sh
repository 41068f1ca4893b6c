#!/usr/bin/env bash
# Side-by-side CPU embedding throughput: memdex vs sentence-transformers, same texts, same
# model, one run. Prints both reports and the ratio (memdex tokens/s ÷ sentence-transformers).
#
# usage: scripts/bench-embed.sh [TEXTS.jsonl]
#   TEXTS.jsonl: {"text": ...} per line. Default: built from ../shared/data/locomo/locomo-dev.json
#   when present (first 2,000 chat turns), else from examples/chat-history.jsonl.
# env: THREADS (2), REPEATS (3), MODEL (models/all-MiniLM-L6-v2), MEMDEX (target/release/memdex),
#      ISA (auto | avx512 | avx2 | portable): forces both sides onto that instruction set —
#      memdex through MEMDEX_CPU_ISA, PyTorch through ATEN_CPU_CAPABILITY,
#      MKL_ENABLE_INSTRUCTIONS and ONEDNN_MAX_CPU_ISA. (candle's reference encoder keeps the
#      gemm crate's own dispatch.) CANDLE=0 skips the candle reference encoder.
#      ROUNDS (1): after the first round (both engines as above), ROUNDS − 1 more rounds of
#      memdex fast-cpu then sentence-transformers, alternating, so that drift in the machine's
#      speed (other load, clocks) hits both sides alike; prints each round's ratio and their
#      median, the number to quote.
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
echo "== sentence-transformers" >&2
scripts/bench-st.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
  --max-length 256 --repeats "$repeats" --json > "$out/st.json"

rounds="${ROUNDS:-1}"
for r in $(seq 2 "$rounds"); do
  echo "== round $r/$rounds: memdex, then sentence-transformers" >&2
  RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --input "$texts" \
    --repeats "$repeats" --json > "$out/memdex-r$r.json"
  scripts/bench-st.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
    --max-length 256 --repeats "$repeats" --json > "$out/st-r$r.json"
done

uptime > "$out/load-after.txt"

python3 - "$out" "$isa" <<'PY'
import json, sys, os
d, isa = sys.argv[1], sys.argv[2]
m, s = (json.load(open(os.path.join(d, f))) for f in ("memdex.json", "st.json"))
cf = os.path.join(d, "memdex-candle.json")
c = json.load(open(cf)) if os.path.exists(cf) else None
assert m["tokens"] == s["tokens"], f"token counts differ: memdex {m['tokens']} vs st {s['tokens']}"
load = lambda f: open(os.path.join(d, f)).read().split("load average:")[-1].strip()
print(f"texts {m['texts']}, tokens {m['tokens']}, threads {m['threads']}, ISA={isa}")
print(f"load average before: {load('load-before.txt')}, after: {load('load-after.txt')}")
print(f"ISA used: memdex fast-cpu {m.get('isa', '?')}; sentence-transformers: torch {s.get('isa', '?')}, "
      f"MKL_ENABLE_INSTRUCTIONS {s.get('mkl_enable_instructions', '?')}, ONEDNN_MAX_CPU_ISA {s.get('onednn_max_cpu_isa', '?')}")
# the same useful arithmetic (no padding) for every engine: memdex counts it from the lengths
flops = m["effective_gflops"] * m["seconds"] if "effective_gflops" in m else None
for name, r in (("memdex fast-cpu", m), ("memdex candle", c), ("sentence-transformers", s)):
    if r is None:
        continue
    runs = ", ".join(f"{t:.2f}" for t in r.get("all_seconds", []))
    gf = f" {flops / r['seconds']:6.1f} GFLOP/s" if flops else ""
    print(f"{name:24s} {r['texts_per_s']:8.1f} texts/s {r['tokens_per_s']:9.0f} tokens/s{gf}  (median {r['seconds']:.2f}s of {runs})")
print(f"ratio memdex fast-cpu / sentence-transformers: {m['tokens_per_s'] / s['tokens_per_s']:.2f}x")
if c is not None:
    print(f"ratio memdex candle   / sentence-transformers: {c['tokens_per_s'] / s['tokens_per_s']:.2f}x")
ratios = [m["tokens_per_s"] / s["tokens_per_s"]]
r = 2
while os.path.exists(os.path.join(d, f"memdex-r{r}.json")):
    mr, sr = (json.load(open(os.path.join(d, f"{e}-r{r}.json"))) for e in ("memdex", "st"))
    ratios.append(mr["tokens_per_s"] / sr["tokens_per_s"])
    print(f"round {r}: memdex {mr['tokens_per_s']:.0f} tokens/s, sentence-transformers {sr['tokens_per_s']:.0f} tokens/s, ratio {ratios[-1]:.2f}x")
    r += 1
if len(ratios) > 1:
    med = sorted(ratios)[len(ratios) // 2] if len(ratios) % 2 else sum(sorted(ratios)[len(ratios) // 2 - 1:len(ratios) // 2 + 1]) / 2
    print(f"ratio over {len(ratios)} alternating rounds: median {med:.2f}x (min {min(ratios):.2f}x, max {max(ratios):.2f}x)")
PY
echo "reports in $out" >&2

#!/usr/bin/env bash
# Side-by-side CPU embedding throughput: memdex vs sentence-transformers (fp32 and bf16) and ONNX
# Runtime, same texts, same model, same threads, one run. Prints the reports, the ratios (memdex
# tokens/s ÷ each) and each engine's min cosine to sentence-transformers fp32 on the same texts.
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
#      STBF16=0 skips sentence-transformers in bf16 (`model.to(torch.bfloat16)`: PyTorch's bf16
#      matmuls, on AMX tiles where the CPU has them). Vectors: each engine's from the first
#      round (memdex's from `memdex embed` with the same settings, untimed) against
#      sentence-transformers fp32's: min and mean cosine.
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
rm -f "$out"/*-vectors.jsonl
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
RAYON_NUM_THREADS="$threads" "$memdex" embed --model "$model" --device cpu --input "$texts" \
  --output "$out/memdex-vectors.jsonl" 2>/dev/null
if [ "${CANDLE:-1}" != 0 ]; then
  echo "== memdex (candle reference encoder)" >&2
  RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --cpu-backend candle \
    --input "$texts" --repeats "$repeats" --json > "$out/memdex-candle.json"
else
  rm -f "$out/memdex-candle.json"
fi
references() { # $1: the reports' suffix ("" in the first round, which also writes the vectors)
  local vec=()
  quiet
  echo "== sentence-transformers" >&2
  [ -n "$1" ] || vec=(--output "$out/st-vectors.jsonl")
  scripts/bench-st.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
    --max-length 256 --repeats "$repeats" --json "${vec[@]}" > "$out/st$1.json"
  if [ "${STBF16:-1}" != 0 ]; then
    quiet
    echo "== sentence-transformers bf16" >&2
    [ -n "$1" ] || vec=(--output "$out/st-bf16-vectors.jsonl")
    scripts/bench-st.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
      --max-length 256 --repeats "$repeats" --json --dtype bf16 "${vec[@]}" > "$out/stbf16$1.json"
  fi
  if [ "${ORT:-1}" != 0 ]; then
    quiet
    echo "== ONNX Runtime" >&2
    [ -n "$1" ] || vec=(--output "$out/ort-vectors.jsonl")
    scripts/bench-ort.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
      --max-length 256 --repeats "$repeats" --json "${vec[@]}" > "$out/ort$1.json"
  fi
}
rm -f "$out"/ort*.json "$out"/memdex-r*.json "$out"/st-r*.json "$out"/stbf16*.json
references ""

rounds="${ROUNDS:-1}"
for r in $(seq 2 "$rounds"); do
  echo "== round $r/$rounds: memdex, sentence-transformers (fp32, bf16), ONNX Runtime" >&2
  quiet
  RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --input "$texts" \
    --repeats "$repeats" --json > "$out/memdex-r$r.json"
  references "-r$r"
done

uptime > "$out/load-after.txt"

python3 - "$out" "$isa" <<'PY'
import json, math, sys, os
d, isa = sys.argv[1], sys.argv[2]
rd = lambda f: json.load(open(os.path.join(d, f))) if os.path.exists(os.path.join(d, f)) else None
m, s, b, o, c = rd("memdex.json"), rd("st.json"), rd("stbf16.json"), rd("ort.json"), rd("memdex-candle.json")
for name, r in (("sentence-transformers", s), ("sentence-transformers bf16", b), ("ONNX Runtime", o)):
    assert r is None or m["tokens"] == r["tokens"], f"token counts differ: memdex {m['tokens']} vs {name} {r['tokens']}"
load = lambda f: open(os.path.join(d, f)).read().split("load average:")[-1].strip()
print(f"texts {m['texts']}, tokens {m['tokens']}, threads {m['threads']}, ISA={isa}")
print(f"load average before: {load('load-before.txt')}, after: {load('load-after.txt')}")
print(f"kernels: memdex fast-cpu {m.get('isa', '?')}; sentence-transformers: torch {s.get('isa', '?')}, "
      f"MKL_ENABLE_INSTRUCTIONS {s.get('mkl_enable_instructions', '?')}, ONEDNN_MAX_CPU_ISA {s.get('onednn_max_cpu_isa', '?')}"
      + (f"; ONNX Runtime {o['onnxruntime']}: {o['isa']}" if o else ""))

def vectors(f):
    p = os.path.join(d, f)
    if not os.path.exists(p):
        return None
    return [json.loads(l)["embedding"] for l in open(p, encoding="utf-8") if l.strip()]

def cosines(a, ref):
    out = []
    for x, y in zip(a, ref):
        dot = sum(p * q for p, q in zip(x, y))
        out.append(dot / (math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y)) or 1.0))
    return out

ref = vectors("st-vectors.jsonl")
cos = {}
for name, f in (("memdex fast-cpu", "memdex-vectors.jsonl"), ("sentence-transformers bf16", "st-bf16-vectors.jsonl"),
                ("ONNX Runtime", "ort-vectors.jsonl")):
    v = vectors(f)
    if ref is not None and v is not None:
        assert len(v) == len(ref), f"{f}: {len(v)} vectors vs {len(ref)}"
        cs = cosines(v, ref)
        cos[name] = (min(cs), sum(cs) / len(cs))
if ref is not None:
    cos["sentence-transformers"] = (1.0, 1.0)
# the same useful arithmetic (no padding) for every engine: memdex counts it from the lengths
flops = m["effective_gflops"] * m["seconds"] if "effective_gflops" in m else None
engines = (("memdex fast-cpu", m), ("memdex candle", c), ("sentence-transformers", s),
           ("sentence-transformers bf16", b), ("ONNX Runtime", o))
for name, r in engines:
    if r is None:
        continue
    runs = ", ".join(f"{t:.2f}" for t in r.get("all_seconds", []))
    gf = f" {flops / r['seconds']:6.1f} GFLOP/s" if flops else ""
    cs = f"  cosine to ST fp32 min {cos[name][0]:.7f} mean {cos[name][1]:.7f}" if name in cos else ""
    print(f"{name:27s} {r['texts_per_s']:8.1f} texts/s {r['tokens_per_s']:9.0f} tokens/s{gf}  (median {r['seconds']:.2f}s of {runs}){cs}")
tps = lambda r: r["tokens_per_s"]
refs = (("sentence-transformers", 1, s), ("sentence-transformers bf16", 2, b), ("ONNX Runtime", 3, o))
for name, _, r in refs:
    if r is not None:
        print(f"ratio memdex fast-cpu / {name}: {tps(m) / tps(r):.2f}x")
if c is not None:
    print(f"ratio memdex candle   / sentence-transformers: {tps(c) / tps(s):.2f}x")
rounds = [(m, s, b, o)]
r = 2
while rd(f"memdex-r{r}.json"):
    rounds.append((rd(f"memdex-r{r}.json"), rd(f"st-r{r}.json"), rd(f"stbf16-r{r}.json"), rd(f"ort-r{r}.json")))
    mr = rounds[-1][0]
    parts = [f"memdex {tps(mr):.0f} tokens/s"]
    for name, i, _ in refs:
        x = rounds[-1][i]
        if x:
            parts.append(f"{name} {tps(x):.0f} ({tps(mr) / tps(x):.2f}x)")
    print(f"round {r}: " + ", ".join(parts))
    r += 1
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
if len(rounds) > 1:
    for name, i, _ in refs:
        ratios = [tps(x[0]) / tps(x[i]) for x in rounds if x[i]]
        if ratios:
            print(f"ratio to {name} over {len(ratios)} alternating rounds: median {median(ratios):.2f}x "
                  f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x); memdex median {median([tps(x[0]) for x in rounds]):.0f}, "
                  f"{name} median {median([tps(x[i]) for x in rounds if x[i]]):.0f} tokens/s")
PY
echo "reports in $out" >&2

#!/usr/bin/env bash
# Side-by-side CPU embedding throughput: memdex vs sentence-transformers, same texts, same
# model, one run. Prints both reports and the ratio (memdex tokens/s ÷ sentence-transformers).
#
# usage: scripts/bench-embed.sh [TEXTS.jsonl]
#   TEXTS.jsonl: {"text": ...} per line. Default: built from ../shared/data/locomo/locomo-dev.json
#   when present (first 2,000 chat turns), else from examples/chat-history.jsonl.
# env: THREADS (2), REPEATS (3), MODEL (models/all-MiniLM-L6-v2), MEMDEX (target/release/memdex)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
threads="${THREADS:-2}"
repeats="${REPEATS:-3}"
model="${MODEL:-models/all-MiniLM-L6-v2}"
memdex="${MEMDEX:-target/release/memdex}"
out="${OUT:-$(mktemp -d)}"

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
[ -x "$memdex" ] || cargo build --release -p memdex-cli

echo "== memdex (fast CPU encoder)" >&2
RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --input "$texts" \
  --repeats "$repeats" --json > "$out/memdex.json"
echo "== memdex (candle reference encoder)" >&2
RAYON_NUM_THREADS="$threads" "$memdex" bench embed --model "$model" --device cpu --cpu-backend candle \
  --input "$texts" --repeats "$repeats" --json > "$out/memdex-candle.json"
echo "== sentence-transformers" >&2
scripts/bench-st.sh --model "$model" --input "$texts" --threads "$threads" --batch-size 64 \
  --max-length 256 --repeats "$repeats" --json > "$out/st.json"

python3 - "$out" <<'PY'
import json, sys, os
d = sys.argv[1]
m, c, s = (json.load(open(os.path.join(d, f))) for f in ("memdex.json", "memdex-candle.json", "st.json"))
assert m["tokens"] == s["tokens"], f"token counts differ: memdex {m['tokens']} vs st {s['tokens']}"
print(f"texts {m['texts']}, tokens {m['tokens']}, threads {m['threads']}")
for name, r in (("memdex fast-cpu", m), ("memdex candle", c), ("sentence-transformers", s)):
    print(f"{name:24s} {r['texts_per_s']:8.1f} texts/s {r['tokens_per_s']:9.0f} tokens/s  (median {r['seconds']:.2f}s)")
print(f"ratio memdex fast-cpu / sentence-transformers: {m['tokens_per_s'] / s['tokens_per_s']:.2f}x")
print(f"ratio memdex candle   / sentence-transformers: {c['tokens_per_s'] / s['tokens_per_s']:.2f}x")
PY
echo "reports in $out" >&2

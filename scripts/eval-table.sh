#!/usr/bin/env bash
# Baseline table on a benchmark file: dense / bm25 / hybrid × turn / session granularity,
# LongMemEval metric definitions, recall_any@5 / recall_all@5 / ndcg_any@5 per level and per
# question type. Prints Markdown; keeps each run's JSON report in $OUT.
#
# usage: scripts/eval-table.sh FILE FORMAT(locomo|longmemeval)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
file="$1"
format="$2"
memdex="${MEMDEX:-$root/target/release/memdex}"
out="${OUT:-$(mktemp -d)}"
for g in turn session; do
  store="$out/store-$g"
  for r in dense bm25 hybrid; do
    "$memdex" eval --input "$file" --format "$format" --granularity "$g" --retriever "$r" \
      --store "$store" --json > "$out/$g-$r.json" 2>/dev/null
  done
done
python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
rows, types = [], []
print("| method | level | recall_any@5 | recall_all@5 | ndcg_any@5 |")
print("|---|---|---|---|---|")
for g in ("turn", "session"):
    for r in ("dense", "bm25", "hybrid"):
        rep = json.load(open(os.path.join(d, f"{g}-{r}.json")))
        for level in ("turn", "session"):
            m = rep["levels"].get(level)
            if not m:
                continue
            name = {"turn": "turn", "session": "turn → session" if g == "turn" else "session"}[level]
            print(f"| {r} | {name} | {m['recall_any@5']:.3f} | {m['recall_all@5']:.3f} | {m['ndcg_any@5']:.3f} |")
        if g == "turn":
            types.append((r, rep))
        n = rep["questions"]
print(f"\n{n} questions evaluated; skipped: {json.dumps(rep['skipped'])}\n")
print("Per question type, turn ranking: turn recall_all@5 / turn → session recall_all@5\n")
names = sorted(types[0][1]["by_type"])
print("| type | " + " | ".join(r for r, _ in types) + " |")
print("|---|" + "---|" * len(types))
for t in names:
    cells = []
    for r, rep in types:
        b = rep["by_type"][t]
        cells.append(f"{b['turn']['recall_all@5']:.3f} / {b['session']['recall_all@5']:.3f}")
    print(f"| {t} | " + " | ".join(cells) + " |")
PY

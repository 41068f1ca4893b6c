#!/usr/bin/env bash
# Ablation of the ranking pipeline's stages on a benchmark file (turn granularity): one
# Markdown row per configuration with turn recall_any@5 / recall_all@5, turn→session
# recall_any@5 / recall_all@5 / ndcg_any@5, per-type turn recall_all@5 (types in alphabetical
# order, listed on stderr) and search latency p50 / p99 in ms (query embedding + ranking).
# The store is built on the first run and reused.
#
# usage: scripts/ablation.sh FILE locomo|longmemeval STORE_DIR
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
file=$1; format=$2; store=$3
run() {
  name="$1"; shift
  "${MEMDEX:-$root/target/release/memdex}" eval --input "$file" --format "$format" --store "$store" --json "$@" 2>/dev/null | python3 -c "
import json,sys; r=json.load(sys.stdin); L=r['levels']; T=L.get('turn',{}); S=L['session']; bt=r['by_type']; lat=r['latency_ms']
cats=' | '.join('%.3f'%bt[c]['turn']['recall_all@5'] for c in sorted(bt))
print('| $name | %.3f / %.3f | %.3f / %.3f / %.3f | %s | %.1f / %.1f |'%(T.get('recall_any@5',0),T.get('recall_all@5',0),S['recall_any@5'],S['recall_all@5'],S['ndcg_any@5'],cats,lat['search_p50'],lat['search_p99']))
print('cats:', ', '.join(sorted(bt)), file=sys.stderr)"
}
run "dense (baseline)" --retriever dense
run "+ BM25 proper (bm25 memdex alone)" --retriever bm25 --bm25 memdex
run "+ fusion (hybrid min-max, memdex BM25)" --retriever hybrid --bm25 memdex
run "  fusion as RRF (k 60)" --retriever hybrid --bm25 memdex --fusion rrf
run "+ FragRel (α 0.5, w 0.8, session) = search default" --retriever hybrid --bm25 memdex --fragrel-alpha 0.5 --fragrel-w 0.8
run "  FragRel w 0.5" --retriever hybrid --bm25 memdex --fragrel-alpha 0.5 --fragrel-w 0.5
run "official hybrid (reference stack)" --retriever hybrid

#!/usr/bin/env bash
# Ablation of the ranking pipeline's stages on a benchmark file (turn granularity): one
# Markdown row per configuration, stages added one at a time, with turn recall_any@5 /
# recall_all@5, turn→session recall_any@5 / recall_all@5 / ndcg_any@5, per-type recall_all@5
# (turn / turn→session; types in alphabetical order, listed on stderr) and search latency
# p50 / p99 in ms (query embedding + ranking, this machine).
# Stores are built on first use and reused: STORE-false (keys as read) and STORE-true
# (keys expanded with extracted facts); both carry event dates. STORE-n10 adds 10 semantic
# neighbours per item for FragRel's semantic relation. STORE-c1 / STORE-c2 are STORE-true with
# each turn's key also carrying the 1 / 2 messages before it (`--key-context`).
#
# usage: scripts/ablation.sh FILE locomo|longmemeval STORE
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
file=$1; format=$2; store=$3
run() {
  name="$1"; kind="$2"; shift 2
  case "$kind" in
    false) opts=(--facts false) ;;
    true) opts=(--facts true) ;;
    n10) opts=(--facts true --neighbors 10) ;;
    c1) opts=(--facts true --key-context 1) ;;
    c2) opts=(--facts true --key-context 2) ;;
  esac
  "${MEMDEX:-$root/target/release/memdex}" eval --input "$file" --format "$format" \
    --store "$store-$kind" "${opts[@]}" \
    --json "$@" 2>/dev/null | python3 -c "
import json,sys; r=json.load(sys.stdin); L=r['levels']; T=L.get('turn',{}); S=L['session']; bt=r['by_type']; lat=r['latency_ms']
cats=' | '.join('%.3f / %.3f'%(bt[c].get('turn',{}).get('recall_all@5',0),bt[c]['session']['recall_all@5']) for c in sorted(bt))
print('| $name | %.3f / %.3f | %.3f / %.3f / %.3f | %s | %.1f / %.1f |'%(T.get('recall_any@5',0),T.get('recall_all@5',0),S['recall_any@5'],S['recall_all@5'],S['ndcg_any@5'],cats,lat['search_p50'],lat['search_p99']))
print('types:', ', '.join(sorted(bt)), file=sys.stderr)"
}
H="--retriever hybrid --bm25 memdex"
F="--fragrel-alpha 0.5 --fragrel-w 0.8"
run "dense (baseline)" false --retriever dense
run "+ BM25 proper (memdex BM25 alone)" false --retriever bm25 --bm25 memdex
run "+ fusion (hybrid min-max 0.5/0.5)" false $H
run "  fusion as RRF (k 60) instead" false $H --fusion rrf
run "+ FragRel (α 0.5, w 0.8, session)" false $H $F
run "+ time (front, when-boost 0.2)" false $H $F --time front --when-boost 0.2
run "+ facts (key expansion)" true $H $F --time front --when-boost 0.2
run "+ importance 0.3 (= search defaults)" true $H $F --time front --when-boost 0.2 --importance 0.3
run "  + recency 0.3 (all on)" true $H $F --time front --when-boost 0.2 --importance 0.3 --recency 0.3
run "  time as boost ×2 instead of front" true $H $F --time boost --time-boost 1 --when-boost 0.2 --importance 0.3
run "  + FragRel semantic relation (m 10, weight 0.2)" n10 $H $F --time front --when-boost 0.2 --importance 0.3 --fragrel-semantic 0.2
run "  FragRel w 0.5 instead of 0.8" true $H --fragrel-alpha 0.5 --fragrel-w 0.5 --time front --when-boost 0.2 --importance 0.3
run "+ key context, 1 message (= index and search defaults)" c1 $H $F --time front --when-boost 0.2 --importance 0.3
run "  key context, 2 messages instead" c2 $H $F --time front --when-boost 0.2 --importance 0.3
run "  key context 1, dense alone" c1 --retriever dense
run "official hybrid (reference stack)" false --retriever hybrid

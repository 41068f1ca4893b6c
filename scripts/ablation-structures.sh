#!/usr/bin/env bash
# Ablation of the two structures (TiM thoughts, MemTree) on a benchmark file, turn
# granularity, keys with facts (as `memdex index` builds them): each structure as a retriever
# and as a stage over the default pipeline (`--preset default`). One Markdown row per
# configuration with the columns of scripts/ablation.sh (turn recall_any@5 / recall_all@5,
# turn→session recall_any@5 / recall_all@5 / ndcg_any@5, per-type recall_all@5 as
# turn / turn→session, search latency p50 / p99 in ms). The store (STORE-structs) is built
# on first use; the build's structure sync cost goes to stderr.
#
# usage: [ONLY=thoughts|tree] scripts/ablation-structures.sh FILE locomo|longmemeval STORE
# (ONLY: build and measure one structure; MemTree's build embeds every aggregate on the path
# of every insertion, several times the items' own embedding work)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
file=$1; format=$2; store=$3
only=${ONLY:-both}
case "$only" in
  thoughts) kinds=(--thoughts) ;;
  tree) kinds=(--tree) ;;
  *) kinds=(--thoughts --tree) ;;
esac
run() {
  name="$1"; shift
  "${MEMDEX:-$root/target/release/memdex}" eval --input "$file" --format "$format" \
    --store "$store-$only" --facts true "${kinds[@]}" \
    --json "$@" 2>/dev/null | python3 -c "
import json,sys; r=json.load(sys.stdin); L=r['levels']; T=L.get('turn',{}); S=L['session']; bt=r['by_type']; lat=r['latency_ms']
cats=' | '.join('%.3f / %.3f'%(bt[c].get('turn',{}).get('recall_all@5',0),bt[c]['session']['recall_all@5']) for c in sorted(bt))
print('| $name | %.3f / %.3f | %.3f / %.3f / %.3f | %s | %.1f / %.1f |'%(T.get('recall_any@5',0),T.get('recall_all@5',0),S['recall_any@5'],S['recall_all@5'],S['ndcg_any@5'],cats,lat['search_p50'],lat['search_p99']))
idx=r['config']['run']['index']; st=idx.get('structures')
if st: print('build: %.1f s total, structures %.1f s, %s'%(idx['seconds'],st['seconds'],json.dumps(st)), file=sys.stderr)
print('types:', ', '.join(sorted(bt)), file=sys.stderr)"
}
D="--preset default"
run "default pipeline (search defaults)" $D
if [ "$only" != tree ]; then
  run "+ thought stage (weight 0.5, top 5)" $D --thought-weight 0.5
  run "  thought stage weight 0.2" $D --thought-weight 0.2
fi
if [ "$only" != thoughts ]; then
  run "+ tree stage (weight 0.5, top 5)" $D --tree-weight 0.5
  run "  tree stage weight 0.2" $D --tree-weight 0.2
fi
[ "$only" = both ] && run "+ both stages (0.5 / 0.5)" $D --thought-weight 0.5 --tree-weight 0.5
[ "$only" != tree ] && run "thoughts as retriever (then dense)" --preset dense --retriever thoughts
[ "$only" != thoughts ] && run "tree as retriever, collapsed (then dense)" --preset dense --retriever tree
run "dense (baseline)" --preset dense

#!/usr/bin/env bash
# interleaved before/after × ISA: each cell one bench-embed.sh round (memdex, sentence-transformers, ONNX Runtime)
# from the repository root, whatever the checkout's path; SCRATCH holds the two binaries
# (memdex-base, memdex-after), texts.jsonl and the store
cd "$(dirname "$0")/../../.."
scratch=${SCRATCH:-/tmp/avx512}
rounds=${ROUNDS:-4}
for r in $(seq ${START:-1} $rounds); do
  if [ $((r % 2)) -eq 1 ]; then bins="before after"; else bins="after before"; fi
  for isa in ${ISAS:-avx512 avx2}; do
    for bin in $bins; do
      b=$scratch/memdex-$([ $bin = before ] && echo base || echo after)
      o=${BENCH_DIR:-$scratch/bench}/r$r-$isa-$bin
      echo "== $(date +%T) round $r $isa $bin (load $(cut -d' ' -f1-3 /proc/loadavg))"
      OUT=$o ISA=$isa ROUNDS=1 CANDLE=0 QUIET=300 MEMDEX=$b scripts/bench-embed.sh $scratch/texts.jsonl > $o.txt 2>&1
      grep -E "ratio memdex|waited" $o.txt
      MEMDEX_CPU_ISA=$isa RAYON_NUM_THREADS=2 $b bench search --store $scratch/store --queries 300 --model models/all-MiniLM-L6-v2 --json > $o-search.json 2>/dev/null
    done
  done
done
echo "== $(date +%T) done"

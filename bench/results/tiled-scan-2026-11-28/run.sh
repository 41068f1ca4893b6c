#!/usr/bin/env bash
# The fused ranking before and after the tiled dense step, under the SIMT emulator
# (kernels/emu), compared row by row: bench/results/tiled-scan-2026-11-28/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old"
for f in common.cuh rank.cu fragrel.cuh; do git -C "$root" show "b9473b4:kernels/cuda/$f" > "$tmp/old/$f"; done
cp "$here/rank_old_vs_new.cpp" "$tmp/"
flags=(-std=c++20 -O1 -pthread -DMEMDEX_EMULATED -I "$root/kernels/emu/include" -I "$root/kernels/emu")
c++ "${flags[@]}" -DOLD -o "$tmp/old_rank" "$tmp/rank_old_vs_new.cpp"
sed "s|../../../kernels/cuda/rank.cu|$root/kernels/cuda/rank.cu|" "$tmp/rank_old_vs_new.cpp" > "$tmp/new.cpp"
c++ "${flags[@]}" -o "$tmp/new_rank" "$tmp/new.cpp"
for cfg in "384 1" "384 3" "640 2"; do
  set -- $cfg
  "$tmp/old_rank" "$1" "$2" "$tmp/old_$1_$2.bin" > /dev/null
  "$tmp/new_rank" "$1" "$2" "$tmp/new_$1_$2.bin" > /dev/null
  python3 - "$tmp/old_$1_$2.bin" "$tmp/new_$1_$2.bin" "dim $1, $2 dense parts" <<'PY'
import math, struct, sys
o, n, label = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3]
nq, k = 25, 10
m = nq * 2 * k
get = lambda b, at, c, t: struct.unpack(f"<{c}{t}", b[at:at + 4 * c])
os_, ns, orow, nrow = get(o, 0, m, "f"), get(n, 0, m, "f"), get(o, 4 * m, m, "I"), get(n, 4 * m, m, "I")
tot = (len(o) - 8 * m) // 4
oa, na = get(o, 8 * m, tot, "f"), get(n, 8 * m, tot, "f")
fin = lambda a, b: math.isfinite(a) and math.isfinite(b)
same = sum(a == b for a, b in zip(orow, nrow))
d = max((abs(a - b) for a, b in zip(os_, ns) if fin(a, b)), default=0.0)
da = max(abs(a - b) for a, b in zip(oa, na) if fin(a, b))
empties = all(math.isinf(a) == math.isinf(b) for a, b in zip(os_, ns))
print(f"{label}: top-k slots with the same row {same}/{m}, largest score difference {d:.2e}, "
      f"empty slots identical {empties}; every row's score ({tot}): largest difference {da:.2e}")
PY
done

#!/usr/bin/env bash
# Assemble a CUDA 13.0 *build* toolkit (nvcc, headers, link libraries, a libcuda link stub) from
# PyPI wheels into $MEMDEX_CUDA_HOME (default ~/.cache/memdex/cuda-13.0). No GPU, no root needed.
#
# Idempotent: if "$DEST/.complete" records the same pinned versions, it does nothing.
# Versions = the ones torch==2.11.0 pins through cuda-toolkit==13.0.2, so the sonames match the
# libraries on the GPU box (torch's site-packages/nvidia/cu13/lib). Keep nvcc at 13.0: the box runs
# driver 580 and cudarc 0.19 rejects CUDA past 13.4.
#
# Wheels carry no symlinks and no libcuda.so, so this script adds the libX.so development links and
# generates a libcuda.so stub (SONAME libcuda.so.1) exporting the driver API names cudarc declares;
# the real libcuda.so.1 comes from the driver on the GPU box.
#
# Usage: scripts/cuda-toolkit.sh            # install (or confirm) the toolkit
#        eval "$(scripts/cuda-toolkit.sh --env)"   # export CUDA_ROOT/CUDA_HOME/PATH for a build
set -euo pipefail
DEST=${MEMDEX_CUDA_HOME:-$HOME/.cache/memdex/cuda-13.0}
PINS=(
  "nvidia-cuda-nvcc==13.0.88" "nvidia-cuda-crt==13.0.88" "nvidia-nvvm==13.0.88"
  "nvidia-cuda-cccl==13.0.85" "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-nvrtc==13.0.88"
  "nvidia-curand==10.4.0.35" "nvidia-cublas==13.1.0.3"
)
STAMP="${PINS[*]}"

print_env() {
  echo "export CUDA_ROOT=$DEST CUDA_HOME=$DEST CUDA_PATH=$DEST NVCC=$DEST/bin/nvcc"
  echo "export PATH=$DEST/bin:\$PATH"
  echo "export LIBRARY_PATH=$DEST/lib:$DEST/lib/stubs\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
  echo "export CUDA_COMPUTE_CAP=\${CUDA_COMPUTE_CAP:-90}"
}

if [[ "${1:-}" == "--env" ]]; then
  [[ -f "$DEST/.complete" ]] || { echo "toolkit missing: run scripts/cuda-toolkit.sh" >&2; exit 1; }
  print_env
  exit 0
fi

# The libcuda stub is generated from the driver API names in the cudarc source cargo fetched.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CUDARC_SRC=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.*/ 2>/dev/null | sort -V | tail -1 || true)
if [[ -z "$CUDARC_SRC" ]]; then
  echo "cudarc 0.19 source not found: run 'cargo fetch' in $ROOT first" >&2
  exit 1
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# libcuda.so stub (SONAME libcuda.so.1) exporting every driver API name cudarc declares. Each
# returns CUDA_ERROR_NO_DEVICE (100), so a CUDA build started here (no driver) reports "no
# device" instead of crashing: `--device cpu` runs, `auto` falls back to the CPU, kernel tests
# skip their CUDA half. The GPU box's driver provides the real libcuda.so.1.
STUB_VERSION=2
make_stub() {
  local src=$WORK/libcuda_stub.c
  mkdir -p "$DEST/lib/stubs"
  grep -ohE "^ *pub unsafe fn cu[A-Za-z0-9_]+" "$CUDARC_SRC/src/driver/sys/"*.rs \
    | awk '{print $4}' | sed 's/(.*//' | sort -u | awk '{print "int " $1 "(void) { return 100; }"}' \
    > "$src"
  gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$DEST/lib/stubs/libcuda.so" "$src"
  ln -sfn libcuda.so "$DEST/lib/stubs/libcuda.so.1"
  echo "$STUB_VERSION" > "$DEST/lib/stubs/.version"
}

if [[ -f "$DEST/.complete" && "$(cat "$DEST/.complete")" == "$STAMP" ]]; then
  [[ "$(cat "$DEST/lib/stubs/.version" 2>/dev/null)" == "$STUB_VERSION" ]] || make_stub
  echo "CUDA toolkit already at $DEST" >&2
  "$DEST/bin/nvcc" --version | tail -1 >&2
  exit 0
fi
WHEELS=${WHEELS:-$WORK/wheels}
mkdir -p "$WHEELS"
echo "downloading ${#PINS[@]} wheels (~1.2 GB) into $WHEELS" >&2
python3 -m pip download --quiet --no-deps --only-binary=:all: \
  --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 --python-version 3.11 \
  -d "$WHEELS" "${PINS[@]}"
X=$WORK/x
mkdir -p "$X"
for w in "$WHEELS"/*.whl; do python3 -m zipfile -e "$w" "$X"; done

rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
mv "$X/nvidia/cu13" "$DEST"
chmod +x "$DEST"/bin/* "$DEST"/nvvm/bin/*
ln -sfn lib "$DEST/lib64"   # cudaforge / cudarc also look in lib64
(
  cd "$DEST/lib"
  for l in cudart:13 nvrtc:13 curand:10 cublas:13 cublasLt:13; do
    n=${l%%:*}
    v=${l##*:}
    ln -sfn "lib$n.so.$v" "lib$n.so"
  done
)
make_stub
"$DEST/bin/nvcc" --version | tail -2 >&2
echo "$STAMP" > "$DEST/.complete"
print_env

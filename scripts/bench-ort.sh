#!/usr/bin/env bash
# Reference embedding throughput: ONNX Runtime (CPU, fp32) via scripts/bench-ort.py.
#
# Uses the .venv-bench/ that scripts/bench-st.sh creates (PyTorch and transformers export the
# model to ONNX) and adds ONNX Runtime and onnx to it on first use; a marker file records what
# was installed, so later runs skip the install. The exported model is cached under
# target/onnx/ (git-ignored). All arguments are passed through to bench-ort.py.
#
# usage: scripts/bench-ort.sh --model models/all-MiniLM-L6-v2 --input texts.jsonl [--threads 2] ...
set -euo pipefail

ORT="onnxruntime==1.32.0 onnx==1.23.2 onnxscript==0.7.2"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-bench"
marker="$venv/.installed-ort"

[ -x "$venv/bin/python" ] || "$root/scripts/bench-st.sh" --help >/dev/null
if [ "$(cat "$marker" 2>/dev/null)" != "$ORT" ]; then
  echo "installing $ORT ..." >&2
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip --quiet --disable-pip-version-check install $ORT
  echo "$ORT" > "$marker"
fi

exec "$venv/bin/python" "$root/scripts/bench-ort.py" "$@"

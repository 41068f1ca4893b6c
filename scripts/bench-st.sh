#!/usr/bin/env bash
# Reference embedding throughput: sentence-transformers (PyTorch, CPU) via scripts/bench-st.py.
#
# Creates .venv-bench/ in the repo root on first use (git-ignored) and installs PyTorch,
# sentence-transformers and pyarrow into it. PyTorch comes from the CPU-only wheel index when
# that index is reachable, otherwise from PyPI (whose x86_64 Linux wheel pulls in the CUDA
# libraries, ~3 GB, unused here). A marker file records what was installed, so later runs skip
# the install. All arguments are passed through to bench-st.py.
#
# usage: scripts/bench-st.sh --model models/all-MiniLM-L6-v2 --input texts.jsonl [--threads 2] ...
set -euo pipefail

TORCH="torch==2.15.0"
REST="sentence-transformers==6.2.0 pyarrow==26.0.1"
CPU_INDEX="https://download.pytorch.org/whl/cpu"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-bench"
marker="$venv/.installed"
want="$TORCH $REST"

if [ "$(cat "$marker" 2>/dev/null)" != "$want" ]; then
  python="${PYTHON:-python3}"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)
  "${pip[@]}" install --upgrade pip
  if "$venv/bin/python" -c "import urllib.request as u; u.urlopen('$CPU_INDEX/torch/', timeout=10)" 2>/dev/null; then
    echo "installing $TORCH from the CPU-only index ..." >&2
    "${pip[@]}" install --index-url "$CPU_INDEX" "$TORCH"
  else
    echo "CPU-only index unreachable; installing $TORCH from PyPI (with CUDA libraries) ..." >&2
    "${pip[@]}" install "$TORCH"
  fi
  echo "installing $REST ..." >&2
  # shellcheck disable=SC2086
  "${pip[@]}" install $REST
  echo "$want" > "$marker"
fi

exec "$venv/bin/python" "$root/scripts/bench-st.py" "$@"

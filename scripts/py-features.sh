#!/usr/bin/env bash
# Checks that crates/memdex-py's dependency features equal the workspace build's (see the
# "Feature alignment" note in its Cargo.toml) as scripts/test.sh builds the workspace: prints each crate whose features differ and
# exits non-zero then. Run after changing dependencies; a difference only costs build time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 - <<'PY'
import collections, re, subprocess, sys

def load(args):
    out = subprocess.run(["cargo", "tree", *args, "-e", "features", "--prefix", "none",
                          "--format", "{p} {f}"], capture_output=True, text=True, check=True).stdout
    d = collections.defaultdict(set)
    for line in out.splitlines():
        m = re.match(r"(\S+) v(\S+)(?: \([^)]*\))?\s*(.*)", line.strip())
        if m:
            d[(m[1], m[2])] |= {x for x in m[3].replace(" (*)", "").split(",") if x and x != "(*)"}
    return d

# the workspace as scripts/test.sh builds it (every optional part but CUDA)
py, ws = load(["-p", "memdex-py"]), load(["--workspace", "--features", "memdex-cli/full"])
diff = [(k, py[k] - ws[k], ws[k] - py[k]) for k in sorted(py)
        if not k[0].startswith("memdex-") and py[k] != ws.get(k, set())]
for (name, version), only_py, only_ws in diff:
    print(f"{name} {version}: memdex-py only {sorted(only_py)}, workspace only {sorted(only_ws)}")
print("memdex-py features aligned" if not diff else f"{len(diff)} crates differ")
sys.exit(1 if diff else 0)
PY

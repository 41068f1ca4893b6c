#!/usr/bin/env bash
# Self-test of scripts/gpu-check.sh's sanitize stage without a GPU: a fake compute-sanitizer
# (runs the program, writes its summary with 0 errors or, for FAKE_ERRORS=TOOL, 3; hangs after
# a run whose arguments contain FAKE_HANG), a fake memdex-kernels-check (the plan, one line
# per check on cuda:0, the tally; FAKE_FAIL=NAME fails the checks whose name contains it) and
# a fake memdex-gpu-bench (its lines, both scans; FAKE_BENCH_FAIL=1: cut after the first case,
# exit 1), in a WORK that the stage does not unpack. Asserts the stage's verdict (gpu-report.py
# sanitize) for a clean run covering every kernel group under memcheck, racecheck and
# synccheck (sanitize.json: PASS for each), a sanitizer error, a check that fails on the
# device while the sanitizer finds nothing, a bench that fails under the sanitizer, a run cut
# by its cap, and a stage whose time is spent.
#
# usage: scripts/gpu-sanitize-selftest.sh        (run by scripts/test.sh; ~15 s)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/gc/bin"
touch "$tmp/gc/.unpacked"
cat > "$tmp/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
tool='' log=''
while [[ $1 == --* ]]; do
  case $1 in
    --tool) tool=$2; shift 2 ;;
    --log-file) log=$2; shift 2 ;;
    --print-limit) shift 2 ;;
    *) shift ;;
  esac
done
echo "========= COMPUTE-SANITIZER" > "$log"
"$@"
rc=$?
[[ -n ${FAKE_HANG:-} && "$*" == *"$FAKE_HANG"* ]] && sleep 600
errs=0
[[ ${FAKE_ERRORS:-} == "$tool" ]] && errs=3
if [[ $tool == racecheck ]]; then
  echo "========= RACECHECK SUMMARY: $errs hazards displayed ($errs errors, 0 warnings)" >> "$log"
else
  echo "========= ERROR SUMMARY: $errs errors" >> "$log"
fi
exit "$rc"
EOF
cat > "$tmp/gc/bin/memdex-kernels-check" <<'EOF'
#!/usr/bin/env python3
import json, os, sys
ALL = ["selection_is_exact_with_ties", "masked_selection_is_exact", "scores_within_tolerance",
       "tensor_scan_matches_the_scan", "fragrel_matches_reference", "fragrel_without_environment_is_the_plain_top_k",
       "lsh_buckets_agree_and_keep_recall", "invalid_inputs_are_errors", "rank_matches_reference",
       "rank_invalid_inputs_are_errors", "rank_parts_match_one_matrix",
       "rank_text_matches_host_inputs"]
args = sys.argv[1:]
assert "--cuda" in args, args
filters = [a for a in args if not a.startswith("--")]
plan = [n for n in ALL if not filters or any(f in n for f in filters)]
print(json.dumps({"plan": plan, "cuda_only": True}))
fail = os.environ.get("FAKE_FAIL", "")
tally = {"passed": 0, "failed": 0}
for n in plan:
    ok = not (fail and fail in n)
    print(json.dumps({"check": n, "device": "cuda:0", "ok": ok}))
    tally["passed" if ok else "failed"] += 1
print(json.dumps({"by_device": {"cuda:0": tally}, "cuda": True, **tally}))
sys.exit(1 if tally["failed"] else 0)
EOF
cat > "$tmp/gc/bin/memdex-gpu-bench" <<'EOF'
#!/usr/bin/env python3
import json, os, sys
assert "--scan" in sys.argv and "both" in sys.argv, sys.argv
print(json.dumps({"bench": "device", "name": "fake"}))
for case in ("per_tenant_1x", "per_tenant_10x", "single_query_all_rows"):
    for variant in ("cuda_cores", "tensor_cores"):
        print(json.dumps({"bench": "segmented_topk", "case": case, "variant": variant}))
    if os.environ.get("FAKE_BENCH_FAIL"):
        sys.exit(1)
print(json.dumps({"bench": "fragrel_topk"}))
EOF
chmod +x "$tmp/bin/compute-sanitizer" "$tmp/gc/bin/memdex-kernels-check" "$tmp/gc/bin/memdex-gpu-bench"

fails=0
# case NAME WANT(ok|FAIL) PATTERN [VAR=VALUE...]: the verdict line must say PATTERN
case_() {
  local name=$1 want=$2 pattern=$3
  shift 3
  rm -rf "$tmp/out"
  env PATH="$tmp/bin:$PATH" WORK="$tmp/gc" OUT="$tmp/out" DEVICE=cuda "$@" \
    bash "$root/scripts/gpu-check.sh" sanitize > /dev/null 2>&1
  local line
  line=$(grep '^sanitize:' "$tmp/out/summary.txt" 2>/dev/null | tail -1)
  if [[ $line == "sanitize: $want "* && $line == *"$pattern"* ]]; then
    echo "ok   $name"
  else
    echo "FAIL $name: $line"
    fails=$((fails + 1))
  fi
}
case_ "clean" ok "racecheck-rank_matches: 0 errors over 1 device checks"
case_ "clean: every kernel group under each tool" ok \
  "racecheck-bench: 0 errors, bench complete; every kernel group under memcheck, racecheck, synccheck"
if python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
groups = {g for x in r["runs"].values() for g in x["groups"]}
sys.exit(not (r["verdict"] == "PASS" and not r["not_covered"] and len(r["runs"]) == 14
              and {"tensor_scan", "scores", "fragrel", "lsh", "@bench"} <= groups))' "$tmp/out/sanitize.json"; then
  echo "ok   sanitize.json: PASS for each of 14 runs, every group"
else
  echo "FAIL sanitize.json: $(head -c 400 "$tmp/out/sanitize.json")"
  fails=$((fails + 1))
fi
case_ "memcheck errors" FAIL "memcheck: 3 errors over 12 device checks" FAKE_ERRORS=memcheck
case_ "the bench fails under the sanitizer" FAIL "memcheck-bench: 0 errors, bench INCOMPLETE (exit 1)" \
  FAKE_BENCH_FAIL=1
case_ "racecheck hazards" FAIL "racecheck-selection: 3 errors" FAKE_ERRORS=racecheck
case_ "the sanitizer clean, a check failed on cuda:0" FAIL \
  "racecheck-rank_text: 0 errors over 1 device checks, FAILED on cuda:0: rank_text_matches_host_inputs" \
  FAKE_FAIL=rank_text
case_ "a run cut by its cap, the others complete" FAIL \
  "racecheck-rank_matches: cut short (1 device checks ran); racecheck-rank_invalid: 0 errors" \
  FAKE_HANG=rank_matches SANITIZE_RACECHECK_S=2
case_ "the stage's time spent" FAIL "racecheck-bench: not started" \
  FAKE_HANG=rank_matches STAGE_SECONDS=16
echo "gpu-sanitize self-test: $([[ $fails == 0 ]] && echo "all passed" || echo "$fails FAILED")"
((fails == 0))

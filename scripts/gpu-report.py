#!/usr/bin/env python3
"""Reads the reports a device run wrote under OUT (scripts/gpu-check.sh) and writes its
summaries. Standard library only (it runs on the GPU box).

  gpu-report.py kernels OUT   kernels.jsonl (+ kernels-tests.log): passed/failed per device
  gpu-report.py sanitize OUT  memcheck/racecheck/synccheck logs: the error count of each
  gpu-report.py scan OUT      scan-memdex.jsonl + scan-torch.jsonl -> scan.json
  gpu-report.py ncu OUT       ncu-scan.csv (+ ncu-rank.csv) -> ncu.json: DRAM bytes read, L2 hit
                              rate and duration per profiled launch; DRAM GB/s over the
                              measured copy bandwidth
  gpu-report.py ncu-rank OUT  ncu-rank.csv (the load stage's profile of a ranking batch) ->
                              ncu-rank.json: per kernel (query_inputs, rank_topk) its
                              launches, mean duration and DRAM bytes read
  gpu-report.py rank-median OUT
                              rank-load-run*.json (bench rank invocations at 100 x 5,000) ->
                              rank-load.json: the median invocation (by the ratio to the CPU
                              ranker on all cores), with every invocation's ratio
  gpu-report.py batch OUT     rank-batch-run*.json (bench rank at 100 x 5,000, 256 per batch)
                              + batch-nsys*cuda_gpu_trace*.csv -> batch.json: the median
                              ratio to the CPU ranker on all cores (goal >= 12x; exit 3 when
                              missed) and the per-batch split host prepare / transfers /
                              kernels / host finish
  gpu-report.py load OUT      load-*.txt (wrk, body-checked) + open-*.json -> load.json
  gpu-report.py open-rate OUT CFG
                              80 % of CFG's median body-checked closed-loop rate (the
                              open-loop run's rate), printed as an integer
  gpu-report.py overlap OUT   serve-nsys_cuda_gpu_trace.csv (nsys stats of a serving burst) ->
                              overlap.json: per stream its kernels and busy time, and how
                              long memdex's ranking kernels ran while the encoder's ran on
                              another stream (the model thread embedding the next batch)
  gpu-report.py lsh OUT WORK DEV
                              lsh-index-{DEV,cpu}.json, lsh-info-*.json and WORK/lsh-*.ids ->
                              lsh.json: the two builds' bucket ids compared id by id; exit 0
                              identical, 3 under 0.5 % different, 1 otherwise
  gpu-report.py embed-batch OUT DEV
                              embed-batch-ENC-runR.json -> embed-batch.json: the model's time
                              per batch of 32 queries per CUDA encoder (exit 0 fused <= 0.5 ms,
                              3 above, 1 broken or fell back to candle)
  gpu-report.py embed OUT DEV embed-memdex-runs-ENC.json + embed-st.json -> embed.json: each
                              encoder's best against sentence-transformers fp16 (exit 0 fused
                              >= 3x, 3 below, 1 broken)
  gpu-report.py summary OUT   verdicts.jsonl + the JSONs above -> summary.json, targets.json
  gpu-report.py readme OUT    README.md: provenance, every verdict (FAIL / MISS), the targets,
                              every invocation and raw file (gpu_report_model.py)
  gpu-report.py self-test     each reader on small synthetic reports, good and bad

Each prints one line for gpu-check.sh's verdict and exits 1 when its input shows a failure.
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_report_model as model  # noqa: E402  (the model path's readers)
import gpu_report_device as device  # noqa: E402  (the batch split, the sanitizers' coverage)


def jl(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip().startswith("{")]


def dump(out, name, obj):
    with open(os.path.join(out, name), "w") as f:
        json.dump(obj, f, indent=1)


def device_results(rows, device="cuda:0"):
    """What memdex-kernels-check said about `device`: (checks planned, {check: ok}, tally).
    The plan is the binary's first line ({"plan": [names]}; None from an older binary), each
    check's line is {"check", "device", "ok", ...}, the tally the last line's by_device entry
    (None when the run was cut before it)."""
    plan = next((r["plan"] for r in rows if isinstance(r.get("plan"), list)), None)
    ran = {r["check"]: bool(r.get("ok")) for r in rows
           if "check" in r and r.get("device") == device}
    last = next((r for r in reversed(rows) if "by_device" in r), None)
    tally = last["by_device"].get(device) if last else None
    return plan, ran, tally


def device_passed(rows, device="cuda:0"):
    """Every check planned ran on `device` and passed, by its own lines and its tally (not a
    substring of the output: the CPU reference's tally says "failed":0 too)."""
    plan, ran, tally = device_results(rows, device)
    want = set(plan) if plan is not None else set(ran)
    return (bool(want) and tally is not None and tally.get("failed") == 0
            and tally.get("passed") == len(want) and set(ran) == want and all(ran.values()))


def kernels(out):
    rows = jl(os.path.join(out, "kernels.jsonl"))
    last = next((r for r in reversed(rows) if "by_device" in r), {})
    by = last.get("by_device", {})
    plan, ran, _ = device_results(rows)
    checks = set(plan) if plan is not None else {r["check"] for r in rows if "check" in r}
    cuda = by.get("cuda:0", {"passed": 0, "failed": 0})
    tests = None
    log = os.path.join(out, "kernels-tests.log")
    if os.path.exists(log):
        m = re.findall(r"test result: (\w+)\. (\d+) passed; (\d+) failed", open(log).read())
        tests = {"result": m[-1][0], "passed": int(m[-1][1]), "failed": int(m[-1][2])} if m else None
    # the crate's own tests must have run (a pack without them, or a run cut short, fails)
    ok = (device_passed(rows) and cuda["passed"] == len(checks) > 0
          and by.get("cpu", {}).get("failed", 1) == 0
          and tests is not None and tests["result"] == "ok" and tests["failed"] == 0)
    rep = {"checks": len(checks), "by_device": by, "cargo_tests": tests, "ok": ok,
           "failed_on_cuda": sorted(c for c, good in ran.items() if not good)}
    dump(out, "kernels.json", rep)
    t = f"; cargo tests (MEMDEX_REQUIRE_CUDA={os.environ.get('MEMDEX_REQUIRE_CUDA', 'unset')}) {tests['passed']} passed, {tests['failed']} failed" if tests else "; cargo tests: none run"
    print(f"cuda:0 {cuda['passed']}/{len(checks)} checks passed, CPU reference "
          f"{by.get('cpu', {}).get('passed', 0)}/{len(checks)}{t}"
          + (f"; failed on cuda:0: {', '.join(rep['failed_on_cuda'])}" if rep["failed_on_cuda"] else ""))
    return ok


def sanitize_run(out, run, planned_as):
    """One sanitizer run's entry in sanitize.json (see sanitize); planned_as: (tool, filters)
    from the plan, or None."""
    log = os.path.join(out, f"sanitize-{run}.log")
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    m = re.findall(r"ERROR SUMMARY: (\d+) error", text) or \
        re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error", text)
    warn = re.findall(r"RACECHECK SUMMARY: .*?(\d+) warning", text)
    results = os.path.join(out, f"sanitize-{run}.jsonl")
    rows = jl(results) if os.path.exists(results) else \
        [json.loads(x) for x in text.splitlines() if x.startswith("{")]
    planned, ran, tally = device_results(rows)
    rc_file = os.path.join(out, f"sanitize-{run}.rc")
    rc = open(rc_file).read().strip() if os.path.exists(rc_file) else None
    bench = planned_as is not None and planned_as[1] == ["@bench"]
    passed = rc == "0" and device.bench_complete(rows) if bench else device_passed(rows)
    r = {"errors": int(m[-1]) if m else None, "device_checks": len(ran),
         "planned": len(planned) if planned is not None else None,
         "device_tally": tally, "all_checks_passed": passed,
         "failed_on_cuda": sorted(c for c, good in ran.items() if not good), "exit": rc}
    if warn:
        r["warnings"] = int(warn[-1])
    if rc == "124":
        r["cut_short"] = True
    if text.startswith("not started"):
        r["not_started"] = True
    if bench:
        r["bench"] = True
    r["verdict"] = "PASS" if bool(m) and int(m[-1]) == 0 and passed else "FAIL"
    if planned_as is not None:
        r["tool"], r["groups"] = planned_as
    return r


def sanitize(out):
    """One entry per sanitizer run of the stage (sanitize-plan.txt: `NAME TOOL FILTER... SIZE`,
    one line per run; without it, every sanitize-*.log): the sanitizer's own summary from
    sanitize-NAME.log (memcheck and synccheck end with "ERROR SUMMARY: N errors", racecheck
    with "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)"; none: cut short) and
    the device's results from sanitize-NAME.jsonl (memdex-kernels-check's lines; an older
    layout had them in the log). A run passes when its summary shows 0 errors AND every check
    it planned ran on cuda:0 and passed (an @bench run: exit 0 and every bench line written).
    With a plan, the stage also fails unless every kernel group passed under each tool
    (sanitize_coverage); sanitize.json has PASS/FAIL per run and per group and tool."""
    plan_file = os.path.join(out, "sanitize-plan.txt")
    plan = {}
    if os.path.exists(plan_file):
        for x in open(plan_file):
            f = x.split()
            if f:
                # NAME TOOL FILTER... [SIZE]: the size column (full|small) of the newer plans
                filters = [w for w in f[2:] if w not in ("full", "small")] or ["all"]
                plan[f[0]] = (f[1], filters)
        runs = list(plan)
    else:
        runs = [os.path.basename(p)[len("sanitize-"):-4]
                for p in sorted(glob.glob(os.path.join(out, "sanitize-*.log")))]
    rep = {run: sanitize_run(out, run, plan.get(run)) for run in runs}
    ok = all(r["verdict"] == "PASS" for r in rep.values())
    missing = device.sanitize_coverage(plan, {r: x["verdict"] == "PASS" for r, x in rep.items()}) \
        if plan else []
    ok &= not missing
    dump(out, "sanitize.json", {"runs": rep, "not_covered": [f"{g}/{t}" for g, t in missing],
                                "verdict": "PASS" if ok and rep else "FAIL"})

    def line(t, r):
        if r.get("not_started"):
            return f"{t}: not started (the stage's time was spent)"
        if r["errors"] is None:
            return f"{t}: cut short ({r['device_checks']} device checks ran)"
        if r.get("bench"):
            return f"{t}: {r['errors']} errors, bench {'complete' if r['verdict'] == 'PASS' else 'INCOMPLETE (exit ' + str(r['exit']) + ')'}"
        bad = f", FAILED on cuda:0: {', '.join(r['failed_on_cuda'])}" if r["failed_on_cuda"] else \
            ("" if r["all_checks_passed"] else ", device results incomplete")
        return f"{t}: {r['errors']} errors over {r['device_checks']} device checks{bad}"
    cover = (f"; not covered: {', '.join(f'{g}/{t}' for g, t in missing)}" if missing else
             "; every kernel group under " + ", ".join(device.SANITIZE_TOOLS)) if plan else ""
    print(("; ".join(line(t, r) for t, r in rep.items()) or "no sanitizer logs") + cover)
    return ok and bool(rep)


# Targets of the tensor-core scan against torch's grouped bmm, memdex's host grouping counted
SCAN_GOALS = {"per_tenant_10x": 1.5, "per_tenant_1x": 1.2}


def scan(out):
    """scan.json: per case and scan variant (cases: the CUDA-core scan; tensor_cases: the
    tensor-core scan) the time against torch's. Returns 0, or 3 when a tensor-core goal of
    SCAN_GOALS was missed (a MISS verdict)."""
    m = jl(os.path.join(out, "scan-memdex.jsonl"))
    t = jl(os.path.join(out, "scan-torch.jsonl"))
    copy = next(x for x in m if x["bench"] == "d2d_copy")["gb_per_s"]
    rep = {"copy_gb_per_s": copy, "device": next((x for x in m if x["bench"] == "device"), {}),
           "torch_copy_gb_per_s": next((x["gb_per_s"] for x in t if x["bench"] == "torch_d2d_copy"), None),
           "cases": {}, "tensor_cases": {}, "goals": {}}
    for x in (x for x in m if x["bench"] == "segmented_topk"):
        c = x["case"]
        tor = {y["case"]: y["ms"] for y in t if y.get("case", "").startswith(c)}
        row = {k: x.get(k) for k in ("ms", "queries", "per_tenant", "logical_bytes", "distinct_bytes",
                                      "scan_gb_per_s", "distinct_gb_per_s", "fraction_of_copy_bw",
                                      "distinct_fraction_of_copy_bw", "queries_per_s",
                                      "tiles", "longest_tile", "host_group_ms", "splits",
                                      "variant", "kernel")}
        for label, key in (("torch_gather", c), ("torch_grouped", c + "_grouped"),
                           ("torch_no_gather", c + "_no_gather")):
            if key in tor:
                row[label + "_ms"] = tor[key]
                row["speedup_vs_" + label] = tor[key] / x["ms"]
        if "torch_grouped_ms" in row and x.get("host_group_ms") is not None:
            row["speedup_vs_torch_grouped_with_host_grouping"] = \
                row["torch_grouped_ms"] / (x["ms"] + x["host_group_ms"])
        tensor = x.get("variant") == "tensor_cores"
        rep["tensor_cases" if tensor else "cases"][c] = row
    rep["other"] = [x for x in m if x["bench"] in ("segmented_topk_lsh", "fragrel_topk", "lsh_project")]
    missed = False
    for c, goal in SCAN_GOALS.items():
        r = rep["tensor_cases"].get(c, {})
        got = r.get("speedup_vs_torch_grouped_with_host_grouping")
        if r and r.get("kernel") == "memdex_tensor_topk" and got is not None:
            rep["goals"][c] = {"goal": goal, "got": got, "met": got >= goal}
            missed |= got < goal
        elif rep["tensor_cases"]:
            rep["goals"][c] = {"goal": goal, "got": None, "met": False}
            missed = True
    dump(out, "scan.json", rep)

    def parts(cases):
        out = []
        for c, r in cases.items():
            g = r.get("speedup_vs_torch_grouped") or r.get("speedup_vs_torch_gather")
            h = r.get("speedup_vs_torch_grouped_with_host_grouping")
            out.append(f"{c} {r['ms']:.2f} ms ({r.get('distinct_gb_per_s') or 0:.0f} GB/s distinct, "
                       f"{r['scan_gb_per_s']:.0f} logical; {g and round(g, 2)}x torch grouped"
                       + (f", {h:.2f}x with host grouping" if h else "") + ")")
        return "; ".join(out)
    goals = "; ".join(f"{c}: {x['got'] and round(x['got'], 2)}x, goal >= {x['goal']}x "
                      f"{'met' if x['met'] else 'MISSED'}" for c, x in rep["goals"].items())
    print(f"copy {copy:.0f} GB/s; CUDA cores: {parts(rep['cases'])}"
          + (f"; tensor cores: {parts(rep['tensor_cases'])}; goals (tensor cores vs torch "
             f"grouped, host grouping counted): {goals}" if rep["tensor_cases"] else ""))
    return 3 if missed else 0


def ncu_rows(path):
    """The raw page of `ncu --csv --page raw --print-units base`: one dict per launch."""
    lines = [x for x in open(path, errors="replace") if x.startswith('"')]
    rows = list(csv.DictReader(lines))
    num = lambda v: float(v.replace(",", "")) if re.fullmatch(r"[\d,.eE+-]+", v or "") else None
    out = []
    for r in rows:
        if not (r.get("ID") or "").strip().isdigit():
            continue  # the units row
        row = {"id": int(r["ID"]), "kernel": r.get("Kernel Name", ""),
               "dram_bytes_read": num(r.get("dram__bytes_read.sum", "")),
               "l2_hit_pct": num(r.get("lts__t_sector_hit_rate.pct", "")),
               "duration_ns": num(r.get("gpu__time_duration.sum", ""))}
        for metric, key in NCU_COUNTERS.items():
            if metric in r:
                row[key] = num(r[metric])
        out.append(row)
    return out


# The ncu stage's instruction, pipe and shared-memory counters (beside DRAM bytes and time)
NCU_COUNTERS = {
    "smsp__inst_executed.sum": "instructions",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "fma_pipe_pct",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pipe_pct",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared_load_wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared_load_bank_conflicts",
}


def ncu_cases(rows, cases, copy, rep, lines, tag):
    """The timed launch of each case (rows: one scan's launches in order, warm-up then timed)."""
    for i, case in enumerate(("per_tenant_1x", "per_tenant_10x", "single_query_all_rows")):
        if 2 * i + 1 >= len(rows):
            break
        r = dict(rows[2 * i + 1])
        c = cases.get(case, {})
        if r["dram_bytes_read"] and r["duration_ns"]:
            r["dram_gb_per_s"] = r["dram_bytes_read"] / r["duration_ns"]
            r["fraction_of_copy_bw"] = r["dram_gb_per_s"] / copy
        r["logical_bytes"], r["distinct_bytes"] = c.get("logical_bytes"), c.get("distinct_bytes")
        rep[case] = r
        extra = "".join(f", {k} {r[k]:.3g}" for k in NCU_COUNTERS.values() if r.get(k) is not None)
        lines.append(f"{tag}{case}: DRAM {(r['dram_bytes_read'] or 0) / 1e9:.2f} GB read (distinct "
                     f"{(r['distinct_bytes'] or 0) / 1e9:.2f}, logical {(r['logical_bytes'] or 0) / 1e9:.2f})"
                     f" in {(r['duration_ns'] or 0) / 1e6:.2f} ms = {r.get('fraction_of_copy_bw', 0):.0%} "
                     f"of copy, L2 hit {r['l2_hit_pct']}%{extra}")


def ncu(out):
    scan_rep = json.load(open(os.path.join(out, "scan.json")))
    copy = scan_rep["copy_gb_per_s"]
    lines = []
    rep = {"copy_gb_per_s": copy, "note": "ncu --cache-control all (caches flushed before each "
           "profiled launch), --clock-control none", "scan": {}, "rank": []}
    every = ncu_rows(os.path.join(out, "ncu-scan.csv"))
    # memdex-gpu-bench --repeats 1: per case and scan a warm-up launch then the timed one; the
    # CUDA-core scan's launches (memdex_segmented_topk_*) and the tensor-core scan's apart
    for family, key, cases in (("segmented_topk", "scan", scan_rep["cases"]),
                               ("tensor_topk", "tensor", scan_rep.get("tensor_cases", {}))):
        rows = [r for r in every if family in r["kernel"]]
        rep.setdefault(key, {})
        ncu_cases(rows, cases, copy, rep[key], lines, "" if key == "scan" else "tensor ")
    rank_csv = os.path.join(out, "ncu-rank.csv")
    if os.path.exists(rank_csv):
        for r in ncu_rows(rank_csv):
            if r["dram_bytes_read"] and r["duration_ns"]:
                r["dram_gb_per_s"] = r["dram_bytes_read"] / r["duration_ns"]
                r["fraction_of_copy_bw"] = r["dram_gb_per_s"] / copy
            rep["rank"].append(r)
        if rep["rank"]:
            r = rep["rank"][-1]
            lines.append(f"rank: DRAM {r['dram_bytes_read'] / 1e6:.1f} MB in "
                         f"{r['duration_ns'] / 1e6:.3f} ms, L2 hit {r['l2_hit_pct']}%")
    dump(out, "ncu.json", rep)
    print("; ".join(lines) or "no ncu rows")
    return bool(rep["scan"])


def ncu_rank(out):
    """Where a profiled ranking batch's device time goes, per kernel (the `_d512` and tile
    width `_tN` instantiations folded in)."""
    per = {}
    for r in ncu_rows(os.path.join(out, "ncu-rank.csv")):
        name = re.sub(r"(_d512)?(_t\d+)?$", "", r["kernel"].split("(")[0].strip())
        k = per.setdefault(name, {"launches": 0, "ms": 0.0, "dram_mb": 0.0})
        k["launches"] += 1
        k["ms"] += (r["duration_ns"] or 0) / 1e6
        k["dram_mb"] += (r["dram_bytes_read"] or 0) / 1e6
    for k in per.values():
        k["mean_ms"], k["mean_dram_mb"] = k["ms"] / k["launches"], k["dram_mb"] / k["launches"]
    dump(out, "ncu-rank.json", per)
    print("; ".join(f"{n}: {k['launches']} launches, {k['mean_ms']:.3f} ms and "
                    f"{k['mean_dram_mb']:.1f} MB from DRAM each" for n, k in sorted(per.items()))
          or "no ncu rows")
    return bool(per)


def rank_median(out):
    """The median of the bench rank invocations (by speedup_vs_parallel) as rank-load.json."""
    runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "rank-load-run*.json")))]
    if not runs:
        print("no bench rank invocation")
        return False
    ratios = [r["speedup_vs_parallel"] for r in runs]
    median = sorted(runs, key=lambda r: r["speedup_vs_parallel"])[(len(runs) - 1) // 2]
    median["invocations"] = [{"speedup_vs_parallel": r["speedup_vs_parallel"],
                              "ranker_ms_per_batch": r["agreement"]["ranker_ms_per_batch"],
                              "cpu_parallel_ms_per_batch": r["agreement"]["cpu_parallel_ms_per_batch"],
                              "host_ms_per_batch": r.get("kernel_batches", {}).get("host_ms_per_batch")}
                             for r in runs]
    dump(out, "rank-load.json", median)
    print(f"bench rank, {len(runs)} invocations: median {median['speedup_vs_parallel']:.2f}x the "
          f"CPU ranker on all cores (each: {', '.join(f'{x:.2f}x' for x in ratios)})")
    return True


def wrk_run(path):
    t = open(path).read()
    g = lambda pat, f=float: (lambda m: f(m.group(1)) if m else None)(re.search(pat, t))
    return {"file": os.path.basename(path), "requests_per_s": g(r"Requests/sec:\s+([\d.]+)"),
            "ok": g(r"body_checked ok=(\d+)", int), "wrong": g(r"body_checked ok=\d+ wrong=(\d+)", int),
            "ok_per_s": g(r"ok_per_s=([\d.]+)"), "checks": g(r"checks: (.*)", str),
            "planted_ok": g(r"planted_checked ok=(\d+)", int),
            "planted_wrong": g(r"planted_checked ok=\d+ wrong=(\d+)", int),
            "p50_ms": (g(r"latency_us p50=(\d+)") or 0) / 1e3,
            "p99_ms": (g(r"latency_us p50=\d+ p90=\d+ p99=(\d+)") or 0) / 1e3}


def load(out):
    rep, ok, lines = {}, True, []
    for f in sorted(glob.glob(os.path.join(out, "load-*-run*.txt"))):
        cfg = re.match(r"load-(.+)-run\d+\.txt", os.path.basename(f)).group(1)
        rep.setdefault(cfg, {"closed": []})["closed"].append(wrk_run(f))
    for f in sorted(glob.glob(os.path.join(out, "open-*.json"))):
        cfg = os.path.basename(f)[5:-5]
        try:
            rep.setdefault(cfg, {"closed": []})["open"] = json.load(open(f))
        except ValueError:
            rep.setdefault(cfg, {"closed": []})["open"] = {"error": "no report"}
    for cfg, r in rep.items():
        runs = r["closed"]
        wrong = sum((x["wrong"] if x["wrong"] is not None else 1) for x in runs)
        # every run must have checked planted questions' first hits (a run of an older Lua,
        # or against a store without them, checked only the tenant)
        planted = sum(x["planted_ok"] or 0 for x in runs)
        unplanted = sum(1 for x in runs if not x["planted_ok"])
        r["runs"], r["wrong_total"], r["planted_ok_total"] = len(runs), wrong, planted
        r["median_ok_per_s"] = statistics.median([x["ok_per_s"] or 0 for x in runs]) if runs else 0
        r["median_p99_ms"] = statistics.median([x["p99_ms"] for x in runs]) if runs else None
        o = r.get("open", {})
        ow = sum(o.get("errors", {}).values()) if "errors" in o else 1
        oplanted = o.get("planted_ok") or 0
        ok &= wrong == 0 and len(runs) >= 3 and ow == 0 and unplanted == 0 and oplanted > 0
        lines.append(f"{cfg}: closed {r['median_ok_per_s']:.0f}/s body-checked (median of "
                     f"{len(runs)}, p99 {r['median_p99_ms']} ms, {wrong} wrong, {planted} planted "
                     f"first hits right{f', {unplanted} runs without' if unplanted else ''}); open "
                     f"{o.get('target_rate') or 0:.0f}/s -> p99 {o.get('latency_ms', {}).get('p99')} ms, "
                     f"{ow} wrong, {oplanted} planted first hits right")
    model.load_details(out, rep)
    dump(out, "load.json", rep)
    print("; ".join(lines) or "no load runs")
    return ok and bool(rep)


def open_rate(out, cfg):
    runs = [wrk_run(f) for f in sorted(glob.glob(os.path.join(out, f"load-{cfg}-run*.txt")))]
    rates = [x["ok_per_s"] or 0 for x in runs]
    print(round(0.8 * statistics.median(rates)) if rates else 0)
    return bool(rates)


def gpu_trace(path):
    """Kernel rows of nsys's cuda_gpu_trace CSV: (start ns, end ns, stream, name); memory
    copies and sets are left out."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            col = lambda prefix: next(v for k, v in r.items() if k and k.startswith(prefix))
            name = col("Name")
            if name.startswith("[CUDA"):
                continue
            start, dur = float(col("Start")), float(col("Duration"))
            rows.append((start, start + dur, col("Strm"), name))
    return rows


def busy_union(spans):
    """Merged (start, end) intervals of `spans`."""
    merged = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def intersect_ns(xs, ys):
    """Nanoseconds two lists of merged intervals overlap."""
    i = j = 0
    total = 0.0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        total += max(0.0, hi - lo)
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap(out):
    paths = sorted(glob.glob(os.path.join(out, "serve-nsys*cuda_gpu_trace*.csv")))
    rows = gpu_trace(paths[0])
    rank = [r for r in rows if r[3].startswith("memdex_")]
    enc = [r for r in rows if not r[3].startswith("memdex_")]
    streams = {}
    for a, b, st, name in rows:
        x = streams.setdefault(st, {"kernels": 0, "rank_kernels": 0, "busy_ns": 0.0})
        x["kernels"] += 1
        x["rank_kernels"] += name.startswith("memdex_")
        x["busy_ns"] += b - a
    # only an encoder kernel on another stream than the ranking kernel counts as overlap
    both = 0.0
    for st in {r[2] for r in rank}:
        mine = busy_union([(a, b) for a, b, s, _ in rank if s == st])
        others = busy_union([(a, b) for a, b, s, _ in enc if s != st])
        both += intersect_ns(mine, others)
    rank_ns = sum(b - a for a, b in busy_union([(a, b) for a, b, _, _ in rank]))
    rep = {"trace": os.path.basename(paths[0]), "streams": streams,
           "rank_kernel_ns": rank_ns, "encoder_kernel_ns": sum(b - a for a, b, _, _ in enc),
           "rank_overlapped_ns": both, "rank_overlapped_share": both / rank_ns if rank_ns else 0.0}
    dump(out, "overlap.json", rep)
    print(f"{len(streams)} streams; ranking kernels {rank_ns / 1e6:.1f} ms, of which "
          f"{both / 1e6:.1f} ms ({100 * rep['rank_overlapped_share']:.0f} %) beside encoder "
          f"kernels on another stream")
    return bool(rows)


def lsh(out, work, dev):
    from array import array
    r = {}
    for w in (dev, "cpu"):
        ix = json.load(open(os.path.join(out, f"lsh-index-{w}.json")))
        info = json.load(open(os.path.join(out, f"lsh-info-{w}.json")))["lsh"]
        ids = array("H")
        with open(os.path.join(work, f"lsh-{w}.ids"), "rb") as f:
            ids.frombytes(f.read())
        if sys.byteorder != "little":
            ids.byteswap()
        st = ix.get("stages", {})
        r[w] = {"ids": ids, "rows": info["rows"], "tables": info["tables"],
                "digest": info["digest"], "write_s": st.get("write"), "wall_s": st.get("wall")}
    a, b = r[dev]["ids"], r["cpu"]["ids"]
    differ = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
    pairs = max(len(a), len(b))
    rep = {w: {k: v for k, v in x.items() if k != "ids"} for w, x in r.items()}
    rep.update(pairs=pairs, differ=differ, identical=differ == 0 and pairs > 0)
    dump(out, "lsh.json", rep)
    print(f"bucket ids of {r[dev]['rows']} rows x {r[dev]['tables']} tables: "
          f"{'identical' if rep['identical'] else f'{differ} of {pairs} differ'}; write stage "
          f"{r[dev]['write_s']} s with --lsh-device {dev}, {r['cpu']['write_s']} s with cpu "
          f"(wall {r[dev]['wall_s']} / {r['cpu']['wall_s']} s)")
    if rep["identical"]:
        return 0
    return 3 if pairs and differ < 0.005 * pairs else 1


def summary(out):
    verdicts = jl(os.path.join(out, "verdicts.jsonl")) if os.path.exists(os.path.join(out, "verdicts.jsonl")) else []
    smi = open(os.path.join(out, "smi.csv")).read().splitlines() if os.path.exists(os.path.join(out, "smi.csv")) else []
    s = {"device": smi[1].split(",")[0].strip() if len(smi) > 1 else None,
         "commit": open(os.path.join(out, "COMMIT")).read().strip() if os.path.exists(os.path.join(out, "COMMIT")) else None,
         "verdicts": verdicts}
    s["targets"] = model.targets(out)
    for name in ("kernels", "sanitize", "scan", "ncu", "load", "overlap", "lsh", "eval-diff", "embed",
                 "rank-load", "embed-batch", "batch"):
        p = os.path.join(out, name + ".json")
        if os.path.exists(p):
            try:
                s[name.replace("-", "_")] = json.load(open(p))
            except ValueError:
                s[name.replace("-", "_")] = {"error": "unreadable"}
    s["failed"] = [v["stage"] for v in verdicts if v["status"] == "FAIL"]
    s["missed"] = [v["stage"] for v in verdicts if v["status"] == "MISS"]
    dump(out, "summary.json", s)
    print(f"{len(verdicts)} verdicts; failed {s['failed']}; missed {s['missed']}")
    return not s["failed"]


def self_test():
    """Writes small reports of each kind, good and bad, and asserts each reader's verdict."""
    import contextlib
    import io
    import tempfile

    def w(d, name, text):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)

    def run(fn, d):
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(d)

    check = lambda name, dev, ok=True: json.dumps({"check": name, "device": dev, "ok": ok})  # noqa: E731
    wrk = ("Requests/sec: 100.0\nbody_checked ok=%d wrong=%d ok_per_s=100.0\n"
           "planted_checked ok=%d wrong=0 (one search in 4)\n"
           "latency_us p50=1000 p90=2000 p99=3000 max=4000\n")
    opened = json.dumps({"target_rate": 80, "errors": {}, "latency_ms": {"p99": 3.0},
                         "planted_ok": 200})
    ncu_csv = ('"ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum",'
               '"lts__t_sector_hit_rate.pct"\n"","","byte","nsecond","%"\n'
               + "".join(f'"{i}","memdex_segmented_topk","3,840,000,000","1000000","5"\n'
                         for i in range(6)))
    results = []
    with tempfile.TemporaryDirectory() as d:
        both = [check("a", "cpu"), check("a", "cuda:0"), check("b", "cpu"), check("b", "cuda:0")]
        plan = json.dumps({"plan": ["a", "b"]})
        tally = {"passed": 4, "failed": 0, "by_device": {"cpu": {"passed": 2, "failed": 0},
                                                           "cuda:0": {"passed": 2, "failed": 0}}}
        tests_log = "test result: ok. 4 passed; 0 failed; 0 ignored\n"
        w(d, "kernels.jsonl", "\n".join([plan] + both + [json.dumps(tally)]))
        results.append(("kernels without the crate's tests", run(kernels, d), False))
        w(d, "kernels-tests.log", tests_log)
        results.append(("kernels all pass", run(kernels, d), True))
        tally["by_device"]["cuda:0"] = {"passed": 1, "failed": 1}
        w(d, "kernels.jsonl", "\n".join([plan] + both + [json.dumps(tally)]))
        results.append(("kernels cuda failure", run(kernels, d), False))
        # a check the binary planned but never ran on cuda:0 (tally and lines agree)
        tally["by_device"]["cuda:0"] = {"passed": 1, "failed": 0}
        w(d, "kernels.jsonl", "\n".join([plan] + both[:3] + [json.dumps(tally)]))
        results.append(("kernels check missing on cuda:0", run(kernels, d), False))
        tally["by_device"]["cuda:0"] = {"passed": 2, "failed": 0}
        os.remove(os.path.join(d, "kernels.jsonl"))

        # the sanitizer stage: sanitize-plan.txt names the runs; each has the sanitizer's
        # report (.log) and the device's results (.jsonl)
        def san(name, summary, lines):
            w(d, f"sanitize-{name}.log", "========= COMPUTE-SANITIZER\n" + summary)
            w(d, f"sanitize-{name}.jsonl", "\n".join(lines))
        cuda_ok = lambda names, failed=(): [json.dumps({"plan": names})] + [  # noqa: E731
            json.dumps({"check": n, "device": "cuda:0", "ok": n not in failed}) for n in names] + [
            json.dumps({"passed": len(names) - len(failed), "failed": len(failed), "by_device": {
                "cuda:0": {"passed": len(names) - len(failed), "failed": len(failed)}}})]
        clean = "========= ERROR SUMMARY: 0 errors\n"
        race_clean = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
        # a plan covering every group under each tool: memcheck and synccheck over every check,
        # racecheck per group, each tool over the bench
        groups = ("selection", "scores", "tensor_scan", "fragrel", "lsh", "rank_matches",
                  "rank_parts", "rank_text")
        full = (["memcheck memcheck all full", "synccheck synccheck all full"]
                + [f"racecheck-{g} racecheck {g} small" for g in groups]
                + [f"{t}-bench {t} @bench full" for t in device.SANITIZE_TOOLS])
        bench_rows = [json.dumps({"bench": "segmented_topk", "case": c, "variant": v})
                      for c in ("a", "b", "c") for v in ("cuda_cores", "tensor_cores")] + [
            json.dumps({"bench": "fragrel_topk"})]

        def all_clean(plan):
            w(d, "sanitize-plan.txt", "\n".join(plan) + "\n")
            for x in plan:
                name, tool = x.split()[:2]
                summary = race_clean if tool == "racecheck" else clean
                if "@bench" in x:
                    san(name, summary, bench_rows)
                    w(d, f"sanitize-{name}.rc", "0\n")
                else:
                    san(name, summary, cuda_ok([name + "_a"]))
        w(d, "sanitize-plan.txt", "\n".join(full) + "\n")
        san("memcheck", clean, cuda_ok(["a", "b"]))
        results.append(("sanitize: a planned run missing", run(sanitize, d), False))
        all_clean(full)
        results.append(("sanitize clean, every group under each tool", run(sanitize, d), True))
        rep_ = json.load(open(os.path.join(d, "sanitize.json")))
        results.append(("sanitize.json: PASS per run", rep_["verdict"] == "PASS" and all(
            r["verdict"] == "PASS" for r in rep_["runs"].values()), True))
        all_clean([x for x in full if "tensor_scan" not in x])
        results.append(("sanitize: the tensor scan left out of racecheck", run(sanitize, d), False))
        results.append(("sanitize.json names what is not covered", json.load(open(
            os.path.join(d, "sanitize.json")))["not_covered"] == ["tensor/racecheck"], True))
        all_clean(full)
        san("racecheck-bench", race_clean, bench_rows[:3])
        results.append(("sanitize: bench under racecheck incomplete", run(sanitize, d), False))
        all_clean(full)
        w(d, "sanitize-synccheck-bench.rc", "1\n")
        results.append(("sanitize: bench under synccheck exits 1", run(sanitize, d), False))
        all_clean(full)
        san("racecheck-rank_matches", "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, "
            "0 warnings)\n", cuda_ok(["rank_a"]))
        results.append(("racecheck hazards", run(sanitize, d), False))
        san("racecheck-rank_matches", "", cuda_ok(["rank_a"])[:2])
        results.append(("racecheck cut short", run(sanitize, d), False))
        # the sanitizer finds no error but a check fails on the device: a failure
        san("racecheck-rank_matches", race_clean, cuda_ok(["rank_a"], failed=["rank_a"]))
        results.append(("racecheck clean, device check failed", run(sanitize, d), False))
        san("racecheck-rank_matches", race_clean, cuda_ok(["rank_a"]))
        # the sanitizer's summary came, the device's tally did not (results cut)
        san("memcheck", clean, cuda_ok(["a", "b"])[:3])
        results.append(("memcheck clean, device tally missing", run(sanitize, d), False))
        for f in glob.glob(os.path.join(d, "sanitize-*")):
            os.remove(f)
        # the layout of the 2026-11-26 runs (results inside the log, both devices run): the CPU
        # reference passes, cuda:0 fails, and the CPU's '"failed":0' must not read as a pass
        old = ('========= COMPUTE-SANITIZER\n{"check":"a","device":"cpu","ok":true}\n'
               '{"check":"a","device":"cuda:0","ok":%s}\n{"by_device":{"cpu":{"failed":0,'
               '"passed":1},"cuda:0":{"failed":%d,"passed":%d}},"cuda":true,"failed":%d,'
               '"passed":%d}\n========= ERROR SUMMARY: 0 errors\n')
        w(d, "sanitize-memcheck.log", old % ("true", 0, 1, 0, 2))
        results.append(("old layout, clean", run(sanitize, d), True))
        w(d, "sanitize-memcheck.log", old % ("false", 1, 0, 1, 1))
        results.append(("old layout, CPU passes and cuda:0 fails", run(sanitize, d), False))
        os.remove(os.path.join(d, "sanitize-memcheck.log"))
        w(d, "scan-memdex.jsonl", json.dumps({"bench": "d2d_copy", "gb_per_s": 4000.0}) + "\n"
          + json.dumps({"bench": "segmented_topk", "case": "per_tenant_1x", "ms": 1.0,
                        "scan_gb_per_s": 3840.0, "fraction_of_copy_bw": 0.96}))
        w(d, "scan-torch.jsonl", json.dumps({"bench": "torch_matmul_topk",
                                             "case": "per_tenant_1x_grouped", "ms": 2.0}))
        results.append(("scan", run(scan, d) == 0, True))
        speed = json.load(open(os.path.join(d, "scan.json")))["cases"]["per_tenant_1x"]
        results.append(("scan speedup 2x", speed.get("speedup_vs_torch_grouped") == 2.0, True))
        # the tensor-core scan's goals, host grouping counted: 10x 2.0 / (1.0 + 0.2) = 1.67x
        # (>= 1.5 met), 1x 1.3 / (1.0 + 0.1) = 1.18x (< 1.2 missed), then 1.4 / 1.1 = 1.27x
        def tensor_case(case, host):
            return json.dumps({"bench": "segmented_topk", "case": case, "ms": 1.0,
                               "variant": "tensor_cores", "kernel": "memdex_tensor_topk",
                               "host_group_ms": host, "scan_gb_per_s": 1.0})
        base = open(os.path.join(d, "scan-memdex.jsonl")).read()
        w(d, "scan-memdex.jsonl", "\n".join([base, tensor_case("per_tenant_10x", 0.2),
                                             tensor_case("per_tenant_1x", 0.1)]))
        torch_lines = lambda one: "\n".join(json.dumps(  # noqa: E731
            {"bench": "torch_matmul_topk", "case": c, "ms": ms})
            for c, ms in (("per_tenant_1x_grouped", one), ("per_tenant_10x_grouped", 2.0)))
        w(d, "scan-torch.jsonl", torch_lines(1.3))
        results.append(("scan: the 1x tensor goal missed", run(scan, d) == 3, True))
        goals = json.load(open(os.path.join(d, "scan.json")))["goals"]
        results.append(("scan goals read", goals["per_tenant_10x"]["met"]
                        and not goals["per_tenant_1x"]["met"], True))
        w(d, "scan-torch.jsonl", torch_lines(1.4))
        results.append(("scan: both tensor goals met", run(scan, d) == 0, True))
        w(d, "ncu-scan.csv", ncu_csv)
        results.append(("ncu", run(ncu, d), True))
        frac = json.load(open(os.path.join(d, "ncu.json")))["scan"]["per_tenant_1x"]
        results.append(("ncu fraction 0.96", abs(frac["fraction_of_copy_bw"] - 0.96) < 1e-9, True))
        # both scans' launches, interleaved, with a counter column: each family read apart
        w(d, "ncu-scan.csv", ncu_csv.replace('"lts__t_sector_hit_rate.pct"',
                                             '"lts__t_sector_hit_rate.pct","smsp__inst_executed.sum"')
          .replace('"%"', '"%","inst"').replace('"5"\n', '"5","1,000"\n')
          + "".join(f'"{i}","memdex_tensor_topk","1,000,000,000","500000","5","7"\n'
                    for i in range(6, 12)))
        results.append(("ncu, both scans", run(ncu, d), True))
        both = json.load(open(os.path.join(d, "ncu.json")))
        results.append(("ncu: the tensor scan's launches and counters apart",
                        both["tensor"]["per_tenant_10x"]["duration_ns"] == 500000
                        and both["tensor"]["per_tenant_10x"]["instructions"] == 7
                        and both["scan"]["per_tenant_10x"]["instructions"] == 1000, True))
        w(d, "ncu-rank.csv", ncu_csv.replace("memdex_segmented_topk", "memdex_query_inputs", 2)
          .replace("memdex_segmented_topk", "memdex_rank_dense_d512_t16", 2)
          .replace("memdex_segmented_topk", "memdex_rank_topk"))
        results.append(("ncu-rank", run(ncu_rank, d), True))
        per = json.load(open(os.path.join(d, "ncu-rank.json")))
        results.append(("ncu-rank per kernel", per["memdex_query_inputs"]["launches"] == 2
                        and per["memdex_rank_dense"]["launches"] == 2
                        and per["memdex_rank_topk"]["launches"] == 2
                        and per["memdex_rank_topk"]["mean_ms"] == 1.0, True))
        w(d, "ncu-rank.csv", "")
        results.append(("ncu-rank without rows", run(ncu_rank, d), False))
        results.append(("rank-median without runs", run(rank_median, d), False))
        for i, x in enumerate((3.0, 5.0, 4.0)):
            w(d, f"rank-load-run{i + 1}.json", json.dumps(
                {"speedup_vs_parallel": x, "kernel_batches": {"host_ms_per_batch": 1.0},
                 "agreement": {"ranker_ms_per_batch": 10 / x, "cpu_parallel_ms_per_batch": 10.0}}))
        results.append(("rank-median", run(rank_median, d), True))
        med = json.load(open(os.path.join(d, "rank-load.json")))
        results.append(("rank-median is the middle run", med["speedup_vs_parallel"] == 4.0
                        and len(med["invocations"]) == 3, True))
        for r in (1, 2, 3):
            w(d, f"load-gpu-run{r}.txt", wrk % (1000, 0, 250))
        w(d, "open-gpu.json", opened)
        results.append(("load clean", run(load, d), True))
        w(d, "load-gpu-run2.txt", wrk % (990, 10, 240))
        results.append(("load wrong bodies", run(load, d), False))
        w(d, "load-gpu-run2.txt", wrk % (1000, 0, 0))
        results.append(("load run without planted questions", run(load, d), False))
        w(d, "load-gpu-run2.txt", wrk % (1000, 0, 250))
        w(d, "open-gpu.json", json.dumps({**json.loads(opened), "planted_ok": 0}))
        results.append(("open loop without planted questions", run(load, d), False))
        w(d, "open-gpu.json", opened)
        os.remove(os.path.join(d, "open-gpu.json"))
        results.append(("load without open loop", run(load, d), False))
        # nsys's cuda_gpu_trace: a rank kernel half beside a gemm of another stream, one
        # beside a kernel of its own stream only (not overlap), a copy (left out)
        trace = ('"Start (ns)","Duration (ns)","CorrId","Strm","Name"\n'
                 '1000,1000,1,7,"ampere_sgemm_128x64_nn"\n'
                 '1500,1000,2,13,"memdex_rank_topk"\n'
                 '5000,1000,3,13,"memdex_rank_topk"\n'
                 '5200,500,4,13,"candle_affine"\n'
                 '5000,3000,5,7,"[CUDA memcpy Host-to-Device]"\n')
        w(d, "serve-nsys_cuda_gpu_trace.csv", trace)
        results.append(("overlap read", run(overlap, d), True))
        rep = json.load(open(os.path.join(d, "overlap.json")))
        results.append(("overlap: only another stream's encoder kernels count",
                        rep["rank_overlapped_ns"] == 500 and rep["rank_kernel_ns"] == 2000, True))
        # lsh: the device's ids against the CPU's, identical / a few differ / many differ
        from array import array
        for wh in ("cuda", "cpu"):
            w(d, f"lsh-index-{wh}.json", json.dumps({"stages": {"write": 1.0, "wall": 9.0}}))
            w(d, f"lsh-info-{wh}.json", json.dumps(
                {"lsh": {"rows": 250, "tables": 4, "digest": "x"}}))
        def ids(path, flips):
            a = array("H", [i % 64 for i in range(1000)])
            for i in range(flips):
                a[i] = (a[i] + 1) % 64
            if sys.byteorder != "little":
                a.byteswap()
            with open(os.path.join(d, path), "wb") as f:
                f.write(a.tobytes())
        ids("lsh-cpu.ids", 0)
        for flips, want in ((0, 0), (4, 3), (6, 1)):
            ids("lsh-cuda.ids", flips)
            with open(os.devnull, "w") as null:
                saved, sys.stdout = sys.stdout, null
                try:
                    got = lsh(d, d, "cuda")
                finally:
                    sys.stdout = saved
            results.append((f"lsh with {flips} of 1000 ids different", got == want, True))
        w(d, "verdicts.jsonl", json.dumps({"stage": "x", "status": "FAIL", "detail": ""}))
        results.append(("summary with a FAIL", run(summary, d), False))
    with tempfile.TemporaryDirectory() as d:
        # the model path's readers (gpu_report_model.py): exit codes and values
        results += [(n, got == want, True) for n, got, want in model.self_test(d)]
        # the batch stage's reader (gpu_report_device.py)
        results += device.self_test(d)
    bad = [(n, got, want) for n, got, want in results if bool(got) != want]
    for n, got, want in results:
        print(f"{'ok  ' if bool(got) == want else 'FAIL'} {n}: {bool(got)} (want {want})")
    return not bad


if __name__ == "__main__":
    if sys.argv[1:] == ["self-test"]:
        sys.exit(0 if self_test() else 1)
    if len(sys.argv) == 5 and sys.argv[1] == "lsh":
        try:
            sys.exit(lsh(*sys.argv[2:5]))
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"lsh: unreadable report ({type(e).__name__}: {e})")
            sys.exit(1)
    if len(sys.argv) == 4 and sys.argv[1] == "open-rate":
        sys.exit(0 if open_rate(sys.argv[2], sys.argv[3]) else 1)
    readers = {"embed-batch": model.embed_batch, "embed": model.embed}
    if len(sys.argv) == 4 and sys.argv[1] in readers:
        try:
            rc, line = readers[sys.argv[1]](sys.argv[2], sys.argv[3])
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
            rc, line = 1, f"{sys.argv[1]}: unreadable report ({type(e).__name__}: {e})"
        print(line)
        sys.exit(rc)
    if sys.argv[1:2] == ["readme"] and len(sys.argv) == 3:
        rc, line = model.readme(sys.argv[2])
        print(line)
        sys.exit(rc)
    cmds = {"kernels": kernels, "sanitize": sanitize, "scan": scan, "ncu": ncu, "load": load,
            "ncu-rank": ncu_rank, "rank-median": rank_median, "overlap": overlap, "batch": device.batch,
            "summary": summary}
    if len(sys.argv) != 3 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    try:
        ok = cmds[sys.argv[1]](sys.argv[2])
    except (OSError, ValueError, KeyError, StopIteration, IndexError) as e:
        print(f"{sys.argv[1]}: unreadable report ({type(e).__name__}: {e})")
        ok = False
    if sys.argv[1] in ("scan", "batch") and ok is not False:
        sys.exit(ok)  # 0, or 3: a tensor-core goal missed
    sys.exit(0 if ok else 1)

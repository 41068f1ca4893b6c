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




if __name__ == "__main__":
    if sys.argv[1:] == ["self-test"]:
        import gpu_report_selftest
        sys.exit(0 if gpu_report_selftest.self_test(sys.modules[__name__]) else 1)
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

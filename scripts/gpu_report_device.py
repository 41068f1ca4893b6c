"""The device-run readers of the ranking batch and the sanitizers' coverage, for
scripts/gpu-report.py (which imports this module; standard library only: it runs on the GPU box).

  batch(OUT)          rank-batch-run*.json + batch-nsys*cuda_gpu_trace*.csv + batch-ncu.csv
                      -> batch.json
  sanitize_coverage   the (kernel group, tool) pairs no passing sanitizer run covers
  self_test(DIR)      the batch reader on canned reports: [(name, got, want)]
"""
import contextlib
import csv
import glob
import io
import json
import os
import statistics


def dump(out, name, obj):
    with open(os.path.join(out, name), "w") as f:
        json.dump(obj, f, indent=1)


# The kernel groups every sanitizer tool must cover (gpu-check.sh's sanitize plan), by the
# check-name filter of a run ("all": every check group; "@bench": memdex-gpu-bench).
SANITIZE_GROUPS = {"selection": "selection", "scores": "scores", "tensor_scan": "tensor",
                   "fragrel": "fragrel", "lsh": "lsh", "rank_matches": "rank",
                   "rank_invalid": "rank", "rank_parts": "parts", "rank_text": "text",
                   "@bench": "bench"}
SANITIZE_TOOLS = ("memcheck", "racecheck", "synccheck")


def bench_complete(rows):
    """A memdex-gpu-bench run under a sanitizer: every case written, both scans, FragRel last."""
    scans = {(r.get("case"), r.get("variant")) for r in rows if r.get("bench") == "segmented_topk"}
    return (len(scans) >= 6 and {v for _, v in scans} >= {"cuda_cores", "tensor_cores"}
            and any(r.get("bench") == "fragrel_topk" for r in rows))


def sanitize_coverage(plan, passed):
    """(group, tool) pairs the plan leaves without a passing run: each group of
    SANITIZE_GROUPS under each tool, a run over every check ("all") covering the check groups."""
    have = set()
    for run, (tool, filters) in plan.items():
        if not passed.get(run):
            continue
        groups = set(SANITIZE_GROUPS.values()) - {"bench"} if filters == ["all"] else \
            {SANITIZE_GROUPS.get(f, f) for f in filters}
        have |= {(g, tool) for g in groups}
    want = {(g, t) for g in set(SANITIZE_GROUPS.values()) for t in SANITIZE_TOOLS}
    return sorted(want - have)


BATCH_GOAL = 12.0  # the kernels against the CPU ranker on all cores, 100 x 5,000 x 256


def device_batches(rows):
    """Per batch of a CUDA trace (rows: nsys cuda_gpu_trace as dicts), the device's copies and
    memdex's kernels between one memdex_rank_topk launch's end and the next's: the first
    window (the warm-up: resident parts uploaded) is left out. Medians over the batches."""
    ops = []
    for r in rows:
        col = lambda prefix: next((v for k, v in r.items() if k and k.startswith(prefix)), "")  # noqa: E731
        try:
            start, dur = float(col("Start")), float(col("Duration"))
        except ValueError:
            continue
        ops.append((start, dur, col("Name")))
    ops.sort()
    ends = [a + d for a, d, n in ops if n.startswith("memdex_rank_topk")]
    batches = []
    for lo, hi in zip(ends, ends[1:]):
        b = {"h2d_copies": 0, "h2d_ms": 0.0, "d2h_copies": 0, "d2h_ms": 0.0, "memsets": 0,
             "kernels": 0, "kernels_ms": 0.0}
        for a, d, n in ops:
            if not lo < a + d <= hi:
                continue
            if "memcpy" in n and ("HtoD" in n or "Host-to-Device" in n):
                b["h2d_copies"] += 1
                b["h2d_ms"] += d / 1e6
            elif "memcpy" in n and ("DtoH" in n or "Device-to-Host" in n):
                b["d2h_copies"] += 1
                b["d2h_ms"] += d / 1e6
            elif "memset" in n:
                b["memsets"] += 1
            elif n.startswith("memdex_"):
                b["kernels"] += 1
                b["kernels_ms"] += d / 1e6
        batches.append(b)
    if not batches:
        return None
    return {k: statistics.median(b[k] for b in batches) for k in batches[0]} | {
        "batches": len(batches)}


def ncu_batches(path):
    """memdex's kernels per batch from an ncu raw CSV (gpu__time_duration.sum per launch):
    each kernel's mean time per batch (batches = memdex_rank_topk launches), their sum."""
    lines = [x for x in open(path, errors="replace") if x.startswith('"')]
    per, batches = {}, 0
    for r in csv.DictReader(lines):
        ns = (r.get("gpu__time_duration.sum") or "").replace(",", "")
        if not (r.get("ID") or "").strip().isdigit() or not ns.replace(".", "").isdigit():
            continue
        name = r.get("Kernel Name", "").split("(")[0].strip()
        name = name.split("_d512")[0].split("_t1")[0].split("_t4")[0]
        per[name] = per.get(name, 0.0) + float(ns) / 1e6
        batches += name == "memdex_rank_topk"
    if not batches:
        return None
    per = {k: v / batches for k, v in per.items()}
    return {"batches": batches, "per_kernel_ms": per, "kernels_ms": sum(per.values())}


def batch(out):
    runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "rank-batch-run*.json")))]
    if not runs:
        print("no bench rank invocation")
        return 1
    ratios = [r["speedup_vs_parallel"] for r in runs]
    med = sorted(runs, key=lambda r: r["speedup_vs_parallel"])[(len(runs) - 1) // 2]
    kb = med.get("kernel_batches", {})
    n = max(kb.get("batches", 0), 1)
    rep = {"goal": BATCH_GOAL, "median_speedup_vs_parallel": med["speedup_vs_parallel"],
           "invocations": ratios, "ranker_ms_per_batch": med["agreement"]["ranker_ms_per_batch"],
           "cpu_parallel_ms_per_batch": med["agreement"]["cpu_parallel_ms_per_batch"],
           "host_prepare_ms": kb.get("prepare", 0) * 1e3 / n,
           "kernel_call_ms": kb.get("kernel", 0) * 1e3 / n,
           "host_finish_ms": kb.get("finish", 0) * 1e3 / n, "device": None}
    traces = sorted(glob.glob(os.path.join(out, "batch-nsys*cuda_gpu_trace*.csv")))
    if traces:
        with open(traces[0], newline="") as f:
            rep["device"] = device_batches(list(csv.DictReader(f)))
    ncu_csv = os.path.join(out, "batch-ncu.csv")
    rep["ncu"] = ncu_batches(ncu_csv) if os.path.exists(ncu_csv) else None
    if rep["ncu"]:
        # the kernel call's time the kernels do not take: uploads, launches, downloads, syncs
        rep["ncu"]["call_minus_kernels_ms"] = rep["kernel_call_ms"] - rep["ncu"]["kernels_ms"]
    rep["unstaged"] = unstaged(out)
    dump(out, "batch.json", rep)
    d, k = rep["device"], rep["ncu"]
    kern = (f"; ncu: kernels {k['kernels_ms']:.3f} ms per batch, the call's other "
            f"{k['call_minus_kernels_ms']:.3f} ms uploads, launches, downloads and syncs"
            if k else "")
    split = (f"; device per batch (median of {d['batches']}): {d['h2d_copies']:.0f} uploads "
             f"{d['h2d_ms']:.3f} ms, {d['d2h_copies']:.0f} downloads {d['d2h_ms']:.3f} ms, "
             f"{d['memsets']:.0f} memsets, {d['kernels']:.0f} kernels {d['kernels_ms']:.3f} ms"
             if d else "; no device trace")
    met = rep["median_speedup_vs_parallel"] >= BATCH_GOAL
    print(f"bench rank 100 x 5,000, {len(runs)} invocations: median "
          f"{rep['median_speedup_vs_parallel']:.2f}x the CPU ranker on all cores (goal >= "
          f"{BATCH_GOAL:.0f}x {'met' if met else 'MISSED'}; each: "
          f"{', '.join(f'{x:.2f}x' for x in ratios)}); per batch {rep['ranker_ms_per_batch']:.2f} ms: "
          f"host prepare {rep['host_prepare_ms']:.2f}, kernel call {rep['kernel_call_ms']:.2f}, "
          f"host finish {rep['host_finish_ms']:.2f} ms{split}{kern}{unstaged_line(rep['unstaged'])}")
    return 0 if met else 3


def unstaged(out):
    """The invocation with MEMDEX_GPU_STAGING=0 (inputs uploaded one by one), if it ran."""
    p = os.path.join(out, "rank-batch-unstaged.json")
    try:
        r = json.load(open(p))
        return {"speedup_vs_parallel": r["speedup_vs_parallel"],
                "ranker_ms_per_batch": r["agreement"]["ranker_ms_per_batch"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def unstaged_line(u):
    return (f"; staging off (MEMDEX_GPU_STAGING=0): {u['speedup_vs_parallel']:.2f}x, "
            f"{u['ranker_ms_per_batch']:.2f} ms per batch" if u else "")


def self_test(d):
    """The batch reader on canned reports in the empty directory d: [(name, got, want)]."""
    def w(d, name, text):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)

    def run(fn, d):
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(d)

    results = []
    # the batch stage: 3 invocations (median 12.5x), a trace of 3 batches (the first left out)
    results.append(("batch without runs", run(batch, d) == 1, True))
    for i, x in enumerate((11.0, 12.5, 13.0)):
        w(d, f"rank-batch-run{i + 1}.json", json.dumps(
            {"speedup_vs_parallel": x, "agreement": {"ranker_ms_per_batch": 2.0,
                                                      "cpu_parallel_ms_per_batch": 2.0 * x},
             "kernel_batches": {"batches": 4, "prepare": 0.004, "kernel": 0.004,
                                "finish": 0.002}}))
    trace = ['"Start (ns)","Duration (ns)","Strm","Name"']
    for b in range(3):
        t0 = 10_000_000 * b
        trace += [f'{t0},1000,7,"[CUDA memcpy Host-to-Device]"',
                  f'{t0 + 2000},1000,7,"[CUDA memcpy Host-to-Device]"',
                  f'{t0 + 4000},500,7,"[CUDA memset]"',
                  f'{t0 + 5000},100000,7,"memdex_rank_dense_d512_t16"',
                  f'{t0 + 200000},300000,7,"memdex_rank_topk"',
                  f'{t0 + 600000},2000,7,"[CUDA memcpy Device-to-Host]"',
                  f'{t0 + 700000},1000000,9,"candle_gemm"']
    w(d, "batch-nsys_cuda_gpu_trace.csv", "\n".join(trace) + "\n")
    results.append(("batch: goal met", run(batch, d) == 0, True))
    bj = json.load(open(os.path.join(d, "batch.json")))
    results.append(("batch: split per batch", bj["host_prepare_ms"] == 1.0
                    and bj["device"]["batches"] == 2 and bj["device"]["h2d_copies"] == 2
                    and bj["device"]["d2h_copies"] == 1 and bj["device"]["kernels"] == 2
                    and abs(bj["device"]["kernels_ms"] - 0.4) < 1e-9, True))
    w(d, "rank-batch-run2.json", json.dumps({"speedup_vs_parallel": 8.0, "agreement": {
        "ranker_ms_per_batch": 2.0, "cpu_parallel_ms_per_batch": 16.0}}))
    # ncu's raw page: two batches of four kernels (the units row skipped)
    ncu = ['"ID","Kernel Name","gpu__time_duration.sum"', '"","","nsecond"']
    for b in range(2):
        for i, (name, ns) in enumerate((("memdex_gather_parts", "50,000"),
                                        ("memdex_query_inputs", "100,000"),
                                        ("memdex_rank_dense_d512_t16", "150,000"),
                                        ("memdex_rank_topk", "200,000"))):
            ncu.append(f'"{4 * b + i}","{name}(...)","{ns}"')
    w(d, "batch-ncu.csv", "==PROF== done\n" + "\n".join(ncu) + "\n")
    run(batch, d)
    k = json.load(open(os.path.join(d, "batch.json")))["ncu"]
    results.append(("batch: ncu's kernels per batch", k["batches"] == 2
                    and abs(k["kernels_ms"] - 0.5) < 1e-9
                    and abs(k["per_kernel_ms"]["memdex_rank_dense"] - 0.15) < 1e-9
                    and abs(k["call_minus_kernels_ms"] - 0.5) < 1e-9, True))
    results.append(("batch: goal missed", run(batch, d) == 3, True))
    results.append(("batch: no unstaged run", json.load(
        open(os.path.join(d, "batch.json")))["unstaged"] is None, True))
    w(d, "rank-batch-unstaged.json", json.dumps({"speedup_vs_parallel": 7.0, "agreement": {
        "ranker_ms_per_batch": 2.5, "cpu_parallel_ms_per_batch": 17.5}}))
    run(batch, d)
    u = json.load(open(os.path.join(d, "batch.json")))["unstaged"]
    results.append(("batch: the unstaged run beside", u == {"speedup_vs_parallel": 7.0,
                                                             "ranker_ms_per_batch": 2.5}, True))
    return results

"""The model path's readers of a device run (imported by gpu-report.py; standard library only,
it runs on the GPU box):

  embed_batch(out, device)  embed-batch-ENC-runR.json -> embed-batch.json: per batch of 32
                            queries, per encoder, every invocation and the median
  embed(out, device)        embed-memdex-runs-ENC.json + embed-st.json -> embed.json: each
                            encoder's best run against sentence-transformers' best
  load_details(out, rep)    per configuration of load.json: connections, model workers (the
                            start-up measurement), per run the model's ms per batch and batch
                            size under load, the CPU's clock, steal and busy share, and which of
                            them moved with the rate (the spread of the CPU runs)
  targets(out)              the issue's targets from the reports above -> targets.json
  readme(out)               README.md: provenance, every verdict (FAIL and MISS in capitals),
                            the targets, every invocation and every raw file

Each returns what gpu-report.py prints and exits with (0 ok, 3 a goal missed, 1 broken).
"""
import glob
import json
import os
import re
import statistics

BATCH_GOAL_MS = 0.5      # a batch of 32 queries embedded (fused encoder)
BATCH_BEFORE_MS = 3.22   # candle, serving on the H200 at 70fcc9b (gpu-2026-11-28b-h200)
SERVE_GOAL = 25_000      # searches/s ...
SERVE_P99_MS = 10.0      # ... at p99 below this
BULK_GOAL = 3.0          # bulk embedding over sentence-transformers fp16


# the backend name (`memdex bench embed`'s "backend") the fused encoder runs under per device:
# the executor on CUDA, the plans on their CPU reference in a DEVICE=cpu smoke run
FUSED_BACKEND = {"cuda": "fused-cuda", "cpu": "fused-reference"}


def _dump(out, name, obj):
    with open(os.path.join(out, name), "w") as f:
        json.dump(obj, f, indent=1)


def _load(out, name):
    p = os.path.join(out, name)
    try:
        return json.load(open(p)) if os.path.exists(p) else None
    except ValueError:
        return None


def json_objects(path):
    """Every JSON object in a file of pretty-printed objects one after another."""
    text, dec, objs, i = open(path).read(), json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return objs
        obj, i = dec.raw_decode(text, i)
        objs.append(obj)


def _median(xs):
    return statistics.median(xs) if xs else None


def embed_batch(out, device):
    rep = {}
    for p in sorted(glob.glob(os.path.join(out, "embed-batch-*-run*.json"))):
        m = re.match(r"embed-batch-(.+)-run(\d+)\.json$", os.path.basename(p))
        objs = json_objects(p) if os.path.getsize(p) else []
        run = {"file": os.path.basename(p), "ok": bool(objs)}
        if objs:
            r = objs[-1]
            run.update(per_batch_ms=1e3 * (r["seconds"] - r["tokenize_seconds"]) / r["batches"],
                       texts_per_batch=r["texts"] / r["batches"],
                       padded_len=r["padded_tokens"] / r["texts"], backend=r["backend"],
                       kernels=r["isa"], all_seconds=r["all_seconds"])
        rep.setdefault(m.group(1), {"runs": []})["runs"].append(run)
    for r in rep.values():
        r["median_ms"] = _median([x["per_batch_ms"] for x in r["runs"] if x["ok"]])
    _dump(out, "embed-batch.json", rep)
    fused = rep.get("fused", {})
    broken = [x["file"] for r in rep.values() for x in r["runs"] if not x["ok"]]
    # every fused run (graphs and eager) ran the fused backend of this device
    fell_back = [x["file"] for enc, r in rep.items() if enc.startswith("fused")
                 for x in r["runs"] if x["ok"] and x["backend"] != FUSED_BACKEND.get(device)]
    parts = []
    for enc, r in sorted(rep.items()):
        if r["median_ms"] is None:
            continue
        each = ", ".join("%.3f" % x.get("per_batch_ms", 0) for x in r["runs"])
        per = r["runs"][0].get("texts_per_batch", 0)
        parts.append(f"{enc}: {r['median_ms']:.3f} ms per batch of {per:.0f} "
                     f"(median of {len(r['runs'])}: {each})")
    line = "; ".join(parts)
    line += f"; goal <= {BATCH_GOAL_MS} ms (fused), before {BATCH_BEFORE_MS} ms (candle, serving)"
    if broken or fell_back or fused.get("median_ms") is None:
        return 1, f"{line}; broken runs {broken}, fell back to candle {fell_back}"
    return (0 if fused["median_ms"] <= BATCH_GOAL_MS else 3), line


def embed(out, device):
    st = _load(out, "embed-st.json")
    encs = {}
    for p in sorted(glob.glob(os.path.join(out, "embed-memdex-runs-*.json"))):
        enc = os.path.basename(p)[len("embed-memdex-runs-"):-5]
        runs = json_objects(p)
        if runs:
            best = max(runs, key=lambda r: r["tokens_per_s"])
            encs[enc] = {"best": best, "runs": [{k: r.get(k) for k in (
                "token_budget", "tokens_per_s", "seconds", "all_seconds", "backend")} for r in runs]}
    if not st or not encs:
        return 1, "no memdex or sentence-transformers report (see embed.log)"
    for e in encs.values():
        e["ratio"] = e["best"]["tokens_per_s"] / st["tokens_per_s"]
    top = encs.get("fused") or max(encs.values(), key=lambda e: e["ratio"])
    rep = {"ratio": top["ratio"], "memdex": top["best"], "st": st, "encoders": encs,
           "goal": BULK_GOAL}
    _dump(out, "embed.json", rep)
    line = "; ".join(f"memdex {enc} ({e['best']['backend']}) {e['best']['tokens_per_s']:.0f} tok/s "
                     f"(budget {e['best']['token_budget']}) = {e['ratio']:.2f}x"
                     for enc, e in sorted(encs.items()))
    line += (f"; st {st.get('dtype', 'fp16')} best of batches {[x['batch_size'] for x in st['runs']]} "
             f"{st['tokens_per_s']:.0f} tok/s (batch {st['best']['batch_size']}); goal >= "
             f"{BULK_GOAL}x (fused)")
    if "fused" in encs and encs["fused"]["best"]["backend"] != FUSED_BACKEND.get(device):
        return 1, line + "; the fused runs fell back to candle"
    return (0 if top["ratio"] >= BULK_GOAL else 3), line


def _metrics(path):
    vals = {}
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r"^(\S+)\s+([-\d.eE+]+)$", line.strip())
            if m:
                vals[m.group(1)] = float(m.group(2))
    return vals


def _cpu(path):
    """Mean clock, steal and busy shares over a run from cpu_sample's lines."""
    if not os.path.exists(path):
        return {}
    rows = []
    for line in open(path):
        m = re.match(r"(\d+) stat ([\d ]+) mhz (\S+) load (\S+)", line)
        if m:
            rows.append(([int(x) for x in m.group(2).split()], m.group(3), float(m.group(4))))
    if len(rows) < 2:
        return {}
    a, b = rows[0][0], rows[-1][0]
    d = [y - x for x, y in zip(a, b)]
    total = sum(d) or 1
    idle = d[3] + (d[4] if len(d) > 4 else 0)
    mhz = [float(r[1]) for r in rows if r[1] != "na"]
    return {"busy_share": 1 - idle / total, "steal_share": (d[7] if len(d) > 7 else 0) / total,
            "mean_mhz": statistics.mean(mhz) if mhz else None, "load": rows[-1][2]}


def _corr(xs, ys):
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sx = sum((x - mx) ** 2 for x in xs) ** 0.5
    sy = sum((y - my) ** 2 for y in ys) ** 0.5
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sx * sy)


def spread(runs):
    """What moved with the rate across a configuration's runs: for each factor its range and
    correlation with the rate; `explains` names those with |r| >= 0.9 whose relative range is
    at least half the rate's."""
    rates = [r.get("ok_per_s") or 0 for r in runs]
    if len(rates) < 2 or not max(rates):
        return None
    rel = lambda xs: (max(xs) - min(xs)) / max(abs(max(xs)), 1e-9)  # noqa: E731
    s = {"rates": rates, "rate_range": rel(rates), "factors": {}, "explains": []}
    for k in ("model_ms_per_batch", "batch_size", "rank_ms_per_batch", "mean_mhz", "steal_share",
              "busy_share"):
        xs = [r.get(k) for r in runs]
        if any(x is None for x in xs):
            continue
        c = _corr(xs, rates)
        s["factors"][k] = {"values": xs, "range": rel(xs), "corr_with_rate": c}
        if c is not None and abs(c) >= 0.9 and rel(xs) >= 0.5 * s["rate_range"]:
            s["explains"].append(k)
    return s


def load_details(out, rep):
    for cfg, r in rep.items():
        for x in r["closed"]:
            f = os.path.join(out, x["file"])
            t = open(f).read() if os.path.exists(f) else ""
            m = re.search(r"(\d+) threads and (\d+) connections", t)
            r["connections"] = int(m.group(2)) if m else None
            run = re.search(r"-run(\d+)\.txt$", x["file"]).group(1)
            a = _metrics(os.path.join(out, f"metrics-{cfg}-run{run}-after.txt"))
            b = _metrics(os.path.join(out, f"metrics-{cfg}-run{run}-before.txt"))
            dl = lambda k: a.get(k, 0) - b.get(k, 0)  # noqa: E731
            batches = dl("memdex_embed_batch_size_count")
            if batches > 0:
                x["model_ms_per_batch"] = 1e3 * dl('memdex_stage_seconds_total{stage="embed"}') / batches
                x["batch_size"] = dl("memdex_embed_batch_size_sum") / batches
                x["rank_ms_per_batch"] = 1e3 * dl('memdex_stage_seconds_total{stage="rank"}') / batches
            x.update(_cpu(os.path.join(out, f"sample-{cfg}-run{run}.txt")))
        log = os.path.join(out, f"serve-{cfg}.log")
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        m = re.findall(r"model workers: ([\d., ]+) batches/s.*?keeping (\d+)", text)
        if m:
            r["worker_measure"] = {"batches_per_s": [float(v) for v in m[-1][0].split(",")],
                                   "kept": int(m[-1][1])}
        r["model_workers"] = _metrics(os.path.join(out, f"metrics-{cfg}.txt")).get("memdex_model_workers")
        r["spread"] = spread(r["closed"])
    return rep


def targets(out):
    t = {}
    eb = _load(out, "embed-batch.json") or {}
    t["embed_batch"] = {"goal_ms": BATCH_GOAL_MS, "before_ms": BATCH_BEFORE_MS,
                        **{enc: {"median_ms": r.get("median_ms"),
                                 "runs_ms": [x.get("per_batch_ms") for x in r["runs"]]}
                           for enc, r in eb.items()}}
    lo = _load(out, "load.json") or {}
    gpu = {c: r for c, r in lo.items() if not c.startswith("cpu")}
    cpu = {c: r for c, r in lo.items() if c.startswith("cpu")}
    meets = {c: r for c, r in gpu.items()
             if (r.get("median_p99_ms") or 1e9) < SERVE_P99_MS and r.get("wrong_total") == 0}
    best = max(meets.items(), key=lambda kv: kv[1]["median_ok_per_s"], default=(None, None))
    t["serving"] = {"goal_per_s": SERVE_GOAL, "goal_p99_ms": SERVE_P99_MS, "best_config": best[0],
                    "configs": {c: {"median_ok_per_s": r["median_ok_per_s"],
                                    "runs_ok_per_s": [x.get("ok_per_s") for x in r["closed"]],
                                    "median_p99_ms": r.get("median_p99_ms"),
                                    "open_p99_ms": (r.get("open") or {}).get("latency_ms", {}).get("p99"),
                                    "connections": r.get("connections"),
                                    "model_ms_per_batch": _median([x.get("model_ms_per_batch") for x in r["closed"] if x.get("model_ms_per_batch")]),
                                    "worker_measure": r.get("worker_measure"),
                                    "model_workers": r.get("model_workers")}
                                for c, r in lo.items()}}
    t["serving"]["met"] = bool(best[1] and best[1]["median_ok_per_s"] >= SERVE_GOAL)
    t["gpu_cpu_ratio"] = {f"{g} / {c}": {"ratio": rg["median_ok_per_s"] / rc["median_ok_per_s"],
                                         "cpu_runs": [x.get("ok_per_s") for x in rc["closed"]],
                                         "cpu_spread": rc.get("spread")}
                          for g, rg in gpu.items() for c, rc in cpu.items() if rc["median_ok_per_s"]}
    e = _load(out, "embed.json") or {}
    t["bulk"] = {"goal": BULK_GOAL, **{enc: x["ratio"] for enc, x in e.get("encoders", {}).items()}}
    t["eval"] = {os.path.basename(p)[:-5]: {"ok": d.get("ok"), "per_type_max": d["per_type"].get("max_diff"),
                                            "problems": d.get("problems")}
                 for p in sorted(glob.glob(os.path.join(out, "eval-diff*.json")))
                 if (d := _load(out, os.path.basename(p)))}
    _dump(out, "targets.json", t)
    return t


def _fmt(v, f="{:.3f}"):
    return "—" if v is None else f.format(v)


def _targets_md(t):
    rows = ["| target | goal | measured | verdict |", "|---|---|---|---|"]
    eb = t["embed_batch"]
    for enc in sorted(k for k in eb if isinstance(eb[k], dict)):
        r = eb[enc]
        v = ("ok" if (r["median_ms"] or 1e9) <= BATCH_GOAL_MS else "MISS") if enc == "fused" else "info"
        rows.append(f"| embed a batch of 32 queries, {enc} | ≤ {BATCH_GOAL_MS} ms (before "
                    f"{BATCH_BEFORE_MS}) | {_fmt(r['median_ms'])} ms, median of "
                    f"{', '.join(_fmt(x) for x in r['runs_ms'])} | {v} |")
    s = t["serving"]
    for c, r in sorted(s["configs"].items()):
        v = "info" if c.startswith("cpu") else (
            "ok" if r["median_ok_per_s"] >= SERVE_GOAL and (r["median_p99_ms"] or 1e9) < SERVE_P99_MS else "MISS")
        rows.append(f"| serve, {c} ({r['connections']} connections, workers "
                    f"{_fmt(r['model_workers'], '{:.0f}')}) | ≥ {SERVE_GOAL:,}/s at p99 < {SERVE_P99_MS:.0f} ms | "
                    f"{r['median_ok_per_s']:,.0f}/s median of {', '.join(_fmt(x, '{:,.0f}') for x in r['runs_ok_per_s'])}; "
                    f"p99 {_fmt(r['median_p99_ms'], '{:.1f}')} ms closed, {_fmt(r['open_p99_ms'], '{:.1f}')} ms open; "
                    f"model {_fmt(r['model_ms_per_batch'], '{:.2f}')} ms/batch | {v} |")
    for k, r in t["gpu_cpu_ratio"].items():
        rows.append(f"| GPU/CPU serving, {k} | (measured) | {r['ratio']:.1f}× (CPU runs "
                    f"{', '.join(_fmt(x, '{:,.0f}') for x in r['cpu_runs'])}/s) | info |")
    b = t["bulk"]
    for enc in sorted(k for k in b if k != "goal"):
        v = ("ok" if b[enc] >= BULK_GOAL else "MISS") if enc == "fused" else "info"
        rows.append(f"| bulk embedding, {enc}, vs sentence-transformers fp16 | ≥ {BULK_GOAL}× | "
                    f"{b[enc]:.2f}× | {v} |")
    for k, r in t["eval"].items():
        rows.append(f"| eval device vs cpu ({k}) | within 1/n per type | per-type max "
                    f"{_fmt(r['per_type_max'], '{:.4f}')} | {'ok' if r['ok'] else 'FAIL'} |")
    return rows


def readme(out):
    """README.md for the run: what ran, what failed, what it measured, every invocation."""
    rd = lambda n: open(os.path.join(out, n)).read().strip() if os.path.exists(os.path.join(out, n)) else None  # noqa: E731
    verdicts = []
    if os.path.exists(os.path.join(out, "verdicts.jsonl")):
        verdicts = [json.loads(x) for x in open(os.path.join(out, "verdicts.jsonl")) if x.strip()]
    smi = (rd("smi.csv") or "").splitlines()
    t = targets(out)
    lines = ["# Device run", "",
             f"- device: {smi[1] if len(smi) > 1 else 'unknown'}",
             f"- pack: commit {rd('COMMIT') or 'UNKNOWN'}; tree {(rd('DIRTY') or 'UNKNOWN').splitlines()[0]}; "
             f"sources sha256 {rd('SOURCES') or 'UNKNOWN'}", "",
             "## Verdicts (every stage that ran or was stopped)", "",
             "| stage | status | detail |", "|---|---|---|"]
    for v in verdicts:
        st = v["status"].upper() if v["status"] in ("FAIL", "MISS") else v["status"]
        lines.append(f"| {v['stage']} | **{st}** | {v['detail'][:400].replace('|', '/')} |")
    if not verdicts:
        lines.append("| (none) | **FAIL** | no stage wrote a verdict |")
    lines += ["", "## Targets", ""] + _targets_md(t)
    for c, r in sorted(t["serving"]["configs"].items()):
        if r.get("worker_measure"):
            w = r["worker_measure"]
            lines.append(f"\nModel workers measured at start ({c}): {w['batches_per_s']} batches/s "
                         f"with 1, 2 workers; kept {w['kept']}.")
    for c, r in sorted((_load(out, "load.json") or {}).items()):
        sp = r.get("spread")
        if sp:
            f = "; ".join(f"{n} {[round(v, 3) for v in x['values']]} (r = {_fmt(x['corr_with_rate'], '{:.2f}')})"
                          for n, x in sp["factors"].items())
            lines.append(f"\nRuns of {c}: rates {[round(v) for v in sp['rates']]}/s (range "
                         f"{sp['rate_range']:.0%}); {f}; moved with the rate: "
                         f"{', '.join(sp['explains']) or 'none of the recorded factors'}.")
    inv = rd("invocations.log")
    lines += ["", "## Every invocation", "", "```", inv or "(no invocations.log)", "```",
              "", "## Raw files", ""]
    for root, _, files in sorted(os.walk(out)):
        for f in sorted(files):
            p = os.path.join(root, f)
            lines.append(f"- `{os.path.relpath(p, out)}` ({os.path.getsize(p):,} bytes)")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    failed = [v["stage"] for v in verdicts if v["status"] == "FAIL"]
    return (1 if failed or not verdicts else 0), f"README.md: {len(verdicts)} verdicts, failed {failed}"


def self_test(tmp):
    """(name, got, want) for each reader on small synthetic reports, good and bad."""
    res = []

    def w(name, text):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)

    def bench(per_batch_ms, backend, batches=32):
        return json.dumps({"seconds": 0.01 + batches * per_batch_ms / 1e3, "tokenize_seconds": 0.01,
                           "batches": batches, "texts": 32 * batches, "padded_tokens": 32 * batches * 16,
                           "backend": backend, "isa": "k", "all_seconds": [0.1]}, indent=1)
    for r in (1, 2, 3):
        w(f"embed-batch-candle-run{r}.json", bench(3.0 + r / 10, "candle"))
        w(f"embed-batch-fused-run{r}.json", bench(0.2 + r / 10, "fused-cuda"))
    rc, _ = embed_batch(tmp, "cuda")
    res.append(("embed-batch: fused 0.4 ms median", rc, 0))
    res.append(("embed-batch: the median of the invocations",
                abs(_load(tmp, "embed-batch.json")["fused"]["median_ms"] - 0.4) < 1e-9, True))
    w("embed-batch-fused-run2.json", bench(0.9, "fused-cuda"))
    w("embed-batch-fused-run3.json", bench(0.8, "fused-cuda"))
    res.append(("embed-batch: fused 0.8 ms misses", embed_batch(tmp, "cuda")[0], 3))
    w("embed-batch-fused-run3.json", bench(0.1, "candle"))
    res.append(("embed-batch: a fused run fell back to candle", embed_batch(tmp, "cuda")[0], 1))
    w("embed-batch-fused-run3.json", "")
    res.append(("embed-batch: an invocation wrote nothing", embed_batch(tmp, "cuda")[0], 1))
    w("embed-batch-fused-run3.json", bench(0.3, "fused-cuda"))
    w("embed-batch-fused-eager-run1.json", bench(0.6, "candle"))
    res.append(("embed-batch: an eager fused run fell back to candle", embed_batch(tmp, "cuda")[0], 1))
    w("embed-batch-fused-eager-run1.json", bench(0.6, "fused-cuda"))
    res.append(("embed-batch: the eager runs on the executor", embed_batch(tmp, "cuda")[0], 0))
    res.append(("embed-batch: a CPU smoke run wants the fused reference backend",
                embed_batch(tmp, "cpu")[0], 1))
    for f in glob.glob(os.path.join(tmp, "embed-batch-fused*")):
        w(os.path.basename(f), bench(0.3, "fused-reference"))
    res.append(("embed-batch: the CPU reference in a CPU smoke run", embed_batch(tmp, "cpu")[0], 0))
    for f in glob.glob(os.path.join(tmp, "embed-batch-*")):
        os.remove(f)

    st = {"tokens_per_s": 1000.0, "runs": [{"batch_size": 64}], "best": {"batch_size": 64}}
    run = lambda tps, be: json.dumps({"token_budget": 65536, "tokens_per_s": tps, "seconds": 1,  # noqa: E731
                                      "all_seconds": [1], "backend": be}, indent=1)
    res.append(("embed: no reports", embed(tmp, "cuda")[0], 1))
    w("embed-st.json", json.dumps(st))
    w("embed-memdex-runs-candle.json", run(2000, "candle") + "\n" + run(2500, "candle"))
    w("embed-memdex-runs-fused.json", run(3500, "fused-cuda") + "\n" + run(3000, "fused-cuda"))
    res.append(("embed: fused 3.5x", embed(tmp, "cuda")[0], 0))
    res.append(("embed: each encoder's best", _load(tmp, "embed.json")["encoders"]["candle"]["ratio"], 2.5))
    w("embed-memdex-runs-fused.json", run(2900, "fused-cuda"))
    res.append(("embed: fused 2.9x misses", embed(tmp, "cuda")[0], 3))

    # the load stage's CPU runs: the model's time per batch moves with the rate, the clock not
    wrk = ("  64 threads and 64 connections\nRequests/sec: %d\nbody_checked ok=1 wrong=0 "
           "ok_per_s=%d\nplanted_checked ok=5 wrong=0\nlatency_us p50=1 p90=2 p99=3000 max=4\n")
    rep = {"cpu-cpu-14": {"closed": []}}
    for run_, (rate, ms) in enumerate(((1671, 8.0), (911, 14.5), (987, 13.6)), 1):
        w(f"load-cpu-cpu-14-run{run_}.txt", wrk % (rate, rate))
        n = 1000
        w(f"metrics-cpu-cpu-14-run{run_}-before.txt", "memdex_embed_batch_size_count 0\n")
        w(f"metrics-cpu-cpu-14-run{run_}-after.txt",
          f"memdex_embed_batch_size_count {n}\nmemdex_embed_batch_size_sum {16 * n}\n"
          f'memdex_stage_seconds_total{{stage="embed"}} {ms * n / 1e3}\n'
          f'memdex_stage_seconds_total{{stage="rank"}} {n * 0.004}\n')
        w(f"sample-cpu-cpu-14-run{run_}.txt", "1 stat 100 0 50 800 0 0 0 0 mhz 3000 load 5\n"
          "3 stat 200 0 100 900 0 0 0 0 mhz 3000 load 6\n")
        rep["cpu-cpu-14"]["closed"].append({"file": f"load-cpu-cpu-14-run{run_}.txt", "ok_per_s": rate})
    w("serve-cpu-cpu-14.log", "INFO model workers: 120, 230 batches/s with 1, 2, … keeping 2\n")
    load_details(tmp, rep)
    sp = rep["cpu-cpu-14"]["spread"]
    res.append(("load: the model's ms per batch explains the CPU spread",
                "model_ms_per_batch" in sp["explains"] and "mean_mhz" not in sp["explains"], True))
    res.append(("load: busy share from /proc/stat",
                abs(rep["cpu-cpu-14"]["closed"][0]["busy_share"] - 0.6) < 1e-9, True))
    res.append(("load: the worker measurement", rep["cpu-cpu-14"]["worker_measure"]["kept"], 2))

    # the README: a FAIL stays a FAIL, every invocation is listed
    w("verdicts.jsonl", "\n".join(json.dumps(v) for v in (
        {"stage": "fused", "status": "ok", "detail": "x"},
        {"stage": "load", "status": "FAIL", "detail": "timed out"})))
    w("invocations.log", "10:00:00 rc=0 3s memdex bench embed --json\n")
    w("COMMIT", "abc\n")
    w("DIRTY", "clean\n")
    rc, _ = readme(tmp)
    text = open(os.path.join(tmp, "README.md")).read()
    res.append(("readme: a failed stage fails", rc, 1))
    res.append(("readme: says FAIL, lists invocations and files", "| load | **FAIL** |" in text
                and "memdex bench embed --json" in text and "`embed-st.json`" in text
                and "commit abc" in text, True))
    w("verdicts.jsonl", json.dumps({"stage": "fused", "status": "ok", "detail": "x"}))
    res.append(("readme: all ok", readme(tmp)[0], 0))
    return res

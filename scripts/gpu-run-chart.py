#!/usr/bin/env python3
"""One chart per device run (scripts/gpu-first.sh's reports, unpacked): embedding, the scan
kernel, the default ranking (memdex's kernels behind the ranking seam against the CPU ranker;
the rank stage's LoCoMo tenants with --placement device and auto when it ran) and serving per
--rank-device, each GPU figure beside its baseline from the same box (sentence-transformers,
PyTorch, the same binary on the box's CPU cores). Every bar is read from
a report under DIR; a report that is missing leaves its panel empty with a note, never a number.

usage: gpu-run-chart.py DIR --out docs/charts/gpu-h100     (writes .png and .svg)
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CPU_C, GPU_C, REF_C = "#4C72B0", "#DD8452", "#8C8C8C"


def load(d, name):
    try:
        with open(os.path.join(d, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def bars(ax, labels, values, colors, fmt):
    for i, (v, c) in enumerate(zip(values, colors)):
        ax.bar(i, v, color=c)
        ax.text(i, v, fmt(v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.grid(axis="y", alpha=0.3)


def missing(ax, what):
    ax.text(0.5, 0.5, f"no {what} report", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def embedding(ax, d, dev):
    e = load(d, "embed.json")
    if not e:
        return missing(ax, "embed")
    st, m = e["st"], e["memdex"]
    runs = sorted(st["runs"], key=lambda r: r["batch_size"])
    labels = [f"ST fp16\nb{r['batch_size']}" for r in runs] + ["memdex\nCUDA f16"]
    vals = [r["tokens_per_s"] for r in runs] + [m["tokens_per_s"]]
    bars(ax, labels, vals, [REF_C] * len(runs) + [GPU_C], lambda v: f"{v / 1e3:,.0f}k")
    ax.set_title(f"Embedding tokens/s on {dev} (MiniLM-L6, {m['texts']:,} LoCoMo turns)\n"
                 f"memdex / best sentence-transformers = {e['ratio']:.2f}x "
                 f"(attention: {st.get('attn_implementation')})", fontsize=8)


def scan(ax, d):
    s, n = load(d, "scan.json"), load(d, "ncu.json") or {}
    if not s:
        return missing(ax, "scan")
    labels, vals, colors = [], [], []
    for case, r in s["cases"].items():
        short = case.replace("per_tenant_", "").replace("single_query_all_rows", "1 query\nall rows")
        for name, key, c in (("memdex", "ms", GPU_C), ("torch\ngrouped", "torch_grouped_ms", REF_C),
                             ("torch\ngather", "torch_gather_ms", "#BBBBBB")):
            if r.get(key):
                labels.append(f"{short}\n{name}")
                vals.append(r[key])
                colors.append(c)
    bars(ax, labels, vals, colors, lambda v: f"{v:.2f}")
    ax.set_yscale("log")
    frac = {c: r.get("fraction_of_copy_bw") for c, r in n.get("scan", {}).items()}
    ax.set_title("Scan top-10, 1,000 tenants x 5,000 rows x 384 (ms, lower is better)\n"
                 "DRAM (ncu) / copy bandwidth: " + ", ".join(
                     f"{c.replace('per_tenant_', '')} {v:.0%}" for c, v in frac.items() if v),
                 fontsize=8)
    ax.set_ylabel("ms per batch (log scale)")


def ranker_ms(g):
    """The ranker's ms per batch of an `agreement` object (fused_ms_per_batch before the
    ranking seam: the reports of earlier runs)."""
    return g.get("ranker_ms_per_batch", g.get("fused_ms_per_batch"))


def ranker_label(g):
    """'kernels on cuda:0' -> a bar label; earlier reports: the fused kernel."""
    return (g.get("ranker") or "fused kernel").replace(" on ", "\non ")


def ranking(ax, d):
    r = load(d, "rank-load.json")
    if not r:
        return missing(ax, "bench rank")
    g = r["agreement"]
    labels = ["CPU ranker\n1 thread", f"CPU ranker\n{g['cpu_threads']} threads", ranker_label(g)]
    vals = [g["cpu_ms_per_batch"], g["cpu_parallel_ms_per_batch"], ranker_ms(g)]
    colors = ["#9DB4D8", CPU_C, GPU_C]
    title = (f"Default ranking, {g['batch']} queries/batch, 100 tenants x 5,000 rounds (ms)\n"
             f"ranker vs all-core CPU ranker: {g['cpu_parallel_ms_per_batch'] / ranker_ms(g):.2f}x;"
             f" {g['identical']}/{g['queries']} top-10 identical, {g['different']} different")
    # the rank stage's LoCoMo tenants (rank.json), with the device placement and with auto
    lo = load(d, "rank.json") or {}
    if lo.get("bench"):
        parts = [("device", lo["bench"]["agreement"])]
        if lo.get("bench_auto"):
            parts.append(("auto", lo["bench_auto"]["agreement"]))
        h = parts[0][1]
        labels.append(f"LoCoMo\nCPU ranker\n{h['cpu_threads']} threads")
        vals.append(h["cpu_parallel_ms_per_batch"])
        colors.append(CPU_C)
        for placement, x in parts:
            labels.append("LoCoMo\n" + (ranker_label(x) if placement == "device"
                                         else "auto placement\n(kernels or CPU)"))
            vals.append(ranker_ms(x))
            colors.append(GPU_C if placement == "device" else REF_C)
        title += "\nLoCoMo tenants vs all-core CPU ranker: " + ", ".join(
            f"{p} {h['cpu_parallel_ms_per_batch'] / ranker_ms(x):.2f}x" for p, x in parts)
        if len(parts) > 1:  # where auto's cost model put the batches
            title += "\nauto's batches: " + ", ".join(
                f"{dev} {n}" for dev, n in (parts[1][1].get("rank_batches") or {}).items())
        ax.set_yscale("log")
    bars(ax, labels, vals, colors, lambda v: f"{v:.1f}")
    ax.set_title(title, fontsize=8)


# `load-DEVICE-RANK-THREADS`: RANK is --rank-device (cpu, cuda, kernels, auto), or in earlier
# runs --fused-rank (on, off, auto)
RANKS = {"cpu": "CPU ranker", "cuda": "kernels", "kernels": "kernels\n(CPU reference)",
         "auto": "auto placement", "on": "fused kernel", "off": "CPU ranker"}


def config_label(cfg):
    parts = cfg.split("-")
    if len(parts) != 3:
        return cfg
    dev, rank, threads = parts
    what = RANKS.get(rank, rank)
    if rank == "cpu" and dev != "cpu":
        what += "\n+ device scan"
    return f"{dev} model, {what}, {threads} thr"


def serving(ax, d):
    lo = load(d, "load.json")
    if not lo:
        return missing(ax, "load")
    labels, vals, colors, notes = [], [], [], []
    for cfg, r in sorted(lo.items()):
        dev, name = cfg.split("-")[0], config_label(cfg)
        labels.append(f"{name.replace(', ', chr(10))}\nclosed x{r['runs']}")
        vals.append(r["median_ok_per_s"])
        colors.append(GPU_C if dev != "cpu" else CPU_C)
        o = r.get("open") or {}
        notes.append(f"{cfg}: p99 {r['median_p99_ms']:.1f} ms closed, "
                     f"{(o.get('latency_ms') or {}).get('p99', float('nan')):.1f} ms open at "
                     f"{o.get('target_rate') or 0:.0f}/s")
    bars(ax, labels, vals, colors, lambda v: f"{v:,.0f}/s")
    ax.set_title("memdex serve, 64 connections, body-checked searches/s (median of runs)\n"
                 "(configurations DEVICE-RANK_DEVICE-HTTP_THREADS)\n" + "\n".join(notes),
                 fontsize=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    s = load(a.dir, "summary.json") or {}
    dev = s.get("device") or "GPU"
    fig, ax = plt.subplots(1, 4, figsize=(20, 5))
    embedding(ax[0], a.dir, dev)
    scan(ax[1], a.dir)
    ranking(ax[2], a.dir)
    serving(ax[3], a.dir)
    fig.suptitle(f"memdex on {dev} (commit {(s.get('commit') or '?')[:7]}), baselines from the same box",
                 fontsize=10)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{a.out}.{ext}", dpi=110)


if __name__ == "__main__":
    main()

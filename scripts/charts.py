#!/usr/bin/env python3
"""Charts from memdex's benchmark JSON (scripts/bench-charts.sh writes the folders):

  embed-throughput   tokens/s per engine and device: memdex fast and candle encoders vs
                     sentence-transformers on the same texts
  search-latency     memdex bench search: embed / rank / total latency percentiles
  index-scaling      memdex index: build time and peak memory against rows
  cpu-vs-gpu         the same measures side by side per device (only with --gpu)

Every bar comes from a JSON file; a device with no folder is left out of the charts (no empty
slots). The GPU box's own charts come from its device run: scripts/gpu-run-chart.py.

usage: charts.py --cpu DIR [--gpu DIR] [--out docs/charts]
"""
import argparse
import glob
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CPU_C, GPU_C, REF_C = "#2b6cb0", "#2f855a", "#9b2c2c"


def load(d, name):
    if not d:
        return None
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


def machine_note(d):
    m = load(d, "machine.json") or {}
    if not m:
        return ""
    return f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('date', '')}"


def save(fig, out, name):
    fig.tight_layout()
    for ext in ("svg", "png"):
        fig.savefig(os.path.join(out, f"{name}.{ext}"), dpi=110)
    plt.close(fig)
    print(f"wrote {out}/{name}.svg and .png")


def embed_rows(cpu, gpu):
    rows = []
    for dev, d in (("CPU", cpu), ("GPU", gpu)):
        if not d:
            continue
        for f, label, color in (("embed-memdex-fast.json", "memdex fast encoder", CPU_C),
                                ("embed-memdex-candle.json", "memdex candle encoder", CPU_C),
                                ("embed-st.json", "sentence-transformers", REF_C)):
            if dev == "GPU" and "fast" in f:
                label = "memdex (CUDA)"
            r = load(d, f)
            if dev == "GPU" and "candle" in f:
                continue  # one memdex path on CUDA (candle's BERT); listed as memdex (CUDA)
            rows.append((f"{label}\n{dev}", r["tokens_per_s"] if r else None,
                         GPU_C if dev == "GPU" and "memdex" in label else color, r))
    return rows


def chart_embed(cpu, gpu, out):
    rows = embed_rows(cpu, gpu)
    known = [v for _, v, _, _ in rows if v]
    top = max(known) if known else 1.0
    fig, ax = plt.subplots(figsize=(8, 4.2))
    rows = [r for r in rows if r[1] is not None]
    for i, (label, v, color, r) in enumerate(rows):
        ax.bar(i, v, color=color)
        ax.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
    ref = load(cpu, "embed-st.json")
    if ref:
        ax.axhline(ref["tokens_per_s"], color=REF_C, lw=0.8, ls="--")
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.set_ylabel("tokens / s (higher is better)")
    any_r = next((r for *_, r in rows if r), {}) or {}
    ax.set_title(f"Embedding throughput, all-MiniLM-L6-v2 fp32, {any_r.get('texts', '?')} texts, "
                 f"{any_r.get('threads', '?')} threads", fontsize=10)
    fig.text(0.01, 0.01, f"CPU: {machine_note(cpu)}", fontsize=7, color="#555555")
    save(fig, out, "embed-throughput")


def chart_search(cpu, gpu, out):
    runs = [(dev, load(d, "search.json")) for dev, d in (("CPU", cpu), ("GPU", gpu)) if d]
    runs = [(dev, r) for dev, r in runs if r]
    fig, axes = plt.subplots(1, len(runs), figsize=(4.5 * len(runs), 3.8), sharey=True,
                             squeeze=False)
    axes = axes[0]
    pcts = ("p50", "p90", "p99", "max")
    for ax, (dev, r) in zip(axes, runs):
        for stage, style in (("embed_ms", "o-"), ("rank_ms", "s-"), ("total_ms", "^-")):
            ys = [r[stage][p] for p in pcts]
            ax.plot(pcts, ys, style, label=stage.replace("_ms", ""))
        ax.set_title(f"{dev}: {r['rows']:,} rows, {r['tenants']} tenants, {r['queries']} queries",
                     fontsize=9)
        ax.set_xlabel("percentile")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ms per query (lower is better)")
    fig.suptitle("Search latency distribution (memdex bench search, default pipeline)", fontsize=10)
    save(fig, out, "search-latency")


def index_points(d):
    pts = []
    for p in sorted(glob.glob(os.path.join(d, "index-*.json")) if d else []):
        r = json.load(open(p))
        pts.append((r["items_written"], r["wall_seconds"], r["peak_rss_mib"], r["seconds"]))
    return sorted(pts)


def chart_index(cpu, gpu, out):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.8))
    for dev, d, color in (("CPU", cpu, CPU_C), ("GPU", gpu, GPU_C)):
        pts = index_points(d)
        if not pts:
            continue
        rows = [p[0] for p in pts]
        a1.plot(rows, [p[1] for p in pts], "o-", color=color, label=f"{dev}")
        a2.plot(rows, [p[2] for p in pts], "o-", color=color, label=f"{dev}")
    a1.set_title("Build time (memdex index, whole process)", fontsize=9)
    a1.set_xlabel("rows (memory items)")
    a1.set_ylabel("seconds")
    a2.set_title("Peak memory (max RSS)", fontsize=9)
    a2.set_xlabel("rows (memory items)")
    a2.set_ylabel("MiB")
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
    fig.text(0.01, 0.01, f"CPU: {machine_note(cpu)}", fontsize=7, color="#555555")
    save(fig, out, "index-scaling")


def chart_devices(cpu, gpu, out):
    measures = [
        ("embedding tokens/s\n(memdex default encoder)",
         lambda d: (load(d, "embed-memdex-fast.json") or {}).get("tokens_per_s")),
        ("search p50 ms\n(total)",
         lambda d: ((load(d, "search.json") or {}).get("total_ms") or {}).get("p50")),
        ("index rows/s\n(largest run)",
         lambda d: (lambda p: p[-1][0] / p[-1][1] if p else None)(index_points(d))),
    ]
    fig, axes = plt.subplots(1, len(measures), figsize=(10, 3.6))
    for ax, (name, get) in zip(axes, measures):
        vals = [get(cpu), get(gpu)]
        for i, (dev, v, color) in enumerate(zip(("CPU", "GPU"), vals, (CPU_C, GPU_C))):
            if v is not None:
                ax.bar(i, v, color=color)
                ax.text(i, v, f"{v:,.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks([0, 1], ["CPU", "GPU"])
        ax.set_title(name, fontsize=9)
    fig.suptitle("CPU vs GPU, same benchmarks", fontsize=10)
    save(fig, out, "cpu-vs-gpu")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", required=True)
    ap.add_argument("--gpu")
    ap.add_argument("--out", default="docs/charts")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    plt.rcParams.update({"svg.hashsalt": "memdex", "font.size": 9})
    chart_embed(a.cpu, a.gpu, a.out)
    chart_search(a.cpu, a.gpu, a.out)
    chart_index(a.cpu, a.gpu, a.out)
    if a.gpu:
        chart_devices(a.cpu, a.gpu, a.out)


if __name__ == "__main__":
    main()

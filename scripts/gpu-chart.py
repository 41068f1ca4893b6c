#!/usr/bin/env python3
"""CPU vs GPU from the device reports of one GPU session (docs/benchmarks.md, "GPU"):
embedding throughput, the default ranking per batch, serving at 64 clients and the realistic
LongMemEval_M build. Every bar is read from a report under DIR (the device calls' tarballs,
unpacked as call1/, call2/, call3/); the two CPU figures that did not run on the GPU box are
labelled with where they come from, and an extrapolation is hatched.

usage: gpu-chart.py DIR [--cpu-embed bench/results/cpu-DATE/embed-memdex-fast.json]
                        [--out docs/charts/gpu-h200]
"""
import argparse
import json
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CPU_C, GPU_C, REF_C = "#4C72B0", "#DD8452", "#8C8C8C"


def load(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


# how a served configuration ranked: "cpu" (the CPU ranker on a CPU model), "scan" (the CPU
# ranker, dense scores on the model's device), "kernels" (memdex's kernels on the device),
# "auto" (kernels or CPU per batch, by the cost model). load.txt headers name --rank-device
# (cpu|cuda|kernels|auto) or, in runs before the ranking seam, --fused-rank (session 18:
# auto = the device scan, on = the fused kernel, off = the CPU)
RANK_DEVICE = {"cpu": "scan", "cuda": "kernels", "kernels": "kernels", "auto": "auto"}
FUSED_RANK = {"auto": "scan", "on": "kernels", "off": "cpu"}


def serving(path):
    """((device, how ranked, threads), searches/s, p99 ms) per served configuration of a
    load.txt."""
    out, head = [], None
    for line in open(path):
        m = re.match(r"== device (\S+), (rank-device|fused-rank) (\S+), http threads (\d+)", line)
        if m:
            dev, flag, value, threads = m.groups()
            how = (RANK_DEVICE if flag == "rank-device" else FUSED_RANK).get(value, value)
            head = (dev, "cpu" if dev == "cpu" else how, threads)
            continue
        m = re.match(r"Requests/sec:\s+([\d.]+)", line)
        if m and head:
            rps = float(m.group(1))
        m = re.match(r"latency_us p50=(\d+) p90=(\d+) p99=(\d+)", line)
        if m and head:
            out.append((head, rps, int(m.group(3)) / 1000))
            head = None
    return out


def bars(ax, labels, values, colors, fmt, log=False, hatches=None):
    xs = range(len(values))
    for i, (v, c) in enumerate(zip(values, colors)):
        h = hatches[i] if hatches else None
        ax.bar(i, v, color=c, hatch=h, edgecolor="white" if not h else "#333333")
        ax.text(i, v, fmt(v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(xs), labels, fontsize=7)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--cpu-embed", default="bench/results/cpu-2026-11-23/embed-memdex-fast.json")
    ap.add_argument("--cpu-m-minutes", type=float, default=36.0,
                    help="realistic M on 2 CPU cores, extrapolated (docs/scale.md)")
    ap.add_argument("--out", default="docs/charts/gpu-h200")
    a = ap.parse_args()
    d = a.dir
    fig, ax = plt.subplots(1, 4, figsize=(16, 4.6))

    # 1. embedding
    st = load(d, "call1", "embed-st.json")
    mx = load(d, "call1", "embed-memdex.json")
    cpu = load(a.cpu_embed)
    bars(ax[0], [f"memdex CPU\n({cpu['threads']}-core dev VM,\n{cpu['isa']})",
                 "sentence-transformers\nfp16, H200", "memdex CUDA\nf16, H200"],
         [cpu["tokens_per_s"], st["tokens_per_s"], mx["tokens_per_s"]],
         [CPU_C, REF_C, GPU_C], lambda v: f"{v:,.0f}", log=True)
    ax[0].set_title(f"Embedding, tokens/s (MiniLM-L6, {mx['texts']:,} LoCoMo turns)\n"
                    f"CUDA / sentence-transformers = {mx['tokens_per_s'] / st['tokens_per_s']:.2f}x",
                    fontsize=8)

    # 2. ranking per batch of 256: memdex's kernels (the fused kernel) vs the CPU ranker
    big = load(d, "call2", "load-rank.json")["agreement"]
    small = load(d, "call2", "rank-bench.json")["agreement"]
    # ranker_ms_per_batch; fused_ms_per_batch in the reports from before the ranking seam
    ms = lambda g: g.get("ranker_ms_per_batch", g.get("fused_ms_per_batch"))  # noqa: E731
    labels, vals, cols = [], [], []
    for name, g in (("100x5k", big), ("LoCoMo", small)):
        labels += [f"CPU\n1 thr\n{name}", f"CPU\n{g['cpu_threads']} thr\n{name}",
                   f"kernels\nH200\n{name}"]
        vals += [g["cpu_ms_per_batch"], g["cpu_parallel_ms_per_batch"], ms(g)]
        cols += [CPU_C, CPU_C, GPU_C]
    bars(ax[1], labels, vals, cols, lambda v: f"{v:.1f}", log=True)
    ax[1].set_title("Default ranking, ms per batch of 256 (100x5k: 100 tenants x 5,000 rows;\n"
                    "LoCoMo: 5 x 552); "
                    f"kernels vs 1 thread: {big['cpu_ms_per_batch'] / ms(big):.1f}x"
                    f" / {small['cpu_ms_per_batch'] / ms(small):.1f}x", fontsize=8)
    ax[1].tick_params(axis="x", labelsize=6)

    # 3. serving at 64 clients
    # call1 ran the binary before the resident parts (its kernel run uploaded every batch):
    # the CPU row comes from it, the device rows from the later calls
    cpu_runs = [r for r in serving(os.path.join(d, "call1", "load.txt")) if r[0][0] == "cpu"]
    runs = serving(os.path.join(d, "call2", "load.txt"))
    runs += serving(os.path.join(d, "call3", "load.txt"))
    scan = [r for r in runs if r[0][0] == "cuda" and r[0][1] == "scan"]
    kern = [r for r in runs if r[0][0] == "cuda" and r[0][1] == "kernels"]
    auto = [r for r in runs if r[0][0] == "cuda" and r[0][1] == "auto"]
    picks = [("CPU, 16 cores", cpu_runs[-1], CPU_C), ("CUDA model +\ndevice scan", scan[-1], REF_C),
             ("CUDA model +\nkernels ranking", max(kern, key=lambda r: r[1]), GPU_C)]
    if auto:
        picks.append(("CUDA model +\nauto placement", max(auto, key=lambda r: r[1]), GPU_C))
    bars(ax[2], [f"{n}\np99 {r[2]:.0f} ms" for n, r, _ in picks], [r[1] for _, r, _ in picks],
         [c for _, _, c in picks], lambda v: f"{v:,.0f}")
    ax[2].axhline(5000, color="#55A868", ls="--", lw=1)
    ax[2].text(-0.4, 5100, "goal 5,000/s, p99 < 20 ms", fontsize=7, color="#55A868")
    ax[2].set_title("memdex serve, searches/s at 64 clients\n100 tenants x 5,000 rounds, "
                    f"kernels runs: {', '.join(f'{r[1]:,.0f}' for r in kern)}", fontsize=8)

    # 4. realistic M, build + rank
    e = [json.loads(x) for x in open(os.path.join(d, "call2", "e2e.jsonl"))][-1]
    synth = 0.0
    for line in open(os.path.join(d, "call2", "e2e.log")):
        m = re.search(r"MB in ([\d.]+)s", line)
        if m:
            synth = float(m.group(1))
    gpu_min = (synth + e["index_wall_s"] + e["eval_wall_s"]) / 60
    bars(ax[3], ["2 CPU cores\n(extrapolated,\ndocs/scale.md)", "H200 box\n(measured)"],
         [a.cpu_m_minutes, gpu_min], [CPU_C, GPU_C], lambda v: f"{v:.1f} min",
         hatches=["//", None])
    ax[3].axhline(10, color="#55A868", ls="--", lw=1)
    ax[3].text(0.6, 10.5, "goal < 10 min", fontsize=7, color="#55A868")
    ax[3].set_title(f"Realistic LongMemEval_M, synth + index + rank\n"
                    f"{e['items_written']:,} rows, {e['tokens_embedded'] / 1e6:.1f} M tokens; "
                    f"index {e['index_wall_s']:.0f} s, rank {e['eval_wall_s']:.0f} s",
                    fontsize=8)
    fig.suptitle("CPU vs GPU (NVIDIA H200, session 18; CPU figures on the same box unless "
                 "labelled)", fontsize=10)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{a.out}.{ext}", dpi=130)
    print(f"wrote {a.out}.png/.svg")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Build cost and memory against rows, from scripts/scale-series.sh's index-N.json files.

Left: index CPU seconds (user + sys, the cost a quiet machine turns into wall time) and wall
seconds against rows; right: peak RSS of the index process against rows. Extra points
(a full-scale extrapolation) come from --extra FILE.json: [{"label", "rows", "cpu_seconds",
"peak_rss_mib"}], drawn hollow and labelled as extrapolated.

usage: scale-chart.py RESULTS_DIR [--extra FILE.json] [--out docs/charts/scale-build]
"""
import argparse
import glob
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def points(d):
    pts = []
    for p in glob.glob(os.path.join(d, "index-*.json")):
        r = json.load(open(p))
        pts.append((r["store_rows"], r["cpu_seconds"], r["wall_seconds"], r["peak_rss_mib"],
                    r.get("tokens_embedded", 0), r.get("load", "")))
    return sorted(pts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--extra")
    ap.add_argument("--out", default="docs/charts/scale-build")
    a = ap.parse_args()
    pts = points(a.results)
    if not pts:
        raise SystemExit(f"{a.results}: no index-*.json")
    extra = json.load(open(a.extra)) if a.extra else []
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.5, 4))
    rows = [p[0] for p in pts]
    a1.plot(rows, [p[1] for p in pts], "o-", color="#2b6cb0", label="index CPU s (user+sys)")
    a1.plot(rows, [p[2] for p in pts], "s--", color="#9b2c2c", alpha=0.7,
            label="index wall s (machine shared)")
    a2.plot(rows, [p[3] for p in pts], "o-", color="#2b6cb0", label="peak RSS, index")
    for e in extra:
        if e.get("cpu_seconds"):
            a1.plot([e["rows"]], [e["cpu_seconds"]], "o", mfc="none", color="#2b6cb0")
            a1.annotate(e["label"], (e["rows"], e["cpu_seconds"]), fontsize=7,
                        textcoords="offset points", xytext=(-110, -4))
        if e.get("peak_rss_mib"):
            a2.plot([e["rows"]], [e["peak_rss_mib"]], "D", mfc="none", color="#2f855a")
            a2.annotate(e["label"], (e["rows"], e["peak_rss_mib"]), fontsize=7,
                        textcoords="offset points", xytext=(-190, -14))
    a1.set_title("Build cost, realistic LongMemEval-shaped data (MiniLM, CPU)", fontsize=9)
    a1.set_ylabel("seconds")
    a2.set_title("Peak memory of memdex index", fontsize=9)
    a2.set_ylabel("MiB")
    for ax in (a1, a2):
        ax.set_xlabel("rows (user-turn items)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.15)
        ax.set_xlim(left=0)
    fig.text(0.01, 0.01, f"2-core AMD EPYC Zen 3 (AVX2); {pts[-1][5].split('load average')[-1].strip(' :')}",
             fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    for ext in ("svg", "png"):
        fig.savefig(f"{a.out}.{ext}", dpi=110)
    print(f"wrote {a.out}.svg and .png")


if __name__ == "__main__":
    main()

import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
def flat(d, p=""):
    for k, v in d.items():
        if isinstance(v, dict): yield from flat(v, f"{p}{k}.")
        elif isinstance(v, (int, float)) and not isinstance(v, bool): yield f"{p}{k}", v
fa = dict(flat({"levels": a["levels"], "by_type": a["by_type"]}))
fb = dict(flat({"levels": b["levels"], "by_type": b["by_type"]}))
assert fa.keys() == fb.keys()
diffs = sorted(((abs(fa[k] - fb[k]), k, fa[k], fb[k]) for k in fa), reverse=True)
print(f"{len(diffs)} metrics; largest |Δ| {diffs[0][0]:.5f} ({diffs[0][1]}: {diffs[0][2]:.4f} vs {diffs[0][3]:.4f}); {sum(d[0] > 0.002 for d in diffs)} over 0.002, {sum(d[0] > 0 for d in diffs)} differ at all")
for d in diffs[:6]: print(f"  {d[1]}: {d[2]:.4f} vs {d[3]:.4f} (|Δ| {d[0]:.5f})")
for k in ("levels.turn.recall_all@5", "levels.session.recall_all@5"):
    print(f"  {k}: {fa[k]:.4f} vs {fb[k]:.4f}")
print("config kernels:", a["config"].get("kernels", "?"), "|", b["config"].get("kernels", "?"))

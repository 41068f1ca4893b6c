import json, glob, os, re, statistics as st, sys
d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/avx512/bench"
cells = {}
for f in sorted(glob.glob(f"{d}/r*-*-*/memdex.json")):
    m = re.search(r"/r(\d+)-(\w+)-(before|after)/", f)
    r, isa, b = int(m[1]), m[2], m[3]
    base = os.path.dirname(f)
    try:
        rep = {e: json.load(open(f"{base}/{e}.json")) for e in ("memdex", "st", "ort")}
    except Exception:
        continue
    s = os.path.join(d, f"r{r}-{isa}-{b}-search.json")
    srch = json.load(open(s)) if os.path.exists(s) and os.path.getsize(s) else None
    cells.setdefault((isa, b), []).append((r, rep, srch))
def tps(rep, best):
    return rep["tokens"] / (min(rep["all_seconds"]) if best else rep["seconds"])
print(f"{'ISA':7} {'build':7} {'rounds':6} | {'memdex':>8} {'ST':>7} {'ORT':>7} | {'×ST':>6} {'×ORT':>6} | best-of-passes: {'memdex':>8} {'ST':>7} {'ORT':>7} {'×ST':>6} {'×ORT':>6} | embed p50 ms")
for (isa, b), rows in sorted(cells.items(), key=lambda x: (x[0][0] != "avx512", x[0][1] != "before")):
    out = []
    for best in (False, True):
        m = [tps(x[1]["memdex"], best) for x in rows]
        s_ = [tps(x[1]["st"], best) for x in rows]
        o = [tps(x[1]["ort"], best) for x in rows]
        rs = [a / c for a, c in zip(m, s_)]
        ro = [a / c for a, c in zip(m, o)]
        out.append((st.median(m), st.median(s_), st.median(o), st.median(rs), st.median(ro), min(rs), max(rs), min(ro), max(ro)))
    p50 = [x[2]["embed_ms"]["p50"] for x in rows if x[2]]
    a, bb = out
    print(f"{isa:7} {b:7} {len(rows):6} | {a[0]:8.0f} {a[1]:7.0f} {a[2]:7.0f} | {a[3]:5.2f}x {a[4]:5.2f}x | {'':15} {bb[0]:8.0f} {bb[1]:7.0f} {bb[2]:7.0f} {bb[3]:5.2f}x {bb[4]:5.2f}x | {st.median(p50) if p50 else float('nan'):.2f} ({', '.join(f'{v:.2f}' for v in p50)})")
    print(f"{'':23}   ratio ranges over rounds (median passes): ×ST {a[5]:.2f}–{a[6]:.2f}, ×ORT {a[7]:.2f}–{a[8]:.2f}; best-of: ×ST {bb[5]:.2f}–{bb[6]:.2f}, ×ORT {bb[7]:.2f}–{bb[8]:.2f}")

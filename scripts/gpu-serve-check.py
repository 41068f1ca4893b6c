#!/usr/bin/env python3
"""Ranker check for `memdex serve` (docs/serving.md, docs/gpu.md stage `serve`): the device
scan and memdex's CUDA kernels behind the ranking seam against the CPU ranker.

Serves one store four times — `--rank-device cpu --device-scan off` (all on the CPU),
`--rank-device cpu --device-scan on` (the searches of each model batch scored together on the
model's device, ranked on the CPU), `--rank-device cuda` (each model batch ranked whole by
memdex's kernels on the GPU; `kernels`, their CPU reference, when DEVICE is cpu) and
`--rank-device auto` (each batch on the GPU or the CPU by the cost model) — sends the same
searches from many threads to each, and checks that every answer has the same items in the same
order as the CPU's with scores within a tolerance, and from /metrics that the searches ran where
asked: the device scan's on the rank stage (memdex_rank_stage_queries_total), the kernels' on
their device (memdex_rank_queries_total{device="cuda:0"}, or "kernels:cpu"), auto's all ranked
somewhere (its per-device split recorded). Prints one JSON line: latencies, searches/s,
counters, verdict.

usage: gpu-serve-check.py MEMDEX STORE MODEL DEVICE LONGMEMEVAL_JSON [N_QUERIES] [THREADS]
"""
import json
import subprocess
import sys
import threading
import time
import urllib.request

memdex, store, model, device, data = sys.argv[1:6]
n = int(sys.argv[6]) if len(sys.argv) > 6 else 400
threads = int(sys.argv[7]) if len(sys.argv) > 7 else 16
questions = [(q["question_id"], q["question"], q.get("question_date"))
             for q in json.load(open(data))][:n]
# the same question several times if the file is small
questions = (questions * (n // max(len(questions), 1) + 1))[:n]


# the kernels on the GPU, or their CPU reference with a CPU model (`cuda` needs a GPU)
KERNELS = "kernels" if device == "cpu" else "cuda"


def serve(rank, scan):
    p = subprocess.Popen([memdex, "serve", "--store", store, "--model", model, "--device", device,
                          "--rank-device", rank, "--device-scan", scan, "--addr", "127.0.0.1:0",
                          "--compact-every", "0"],
                         stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    addr = json.loads(p.stdout.readline())["listening"]
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://{addr}/healthz", timeout=2).read()
            break
        except OSError:
            time.sleep(0.2)
    return p, addr


def post(addr, tenant, body):
    req = urllib.request.Request(f"http://{addr}/v1/tenants/{tenant}/search",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as r:
        out = json.loads(r.read())
    return out, (time.perf_counter() - t) * 1e3


def run(rank, scan="auto"):
    p, addr = serve(rank, scan)
    time.sleep(float(__import__("os").environ.get("WARMUP_S", "5")))
    results, lat = [None] * len(questions), [0.0] * len(questions)
    nxt = iter(range(len(questions)))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next(nxt, None)
            if i is None:
                return
            tenant, q, date = questions[i]
            body = {"query": q, "k": 10}
            if date:
                body["date"] = date
            results[i], lat[i] = post(addr, tenant, body)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    wall = time.perf_counter() - t0
    metrics = urllib.request.urlopen(f"http://{addr}/metrics").read().decode()
    # memdex_rank_stage_*_total, memdex_rank_{batches,queries}_total{device="..."},
    # memdex_stage_seconds_total{stage="..."}, memdex_search_stage_seconds_{sum,count}{stage="..."}
    # (keys keep their labels)
    counters = {l.split()[0]: float(l.split()[1]) for l in metrics.splitlines()
                if l.startswith(("memdex_rank_stage_", "memdex_rank_batches_total",
                                 "memdex_rank_queries_total", "memdex_stage_seconds_total",
                                 "memdex_search_stage_seconds"))}
    ranker = next((l.split('ranker="', 1)[1].rsplit('"', 1)[0] for l in metrics.splitlines()
                   if l.startswith("memdex_ranker_info{")), None)
    p.terminate()
    p.wait()
    s = sorted(lat)
    return results, {"rank_device": rank, "device_scan": scan, "ranker": ranker,
                     "searches_per_s": len(lat) / wall,
                     "p50_ms": s[len(s) // 2], "p99_ms": s[int(len(s) * 0.99) - 1], **counters}


def per_device(counters):
    """device -> searches the ranker ranked there (memdex_rank_queries_total{device=...})."""
    pre = 'memdex_rank_queries_total{device="'
    return {k[len(pre):-2]: int(v) for k, v in counters.items() if k.startswith(pre)}


def ranked(counters, where=lambda dev: True):
    """Searches the ranker ranked on the devices `where` accepts."""
    return sum(v for dev, v in per_device(counters).items() if where(dev))


plain, a = run("cpu", "off")
scanned, b = run("cpu", "on")
kerneled, c = run(KERNELS)
auto, d = run("auto")
tol = float(__import__("os").environ.get("SCORE_TOL", "5e-3"))


def mismatches(other):
    bad = []
    for i, (x, y) in enumerate(zip(plain, other)):
        hx = [(h["item_id"], h["score"]) for h in x["hits"]]
        hy = [(h["item_id"], h["score"]) for h in y["hits"]]
        # near-ties may swap when batch composition changes a query vector in the 4th digit
        same = [u[0] for u in hx] == [v[0] for v in hy] or \
            sorted(u[0] for u in hx) == sorted(v[0] for v in hy)
        close = all(abs(u[1] - v[1]) < tol for u, v in zip(sorted(hx), sorted(hy)))
        if not (same and close) or any(h["tenant"] != questions[i][0] for h in y["hits"]):
            bad.append(i)
    return bad


bad_scan, bad_kern, bad_auto = mismatches(scanned), mismatches(kerneled), mismatches(auto)
n = len(questions)
# where the searches ran: the device scan's on the rank stage, the kernels' on their device
# (cuda:N, or kernels:cpu: anything but the CPU ranker), auto's somewhere (its split recorded)
ran = {"scan_on_rank_stage": b.get("memdex_rank_stage_queries_total", 0) >= n,
       "kernels_on_device": ranked(c, lambda dev: dev != "cpu") >= n,
       "auto_ranked": ranked(d) >= n}
ok = not bad_scan and not bad_kern and not bad_auto and all(ran.values())
# the verdict first (gpu-check.sh's summary line shows the first 300 characters), then each
# configuration's latencies, searches/s, ranker and counters
print(json.dumps({"ok": ok, "queries": n, "threads": threads,
                  "searches_per_s": {k: round(r["searches_per_s"]) for k, r in
                                     (("cpu", a), ("scan", b), ("kernels", c), ("auto", d))},
                  "mismatches": len(bad_scan), "kernels_mismatches": len(bad_kern),
                  "auto_mismatches": len(bad_auto), "ran_where_asked": ran,
                  "auto_ranked_on": per_device(d),
                  "first_mismatches": bad_scan[:5], "first_kernels_mismatches": bad_kern[:5],
                  "first_auto_mismatches": bad_auto[:5],
                  "cpu": a, "scan": b, "kernels": c, "auto": d}))
sys.exit(0 if ok else 1)

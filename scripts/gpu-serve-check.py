#!/usr/bin/env python3
"""Device scan and fused ranking check for `memdex serve` (docs/serving.md, docs/gpu.md stage
`serve`).

Serves one store three times — `--device-scan off --fused-rank off` (all on the CPU), `--device-scan
on --fused-rank off` (the searches of each model batch scored together on the model's device,
ranked on the CPU) and `--fused-rank on` (each model batch ranked whole by memdex's fused kernel)
— sends the same searches from many threads to each, and checks that every answer has the same
items in the same order as the CPU's with scores within a tolerance. Prints one JSON line:
latencies, searches/s, counters, verdict.

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


def serve(scan, fused):
    p = subprocess.Popen([memdex, "serve", "--store", store, "--model", model, "--device", device,
                          "--device-scan", scan, "--fused-rank", fused, "--addr", "127.0.0.1:0",
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


def run(scan, fused):
    p, addr = serve(scan, fused)
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
    counters = {l.split()[0]: float(l.split()[1]) for l in metrics.splitlines()
                if l.startswith(("memdex_device_scan_", "memdex_fused_rank_"))}
    p.terminate()
    p.wait()
    s = sorted(lat)
    return results, {"scan": scan, "fused": fused, "searches_per_s": len(lat) / wall,
                     "p50_ms": s[len(s) // 2], "p99_ms": s[int(len(s) * 0.99) - 1], **counters}


plain, a = run("off", "off")
scanned, b = run("on", "off")
fused, c = run("off", "on")
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


bad_scan, bad_fused = mismatches(scanned), mismatches(fused)
ok = not bad_scan and not bad_fused \
    and b.get("memdex_device_scan_queries_total", 0) >= len(questions) \
    and c.get("memdex_fused_rank_queries_total", 0) >= len(questions)
print(json.dumps({"queries": len(questions), "threads": threads, "off": a, "on": b, "fused": c,
                  "mismatches": len(bad_scan), "first_mismatches": bad_scan[:5],
                  "fused_mismatches": len(bad_fused), "first_fused_mismatches": bad_fused[:5],
                  "ok": ok}))
sys.exit(0 if ok else 1)

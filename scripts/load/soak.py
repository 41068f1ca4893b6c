#!/usr/bin/env python3
"""Soak driver for `memdex serve`: mixed appends, searches, deletes and compactions from many
tenants for MINUTES (70 % searches, 15 % appends, 15 % deletes of acknowledged sessions, so
the live data levels off after the first minutes and memory should too), one JSON line per minute on stdout (requests and errors per operation,
p50/p99 latency, the server's resident and anonymous memory), a summary at the end, and a
final consistency check: every acknowledged, undeleted session is searchable-visible in the
live row count.

usage: soak.py ADDR PID MINUTES [WORKERS] [TENANTS]
"""
import http.client
import json
import random
import sys
import threading
import time

ADDR, PID, MINUTES = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
WORKERS = int(sys.argv[4]) if len(sys.argv) > 4 else 8
TENANTS = int(sys.argv[5]) if len(sys.argv) > 5 else 50
HOST, PORT = ADDR.rsplit(":", 1)

TOPICS = ["my dog Rex", "the trip to Lisbon", "my sister's wedding", "learning piano",
          "the new job at the bakery", "my knee surgery", "our garden tomatoes", "a red bicycle",
          "the book club", "my grandmother's recipe", "the marathon in May", "a leaking roof"]
VERBS = ["I talked about", "We planned", "I finally finished", "I worried about", "I loved",
         "I bought something for", "I wrote down notes on", "I asked a friend about"]
QUESTIONS = ["what did I say about {}?", "when did we talk about {}?", "tell me about {}",
             "did I mention {} last week?", "what happened with {}"]

lock = threading.Lock()
stats = {}          # op -> {"n", "err", "lat": []}
acked = {}          # (tenant, session) -> rounds
deleted = set()
stop = threading.Event()


def record(op, ms, ok):
    with lock:
        s = stats.setdefault(op, {"n": 0, "err": 0, "lat": []})
        s["n"] += 1
        s["err"] += 0 if ok else 1
        s["lat"].append(ms)


def call(method, path, body=None):
    c = http.client.HTTPConnection(HOST, int(PORT), timeout=60)
    data = json.dumps(body).encode() if body is not None else None
    c.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    payload = r.read()
    c.close()
    return r.status, payload


def session(rng, sid):
    rounds = rng.randint(1, 4)
    turns = []
    for _ in range(rounds):
        turns.append({"role": "user", "content": f"{rng.choice(VERBS)} {rng.choice(TOPICS)} ({sid}, {rng.random():.6f})"})
        turns.append({"role": "assistant", "content": "Noted, thanks for telling me."})
    day = rng.randint(1, 28)
    return {"session_id": sid, "date": f"2024-03-{day:02d}T10:00:00Z", "turns": turns}, rounds


def worker(w):
    rng = random.Random(1000 + w)
    i = 0
    while not stop.is_set():
        i += 1
        tenant = f"t{rng.randrange(TENANTS)}"
        x = rng.random()
        t0 = time.perf_counter()
        try:
            if x < 0.70:
                q = {"query": rng.choice(QUESTIONS).format(rng.choice(TOPICS)), "k": 5}
                st, _ = call("POST", f"/v1/tenants/{tenant}/search", q)
                op, ok = "search", st in (200, 404)
            elif x < 0.85:
                sid = f"w{w}-{i}"
                body, rounds = session(rng, sid)
                st, _ = call("POST", f"/v1/tenants/{tenant}/sessions", body)
                op, ok = "append", st == 200
                if ok:
                    with lock:
                        acked[(tenant, sid)] = rounds
            else:
                with lock:
                    mine = [k for k in acked if k[0] == tenant and k not in deleted]
                if not mine:
                    continue
                t, sid = rng.choice(mine)
                st, _ = call("DELETE", f"/v1/tenants/{t}/sessions/{sid}")
                # 404: another client deleted it first, which is the right answer
                op, ok = "delete", st in (200, 404)
                if ok:
                    with lock:
                        deleted.add((t, sid))
        except Exception:  # a failed connection is an error of that operation
            op, ok = "connection", False
        record(op, (time.perf_counter() - t0) * 1e3, ok)


def compactor():
    while not stop.wait(60):
        t0 = time.perf_counter()
        try:
            st, _ = call("POST", "/v1/admin/compact")
            ok = st == 200
        except Exception:
            ok = False
        record("compact", (time.perf_counter() - t0) * 1e3, ok)


def memory_kb():
    out = {}
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0])
    return out


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, round(p / 100 * (len(v) - 1)))]


def main():
    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(WORKERS)]
    threads.append(threading.Thread(target=compactor, daemon=True))
    for t in threads:
        t.start()
    start = time.time()
    minute = 0
    while time.time() - start < MINUTES * 60:
        time.sleep(min(60, MINUTES * 60 - (time.time() - start)))
        minute += 1
        with lock:
            snap = {k: dict(v) for k, v in stats.items()}
            for v in stats.values():
                v["lat"] = []
        line = {"minute": minute, "memory_kb": memory_kb()}
        for op, s in sorted(snap.items()):
            line[op] = {"requests": len(s["lat"]), "errors_total": s["err"],
                        "p50_ms": round(pct(s["lat"], 50), 1), "p99_ms": round(pct(s["lat"], 99), 1)}
        print(json.dumps(line), flush=True)
    stop.set()
    for t in threads[:-1]:
        t.join()
    with lock:
        summary = {op: {"requests": s["n"], "errors": s["err"]} for op, s in stats.items()}
        live = {k: r for k, r in acked.items() if k not in deleted}
    print(json.dumps({"summary": summary, "acknowledged_sessions": len(acked),
                      "deleted_sessions": len(deleted), "expected_live_sessions": len(live),
                      "expected_live_rows": sum(live.values())}), flush=True)


main()

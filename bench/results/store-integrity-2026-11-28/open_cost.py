#!/usr/bin/env python3
"""Open time and first reads of a store, two builds side by side (alternating runs, medians).

usage: open_cost.py BEFORE_BIN AFTER_BIN ROUNDS STORE... [--cold] [--search MEMDEX_BEFORE
       MEMDEX_AFTER]

BEFORE_BIN / AFTER_BIN: `open_cost` examples built from the two trees
(`cargo build --release -p memdex-store --example open_cost`). --cold evicts the store's
files from the page cache (posix_fadvise DONTNEED) before every run. --search also times
`memdex search` end to end (one process: model load, open, one search) with the two `memdex`
binaries on each store's first tenant (the model the store records).
"""
import json
import os
import statistics
import subprocess
import sys
import time


def evict(store):
    for root, _, files in os.walk(store):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def first_tenant(store):
    m = json.load(open(os.path.join(store, "manifest.json")))
    return sorted({t["tenant"] for s in m["segments"] for t in s["tenants"]})[0]


def run_open(binary, store, cold):
    if cold:
        evict(store)
    out = subprocess.run([binary, store, "3"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run_search(binary, store, cold):
    if cold:
        evict(store)
    cmd = [binary, "search", "--store", store, "--tenant", first_tenant(store), "--query",
           "what did I say about my dog?", "-k", "5", "--device", "cpu", "--json"]
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True)
    return (time.perf_counter() - t) * 1e3


def med(xs):
    return statistics.median(xs)


def main():
    args = sys.argv[1:]
    cold = "--cold" in args
    search = None
    if "--search" in args:
        i = args.index("--search")
        search = args[i + 1:i + 3]
        args = args[:i]
    args = [a for a in args if a != "--cold"]
    before, after, rounds, stores = args[0], args[1], int(args[2]), args[3:]
    mode = "cold (evicted)" if cold else "warm (page cache)"
    for store in stores:
        runs = {"before": [], "after": []}
        e2e = {"before": [], "after": []}
        for _ in range(rounds):
            for name, b in (("before", before), ("after", after)):
                runs[name].append(run_open(b, store, cold))
            if search:
                for name, b in (("before", search[0]), ("after", search[1])):
                    e2e[name].append(run_search(b, store, cold))
        row = {"store": store, "mode": mode, "rounds": rounds}
        for name in ("before", "after"):
            r = runs[name]
            row[name] = {
                "open_ms": med([x["open_ms"] for x in r]),
                "first_tenant_first_read_ms": med([x["first_read_ms"][0] for x in r]),
                "three_tenants_first_read_ms": med([sum(x["first_read_ms"]) for x in r]),
                "again_ms": med([x["again_ms"][0] for x in r]),
                "words_first_ms": med([x["words_first_ms"] for x in r]),
            }
            if search:
                row[name]["memdex_search_process_ms"] = med(e2e[name])
        print(json.dumps(row))


if __name__ == "__main__":
    main()

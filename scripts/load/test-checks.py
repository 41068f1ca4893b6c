#!/usr/bin/env python3
"""Tests the wrk scripts' answer checks (scripts/load/common.lua) against a fake `memdex serve`
that answers right, or wrong in one way: every search from one tenant, the asked tenant's
name on another tenant's hits, a planted question's first hit from another session or with
another tenant's name, a hit short. Runs wrk (Debian package `wrk`) for ~1 s per case and
asserts which answers the Lua counted right and wrong.

  test-checks.py        exit 0 when every case is judged as it should be
"""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import planted  # noqa: E402

K = 10
MODE = {"name": "good"}


def hit(rank, tenant, session, value):
    return {"item_id": rank, "position": rank, "rank": rank, "role": "user", "score": 1.0 / rank,
            "session_id": session, "tenant": tenant, "timestamp_ms": 0, "turn": 0,
            "value": value}


def answer(tenant, query):
    """A search answer as `memdex serve` writes it, bent as MODE says."""
    mode = MODE["name"]
    t = int(tenant.split("-")[1])
    shown = "tenant-0" if mode == "one-tenant" else tenant
    hits_of = "tenant-0" if mode in ("one-tenant", "relabelled") else tenant
    ht = int(hits_of.split("-")[1])
    hits = [hit(r, shown, f"s{r}", f"user: I love my dog ({hits_of}).") for r in range(1, K + 1)]
    m = re.fullmatch(r"what did I name my (\w+)\?", query)
    if m:
        j = planted.THINGS.index(m.group(1))
        first = (f"planted-{m.group(1)}", f"user: I named my {m.group(1)} {planted.name(ht, j)}.")
        if mode == "other-session":
            first = ("s9", first[1])
        elif mode == "other-name":
            first = (first[0], f"user: I named my {m.group(1)} {planted.name(t + 1, j)}.")
        hits[0] = hit(1, shown, *first)
    if mode == "short":
        hits = hits[:-1]
    return {"hits": hits, "query": query, "searched": query, "tenant": shown}


class Fake(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        m = re.fullmatch(r"/v1/tenants/([^/]+)/(search|sessions)", self.path)
        if m.group(2) == "search":
            out = answer(m.group(1), body["query"])
        else:
            out = {"tenant": m.group(1), "report": {"items_written": 2}}
        data = json.dumps(out, sort_keys=True, separators=(",", ":")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


def run_wrk(port, script, threads, conns):
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{conns}", "-d1s", "--timeout", "5s",
                          "-s", f"scripts/load/{script}", f"http://127.0.0.1:{port}"],
                         cwd=os.path.dirname(os.path.dirname(HERE)), capture_output=True,
                         text=True, timeout=60).stdout
    g = lambda pat: int(re.search(pat, out).group(1)) if re.search(pat, out) else None  # noqa: E731
    return {"ok": g(r"body_checked ok=(\d+)"), "wrong": g(r"body_checked ok=\d+ wrong=(\d+)"),
            "planted_ok": g(r"planted_checked ok=(\d+)"),
            "planted_wrong": g(r"planted_checked ok=\d+ wrong=(\d+)"),
            "checks": (re.search(r"checks: (.*)", out) or [None, ""])[1]}


def main():
    if not shutil.which("wrk"):
        print("SKIPPED scripts/load/test-checks.py: wrk not installed (apt-get install wrk)",
              file=sys.stderr)
        return 0 if os.environ.get("MEMDEX_REQUIRE_WRK") != "1" else 1
    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # wrk drops its connections at the end of a run

    srv = Server(("127.0.0.1", 0), Fake)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    # (mode, script, threads, connections, what must hold)
    cases = [
        ("good", "search.lua", 4, 4, lambda r: r["wrong"] == 0 and r["ok"] > 0
         and r["planted_ok"] > 0 and r["planted_wrong"] == 0),
        ("good", "mixed.lua", 2, 2, lambda r: r["wrong"] == 0 and r["ok"] > 0),
        ("one-tenant", "search.lua", 4, 4, lambda r: r["ok"] < 0.05 * r["wrong"]
         and "wrong tenant" in r["checks"]),
        # labelled with the asked tenant: only the planted questions can tell
        ("relabelled", "search.lua", 4, 4, lambda r: r["planted_ok"] < 0.05 * r["planted_wrong"]
         and r["wrong"] == r["planted_wrong"] and "wrong top hit" in r["checks"]),
        ("other-session", "search.lua", 4, 4, lambda r: r["planted_ok"] == 0
         and r["planted_wrong"] > 0 and r["wrong"] == r["planted_wrong"]),
        ("other-name", "search.lua", 4, 4, lambda r: r["planted_ok"] == 0
         and r["planted_wrong"] > 0 and "wrong top hit" in r["checks"]),
        ("short", "search.lua", 2, 2, lambda r: r["ok"] == 0 and "hit count 9" in r["checks"]),
        # more than one connection per thread: answers cannot be paired with their requests
        ("good", "search.lua", 2, 8, lambda r: r["wrong"] > r["ok"]),
    ]
    bad = 0
    for mode, script, th, c, want in cases:
        MODE["name"] = mode
        r = run_wrk(port, script, th, c)
        ok = None not in (r["ok"], r["wrong"]) and bool(want(r))
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {mode} {script} -t{th} -c{c}: {r}")
    srv.shutdown()
    print("load checks self-test:", "all passed" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

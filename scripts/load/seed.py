#!/usr/bin/env python3
"""Seeds a running memdex server: TENANTS tenants x ROUNDS rounds in total, each tenant's rounds
in 2-round sessions, one POST of all a tenant's sessions per request. Four of each tenant's
rounds are its planted facts (scripts/load/planted.py), which the load checks ask about.
Prints the throughput."""
import json, os, random, sys, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import planted  # noqa: E402

addr, tenants, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
words = ["dog", "cat", "paris", "coffee", "sister", "guitar", "marathon", "job", "garden", "trip",
         "book", "piano", "doctor", "car", "birthday", "recipe", "movie", "camera", "rex", "lisbon"]
rng = random.Random(7)
per = rounds // tenants
t0 = time.time()
for t in range(tenants):
    sessions = planted.sessions(t)
    for s in range(max(per - len(sessions), 0) // 2):
        turns = []
        for r in range(2):
            a, b, c = rng.choice(words), rng.choice(words), rng.choice(words)
            turns.append({"role": "user", "content": f"tenant {t} session {s}: my {a} and the {b} near {c} ({r})"})
            turns.append({"role": "assistant", "content": f"Noted about your {a}."})
        sessions.append({"session_id": f"seed-{s}", "date": f"2024-01-{1 + s % 28:02d}T09:00:00Z", "turns": turns})
    req = urllib.request.Request(f"http://{addr}/v1/tenants/tenant-{t}/sessions",
                                 data=json.dumps({"sessions": sessions}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=120) as resp:
        assert resp.status == 200, resp.status
dt = time.time() - t0
print(f"seeded {tenants} tenants x {per} rounds = {tenants * per} rounds in {dt:.1f} s "
      f"({tenants * per / dt:.0f} rounds/s, bulk requests of {per} rounds)")

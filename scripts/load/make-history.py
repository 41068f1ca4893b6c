#!/usr/bin/env python3
"""Writes a JSONL chat history for the full-scale load test: TENANTS tenants x ROUNDS rounds
each, in sessions of 10 rounds (user + assistant turns), one session per day. Texts combine a
small vocabulary, so many rounds share a key and `memdex index` embeds each distinct key once
(the point is the store and ranking at this scale, not 500k model passes on 2 cores).

Four of each tenant's rounds are its planted facts (scripts/load/planted.py: one session
`planted-THING` each, a name only that tenant's THING has), so the load checks know the right
first hit of a planted question; the other ROUNDS - 4 rounds are the templated ones.

usage: make-history.py OUT.jsonl TENANTS ROUNDS_PER_TENANT"""
import json
import os
import random
import sys
from datetime import date, timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import planted  # noqa: E402

out, tenants, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
words = ["dog", "cat", "paris", "coffee", "sister", "guitar", "marathon", "job", "garden", "trip",
         "book", "piano", "doctor", "car", "birthday", "recipe", "movie", "camera", "rex", "lisbon"]
verbs = ["love", "sold", "visited", "fixed", "painted", "bought", "miss", "planned"]
rng = random.Random(7)
start = date(2023, 1, 1)
regular = max(rounds - len(planted.THINGS), 0)
with open(out, "w") as f:
    for t in range(tenants):
        for s in range((regular + 9) // 10):
            turns = []
            for _ in range(min(10, regular - 10 * s)):
                a, b, v = rng.choice(words), rng.choice(words), rng.choice(verbs)
                turns.append({"role": "user", "content": f"I {v} my {a} and the {b} last week."})
                turns.append({"role": "assistant", "content": f"Noted about your {a}."})
            day = start + timedelta(days=s)
            f.write(json.dumps({"tenant": f"tenant-{t}", "session_id": f"s{s}",
                                "date": f"{day.isoformat()}T09:00:00Z", "turns": turns}) + "\n")
        for p in planted.sessions(t):
            f.write(json.dumps({"tenant": f"tenant-{t}", **p}) + "\n")

#!/usr/bin/env python3
"""Deterministic synthetic JSONL chat history for index-scaling benchmarks: N sessions over
N/25 tenants (at least 1), 2-4 rounds each, varied templated sentences and dates.

usage: scripts/gen-history.py --sessions N -o OUT.jsonl [--seed 7]"""
import argparse
import json
import random

SUBJECTS = ["dog", "sister", "garden", "car", "job", "flat", "bike", "piano", "trip", "doctor",
            "cat", "brother", "kitchen", "laptop", "boss", "neighbour", "marathon", "novel"]
VERBS = ["talked about", "fixed", "visited", "bought", "sold", "painted", "called", "met",
         "booked", "cancelled", "cleaned", "finished"]
PLACES = ["Lisbon", "Oslo", "Kyoto", "Lima", "Cairo", "Perth", "Quebec", "Tallinn", "Accra"]
WHEN = ["yesterday", "last weekend", "two weeks ago", "on Monday", "in March", "this morning"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tenants = max(1, a.sessions // 25)
    with open(a.output, "w") as f:
        for i in range(a.sessions):
            t = i % tenants
            turns = []
            for _ in range(rng.randint(2, 4)):
                s, v, p, w = (rng.choice(x) for x in (SUBJECTS, VERBS, PLACES, WHEN))
                turns.append({"role": "user", "content":
                              f"I {v} my {s} in {p} {w}; it took {rng.randint(1, 9)} hours."})
                turns.append({"role": "assistant", "content":
                              f"Thanks for telling me about your {s}. How did {p} feel?"})
            day = 1 + (i // tenants) % 28
            month = 1 + (i // (tenants * 28)) % 12
            f.write(json.dumps({"tenant": f"user{t:04d}", "session_id": f"s{i}",
                                "date": f"2023-{month:02d}-{day:02d}T10:00:00Z",
                                "turns": turns}) + "\n")


if __name__ == "__main__":
    main()

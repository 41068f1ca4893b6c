#!/usr/bin/env python3
"""Late fusion of two `memdex eval --log` runs (e.g. the same pipeline over MiniLM and over
E5): measures whether a second dense model pays before a store holds two vector columns.

Each question's two whole-corpus rankings are fused with a rule fixed in advance, never
fitted to the data:
  rrf     reciprocal-rank fusion, k = 60 (Cormack et al. 2009)
  minmax  0.5 / 0.5 sum of min-max-normalised scores (memdex's own hybrid rule)
The fused log has eval_crosscheck.py's input format; score it (overall and per question type)
with
  scripts/eval_crosscheck.py OUT.jsonl --json

usage: scripts/fuse-logs.py A.log B.log rrf|minmax OUT.jsonl
"""
import json
import sys


def read(path):
    with open(path, encoding="utf-8") as f:
        return {q["question_id"]: q for q in map(json.loads, filter(str.strip, f))}


def rrf(a, b, k=60):
    s = {}
    for ranked in (a, b):
        for i, r in enumerate(ranked):
            s[r["id"]] = s.get(r["id"], 0.0) + 1.0 / (k + i + 1)
    return s


def minmax(a, b):
    s = {}
    for ranked in (a, b):
        xs = [r["score"] for r in ranked]
        lo, hi = min(xs), max(xs)
        for r in ranked:
            v = 0.0 if hi == lo else (r["score"] - lo) / (hi - lo)
            s[r["id"]] = s.get(r["id"], 0.0) + 0.5 * v
    return s


def main():
    a_path, b_path, rule, out = sys.argv[1:5]
    fuse = {"rrf": rrf, "minmax": minmax}[rule]
    a, b = read(a_path), read(b_path)
    if a.keys() != b.keys():
        sys.exit("error: the two logs hold different questions")
    with open(out, "w", encoding="utf-8") as f:
        for qid, qa in a.items():
            qb = b[qid]
            if {r["id"] for r in qa["ranked"]} != {r["id"] for r in qb["ranked"]}:
                sys.exit(f"error: question {qid}: the two rankings cover different items")
            s = fuse(qa["ranked"], qb["ranked"])
            ranked = [{"id": i, "score": v} for i, v in sorted(s.items(), key=lambda x: (-x[1], x[0]))]
            f.write(json.dumps({**qa, "ranked": ranked}) + "\n")


if __name__ == "__main__":
    main()

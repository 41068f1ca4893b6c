"""The tuning half's controls that idf-weighted MaxSim costs the first stage (stage off), with
their top 3 (the checking half's are counted by pairs-late.py, never printed).

usage: MEMDEX_MODEL=models/all-MiniLM-L6-v2 python3 pairs-lost.py W pairs-hits.json.gz CACHE.pkl"""
import gzip
import json
import sys

sys.argv = [sys.argv[0], sys.argv[1], sys.argv[2], sys.argv[3]]
source = open(__file__.replace("pairs-lost.py", "pairs-late.py")).read()
exec(source.split("W = [float")[0])  # tv, side, rerank, rank
w = float(sys.argv[1])
for r in json.load(gzip.open(sys.argv[2], "rt")):
    if "new" in r or r["tier"] != "stage" or r["half"] != "tuning":
        continue
    h = rerank(r["question"], r["hits"]["q-False"], w)
    a, b = rank(h, r["answer"]), rank(h, r["related"])
    if not (a == 1 or (r["kind"] == "repeated-fact" and b == 1)):
        print(r["set"], r["id"], r["kind"], "| Q:", r["question"])
        for x in h[:3]:
            tag = "ANS" if x["s"] == r["answer"] else "REL" if x["s"] == r["related"] else "   "
            print("   ", tag, round(x["score"], 3), x["v"][:150].replace("\n", " / "))

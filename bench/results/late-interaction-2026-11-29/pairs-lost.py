"""The tuning half's controls that idf-weighted MaxSim costs the first stage (stage off), with
their top 3 (the checking half's are counted by pairs-late.py, never printed).

usage: MEMDEX_MODEL=models/all-MiniLM-L6-v2 python3 pairs-lost.py W pairs-hits.json.gz CACHE.pkl"""
import gzip
import importlib.util
import json
import os
import sys

spec = importlib.util.spec_from_file_location("pairs_late", os.path.join(os.path.dirname(__file__), "pairs-late.py"))
pairs_late = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pairs_late)


def main():
    w = float(sys.argv[1])
    tv = pairs_late.Vectors(sys.argv[3])
    for r in json.load(gzip.open(sys.argv[2], "rt")):
        if "new" in r or r["tier"] != "stage" or r["half"] != "tuning":
            continue
        h = pairs_late.rerank(tv, r["question"], r["hits"]["q-False"], w)
        if not pairs_late.kept(r, h):
            print(r["set"], r["id"], r["kind"], "| Q:", r["question"])
            for x in h[:3]:
                tag = "ANS" if x["s"] == r["answer"] else "REL" if x["s"] == r["related"] else "   "
                print("   ", tag, round(x["score"], 3), x["v"][:150].replace("\n", " / "))
    tv.save()


main()

"""The twenty-six update and control sets with idf-weighted MaxSim fused in: each question's top 50
(pairs-hits.py, with the update stage on and off) re-ranked by score + w * maxsim-idf (as
locomo-late.py's maxsim-idf, idf over the question's own top 50), then scored as the
knowledge_updates test scores a pair: an update's newer session above its older one (present
question), the older one in the top 5 (past question), a control's answer session first (or,
for a repeated fact, either).

The stage-off column is the faithful one: it is what the signal would do to the first stage.
With the stage on, the re-ranking runs after the update stage here, so it can undo its moves;
a real stage would run before it.

With USER_SIDE=1 an item's text is cut at its first "\nassistant:" (the user's words only).

usage: [USER_SIDE=1] MEMDEX_MODEL=models/all-MiniLM-L6-v2 python3 pairs-late.py W[,W...] pairs-hits.json.gz CACHE.pkl"""
import collections
import gzip
import json
import os
import pickle
import sys

from late import maxsim_idf, fused_order, unit_tokens


class Vectors:
    """unit_tokens of each text, cached in a pickle across runs."""

    def __init__(self, path):
        self.path = path
        self.cache = pickle.load(open(path, "rb")) if os.path.exists(path) else {}

    def __call__(self, text):
        if text not in self.cache:
            self.cache[text] = unit_tokens(text)
        return self.cache[text]

    def save(self):
        pickle.dump(self.cache, open(self.path, "wb"))


def side(v):
    return v.split("\nassistant:")[0] if os.environ.get("USER_SIDE") else v


def rerank(tv, q, hits, w):
    """`hits` by score + w * maxsim-idf over them (tv: text -> unit token vectors)."""
    if w == 0 or not hits:
        return hits
    sims = maxsim_idf(tv(q), [tv(side(h["v"])) for h in hits])
    return [hits[i] for i in fused_order([h["score"] for h in hits], sims, w)]


def rank(hits, s):
    return next((i + 1 for i, h in enumerate(hits) if h["s"] == s), 99)


def kept(r, hits):
    """Whether a control keeps its answer first (for a repeated fact, either session)."""
    a, b = rank(hits, r["answer"]), rank(hits, r["related"])
    return a == 1 or (r["kind"] == "repeated-fact" and b == 1)


def count(tv, recs, weights):
    tab = collections.defaultdict(collections.Counter)

    def add(r, what, mode, w, ok):
        tab[(r["half"], what, mode, w)]["n"] += 1
        tab[(r["half"], what, mode, w)]["ok"] += ok

    for r in recs:
        for w in weights:
            for mode in ("True", "False"):
                if "new" in r:
                    h = rerank(tv, r["present"], r["hits"][f"present-{mode}"], w)
                    add(r, "upd", mode, w, rank(h, r["new"]) < rank(h, r["old"]))
                    h = rerank(tv, r["past"], r["hits"][f"past-{mode}"], w)
                    add(r, "past", mode, w, rank(h, r["old"]) <= 5)
                elif r["tier"] == "stage":
                    add(r, "ctl", mode, w, kept(r, rerank(tv, r["question"], r["hits"][f"q-{mode}"], w)))
    return tab


def main():
    weights = [float(x) for x in sys.argv[1].split(",")]
    tv = Vectors(sys.argv[3])
    tab = count(tv, json.load(gzip.open(sys.argv[2], "rt")), weights)
    tv.save()
    print("half     what  stage  " + "  ".join(f"w={w:<5}" for w in weights))
    for half in ("tuning", "checking"):
        for what in ("upd", "past", "ctl"):
            for mode in ("True", "False"):
                row = [tab[(half, what, mode, w)] for w in weights]
                stage = "on " if mode == "True" else "off"
                print(f"{half:8} {what:5} {stage}    " + "  ".join(f'{c["ok"]:>3}/{c["n"]:<3}' for c in row))


if __name__ == "__main__":
    main()

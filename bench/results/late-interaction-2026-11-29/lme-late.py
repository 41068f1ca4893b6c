"""The two LongMemEval fixtures' gold turn ranks with idf-weighted MaxSim fused in (as
locomo-late.py's maxsim-idf over the top 50); a smoke test: one question per file.

usage: MEMDEX_MODEL=models/all-MiniLM-L6-v2 python3 lme-late.py FIXTURE.json EVAL_LOG.jsonl W[,W...]"""
import collections
import json
import math
import re
import sys

import numpy as np

from tokvec import encode

SPECIAL = {"[CLS]", "[SEP]"}
PUNCT = re.compile(r"^\W+$")
fixture = json.load(open(sys.argv[1]))
fixture = {q["question_id"]: q for q in (fixture if isinstance(fixture, list) else [fixture])}


def vec(text):
    toks, h = encode(text)
    keep = [k for k, s in enumerate(toks) if s not in SPECIAL]
    return [toks[k] for k in keep], h[keep] / np.linalg.norm(h[keep], axis=1, keepdims=True)


def text(q, item_id):
    sid, turn = item_id.rsplit("_", 1)
    return q["haystack_sessions"][q["haystack_session_ids"].index(sid)][int(turn)]["content"]


for line in open(sys.argv[2]):
    x = json.loads(line)
    q = fixture[x["question_id"]]
    top = x["ranked"][:50]
    qt, qh = vec(q["question"])
    docs = [vec(text(q, r["id"])) for r in top]
    df = collections.Counter(t for toks, _ in docs for t in set(toks))
    w = np.array([0.0 if PUNCT.match(t) else max(0.0, math.log((len(docs) + 1) / (df[t] + 0.5))) for t in qt])
    w = w / w.sum()
    sims = [float(w @ (qh @ dh.T).max(1)) for _, dh in docs]
    scores = sorted((r["score"] for r in top), reverse=True)
    for weight in map(float, sys.argv[3].split(",")):
        order = sorted(range(len(top)), key=lambda i: -(scores[i] + weight * sims[i]))
        ranks = sorted(1 + order.index(i) for i, r in enumerate(top) if r["id"] in x["gold"])
        print(f"{x['question_id']} ({q['question_type']}) w={weight}: gold turn ranks {ranks}")

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
import math
import os
import pickle
import re
import sys

import numpy as np
from tokvec import encode
SPECIAL = {"[CLS]", "[SEP]"}; PUNCT = re.compile(r"^\W+$")
cp = sys.argv[3]
cache = pickle.load(open(cp, 'rb')) if os.path.exists(cp) else {}
def tv(t):
    if t not in cache:
        toks, h = encode(t)
        keep = [k for k, s in enumerate(toks) if s not in SPECIAL]
        h = h[keep] / np.linalg.norm(h[keep], axis=1, keepdims=True)
        cache[t] = ([toks[k] for k in keep], h.astype(np.float32))
    return cache[t]
def side(v):
    return v.split('\nassistant:')[0] if os.environ.get('USER_SIDE') else v
def rerank(q, hits, w):
    if w == 0 or not hits: return hits
    qt, qh = tv(q)
    docs = [tv(side(h['v'])) for h in hits]
    cnt = collections.Counter(); n = len(docs)
    for toks, _ in docs: cnt.update(set(toks))
    wts = np.array([0.0 if PUNCT.match(t) else math.log((n + 1) / (cnt.get(t, 0) + 0.5)) for t in qt])
    wts = np.maximum(wts, 0); wts = wts / wts.sum() if wts.sum() > 0 else np.ones(len(qt)) / len(qt)
    scores = sorted((h['score'] for h in hits), reverse=True)
    fused = [(s + w * float(wts @ (qh @ dh.T).max(1)), i) for i, (s, (_, dh)) in enumerate(zip(scores, docs))]
    return [hits[i] for _, i in sorted(fused, key=lambda x: -x[0])]
def rank(hits, s):
    return next((i + 1 for i, h in enumerate(hits) if h['s'] == s), 99)
W = [float(x) for x in sys.argv[1].split(',')]
recs = json.load(gzip.open(sys.argv[2], 'rt'))
tab = collections.defaultdict(collections.Counter)
for r in recs:
    for w in W:
        if 'new' in r:
            for mode in ('True', 'False'):
                h = rerank(r['present'], r['hits'][f'present-{mode}'], w)
                ok = rank(h, r['new']) < rank(h, r['old'])
                tab[(r['half'], 'upd', mode, w)]['n'] += 1; tab[(r['half'], 'upd', mode, w)]['ok'] += ok
                h = rerank(r['past'], r['hits'][f'past-{mode}'], w)
                ok = rank(h, r['old']) <= 5
                tab[(r['half'], 'past', mode, w)]['n'] += 1; tab[(r['half'], 'past', mode, w)]['ok'] += ok
        elif r['tier'] == 'stage':
            for mode in ('True', 'False'):
                h = rerank(r['question'], r['hits'][f'q-{mode}'], w)
                a, b = rank(h, r['answer']), rank(h, r['related'])
                ok = a == 1 or (r['kind'] == 'repeated-fact' and b == 1)
                tab[(r['half'], 'ctl', mode, w)]['n'] += 1; tab[(r['half'], 'ctl', mode, w)]['ok'] += ok
pickle.dump(cache, open(cp, 'wb'))
print('half     what  stage  ' + '  '.join(f'w={w:<5}' for w in W))
for half in ('tuning', 'checking'):
    for what in ('upd', 'past', 'ctl'):
        for mode in ('True', 'False'):
            row = [tab[(half, what, mode, w)] for w in W]
            print(f'{half:8} {what:5} {"on " if mode=="True" else "off"}    ' + '  '.join(f'{c["ok"]:>3}/{c["n"]:<3}' for c in row))

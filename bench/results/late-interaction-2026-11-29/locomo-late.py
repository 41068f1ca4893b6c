"""Late interaction as a re-ranking signal on LoCoMo dev (issue 57, item 6), simulated on the
default's eval log. Each question's top 50 is re-ranked by

    score + w * s(question, turn)

where `score` is the logged final score (made consistent with the logged order: the i-th best
score goes to the i-th ranked turn, so w = 0 gives the logged ranking exactly), and s is one of:

  maxsim         mean over the question's wordpieces of the best cosine with a turn's wordpiece
                 (ColBERT's MaxSim, on all-MiniLM-L6-v2's token vectors, not trained for it)
  maxsim-content the same over the question's wordpieces that are not punctuation
  maxsim-idf     the same, each question wordpiece weighted by its idf in the question's own top
                 50 (log((n + 1) / (df + 0.5)), clipped at 0, normalised to sum 1)
  maxsim-idf-conv / maxsim-idf-all: idf over the question's conversation / all of dev instead
  static-idf     maxsim-idf on the model's input wordpiece embeddings (no model pass over turns)
  pooled-idf     the question's token vectors pooled with those weights, cosine with the turn's
                 mean-pooled vector (one vector per turn, as the store keeps)

w is chosen leave-one-conversation-out on t->s any@1 (and, separately, on t->s MRR) from a fixed
grid; the cross-validated figures are the ones to quote.

usage: MEMDEX_MODEL=models/all-MiniLM-L6-v2 python3 locomo-late.py LOCOMO_DEV.json EVAL_LOG.jsonl[.gz] CACHE.pkl
"""
import collections
import gzip
import json
import os
import pickle
import sys

import numpy as np

from late import PUNCT, SPECIAL, doc_freq, idf_weights, maxsim, unit_tokens

data = {c["sample_id"]: c for c in json.load(open(sys.argv[1]))}
opener = gzip.open if sys.argv[2].endswith(".gz") else open
log = [json.loads(line) for line in opener(sys.argv[2], "rt")]
for x in log:
    x["ranked"] = x["ranked"][:50]  # the re-ranked depth
questions = {f"{cid}:q{i + 1}": q for cid, c in data.items() for i, q in enumerate(c["qa"])}
GRID = [0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0]


def turn_text(cid, tid):
    """A turn's text as memdex ingests it (crates/memdex-ingest/src/locomo.rs)."""
    _, s, t = tid.split("_")
    turn = data[cid]["conversation"][f"session_{s}"][int(t)]
    cap = (turn.get("blip_caption") or "").strip()
    return f"{turn['speaker']}: {turn['text']}" + (f" [image: {cap}]" if cap else "")


def all_turns(cid):
    for key, turns in data[cid]["conversation"].items():
        if key.startswith("session_") and not key.endswith("date_time"):
            for i in range(len(turns)):
                yield f"{key}_{i}"


def vectors(path):
    """Unit token vectors (special tokens dropped) of every question and turn, cached."""
    cache = pickle.load(open(path, "rb")) if os.path.exists(path) else {}
    need = {questions[x["question_id"]]["question"] for x in log}
    need |= {turn_text(cid, t) for cid in data for t in all_turns(cid)}
    need -= set(cache)
    if need:
        for t in sorted(need):
            cache[t] = unit_tokens(t)
        pickle.dump(cache, open(path, "wb"))
    return cache


def static_vectors(text):
    from tokvec import TOK, W

    e = W["embeddings.word_embeddings.weight"]
    enc = TOK.encode(text)
    keep = [k for k, s in enumerate(enc.tokens) if s not in SPECIAL]
    v = e[[enc.ids[k] for k in keep]]
    return [enc.tokens[k] for k in keep], v / np.linalg.norm(v, axis=1, keepdims=True)


def weights(qt, df, n, idf):
    return idf_weights(qt, df, n) if idf else np.ones(len(qt)) / len(qt)


def prepared(cache, variant):
    conv_df = {cid: doc_freq([cache[turn_text(cid, t)] for t in all_turns(cid)]) for cid in data}
    all_df = (sum((d for d, _ in conv_df.values()), collections.Counter()), sum(n for _, n in conv_df.values()))
    vec = static_vectors if variant == "static-idf" else cache.__getitem__
    out = []
    for x in log:
        cid = x["question_id"].split(":")[0]
        qt, qh = vec(questions[x["question_id"]]["question"])
        docs = [vec(turn_text(cid, r["id"])) for r in x["ranked"]]
        df, n = {"maxsim-idf-conv": conv_df[cid], "maxsim-idf-all": all_df}.get(variant, doc_freq(docs))
        if variant == "maxsim-content":
            keep = [k for k, t in enumerate(qt) if not PUNCT.match(t)] or list(range(len(qt)))
            qt, qh = [qt[k] for k in keep], qh[keep]
        w = weights(qt, df, n, "idf" in variant)
        if variant == "pooled-idf":
            qv = w @ qh
            qv /= np.linalg.norm(qv)
            sims = [float(qv @ (dh.mean(0) / np.linalg.norm(dh.mean(0)))) for _, dh in docs]
        else:
            sims = [maxsim(w, qh, dh) for _, dh in docs]
        scores = sorted((r["score"] for r in x["ranked"]), reverse=True)
        out.append((cid, list(zip((r["id"] for r in x["ranked"]), scores, sims)), set(x["gold"]), x["question_type"]))
    return out


def session(turn_id):
    return turn_id.rsplit("_", 1)[0]


def metrics_by(items, weight):
    """Metrics of all items, each conversation's questions re-ranked with weight[conversation]."""
    return metrics(items, None, weight)


def metrics(items, w, weight=None):
    m = collections.Counter()
    mh = 0
    for cid, turns, gold, kind in items:
        w_q = weight[cid] if weight else w
        order = [t for t, _, _ in sorted(turns, key=lambda t: -(t[1] + w_q * t[2]))]
        sessions = list(dict.fromkeys(session(t) for t in order))
        gs = {session(g) for g in gold}
        m["t->s any@1"] += sessions[0] in gs
        m["t->s MRR"] += next((1 / (i + 1) for i, s in enumerate(sessions) if s in gs), 0)
        m["t->s all@5"] += gs <= set(sessions[:5])
        m["turn any@1"] += order[0] in gold
        m["turn all@5"] += gold <= set(order[:5])
        m["n"] += 1
        if kind == "multi-hop":
            mh += 1
            m["multi-hop t->s all@5"] += gs <= set(sessions[:5])
    out = {k: round(v / m["n"], 4) for k, v in m.items() if k != "n"}
    out["multi-hop t->s all@5"] = round(m["multi-hop t->s all@5"] / max(mh, 1), 4)
    return out


def cross_validated(items, key):
    """Each conversation held out in turn: w chosen on the others by `key`, its questions ranked
    with it; the metrics pooled over all held-out questions."""
    chosen = {}
    for held in sorted(data):
        train = [p for p in items if p[0] != held]
        chosen[held] = max(GRID, key=lambda w: (metrics(train, w)[key], -w))
    return metrics_by(items, chosen), list(chosen.values())


def main():
    cache = vectors(sys.argv[3])
    variants = ["maxsim", "maxsim-content", "maxsim-idf", "maxsim-idf-conv", "maxsim-idf-all", "static-idf", "pooled-idf"]
    for variant in variants:
        items = prepared(cache, variant)
        print(f"## {variant}")
        for w in GRID:
            print(f"  w={w}: {metrics(items, w)}")
        for key in ("t->s any@1", "t->s MRR"):
            got, chosen = cross_validated(items, key)
            print(f"  leave-one-conversation-out on {key} (chose {chosen}): {got}")


if __name__ == "__main__":
    main()

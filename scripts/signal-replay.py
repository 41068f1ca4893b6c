#!/usr/bin/env python3
"""Replay: does one more signal re-order a turn ranking for the better?

Re-sorts each question's turns of a `memdex eval --log` by
    minmax(turn score) + lam * minmax(signal of the turn, or of the turn's session)
and prints turn recall_all@5, turn->session recall_all@5 and multi-hop turn->session
recall_all@5 (LongMemEval's definitions). The replay re-sorts by score, so it drops the time
stage's re-ordering: compare with its own lam 0 row, not with the eval.

Signals:
  bm25      session: Okapi BM25 (k1 1.2, b 0.75) of the question over each session's text
            (all its turns as `Speaker: text`, lower-cased alphanumeric words, a short stop list)
  centroid  session: cosine of the question with the mean of the session's turn vectors
  top3      session: mean of the session's three best turn cosines
  qe        turn: query expansion by embedding neighbours (Kuzi, Shtok & Kurland, CIKM 2016):
            the conversation's M words (>= 3 letters, not a stop word, not in the question, in
            <= 10 % of its turns) closest to the question's vector, each weighted by that
            cosine, scored by BM25 over each turn
(centroid/top3/qe need numpy and vectors from `memdex embed`: of the turns, of the questions
with --kind query, and of the words, in the order --write-texts writes them).

usage:
  signal-replay.py LOCOMO.json --write-texts DIR
  signal-replay.py LOCOMO.json --log EVAL.log --signal bm25|centroid|top3|qe [--vectors DIR] [--m M]
"""
import argparse
import collections
import json
import math
import re

STOP = set("""a an the and or but if of to in on at for with about from by is are was were be
been being i you he she it we they me him her us them my your his its our their this that these
those what which who whom when where why how do does did have has had will would can could
should not no yes so just too very also as than then there here""".split())


def words(s):
    return [w for w in re.findall(r"[a-z0-9]+", s.lower()) if w not in STOP]


def load(path):
    """turns[(conv, session)] = [(turn id, text)], questions[qid] = text, captions[(conv,
    turn id)] = the turn's image caption (the qe signal's turns include it)."""
    data = json.load(open(path, encoding="utf-8"))
    turns, questions, captions = {}, {}, {}
    for c in data:
        cid = c["sample_id"]
        for key, value in c["conversation"].items():
            if re.fullmatch(r"session_\d+", key):
                turns[(cid, key)] = [(f"{key}_{i}", f"{t['speaker']}: {t['text']}")
                                     for i, t in enumerate(value)]
                captions.update({(cid, f"{key}_{i}"): t["blip_caption"]
                                 for i, t in enumerate(value) if t.get("blip_caption")})
        for i, q in enumerate(c["qa"]):
            questions[f"{cid}:q{i + 1}"] = q["question"]
    return turns, questions, captions


def bm25(turns, cid, question, k1=1.2, b=0.75):
    docs = {s: words(" ".join(t for _, t in ts)) for (c, s), ts in turns.items() if c == cid}
    n, avg = len(docs), sum(map(len, docs.values())) / len(docs)
    df = collections.Counter(w for d in docs.values() for w in set(d))
    q = set(words(question))
    out = {}
    for s, d in docs.items():
        tf = collections.Counter(d)
        out[s] = sum(math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * tf[w] * (k1 + 1)
                     / (tf[w] + k1 * (1 - b + b * len(d) / avg)) for w in q if tf[w])
    return out


def qe_words(text):
    return [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3 and w not in STOP]


def vocabulary(turns, captions):
    """Every word the qe signal may add, sorted (the order --write-texts writes them in)."""
    return sorted({w for (c, _), ts in turns.items() for i, t in ts
                   for w in qe_words(f"{t} {captions.get((c, i), '')}")})


def qe_signal(turns, captions, questions, vdir, m, max_df=0.1, k1=1.2, b=0.75):
    import numpy as np
    read = lambda f: np.array([json.loads(l)["embedding"] for l in open(f)], dtype=np.float32)
    words = vocabulary(turns, captions)
    wv, qv = read(f"{vdir}/words.emb.jsonl"), read(f"{vdir}/questions.emb.jsonl")
    q = dict(zip(questions, qv))
    index = {w: i for i, w in enumerate(words)}
    convs = {}
    for (c, _), ts in turns.items():
        docs = convs.setdefault(c, {})
        for i, t in ts:
            docs[i] = collections.Counter(qe_words(f"{t} {captions.get((c, i), '')}"))
    stats = {}
    for c, docs in convs.items():
        df = collections.Counter(w for d in docs.values() for w in d)
        vocab = sorted(df)
        stats[c] = (df, sum(sum(d.values()) for d in docs.values()) / len(docs),
                    vocab, np.array([index[w] for w in vocab]))

    def score(cid, qid):
        docs = convs[cid]
        df, avg, vocab, rows = stats[cid]
        n, asked = len(docs), set(qe_words(questions[qid]))
        sims = wv[rows] @ q[qid]
        terms = []
        for j in np.argsort(-sims):
            w = vocab[j]
            if w not in asked and df[w] <= max_df * n:
                terms.append((w, float(sims[j])))
                if len(terms) == m:
                    break
        out = {}
        for d, tf in docs.items():
            length = sum(tf.values())
            out[d] = sum(wt * math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * tf[w] * (k1 + 1)
                         / (tf[w] + k1 * (1 - b + b * length / avg))
                         for w, wt in terms if tf[w])
        return out
    return score


def minmax(d):
    lo, hi = min(d.values()), max(d.values())
    return {k: (v - lo) / (hi - lo) if hi > lo else 0.0 for k, v in d.items()}


def session_of(turn_id):
    return turn_id.rsplit("_", 1)[0]


def vector_signals(turns, questions, vdir, signal):
    import numpy as np
    read = lambda f: np.array([json.loads(l)["embedding"] for l in open(f)], dtype=np.float32)
    tv, qv = read(f"{vdir}/turns.emb.jsonl"), read(f"{vdir}/questions.emb.jsonl")
    rows, i = {}, 0
    for key, ts in turns.items():
        rows[key] = tv[i:i + len(ts)]
        i += len(ts)
    q = dict(zip(questions, qv))

    def score(cid, qid):
        out = {}
        for (c, s), m in rows.items():
            if c != cid:
                continue
            if signal == "centroid":
                v = m.mean(0)
                out[s] = float(v @ q[qid] / np.linalg.norm(v))
            else:
                out[s] = float(np.sort(m @ q[qid])[::-1][:3].mean())
        return out
    return score


def replay(rows, signal_of, lam, level="session"):
    hits = collections.defaultdict(lambda: [0, 0, 0])
    for r in rows:
        cid = r["question_id"].split(":")[0]
        ts = minmax({x["id"]: x["score"] for x in r["ranked"]})
        ss = minmax(signal_of(cid, r["question_id"])) if lam else {}
        at = session_of if level == "session" else (lambda i: i)
        ids = sorted(ts, key=lambda i: -(ts[i] + lam * ss.get(at(i), 0.0)))
        order = list(dict.fromkeys(map(session_of, ids)))
        gold_s = {session_of(g) for g in r["gold"]}
        for key in ("all", r["question_type"]):
            h = hits[key]
            h[0] += 1
            h[1] += set(r["gold"]) <= set(ids[:5])
            h[2] += gold_s <= set(order[:5])
    a, m = hits["all"], hits["multi-hop"]
    return a[1] / a[0], a[2] / a[0], m[2] / m[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("locomo")
    ap.add_argument("--write-texts", metavar="DIR")
    ap.add_argument("--log")
    ap.add_argument("--signal", choices=["bm25", "centroid", "top3", "qe"], default="bm25")
    ap.add_argument("--m", type=int, default=10, help="qe: words added")
    ap.add_argument("--vectors", metavar="DIR")
    ap.add_argument("--lams", default="0,0.1,0.2,0.3,0.5,1.0")
    a = ap.parse_args()
    turns, questions, captions = load(a.locomo)
    if a.write_texts:
        with open(f"{a.write_texts}/turns.jsonl", "w") as f:
            for ts in turns.values():
                f.writelines(json.dumps({"text": t}) + "\n" for _, t in ts)
        with open(f"{a.write_texts}/questions.jsonl", "w") as f:
            f.writelines(json.dumps({"text": q}) + "\n" for q in questions.values())
        with open(f"{a.write_texts}/words.jsonl", "w") as f:
            f.writelines(json.dumps({"text": w}) + "\n" for w in vocabulary(turns, captions))
        return
    rows = [json.loads(l) for l in open(a.log)]
    if a.signal == "bm25":
        signal_of = lambda cid, qid: bm25(turns, cid, questions[qid])
    elif a.signal == "qe":
        signal_of = qe_signal(turns, captions, questions, a.vectors, a.m)
    else:
        signal_of = vector_signals(turns, questions, a.vectors, a.signal)
    cached = {}
    memo = lambda cid, qid: cached.get(qid) or cached.setdefault(qid, signal_of(cid, qid))
    level = "turn" if a.signal == "qe" else "session"
    for lam in map(float, a.lams.split(",")):
        turn, t2s, mh = replay(rows, memo, lam, level)
        print(f"{a.signal} lam {lam:<4}: turn {turn:.3f}  turn->session {t2s:.3f}  multi-hop t->s {mh:.3f}")


if __name__ == "__main__":
    main()

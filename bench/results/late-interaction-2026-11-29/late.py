"""Late interaction, the one definition the scripts here share: unit token vectors of a text
(tokvec.py, [CLS] and [SEP] dropped), idf weights of the question's wordpieces, and MaxSim."""
import collections
import math
import re

import numpy as np

SPECIAL = {"[CLS]", "[SEP]"}
PUNCT = re.compile(r"^\W+$")


def unit_tokens(text):
    """(wordpieces, unit token vectors [n, 384] as f32) of `text`, special tokens dropped."""
    from tokvec import encode

    toks, h = encode(text)
    keep = [k for k, s in enumerate(toks) if s not in SPECIAL]
    h = h[keep] / np.linalg.norm(h[keep], axis=1, keepdims=True)
    return [toks[k] for k in keep], h.astype(np.float32)


def doc_freq(docs):
    """(wordpiece document frequencies, number of documents) of (wordpieces, vectors) pairs."""
    df = collections.Counter()
    for toks, _ in docs:
        df.update(set(toks))
    return df, len(docs)


def idf_weights(qt, df, n):
    """log((n + 1) / (df + 0.5)) per question wordpiece, punctuation 0, clipped at 0, summing
    to 1 (uniform when all are 0)."""
    w = np.array([0.0 if PUNCT.match(t) else max(0.0, math.log((n + 1) / (df.get(t, 0) + 0.5))) for t in qt])
    return w / w.sum() if w.sum() > 0 else np.ones(len(qt)) / len(qt)


def maxsim(w, qh, dh):
    """Each question wordpiece's best cosine with the document's, weighted by w."""
    return float(w @ (qh @ dh.T).max(1))


def maxsim_idf(question, docs):
    """maxsim-idf of a question (wordpieces, vectors) against each of `docs`, idf over `docs`."""
    qt, qh = question
    w = idf_weights(qt, *doc_freq(docs))
    return [maxsim(w, qh, dh) for _, dh in docs]


def fused_order(scores, sims, w):
    """Indices of the candidates by score + w * sim, best first (ties keep their order); the
    scores are the logged ones made consistent with the logged order (sorted descending)."""
    scores = sorted(scores, reverse=True)
    return sorted(range(len(sims)), key=lambda i: -(scores[i] + w * sims[i]))

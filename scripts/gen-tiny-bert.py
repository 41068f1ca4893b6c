#!/usr/bin/env python3
"""Generate the tiny random BERT used by memdex's unit tests (stdlib only, deterministic).

Writes a complete sentence-transformers style model directory:
  config.json, tokenizer.json, model.safetensors, modules.json, sentence_bert_config.json,
  1_Pooling/config.json, and expected.jsonl.

expected.jsonl holds embeddings computed by the naive pure-Python BERT forward pass below
(WordPiece tokenisation, absolute positions, exact-erf GELU, mean pooling, L2 norm), an
implementation independent of candle, so the Rust embedder is checked against it.

tokenizer.json deliberately carries truncation (8) and fixed padding (16): the embedder must
override both with max_seq_length from sentence_bert_config.json (24).

usage: scripts/gen-tiny-bert.py [OUT_DIR]   (default crates/memdex-embed/tests/fixtures/tiny-bert)
"""
import json
import math
import os
import random
import struct
import sys
import unicodedata

H, LAYERS, HEADS, INTER, MAX_POS, MAX_SEQ = 32, 2, 4, 64, 40, 24
SEED = 20261122

WORDS = """the a an i you he she we they it is was were be been am are do did have has had
my your our their me him her them this that what when where who how why which not no yes
and or but if so to of in on at for with from by about after before yesterday today tomorrow
week month year day night last next ago weekend monday tuesday march may june
dog cat car house job work trip paris london book movie music game food coffee tea
like love hate want need bought moved started visited went said told think know remember
mother father sister brother friend wife husband kid kids son daughter new old big small
two three ten first second good great bad happy sad ok hello hi thanks please sure""".split()

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_vocab():
    toks = list(SPECIAL)
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789") + list(".,!?'\"-:;()/&%$")
    toks += chars
    toks += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    toks += ["##s", "##ing", "##ed", "##er", "##ly"]
    for w in WORDS:
        if w not in toks:
            toks.append(w)
    # dedupe keeping order
    seen, out = set(), []
    for t in toks:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


VOCAB = build_vocab()
V = len(VOCAB)
IDS = {t: i for i, t in enumerate(VOCAB)}


# ---------------------------------------------------------------- tokenizer (BERT uncased)
def is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(ch):
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokens(text):
    text = "".join(" " if ch.isspace() else ch for ch in text
                   if not (ord(ch) == 0 or ord(ch) == 0xFFFD or unicodedata.category(ch) in ("Cc", "Cf") and not ch.isspace()))
    # BertNormalizer: CJK ideographs become words of their own; lowercase implies accent stripping
    text = "".join(f" {ch} " if is_cjk(ch) else ch for ch in text).lower()
    text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")
    out = []
    for word in text.split():
        cur = ""
        for ch in word:
            if is_punct(ch):
                if cur:
                    out.append(cur)
                    cur = ""
                out.append(ch)
            else:
                cur += ch
        if cur:
            out.append(cur)
    return out


def wordpiece(word):
    pieces, start = [], 0
    while start < len(word):
        end, cur = len(word), None
        while start < end:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in IDS:
                cur = sub
                break
            end -= 1
        if cur is None:
            return ["[UNK]"]
        pieces.append(cur)
        start = end
    return pieces


def encode(text):
    toks = [p for w in basic_tokens(text) for p in wordpiece(w)]
    toks = toks[: MAX_SEQ - 2]
    return [IDS["[CLS]"]] + [IDS[t] for t in toks] + [IDS["[SEP]"]]


# ---------------------------------------------------------------- weights
def make_weights():
    rng = random.Random(SEED)
    w = {}

    def mat(name, rows, cols, std=0.08):
        w[name] = ([rows, cols], [rng.gauss(0.0, std) for _ in range(rows * cols)])

    def vec(name, n, mean=0.0, std=0.02):
        w[name] = ([n], [mean + rng.gauss(0.0, std) for _ in range(n)])

    mat("embeddings.word_embeddings.weight", V, H, 0.5)
    mat("embeddings.position_embeddings.weight", MAX_POS, H, 0.2)
    mat("embeddings.token_type_embeddings.weight", 2, H, 0.1)
    vec("embeddings.LayerNorm.weight", H, 1.0, 0.05)
    vec("embeddings.LayerNorm.bias", H, 0.0, 0.05)
    for l in range(LAYERS):
        p = f"encoder.layer.{l}."
        for n in ("query", "key", "value"):
            mat(p + f"attention.self.{n}.weight", H, H, 0.25)
            vec(p + f"attention.self.{n}.bias", H)
        mat(p + "attention.output.dense.weight", H, H, 0.15)
        vec(p + "attention.output.dense.bias", H)
        vec(p + "attention.output.LayerNorm.weight", H, 1.0, 0.05)
        vec(p + "attention.output.LayerNorm.bias", H, 0.0, 0.05)
        mat(p + "intermediate.dense.weight", INTER, H, 0.2)
        vec(p + "intermediate.dense.bias", INTER)
        mat(p + "output.dense.weight", H, INTER, 0.15)
        vec(p + "output.dense.bias", H)
        vec(p + "output.LayerNorm.weight", H, 1.0, 0.05)
        vec(p + "output.LayerNorm.bias", H, 0.0, 0.05)
    mat("pooler.dense.weight", H, H, 0.1)
    vec("pooler.dense.bias", H)
    # round through f32 so the reference uses exactly the stored values
    return {k: (s, list(struct.unpack(f"<{len(v)}f", struct.pack(f"<{len(v)}f", *v)))) for k, (s, v) in w.items()}


def write_safetensors(path, weights):
    header, blobs, off = {}, [], 0
    for name in sorted(weights):
        shape, vals = weights[name]
        b = struct.pack(f"<{len(vals)}f", *vals)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- naive forward pass
def linear(x, w, b, rows, cols):  # x: [n][cols], w: [rows*cols] row-major (out, in)
    return [[b[r] + sum(w[r * cols + c] * xi[c] for c in range(cols)) for r in range(rows)] for xi in x]


def layernorm(x, g, b, eps=1e-12):
    out = []
    for v in x:
        m = sum(v) / len(v)
        var = sum((a - m) ** 2 for a in v) / len(v)
        out.append([(a - m) / math.sqrt(var + eps) * g[i] + b[i] for i, a in enumerate(v)])
    return out


def gelu(a):
    return 0.5 * a * (1.0 + math.erf(a / math.sqrt(2.0)))


def forward(ids, W):
    g = lambda n: W[n][1]
    n = len(ids)
    x = [[g("embeddings.word_embeddings.weight")[t * H + j] + g("embeddings.position_embeddings.weight")[p * H + j]
          + g("embeddings.token_type_embeddings.weight")[j] for j in range(H)] for p, t in enumerate(ids)]
    x = layernorm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
    dh = H // HEADS
    for l in range(LAYERS):
        p = f"encoder.layer.{l}."
        q, k, v = (linear(x, g(p + f"attention.self.{s}.weight"), g(p + f"attention.self.{s}.bias"), H, H)
                   for s in ("query", "key", "value"))
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
        a = linear(ctx, g(p + "attention.output.dense.weight"), g(p + "attention.output.dense.bias"), H, H)
        x = layernorm([[a[i][j] + x[i][j] for j in range(H)] for i in range(n)],
                      g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"))
        it = linear(x, g(p + "intermediate.dense.weight"), g(p + "intermediate.dense.bias"), INTER, H)
        it = [[gelu(a) for a in row] for row in it]
        o = linear(it, g(p + "output.dense.weight"), g(p + "output.dense.bias"), H, INTER)
        x = layernorm([[o[i][j] + x[i][j] for j in range(H)] for i in range(n)],
                      g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"))
    mean = [sum(x[i][j] for i in range(n)) / n for j in range(H)]
    norm = math.sqrt(sum(a * a for a in mean))
    return [a / norm for a in mean]


TEXTS = [
    "",
    "   ",
    "hello",
    "I bought a new car last week!",
    "My sister moved to Paris in March; she loves her new job.",
    "Ok, thanks. What did you think about the movie?",
    "Café naïve 東京 — unknown words: zyx qwv",
    " ".join(["the dog and the cat went to the house"] * 6),  # far past MAX_SEQ: truncated
    "Tuesday, 2 kids, 10 books & 3 coffees (yesterday)",
]


def tokenizer_json():
    return {
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 16}, "direction": "Right", "pad_to_multiple_of": None,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [{"id": IDS[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t in SPECIAL],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [IDS[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": IDS},
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "crates", "memdex-embed", "tests", "fixtures", "tiny-bert")
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    dump = lambda name, obj: open(os.path.join(out, name), "w").write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
    dump("config.json", {
        "architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu", "hidden_size": H,
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "intermediate_size": INTER,
        "max_position_embeddings": MAX_POS, "type_vocab_size": 2, "vocab_size": V, "layer_norm_eps": 1e-12,
        "pad_token_id": 0, "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02})
    dump("tokenizer.json", tokenizer_json())
    dump("modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])
    dump("sentence_bert_config.json", {"max_seq_length": MAX_SEQ, "do_lower_case": False})
    dump("1_Pooling/config.json", {"word_embedding_dimension": H, "pooling_mode_cls_token": False,
                                   "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                                   "pooling_mode_mean_sqrt_len_tokens": False})
    W = make_weights()
    write_safetensors(os.path.join(out, "model.safetensors"), W)
    with open(os.path.join(out, "expected.jsonl"), "w") as f:
        for t in TEXTS:
            ids = encode(t)
            emb = forward(ids, W)
            f.write(json.dumps({"text": t, "tokens": len(ids), "ids": ids,
                                "embedding": [round(a, 7) for a in emb]}, ensure_ascii=False) + "\n")
    print(f"wrote {out}: vocab {V}, hidden {H}, layers {LAYERS}")


if __name__ == "__main__":
    main()

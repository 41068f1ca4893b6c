"""all-MiniLM-L6-v2's token vectors (its last hidden states) in numpy, read from the model's
model.safetensors and tokenizer.json: a reference for measurements, not memdex's encoder.
GELU is the tanh form; pooled cosines match `memdex embed` to ~1e-4 (parity.py).

MEMDEX_MODEL names the model directory (default models/all-MiniLM-L6-v2)."""
import os

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

D = os.environ.get("MEMDEX_MODEL", "models/all-MiniLM-L6-v2")
W = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(f"{D}/model.safetensors").items()}
TOK = Tokenizer.from_file(f"{D}/tokenizer.json")
TOK.no_padding()
TOK.enable_truncation(256)
H, NH, LAYERS = 384, 12, 6


def ln(x, p):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * W[p + ".weight"] + W[p + ".bias"]


def lin(x, p):
    return x @ W[p + ".weight"].T + W[p + ".bias"]


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def heads(x, n):
    return x.reshape(n, NH, -1).transpose(1, 0, 2)


def encode(text):
    """(wordpiece strings, last hidden states [n, 384]), [CLS] and [SEP] included."""
    enc = TOK.encode(text)
    ids = np.array(enc.ids)
    n = len(ids)
    e = "embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][:n]
    x = ln(x + W[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (heads(lin(x, p + "attention.self." + m), n) for m in ("query", "key", "value"))
        a = q @ k.transpose(0, 2, 1) / np.sqrt(H // NH)
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        c = (a @ v).transpose(1, 0, 2).reshape(n, H)
        x = ln(lin(c, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        x = ln(lin(gelu(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
    return enc.tokens, x

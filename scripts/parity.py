#!/usr/bin/env python3
"""Embedding parity: compare `memdex embed` output with reference vectors (stdlib only).

usage: scripts/parity.py REFERENCE.jsonl MEMDEX_OUT.jsonl [--min 0.9999] [--json]

Both files hold {"text", "embedding"} per line, in the same order (REFERENCE may carry more
fields, e.g. "tokens"). Prints the count, min and mean cosine and the worst text; exits 1 if
the texts differ or the min cosine is under --min.
"""
import argparse
import json
import math
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("memdex")
    ap.add_argument("--min", type=float, default=0.9999)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    ref = [json.loads(l) for l in open(a.reference, encoding="utf-8") if l.strip()]
    got = [json.loads(l) for l in open(a.memdex, encoding="utf-8") if l.strip()]
    if len(ref) != len(got):
        sys.exit(f"error: {len(ref)} reference rows vs {len(got)} memdex rows")
    cos = []
    for i, (r, g) in enumerate(zip(ref, got)):
        if r["text"] != g["text"]:
            sys.exit(f"error: row {i + 1}: texts differ")
        x, y = r["embedding"], g["embedding"]
        dot = sum(p * q for p, q in zip(x, y))
        cos.append(dot / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y)))
    worst = min(range(len(cos)), key=cos.__getitem__)
    out = {"texts": len(cos), "min_cosine": min(cos), "mean_cosine": sum(cos) / len(cos),
           "worst_text": ref[worst]["text"][:80]}
    print(json.dumps(out) if a.json else
          f"{out['texts']} texts: min cosine {out['min_cosine']:.7f}, mean {out['mean_cosine']:.7f} "
          f"(worst: {out['worst_text']!r})")
    sys.exit(0 if out["min_cosine"] >= a.min else 1)


if __name__ == "__main__":
    main()

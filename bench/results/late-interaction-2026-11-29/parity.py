"""tokvec.py's mean-pooled vectors against `memdex embed`'s on the same texts.

usage: python3 parity.py EMBEDDED.jsonl   (the output of memdex embed: {"text", "embedding"})"""
import json
import sys

import numpy as np

from tokvec import encode

cos = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    _, h = encode(r["text"])
    p = h.mean(0)
    cos.append(float(p @ np.array(r["embedding"]) / np.linalg.norm(p)))
print(f"{len(cos)} texts: cosine min {min(cos):.5f}, mean {np.mean(cos):.5f}")

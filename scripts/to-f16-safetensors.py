#!/usr/bin/env python3
"""Write a copy of a safetensors file with every floating-point tensor in float16.

Used by scripts/build-cuda.sh to carry MiniLM to the GPU box at half the bytes (the CUDA path
runs f16 anyway; sentence-transformers on the box loads the same f16 weights). Integer tensors
(e.g. position_ids buffers) are kept as they are.

usage: scripts/to-f16-safetensors.py IN.safetensors OUT.safetensors
"""
import sys

import torch
from safetensors.torch import load_file, save_file


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    src, dst = sys.argv[1], sys.argv[2]
    tensors = load_file(src)
    out = {}
    for name, t in tensors.items():
        out[name] = t.to(torch.float16).contiguous() if t.is_floating_point() else t.contiguous()
    save_file(out, dst, metadata={"format": "pt"})
    n = sum(t.numel() for t in out.values())
    print(f"{dst}: {len(out)} tensors, {n} values", file=sys.stderr)


if __name__ == "__main__":
    main()

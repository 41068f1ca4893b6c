#!/usr/bin/env python3
"""Write a copy of a safetensors file with every float32 tensor in float16.

Used by scripts/build-cuda.sh to carry MiniLM to the GPU box at half the bytes (the CUDA path
runs f16 anyway; sentence-transformers on the box loads the same f16 weights). Other tensors
(integer buffers such as position_ids, tensors already in a 16-bit type) are kept as they are.
Standard library only, so a fresh machine packs without PyTorch: IEEE round-to-nearest-even,
as torch's `.to(torch.float16)`; a value beyond float16's range becomes ±inf, as there.

usage: scripts/to-f16-safetensors.py IN.safetensors OUT.safetensors
       scripts/to-f16-safetensors.py --self-test
"""
import json
import math
import os
import struct
import sys
import tempfile
from array import array

CHUNK = 1 << 20  # values converted per step


def f16_bytes(raw):
    """float32 little-endian bytes -> float16 little-endian bytes."""
    values = array("f")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    try:
        return struct.pack(f"<{len(values)}e", *values)
    except OverflowError:
        big = lambda v: math.copysign(math.inf, v) if abs(v) > 65504 and not math.isinf(v) else v
        return struct.pack(f"<{len(values)}e", *(big(v) for v in values))


def convert(src, dst):
    with open(src, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        meta = header.pop("__metadata__", None)
        names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
        out_header, parts, offset = {}, [], 0
        for name in names:
            t = header[name]
            b, e = t["data_offsets"]
            f.seek(base + b)
            raw = f.read(e - b)
            if t["dtype"] == "F32":
                step = 4 * CHUNK
                raw = b"".join(f16_bytes(raw[i:i + step]) for i in range(0, len(raw), step))
                t = {**t, "dtype": "F16"}
            out_header[name] = {"dtype": t["dtype"], "shape": t["shape"],
                                "data_offsets": [offset, offset + len(raw)]}
            parts.append(raw)
            offset += len(raw)
    out_header["__metadata__"] = {**(meta or {}), "format": "pt"}
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as safetensors writes it
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for p in parts:
            f.write(p)
    values = sum(math.prod(header[k]["shape"]) for k in names)
    print(f"{dst}: {len(names)} tensors, {values} values", file=sys.stderr)


def self_test():
    """A float32 and an int64 tensor through convert, read back by hand."""
    fl = [0.0, 1.0, -2.5, 1e-8, 0.1, 70000.0]
    ints = [0, 1, 2]
    data = struct.pack("<6f", *fl) + struct.pack("<3q", *ints)
    header = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "pos": {"dtype": "I64", "shape": [3], "data_offsets": [24, 48]}}
    text = json.dumps(header).encode()
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in"), os.path.join(d, "out")
        with open(src, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + data)
        convert(src, dst)
        with open(dst, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            h = json.loads(f.read(n))
            body = f.read()
    assert n % 8 == 0, n
    w, pos = h["w"], h["pos"]
    assert w["dtype"] == "F16" and w["shape"] == [2, 3] and w["data_offsets"] == [0, 12], w
    got = struct.unpack("<6e", body[0:12])
    want = [struct.unpack("<e", struct.pack("<e", v))[0] for v in fl[:5]] + [math.inf]
    assert list(got) == want, (got, want)
    assert pos["dtype"] == "I64" and pos["data_offsets"] == [12, 36], pos
    assert list(struct.unpack("<3q", body[12:36])) == ints
    assert h["__metadata__"]["format"] == "pt"
    print("to-f16-safetensors self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-2])
    convert(sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where a memdex store's bytes go, and how much of it is distinct content.

usage: scripts/store-bytes.py STORE [--json]

Reads every segment (seg-*.arrow) and, in the shared layout, every content file (cnt-*.arrow)
of STORE with pyarrow (memory-mapped, one at a time) and prints, per column, the bytes on
disk in Arrow buffers (content file columns prefixed `content.`); then the distinct content:
the bytes of each distinct `value` text once, of each distinct `key` text once, and of one
embedding per distinct key text. The ratio store / (distinct vectors + text) is the
"right-sized store" measure, given both ways: text counted per row (what each tenant's rows
read) and text counted once.
"""
import glob
import hashlib
import json
import os
import sys

import pyarrow as pa


def column_bytes(batch_or_table):
    out = {}
    for name, col in zip(batch_or_table.schema.names, batch_or_table.columns):
        chunks = col.chunks if hasattr(col, "chunks") else [col]
        out[name] = sum(c.nbytes for c in chunks)
    return out


def digest(s):
    return hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=12).digest()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    as_json = "--json" in sys.argv
    if len(args) != 1:
        sys.exit(__doc__)
    store = args[0]
    files = sorted(glob.glob(os.path.join(store, "segments", "seg-*.arrow")))
    cnts = sorted(glob.glob(os.path.join(store, "segments", "cnt-*.arrow")))
    if not files:
        sys.exit(f"{store}: no segments/seg-*.arrow files")
    per_col, rows, dims = {}, 0, None
    values, keys = {}, {}
    file_bytes = 0
    # shared layout: text bytes of each content, and how many rows reference it
    content_text, refs = {}, {}
    for f in cnts + files:
        file_bytes += os.path.getsize(f)
        with pa.memory_map(f) as src:
            table = pa.ipc.open_file(src).read_all()
        is_content = os.path.basename(f).startswith("cnt-")
        if not is_content:
            rows += table.num_rows
        prefix = "content." if is_content else ""
        for k, v in column_bytes(table).items():
            per_col[prefix + k] = per_col.get(prefix + k, 0) + v
        if "embedding" in table.schema.names and dims is None:
            dims = table.schema.field("embedding").type.list_size
        for name, seen in (("value", values), ("key", keys)):
            if name in table.schema.names:
                for s in table.column(name).to_pylist():
                    if s is not None:
                        seen.setdefault(digest(s), len(s.encode("utf-8", "surrogatepass")))
        if is_content:
            size = lambda s: len(s.encode("utf-8", "surrogatepass"))
            for r, k, v in zip(*(table.column(c).to_pylist() for c in ("content_ref", "key", "value"))):
                content_text[r] = size(k) + size(v)
        elif "content_ref" in table.schema.names:
            for r in table.column("content_ref").to_pylist():
                refs[r] = refs.get(r, 0) + 1
        del table
    vec_bytes = 4 * (dims or 0)
    distinct_vectors = len(keys) * vec_bytes
    text_rows = per_col.get("value", 0) + per_col.get("key", 0)
    text_rows += sum(content_text.get(r, 0) * n for r, n in refs.items())
    text_once = sum(values.values()) + sum(keys.values())
    report = {
        "store": store,
        "segments": len(files),
        "content_files": len(cnts),
        "file_bytes": file_bytes,
        "rows": rows,
        "dims": dims,
        "columns": dict(sorted(per_col.items(), key=lambda kv: -kv[1])),
        "distinct_values": len(values),
        "distinct_keys": len(keys),
        "distinct_vector_bytes": distinct_vectors,
        "text_bytes_per_row": text_rows,
        "text_bytes_once": text_once,
        "ratio_text_per_row": file_bytes / max(1, distinct_vectors + text_rows),
        "ratio_text_once": file_bytes / max(1, distinct_vectors + text_once),
    }
    if as_json:
        print(json.dumps(report, indent=2))
        return
    mb = lambda b: f"{b / 1e6:,.1f} MB"
    print(f"{store}: {len(files)} segments, {len(cnts)} content files, {rows:,} rows, {mb(file_bytes)} on disk")
    for k, v in report["columns"].items():
        print(f"  {k:<24} {mb(v):>14}  {100 * v / file_bytes:5.1f} %")
    print(f"distinct keys {len(keys):,} → vectors once: {mb(distinct_vectors)}")
    print(f"distinct values {len(values):,}; text per row {mb(text_rows)}, once {mb(text_once)}")
    print(f"store / (distinct vectors + text per row) = {report['ratio_text_per_row']:.2f}×")
    print(f"store / (distinct vectors + text once)    = {report['ratio_text_once']:.2f}×")


if __name__ == "__main__":
    main()

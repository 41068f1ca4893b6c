#!/usr/bin/env python3
"""sentence-transformers reference vectors on the CPU, for scripts/parity.py.

usage: st-vectors.py --model DIR --input TEXTS.jsonl --output OUT.jsonl [--threads 2]

Embeds every "text" of TEXTS (fp32, model.encode, batch 64, max length 256, no normalisation:
the model's own modules decide) and writes {"text", "embedding"} lines in input order. Run it
with the bench venv that scripts/bench-st.sh creates (.venv-bench/bin/python). Fully offline.
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=256)
    a = ap.parse_args()
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(a.threads)
    model = SentenceTransformer(a.model, device="cpu")
    model.max_seq_length = a.max_length
    texts = [json.loads(line)["text"] for line in open(a.input, encoding="utf-8") if line.strip()]
    vecs = model.encode(texts, batch_size=64, convert_to_numpy=True)
    with open(a.output, "w", encoding="utf-8") as f:
        for t, v in zip(texts, vecs):
            f.write(json.dumps({"text": t, "embedding": [float(x) for x in v]}) + "\n")


if __name__ == "__main__":
    main()

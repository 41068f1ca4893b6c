#!/usr/bin/env python3
"""Reference embedding throughput: sentence-transformers on CPU.

Encodes every "text" of a JSONL file with a local sentence-transformers model (fully offline)
using model.encode(texts, batch_size=B, convert_to_numpy=True), which sorts by length
internally, and reports the median wall time of R timed passes after a warm-up pass.
Tokens are counted with the model's tokenizer (special tokens included, truncated at
--max-length). --output writes {"text", "embedding"} per input line, in input order.

usage: scripts/bench-st.sh --model models/all-MiniLM-L6-v2 --input texts.jsonl [--json]
"""
import argparse
import json
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="local sentence-transformers model directory")
    ap.add_argument("--input", required=True, help='JSONL file, one {"text": ...} per line')
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--warmup", type=int, default=64, help="texts in the warm-up pass (0: none)")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes; the median is reported")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--output", help='write {"text", "embedding"} JSONL here')
    args = ap.parse_args()

    # Offline, and every thread pool (torch/OpenMP, tokenizers/rayon) capped at --threads.
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    with open(args.input, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    if not texts:
        sys.exit(f"error: no texts in {args.input}")

    model = SentenceTransformer(args.model, device="cpu")
    model.max_seq_length = args.max_length
    tok = model.tokenizer
    ids = tok(texts, truncation=True, max_length=args.max_length)["input_ids"]
    tokens = sum(len(x) for x in ids)

    def encode(batch):
        return model.encode(batch, batch_size=args.batch_size, convert_to_numpy=True,
                            show_progress_bar=False)

    if args.warmup > 0:
        encode(texts[: args.warmup])
    load_before = os.getloadavg()[0]  # other work on the machine skews the numbers
    times, emb = [], None
    for _ in range(max(1, args.repeats)):
        t0 = time.perf_counter()
        emb = encode(texts)
        times.append(time.perf_counter() - t0)
    secs = statistics.median(times)

    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            for text, vec in zip(texts, emb):
                f.write(json.dumps({"text": text, "embedding": vec.tolist()}, ensure_ascii=False) + "\n")

    report = {
        "engine": "sentence-transformers",
        "texts": len(texts),
        "tokens": tokens,
        "seconds": round(secs, 4),
        "texts_per_s": round(len(texts) / secs, 1),
        "tokens_per_s": round(tokens / secs, 1),
        "all_seconds": [round(t, 4) for t in times],
        "torch": torch.__version__,
        "sentence_transformers": sys.modules["sentence_transformers"].__version__,
        "threads": torch.get_num_threads(),
        # ATen's vectorised kernels (ATEN_CPU_CAPABILITY caps it); MKL's GEMM follows
        # MKL_ENABLE_INSTRUCTIONS, oneDNN's ONEDNN_MAX_CPU_ISA (unset: the CPU's best)
        "isa": torch.backends.cpu.get_cpu_capability(),
        "mkl_enable_instructions": os.environ.get("MKL_ENABLE_INSTRUCTIONS", "(unset: best)"),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "(unset: best)"),
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "dim": int(emb.shape[1]),
        "loadavg_1m_before": round(load_before, 2),
    }
    if args.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            print(f"{k:>22}: {v}")


if __name__ == "__main__":
    main()

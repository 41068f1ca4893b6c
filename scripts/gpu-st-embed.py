#!/usr/bin/env python3
"""sentence-transformers on the GPU box: fp16 reference vectors and throughput (CUDA).

  --golden IN.jsonl --output OUT.jsonl   embed every "text" of IN (fp16 on cuda) and write
                                         {"text", "embedding"} lines in input order
  --bench TEXTS.jsonl                    throughput: for each --batch-sizes value, a warm-up
                                         pass then --repeats timed passes (torch.cuda.synchronize
                                         around each), median; the best batch size is reported

The model directory is the one memdex loads (f16 safetensors), so both engines run the same
weights. Fully offline. Prints one JSON object.

usage: gpu-st-embed.py --model DIR (--golden IN --output OUT | --bench TEXTS) [--json]
"""
import argparse
import json
import os
import statistics
import sys
import time


def attn_implementation(model):
    """The attention kernel transformers picked for the encoder (eager, sdpa, ...)."""
    try:
        return getattr(model[0].auto_model.config, "_attn_implementation", None)
    except (AttributeError, IndexError, TypeError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--golden")
    ap.add_argument("--output")
    ap.add_argument("--bench")
    ap.add_argument("--batch-sizes", default="64,128,256,512,1024,2048,4096")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dtype", choices=["fp16", "fp32"], default="fp16")
    ap.add_argument("--device", default="cuda", help="cpu only for a smoke test of this script")
    args = ap.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1")

    import torch
    from sentence_transformers import SentenceTransformer

    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        sys.exit("error: torch sees no CUDA device")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    model = SentenceTransformer(args.model, device=args.device)
    model = model.half() if args.dtype == "fp16" else model.float()
    model.max_seq_length = args.max_length
    report = {"engine": "sentence-transformers", "dtype": args.dtype,
              "device": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
              "sentence_transformers": sys.modules["sentence_transformers"].__version__,
              "attn_implementation": attn_implementation(model)}

    def read(path):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line)["text"] for line in f if line.strip()]

    if args.golden:
        texts = read(args.golden)
        emb = model.encode(texts, batch_size=64, convert_to_numpy=True,
                           show_progress_bar=False, normalize_embeddings=False)
        with open(args.output, "w", encoding="utf-8") as f:
            for text, vec in zip(texts, emb):
                f.write(json.dumps({"text": text, "embedding": [float(x) for x in vec]},
                                   ensure_ascii=False) + "\n")
        report.update(golden=args.golden, output=args.output, texts=len(texts))

    if args.bench:
        texts = read(args.bench)
        ids = model.tokenizer(texts, truncation=True, max_length=args.max_length)["input_ids"]
        tokens = sum(len(x) for x in ids)
        runs = []
        for bs in [int(b) for b in args.batch_sizes.split(",")]:
            def encode():
                out = model.encode(texts, batch_size=bs, convert_to_numpy=True,
                                   show_progress_bar=False)
                sync()
                return out
            encode()  # warm-up: kernels, allocator
            times = []
            for _ in range(max(1, args.repeats)):
                sync()
                t0 = time.perf_counter()
                encode()
                times.append(time.perf_counter() - t0)
            secs = statistics.median(times)
            runs.append({"batch_size": bs, "seconds": round(secs, 4),
                         "all_seconds": [round(t, 4) for t in times],
                         "texts_per_s": round(len(texts) / secs, 1),
                         "tokens_per_s": round(tokens / secs, 1)})
        best = max(runs, key=lambda r: r["tokens_per_s"])
        report.update(texts=len(texts), tokens=tokens, max_length=args.max_length, runs=runs,
                      best=best, texts_per_s=best["texts_per_s"],
                      tokens_per_s=best["tokens_per_s"])
    print(json.dumps(report))


if __name__ == "__main__":
    main()

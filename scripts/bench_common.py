"""What the reference embedding benchmarks share (scripts/bench-st.py, scripts/bench-ort.py): the
command line, offline thread-capped set-up, the texts, the timed passes, the vectors written
and the report, so that both engines are measured and reported the same way."""
import argparse
import json
import os
import statistics
import sys
import time


def arguments(description):
    """The options both benchmarks take; the caller adds its own and parses."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", required=True, help="local sentence-transformers model directory")
    ap.add_argument("--input", required=True, help='JSONL file, one {"text": ...} per line')
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--warmup", type=int, default=64, help="texts in the warm-up pass (0: none)")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes; the median is reported")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--output", help='write {"text", "embedding"} JSONL here')
    return ap


def offline(threads):
    """No hub access, and every thread pool (torch/OpenMP, MKL, tokenizers/rayon) capped."""
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = str(threads)


def read_texts(path):
    with open(path, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    if not texts:
        sys.exit(f"error: no texts in {path}")
    return texts


def timed(encode, texts, args):
    """A warm-up pass, then `args.repeats` timed passes of `encode(texts)`: the median seconds,
    every pass's, the last vectors and the load average before the first."""
    if args.warmup > 0:
        encode(texts[: args.warmup])
    load_before = os.getloadavg()[0]  # other work on the machine skews the numbers
    times, emb = [], None
    for _ in range(max(1, args.repeats)):
        t0 = time.perf_counter()
        emb = encode(texts)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, emb, load_before


def report(engine, texts, tokens, run, args, extra):
    """The report of `run` (what `timed` returned), with the engine's own fields in `extra`;
    the vectors written to `--output` when asked."""
    secs, times, emb, load_before = run
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            for text, vec in zip(texts, emb):
                f.write(json.dumps({"text": text, "embedding": vec.tolist()}, ensure_ascii=False) + "\n")
    return {
        "engine": engine,
        "texts": len(texts),
        "tokens": tokens,
        "seconds": round(secs, 4),
        "texts_per_s": round(len(texts) / secs, 1),
        "tokens_per_s": round(tokens / secs, 1),
        "all_seconds": [round(t, 4) for t in times],
        **extra,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "dim": int(emb.shape[1]),
        "loadavg_1m_before": round(load_before, 2),
    }


def show(rep, as_json):
    if as_json:
        print(json.dumps(rep))
    else:
        for k, v in rep.items():
            print(f"{k:>22}: {v}")

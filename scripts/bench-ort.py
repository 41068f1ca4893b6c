#!/usr/bin/env python3
"""Reference embedding throughput: ONNX Runtime (CPU, fp32) on the same model and texts.

Exports the sentence-transformers model's BERT (local safetensors, no hub) to ONNX once with
torch.onnx (cached at --onnx, default target/onnx/<model dir name>.onnx) and runs it with ONNX
Runtime's own graph optimisations (ORT_ENABLE_ALL); --fuse runs the graph ONNX Runtime's BERT
optimizer fuses instead (attention, skip-LayerNorm, bias-GELU; cached as *.opt.onnx), slower
on the 2-core Zen 5 (11.6k vs 13.2k tokens/s), so not the default. It
encodes every "text" of a JSONL file as sentence-transformers does: the model's own
tokenizer (the same tokenizer.json), texts sorted by length, batches of --batch-size padded to
their longest, mean pooling over the attention mask, L2 normalisation. Reports the median wall
time of R timed passes (tokenize + run + pooling) after a warm-up pass, like bench-st.py.
Sessions run with --threads intra-op threads and one inter-op thread.

usage: scripts/bench-ort.sh --model models/all-MiniLM-L6-v2 --input texts.jsonl [--json]
"""
import argparse
import json
import os
import statistics
import sys
import time


def export(model_dir, path, max_length):
    """The model's BERT as ONNX: (input_ids, attention_mask, token_type_ids) → hidden states."""
    import torch
    from transformers import AutoModel

    class Hidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            # eager attention: the plain MatMul/Softmax graph ONNX Runtime's fusions recognise
            self.bert = AutoModel.from_pretrained(model_dir, local_files_only=True,
                                                  attn_implementation="eager").eval()

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    model = Hidden().eval()
    ids = torch.ones(2, 16, dtype=torch.int64)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    axes = {0: "batch", 1: "seq"}
    with torch.no_grad():
        torch.onnx.export(
            model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), tmp,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={n: axes for n in ("input_ids", "attention_mask", "token_type_ids",
                                            "last_hidden_state")},
            opset_version=17, dynamo=False)
    os.replace(tmp, path)


def optimize(path, opt_path, cfg):
    """ONNX Runtime's transformer optimizer, the fusions it applies to BERT."""
    from onnxruntime.transformers import optimizer

    m = optimizer.optimize_model(path, model_type="bert", num_heads=cfg["num_attention_heads"],
                                 hidden_size=cfg["hidden_size"], opt_level=1, use_gpu=False)
    m.save_model_to_file(opt_path + ".tmp")
    os.replace(opt_path + ".tmp", opt_path)
    return m.get_fused_operator_statistics()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="local sentence-transformers model directory")
    ap.add_argument("--input", required=True, help='JSONL file, one {"text": ...} per line')
    ap.add_argument("--onnx", help="exported model path (default target/onnx/<model>.onnx)")
    ap.add_argument("--fuse", action="store_true",
                    help="run the graph fused by ONNX Runtime's BERT optimizer (transformers.optimizer)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--warmup", type=int, default=64, help="texts in the warm-up pass (0: none)")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes; the median is reported")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--output", help='write {"text", "embedding"} JSONL here')
    args = ap.parse_args()

    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np
    import onnxruntime as ort
    from transformers import AutoTokenizer

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    name = os.path.basename(os.path.normpath(args.model))
    path = args.onnx or os.path.join(root, "target", "onnx", f"{name}.onnx")
    cfg = json.load(open(os.path.join(args.model, "config.json"), encoding="utf-8"))
    if not os.path.exists(path):
        print(f"exporting {args.model} to {path} ...", file=sys.stderr)
        export(args.model, path, args.max_length)
    fused = None
    run_path = path
    if args.fuse:
        run_path = path[: -len(".onnx")] + ".opt.onnx"
        stats = run_path + ".json"
        if not os.path.exists(run_path):
            json.dump(optimize(path, run_path, cfg), open(stats, "w"))
        fused = {k: v for k, v in json.load(open(stats)).items() if v}

    with open(args.input, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    if not texts:
        sys.exit(f"error: no texts in {args.input}")

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(run_path, opts, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in sess.get_inputs()}
    tok = AutoTokenizer.from_pretrained(args.model, local_files_only=True)

    def encode(batch_texts):
        order = np.argsort([-len(t) for t in batch_texts], kind="stable")  # as sentence-transformers
        out = np.empty((len(batch_texts), cfg["hidden_size"]), dtype=np.float32)
        for s in range(0, len(order), args.batch_size):
            idx = order[s : s + args.batch_size]
            enc = tok([batch_texts[i] for i in idx], padding=True, truncation=True,
                      max_length=args.max_length, return_tensors="np")
            feed = {k: v.astype(np.int64) for k, v in enc.items() if k in wanted}
            hidden = sess.run(None, feed)[0]
            mask = enc["attention_mask"].astype(np.float32)[:, :, None]
            pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
            out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out

    ids = tok(texts, truncation=True, max_length=args.max_length)["input_ids"]
    tokens = sum(len(x) for x in ids)
    if args.warmup > 0:
        encode(texts[: args.warmup])
    load_before = os.getloadavg()[0]
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
        "engine": "onnxruntime",
        "texts": len(texts),
        "tokens": tokens,
        "seconds": round(secs, 4),
        "texts_per_s": round(len(texts) / secs, 1),
        "tokens_per_s": round(tokens / secs, 1),
        "all_seconds": [round(t, 4) for t in times],
        "onnxruntime": ort.__version__,
        "model_file": os.path.relpath(run_path, root),
        "fused_operators": fused,
        "threads": args.threads,
        # MLAS dispatches on CPUID itself; ORT has no switch to cap it
        "isa": "MLAS run-time dispatch",
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

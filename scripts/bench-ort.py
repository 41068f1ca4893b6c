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
import json
import os
import sys

import bench_common as bc


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
    ap = bc.arguments(__doc__.splitlines()[0])
    ap.add_argument("--onnx", help="exported model path (default target/onnx/<model>.onnx)")
    ap.add_argument("--fuse", action="store_true",
                    help="run the graph fused by ONNX Runtime's BERT optimizer (transformers.optimizer)")
    args = ap.parse_args()
    bc.offline(args.threads)

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

    texts = bc.read_texts(args.input)

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
    run = bc.timed(encode, texts, args)
    rep = bc.report("onnxruntime", texts, tokens, run, args, {
        "onnxruntime": ort.__version__,
        "model_file": os.path.relpath(run_path, root),
        "fused_operators": fused,
        "threads": args.threads,
        # MLAS dispatches on CPUID itself; ORT has no switch to cap it
        "isa": "MLAS run-time dispatch",
    })
    bc.show(rep, args.json)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Reference embedding throughput: sentence-transformers on CPU.

Encodes every "text" of a JSONL file with a local sentence-transformers model (fully offline)
using model.encode(texts, batch_size=B, convert_to_numpy=True), which sorts by length
internally, and reports the median wall time of R timed passes after a warm-up pass.
Tokens are counted with the model's tokenizer (special tokens included, truncated at
--max-length). --output writes {"text", "embedding"} per input line, in input order.
--dtype bf16 runs the model in bf16 (`model.to(torch.bfloat16)`: PyTorch's bf16 matmuls, on AMX
tiles where the CPU has them); vectors are written as f32.

usage: scripts/bench-st.sh --model models/all-MiniLM-L6-v2 --input texts.jsonl [--json]
"""
import os
import sys

import bench_common as bc


def main():
    ap = bc.arguments(__doc__.splitlines()[0])
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                    help="the model's precision (bf16: model.to(torch.bfloat16))")
    args = ap.parse_args()
    bc.offline(args.threads)

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    texts = bc.read_texts(args.input)

    model = SentenceTransformer(args.model, device="cpu")
    model.max_seq_length = args.max_length
    if args.dtype == "bf16":
        model.to(torch.bfloat16)
    tok = model.tokenizer
    ids = tok(texts, truncation=True, max_length=args.max_length)["input_ids"]
    tokens = sum(len(x) for x in ids)

    def encode(batch):
        if args.dtype == "fp32":
            return model.encode(batch, batch_size=args.batch_size, convert_to_numpy=True,
                                show_progress_bar=False)
        # numpy has no bf16: the vectors come back as a tensor and are widened
        emb = model.encode(batch, batch_size=args.batch_size, convert_to_tensor=True,
                           show_progress_bar=False)
        return emb.float().numpy()

    run = bc.timed(encode, texts, args)
    engine = "sentence-transformers" + (" bf16" if args.dtype == "bf16" else "")
    rep = bc.report(engine, texts, tokens, run, args, {
        "dtype": args.dtype,
        "torch": torch.__version__,
        "sentence_transformers": sys.modules["sentence_transformers"].__version__,
        "threads": torch.get_num_threads(),
        # ATen's vectorised kernels (ATEN_CPU_CAPABILITY caps it); MKL's GEMM follows
        # MKL_ENABLE_INSTRUCTIONS, oneDNN's ONEDNN_MAX_CPU_ISA (unset: the CPU's best)
        "isa": torch.backends.cpu.get_cpu_capability(),
        "mkl_enable_instructions": os.environ.get("MKL_ENABLE_INSTRUCTIONS", "(unset: best)"),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "(unset: best)"),
    })
    bc.show(rep, args.json)


if __name__ == "__main__":
    main()

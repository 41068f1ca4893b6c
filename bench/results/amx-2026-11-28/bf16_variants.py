#!/usr/bin/env python3
"""Which parts of all-MiniLM-L6-v2 can take bf16 operands (f32 sums) and keep min cosine >= 0.999
to sentence-transformers fp32: an emulation in PyTorch, independent of memdex's own.

Each variant rounds the operands of some products to bf16 (nearest even) and multiplies the
rounded values in f32, the arithmetic of AMX's tdpbf16ps:
  fp32            nothing rounded (the check: cosine 1 to the reference file)
  proj            the six projections of every layer (Q, K, V, attention output, FFN up, FFN down)
  proj-no-down    the same but the FFN down-projection in f32
  proj+attn       the projections and attention's two products (Q, K, V and softmax(P) rounded)
  torch-bf16      the model in bf16 (`model.to(torch.bfloat16)`, what PyTorch's AMX path runs)

usage: bf16_variants.py MODEL GOLDEN.jsonl [MORE_TEXTS.jsonl] > table.json
(run with the .venv-bench of scripts/bench-st.sh)
"""
import json
import sys

import torch
import torch.nn.functional as F
import transformers.models.bert.modeling_bert as mb
from sentence_transformers import SentenceTransformer

torch.set_num_threads(2)


def bf(t):
    return t.to(torch.bfloat16).to(torch.float32)


class State:
    proj = False
    skip_down = False
    attn = False


def linear_forward(self, x):
    if not State.proj or (State.skip_down and getattr(self, "_is_down", False)):
        return F.linear(x, self.weight, self.bias)
    return F.linear(bf(x), bf(self.weight), self.bias)


orig_eager = mb.eager_attention_forward


def eager(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
    if not State.attn:
        return orig_eager(module, query, key, value, attention_mask, scaling, dropout, **kw)
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    w = torch.matmul(bf(query * scaling), bf(key).transpose(2, 3))
    if attention_mask is not None:
        w = w + attention_mask
    w = F.softmax(w, dim=-1)
    out = torch.matmul(bf(w), bf(value)).transpose(1, 2).contiguous()
    return out, w


def main():
    model_dir, golden = sys.argv[1], sys.argv[2]
    gold = [json.loads(l) for l in open(golden, encoding="utf-8") if l.strip()]
    texts = [g["text"] for g in gold]
    sets = {"golden": (texts, torch.tensor([g["embedding"] for g in gold]))}
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = 256
    bert = model[0].auto_model
    bert.config._attn_implementation = "eager"
    mb.eager_attention_forward = eager
    for layer in bert.encoder.layer:
        layer.output.dense._is_down = True
    for m in bert.modules():
        if isinstance(m, torch.nn.Linear):
            m.forward = linear_forward.__get__(m)
    enc = lambda t: model.encode(t, batch_size=64, convert_to_tensor=True).float()
    if len(sys.argv) > 3:
        more = [json.loads(l)["text"] for l in open(sys.argv[3], encoding="utf-8") if l.strip()]
        sets["bench"] = (more, None)
    for name, (t, ref) in sets.items():
        base = enc(t)
        sets[name] = (t, ref if ref is not None else base, base)
    out = {}
    variants = [("fp32", False, False, False), ("proj", True, False, False),
                ("proj-no-down", True, True, False), ("proj+attn", True, False, True)]
    for v, proj, skip, attn in variants:
        State.proj, State.skip_down, State.attn = proj, skip, attn
        for name, (t, ref, _) in sets.items():
            c = F.cosine_similarity(enc(t), ref, dim=1)
            out.setdefault(v, {})[name] = {"min": round(c.min().item(), 7), "mean": round(c.mean().item(), 7)}
    State.proj = State.attn = False
    model.to(torch.bfloat16)
    for name, (t, ref, _) in sets.items():
        c = F.cosine_similarity(enc(t), ref, dim=1)
        out.setdefault("torch-bf16", {})[name] = {"min": round(c.min().item(), 7), "mean": round(c.mean().item(), 7)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

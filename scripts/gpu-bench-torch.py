#!/usr/bin/env python3
"""PyTorch baselines on the GPU box for memdex's kernels, measured the same way as
memdex-gpu-bench: CUDA events on the current stream, one warm-up, median of --repeats, fresh
random queries and tenants before every timed launch, a random-normal f16 matrix (never zeros).

  d2d_copy              dst.copy_(src) of a buffer the size of the matrix; GB/s = 2 × bytes / t
  matmul_topk           per query: scores of its tenant's rows (batched bmm over gathered
                        tenant blocks, f16 → f32 accumulate), then torch.topk(k) — the
                        baseline for segmented_topk (1 and 10 queries per tenant)
  matmul_topk_grouped   the same queries grouped by tenant (argsort), one bmm over
                        [T, items, d] × [T, d, q] with no gather of rows, topk over items:
                        torch's best layout for this workload
Tenants are drawn as memdex-gpu-bench draws them: each exactly once (1x) or exactly 10 times
(10x), in a fresh shuffled order.
  matmul_topk_all_rows  one query against every row (mv + topk)

usage: gpu-bench-torch.py [--tenants 1000] [--items 5000] [--dim 384] [--k 10] [--repeats 10]
Prints one JSON object per line.
"""
import argparse
import json
import statistics


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--device", default="cuda", help="cpu only to smoke-test this script")
    a = ap.parse_args()

    import time

    import torch

    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    g = torch.Generator(device=dev).manual_seed(1234)
    rows = a.tenants * a.items

    def timed(prepare, fn):
        fn(prepare())
        sync()
        times = []
        for _ in range(a.repeats):
            inp = prepare()
            sync()
            if cuda:
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                fn(inp)
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1))
            else:
                t0 = time.perf_counter()
                fn(inp)
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times), times

    nbytes = rows * a.dim * 2
    src = torch.randn(rows * a.dim, generator=g, device=dev).half()
    dst = torch.empty_like(src)
    ms, _ = timed(lambda: None, lambda _: dst.copy_(src))
    copy_gbs = 2 * nbytes / (ms * 1e-3) / 1e9
    print(json.dumps({"bench": "torch_d2d_copy", "bytes": nbytes, "ms": ms, "gb_per_s": copy_gbs}))
    del src, dst

    emb = torch.randn(rows, a.dim, generator=g, device=dev)
    emb = torch.nn.functional.normalize(emb, dim=1).half().view(a.tenants, a.items, a.dim)

    def queries(nq):
        q = torch.nn.functional.normalize(torch.randn(nq, a.dim, generator=g, device=dev), dim=1)
        # each tenant exactly nq / tenants times (nq = 1: one random tenant), shuffled
        base = torch.arange(a.tenants, device=dev).repeat(max(1, nq // a.tenants))
        tenants = base[torch.randperm(base.numel(), generator=g, device=dev)][:nq]
        return q.half(), tenants

    def grouped(inp, per):
        q, tenants = inp
        order = torch.argsort(tenants, stable=True)          # queries grouped by tenant
        qg = q[order].view(a.tenants, per, a.dim).transpose(1, 2)   # (T, dim, per)
        scores = torch.bmm(emb, qg)                          # (T, items, per)
        return torch.topk(scores.float(), a.k, dim=1), order

    def per_tenant(inp):
        q, tenants = inp
        blocks = emb[tenants]                                   # (nq, items, dim) gather
        scores = torch.bmm(blocks, q.unsqueeze(2)).squeeze(2)   # (nq, items)
        return torch.topk(scores.float(), a.k, dim=1)

    def per_tenant_no_gather(inp):
        # the cheapest possible layout for torch: query i on tenant i (no gather copy)
        q, _ = inp
        scores = torch.bmm(emb[: q.shape[0]], q.unsqueeze(2)).squeeze(2)
        return torch.topk(scores.float(), a.k, dim=1)

    for label, nq in (("per_tenant_1x", a.tenants), ("per_tenant_10x", a.tenants * 10)):
        # 10 queries per tenant: in chunks of `tenants` so the gathered blocks fit in memory
        chunks = nq // a.tenants

        def run(inp, chunks=chunks):
            q, t = inp
            return [per_tenant((q[i::chunks], t[i::chunks])) for i in range(chunks)]
        ms, all_ms = timed(lambda nq=nq: queries(nq), run)
        gbs = nq * a.items * a.dim * 2 / (ms * 1e-3) / 1e9
        print(json.dumps({"bench": "torch_matmul_topk", "case": label, "queries": nq,
                          "ms": ms, "all_ms": all_ms, "queries_per_s": nq / (ms * 1e-3),
                          "scan_gb_per_s": gbs, "fraction_of_copy_bw": gbs / copy_gbs}))
        ms, all_ms = timed(lambda nq=nq: queries(nq), lambda inp, c=chunks: grouped(inp, c))
        gbs = nq * a.items * a.dim * 2 / (ms * 1e-3) / 1e9
        print(json.dumps({"bench": "torch_matmul_topk", "case": label + "_grouped",
                          "queries": nq, "ms": ms, "all_ms": all_ms,
                          "queries_per_s": nq / (ms * 1e-3), "scan_gb_per_s": gbs,
                          "fraction_of_copy_bw": gbs / copy_gbs}))
    ms, _ = timed(lambda: queries(a.tenants), per_tenant_no_gather)
    gbs = a.tenants * a.items * a.dim * 2 / (ms * 1e-3) / 1e9
    print(json.dumps({"bench": "torch_matmul_topk", "case": "per_tenant_1x_no_gather",
                      "queries": a.tenants, "ms": ms, "queries_per_s": a.tenants / (ms * 1e-3),
                      "scan_gb_per_s": gbs, "fraction_of_copy_bw": gbs / copy_gbs}))

    flat = emb.view(rows, a.dim)
    ms, _ = timed(lambda: queries(1), lambda inp: torch.topk((flat @ inp[0][0]).float(), a.k))
    gbs = rows * a.dim * 2 / (ms * 1e-3) / 1e9
    print(json.dumps({"bench": "torch_matmul_topk", "case": "single_query_all_rows",
                      "queries": 1, "ms": ms, "scan_gb_per_s": gbs,
                      "fraction_of_copy_bw": gbs / copy_gbs}))


if __name__ == "__main__":
    main()

"""The self-tests of scripts/gpu-report.py: small synthetic reports of each kind, good and bad,
and each reader's verdict on them (`python3 scripts/gpu-report.py self-test`). `gr` is the
gpu-report module (its file name has a hyphen, so it hands itself over)."""
import glob
import json
import os
import sys

import gpu_report_device as device
import gpu_report_model as model


def self_test(gr):
    """Writes small reports of each kind, good and bad, and asserts each reader's verdict."""
    import contextlib
    import io
    import tempfile

    def w(d, name, text):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)

    def run(fn, d):
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(d)

    check = lambda name, dev, ok=True: json.dumps({"check": name, "device": dev, "ok": ok})  # noqa: E731
    wrk = ("Requests/sec: 100.0\nbody_checked ok=%d wrong=%d ok_per_s=100.0\n"
           "planted_checked ok=%d wrong=0 (one search in 4)\n"
           "latency_us p50=1000 p90=2000 p99=3000 max=4000\n")
    opened = json.dumps({"target_rate": 80, "errors": {}, "latency_ms": {"p99": 3.0},
                         "planted_ok": 200})
    ncu_csv = ('"ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum",'
               '"lts__t_sector_hit_rate.pct"\n"","","byte","nsecond","%"\n'
               + "".join(f'"{i}","memdex_segmented_topk","3,840,000,000","1000000","5"\n'
                         for i in range(6)))
    results = []
    with tempfile.TemporaryDirectory() as d:
        both = [check("a", "cpu"), check("a", "cuda:0"), check("b", "cpu"), check("b", "cuda:0")]
        plan = json.dumps({"plan": ["a", "b"]})
        tally = {"passed": 4, "failed": 0, "by_device": {"cpu": {"passed": 2, "failed": 0},
                                                           "cuda:0": {"passed": 2, "failed": 0}}}
        tests_log = "test result: ok. 4 passed; 0 failed; 0 ignored\n"
        w(d, "kernels.jsonl", "\n".join([plan] + both + [json.dumps(tally)]))
        results.append(("kernels without the crate's tests", run(gr.kernels, d), False))
        w(d, "kernels-tests.log", tests_log)
        results.append(("kernels all pass", run(gr.kernels, d), True))
        tally["by_device"]["cuda:0"] = {"passed": 1, "failed": 1}
        w(d, "kernels.jsonl", "\n".join([plan] + both + [json.dumps(tally)]))
        results.append(("kernels cuda failure", run(gr.kernels, d), False))
        # a check the binary planned but never ran on cuda:0 (tally and lines agree)
        tally["by_device"]["cuda:0"] = {"passed": 1, "failed": 0}
        w(d, "kernels.jsonl", "\n".join([plan] + both[:3] + [json.dumps(tally)]))
        results.append(("kernels check missing on cuda:0", run(gr.kernels, d), False))
        tally["by_device"]["cuda:0"] = {"passed": 2, "failed": 0}
        os.remove(os.path.join(d, "kernels.jsonl"))

        # the sanitizer stage: sanitize-plan.txt names the runs; each has the sanitizer's
        # report (.log) and the device's results (.jsonl)
        def san(name, summary, lines):
            w(d, f"sanitize-{name}.log", "========= COMPUTE-SANITIZER\n" + summary)
            w(d, f"sanitize-{name}.jsonl", "\n".join(lines))
        cuda_ok = lambda names, failed=(): [json.dumps({"plan": names})] + [  # noqa: E731
            json.dumps({"check": n, "device": "cuda:0", "ok": n not in failed}) for n in names] + [
            json.dumps({"passed": len(names) - len(failed), "failed": len(failed), "by_device": {
                "cuda:0": {"passed": len(names) - len(failed), "failed": len(failed)}}})]
        clean = "========= ERROR SUMMARY: 0 errors\n"
        race_clean = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
        # a plan covering every group under each tool: memcheck and synccheck over every check,
        # racecheck per group, each tool over the bench
        groups = ("selection", "scores", "tensor_scan", "fragrel", "lsh", "rank_matches",
                  "rank_parts", "rank_text")
        full = (["memcheck memcheck all full", "synccheck synccheck all full"]
                + [f"racecheck-{g} racecheck {g} small" for g in groups]
                + [f"{t}-bench {t} @bench full" for t in device.SANITIZE_TOOLS])
        bench_rows = [json.dumps({"bench": "segmented_topk", "case": c, "variant": v})
                      for c in ("a", "b", "c") for v in ("cuda_cores", "tensor_cores")] + [
            json.dumps({"bench": "fragrel_topk"})]

        def all_clean(plan):
            w(d, "sanitize-plan.txt", "\n".join(plan) + "\n")
            for x in plan:
                name, tool = x.split()[:2]
                summary = race_clean if tool == "racecheck" else clean
                if "@bench" in x:
                    san(name, summary, bench_rows)
                    w(d, f"sanitize-{name}.rc", "0\n")
                else:
                    san(name, summary, cuda_ok([name + "_a"]))
        w(d, "sanitize-plan.txt", "\n".join(full) + "\n")
        san("memcheck", clean, cuda_ok(["a", "b"]))
        results.append(("sanitize: a planned run missing", run(gr.sanitize, d), False))
        all_clean(full)
        results.append(("sanitize clean, every group under each tool", run(gr.sanitize, d), True))
        rep_ = json.load(open(os.path.join(d, "sanitize.json")))
        results.append(("sanitize.json: PASS per run", rep_["verdict"] == "PASS" and all(
            r["verdict"] == "PASS" for r in rep_["runs"].values()), True))
        all_clean([x for x in full if "tensor_scan" not in x])
        results.append(("sanitize: the tensor scan left out of racecheck", run(gr.sanitize, d), False))
        results.append(("sanitize.json names what is not covered", json.load(open(
            os.path.join(d, "sanitize.json")))["not_covered"] == ["tensor/racecheck"], True))
        all_clean(full)
        san("racecheck-bench", race_clean, bench_rows[:3])
        results.append(("sanitize: bench under racecheck incomplete", run(gr.sanitize, d), False))
        all_clean(full)
        w(d, "sanitize-synccheck-bench.rc", "1\n")
        results.append(("sanitize: bench under synccheck exits 1", run(gr.sanitize, d), False))
        all_clean(full)
        san("racecheck-rank_matches", "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, "
            "0 warnings)\n", cuda_ok(["rank_a"]))
        results.append(("racecheck hazards", run(gr.sanitize, d), False))
        san("racecheck-rank_matches", "", cuda_ok(["rank_a"])[:2])
        results.append(("racecheck cut short", run(gr.sanitize, d), False))
        # the sanitizer finds no error but a check fails on the device: a failure
        san("racecheck-rank_matches", race_clean, cuda_ok(["rank_a"], failed=["rank_a"]))
        results.append(("racecheck clean, device check failed", run(gr.sanitize, d), False))
        san("racecheck-rank_matches", race_clean, cuda_ok(["rank_a"]))
        # the sanitizer's summary came, the device's tally did not (results cut)
        san("memcheck", clean, cuda_ok(["a", "b"])[:3])
        results.append(("memcheck clean, device tally missing", run(gr.sanitize, d), False))
        for f in glob.glob(os.path.join(d, "sanitize-*")):
            os.remove(f)
        # the layout of the 2026-11-26 runs (results inside the log, both devices run): the CPU
        # reference passes, cuda:0 fails, and the CPU's '"failed":0' must not read as a pass
        old = ('========= COMPUTE-SANITIZER\n{"check":"a","device":"cpu","ok":true}\n'
               '{"check":"a","device":"cuda:0","ok":%s}\n{"by_device":{"cpu":{"failed":0,'
               '"passed":1},"cuda:0":{"failed":%d,"passed":%d}},"cuda":true,"failed":%d,'
               '"passed":%d}\n========= ERROR SUMMARY: 0 errors\n')
        w(d, "sanitize-memcheck.log", old % ("true", 0, 1, 0, 2))
        results.append(("old layout, clean", run(gr.sanitize, d), True))
        w(d, "sanitize-memcheck.log", old % ("false", 1, 0, 1, 1))
        results.append(("old layout, CPU passes and cuda:0 fails", run(gr.sanitize, d), False))
        os.remove(os.path.join(d, "sanitize-memcheck.log"))
        w(d, "scan-memdex.jsonl", json.dumps({"bench": "d2d_copy", "gb_per_s": 4000.0}) + "\n"
          + json.dumps({"bench": "segmented_topk", "case": "per_tenant_1x", "ms": 1.0,
                        "scan_gb_per_s": 3840.0, "fraction_of_copy_bw": 0.96}))
        w(d, "scan-torch.jsonl", json.dumps({"bench": "torch_matmul_topk",
                                             "case": "per_tenant_1x_grouped", "ms": 2.0}))
        results.append(("scan", run(gr.scan, d) == 0, True))
        speed = json.load(open(os.path.join(d, "scan.json")))["cases"]["per_tenant_1x"]
        results.append(("scan speedup 2x", speed.get("speedup_vs_torch_grouped") == 2.0, True))
        # the tensor-core scan's goals, host grouping counted: 10x 2.0 / (1.0 + 0.2) = 1.67x
        # (>= 1.5 met), 1x 1.3 / (1.0 + 0.1) = 1.18x (< 1.2 missed), then 1.4 / 1.1 = 1.27x
        def tensor_case(case, host):
            return json.dumps({"bench": "segmented_topk", "case": case, "ms": 1.0,
                               "variant": "tensor_cores", "kernel": "memdex_tensor_topk",
                               "host_group_ms": host, "scan_gb_per_s": 1.0})
        base = open(os.path.join(d, "scan-memdex.jsonl")).read()
        w(d, "scan-memdex.jsonl", "\n".join([base, tensor_case("per_tenant_10x", 0.2),
                                             tensor_case("per_tenant_1x", 0.1)]))
        torch_lines = lambda one: "\n".join(json.dumps(  # noqa: E731
            {"bench": "torch_matmul_topk", "case": c, "ms": ms})
            for c, ms in (("per_tenant_1x_grouped", one), ("per_tenant_10x_grouped", 2.0)))
        w(d, "scan-torch.jsonl", torch_lines(1.3))
        results.append(("scan: the 1x tensor goal missed", run(gr.scan, d) == 3, True))
        goals = json.load(open(os.path.join(d, "scan.json")))["goals"]
        results.append(("scan goals read", goals["per_tenant_10x"]["met"]
                        and not goals["per_tenant_1x"]["met"], True))
        w(d, "scan-torch.jsonl", torch_lines(1.4))
        results.append(("scan: both tensor goals met", run(gr.scan, d) == 0, True))
        w(d, "ncu-scan.csv", ncu_csv)
        results.append(("ncu", run(gr.ncu, d), True))
        frac = json.load(open(os.path.join(d, "ncu.json")))["scan"]["per_tenant_1x"]
        results.append(("ncu fraction 0.96", abs(frac["fraction_of_copy_bw"] - 0.96) < 1e-9, True))
        # both scans' launches, interleaved, with a counter column: each family read apart
        w(d, "ncu-scan.csv", ncu_csv.replace('"lts__t_sector_hit_rate.pct"',
                                             '"lts__t_sector_hit_rate.pct","smsp__inst_executed.sum"')
          .replace('"%"', '"%","inst"').replace('"5"\n', '"5","1,000"\n')
          + "".join(f'"{i}","memdex_tensor_topk","1,000,000,000","500000","5","7"\n'
                    for i in range(6, 12)))
        results.append(("ncu, both scans", run(gr.ncu, d), True))
        both = json.load(open(os.path.join(d, "ncu.json")))
        results.append(("ncu: the tensor scan's launches and counters apart",
                        both["tensor"]["per_tenant_10x"]["duration_ns"] == 500000
                        and both["tensor"]["per_tenant_10x"]["instructions"] == 7
                        and both["scan"]["per_tenant_10x"]["instructions"] == 1000, True))
        w(d, "ncu-rank.csv", ncu_csv.replace("memdex_segmented_topk", "memdex_query_inputs", 2)
          .replace("memdex_segmented_topk", "memdex_rank_dense_d512_t16", 2)
          .replace("memdex_segmented_topk", "memdex_rank_topk"))
        results.append(("ncu-rank", run(gr.ncu_rank, d), True))
        per = json.load(open(os.path.join(d, "ncu-rank.json")))
        results.append(("ncu-rank per kernel", per["memdex_query_inputs"]["launches"] == 2
                        and per["memdex_rank_dense"]["launches"] == 2
                        and per["memdex_rank_topk"]["launches"] == 2
                        and per["memdex_rank_topk"]["mean_ms"] == 1.0, True))
        w(d, "ncu-rank.csv", "")
        results.append(("ncu-rank without rows", run(gr.ncu_rank, d), False))
        results.append(("rank-median without runs", run(gr.rank_median, d), False))
        for i, x in enumerate((3.0, 5.0, 4.0)):
            w(d, f"rank-load-run{i + 1}.json", json.dumps(
                {"speedup_vs_parallel": x, "kernel_batches": {"host_ms_per_batch": 1.0},
                 "agreement": {"ranker_ms_per_batch": 10 / x, "cpu_parallel_ms_per_batch": 10.0}}))
        results.append(("rank-median", run(gr.rank_median, d), True))
        med = json.load(open(os.path.join(d, "rank-load.json")))
        results.append(("rank-median is the middle run", med["speedup_vs_parallel"] == 4.0
                        and len(med["invocations"]) == 3, True))
        for r in (1, 2, 3):
            w(d, f"load-gpu-run{r}.txt", wrk % (1000, 0, 250))
        w(d, "open-gpu.json", opened)
        results.append(("load clean", run(gr.load, d), True))
        w(d, "load-gpu-run2.txt", wrk % (990, 10, 240))
        results.append(("load wrong bodies", run(gr.load, d), False))
        w(d, "load-gpu-run2.txt", wrk % (1000, 0, 0))
        results.append(("load run without planted questions", run(gr.load, d), False))
        w(d, "load-gpu-run2.txt", wrk % (1000, 0, 250))
        w(d, "open-gpu.json", json.dumps({**json.loads(opened), "planted_ok": 0}))
        results.append(("open loop without planted questions", run(gr.load, d), False))
        w(d, "open-gpu.json", opened)
        os.remove(os.path.join(d, "open-gpu.json"))
        results.append(("load without open loop", run(gr.load, d), False))
        # nsys's cuda_gpu_trace: a rank kernel half beside a gemm of another stream, one
        # beside a kernel of its own stream only (not overlap), a copy (left out)
        trace = ('"Start (ns)","Duration (ns)","CorrId","Strm","Name"\n'
                 '1000,1000,1,7,"ampere_sgemm_128x64_nn"\n'
                 '1500,1000,2,13,"memdex_rank_topk"\n'
                 '5000,1000,3,13,"memdex_rank_topk"\n'
                 '5200,500,4,13,"candle_affine"\n'
                 '5000,3000,5,7,"[CUDA memcpy Host-to-Device]"\n')
        w(d, "serve-nsys_cuda_gpu_trace.csv", trace)
        results.append(("overlap read", run(gr.overlap, d), True))
        rep = json.load(open(os.path.join(d, "overlap.json")))
        results.append(("overlap: only another stream's encoder kernels count",
                        rep["rank_overlapped_ns"] == 500 and rep["rank_kernel_ns"] == 2000, True))
        # lsh: the device's ids against the CPU's, identical / a few differ / many differ
        from array import array
        for wh in ("cuda", "cpu"):
            w(d, f"lsh-index-{wh}.json", json.dumps({"stages": {"write": 1.0, "wall": 9.0}}))
            w(d, f"lsh-info-{wh}.json", json.dumps(
                {"lsh": {"rows": 250, "tables": 4, "digest": "x"}}))
        def ids(path, flips):
            a = array("H", [i % 64 for i in range(1000)])
            for i in range(flips):
                a[i] = (a[i] + 1) % 64
            if sys.byteorder != "little":
                a.byteswap()
            with open(os.path.join(d, path), "wb") as f:
                f.write(a.tobytes())
        ids("lsh-cpu.ids", 0)
        for flips, want in ((0, 0), (4, 3), (6, 1)):
            ids("lsh-cuda.ids", flips)
            with open(os.devnull, "w") as null:
                saved, sys.stdout = sys.stdout, null
                try:
                    got = gr.lsh(d, d, "cuda")
                finally:
                    sys.stdout = saved
            results.append((f"lsh with {flips} of 1000 ids different", got == want, True))
        w(d, "verdicts.jsonl", json.dumps({"stage": "x", "status": "FAIL", "detail": ""}))
        results.append(("summary with a FAIL", run(gr.summary, d), False))
    with tempfile.TemporaryDirectory() as d:
        # the model path's readers (gpu_report_model.py): exit codes and values
        results += [(n, got == want, True) for n, got, want in model.self_test(d)]
        # the batch stage's reader (gpu_report_device.py)
        results += device.self_test(d)
    bad = [(n, got, want) for n, got, want in results if bool(got) != want]
    for n, got, want in results:
        print(f"{'ok  ' if bool(got) == want else 'FAIL'} {n}: {bool(got)} (want {want})")
    return not bad

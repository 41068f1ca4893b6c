#!/usr/bin/env python3
"""Compare two `memdex eval` runs on the same data (e.g. --device cpu vs --device cuda).

Usage:
  eval-diff.py CPU.json CUDA.json [--log-a CPU.log.jsonl --log-b CUDA.log.jsonl]
               [--overall-tol 0.002] [--k 10] [--tie 0.001] [--out diff.json]
  eval-diff.py --self-test

CPU.json / CUDA.json: the reports of `memdex eval ... --json` (EvalReport in
crates/memdex-eval/src/run.rs). Every metric is diffed:
  * overall, `levels.LEVEL.METRIC` (and `answer_session_gold.levels`, LongMemEval):
    |a - b| <= --overall-tol;
  * per type, `by_type.TYPE.LEVEL.METRIC`: |a - b| <= 1/n + 1e-9, n = questions of
    that type. The report records no per-type count: n is counted in --log-a when
    given, else inferred from the recall means (each is hits/n: n is a multiple of
    the lcm of their denominators; exact when those lcms add up to `questions`,
    else a warning is printed).
`questions` and `skipped` must be equal. Logs (`memdex eval --log FILE`, one JSON
line per question: question_id, question_type, ranked [{id, score}], gold) give
every question whose top-k differs, with its margin: the max over differing
positions i of |score_A(A[i]) - score_A(B[i])|, B[i] looked up in A's whole
ranking (same id, same occurrence number); when A lacks it, |A's k-th score -
B[i]'s score in B| is used instead and the question is marked `estimated`.
Margin <= --tie: a near tie; otherwise the question is "different".

Exit 0: all within tolerance; 1: any metric over tolerance, a missing metric or
question, differing counts, or (only with --strict-rankings) a "different"
ranking; 2: unreadable or malformed input. Without --strict-rankings the
questions whose top-k differ beyond the tie are listed with their margins (the
metrics are the pass/fail criterion; an f16 device and an f32 CPU may order
close items differently).
"""
import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
from collections import Counter
from fractions import Fraction
from itertools import zip_longest

EPS = 1e-9
ALT = "answer_session_gold.levels"  # LongMemEval only


class InputError(Exception):
    """Bad input; the message names the file."""


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def alt_levels(r):
    g = r.get("answer_session_gold")
    return g.get("levels") if isinstance(g, dict) else None


def load_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            r = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read a JSON report: {e}") from None
    if not isinstance(r, dict) or not is_num(r.get("questions")):
        raise InputError(f"{path}: not a `memdex eval --json` report (no `questions`)")
    for key, obj, depth in (("levels", r.get("levels"), 2), ("by_type", r.get("by_type"), 3),
                            (ALT, alt_levels(r) or {}, 2)):
        for name, v in flatten(obj, key, path, depth):
            if not is_num(v):
                raise InputError(f"{path}: {name} is not a number: {v!r}")
    return r


def flatten(obj, prefix, path, depth):
    """(dotted name, leaf) of a `depth`-level nested map."""
    if depth == 0:
        return [(prefix, obj)]
    if not isinstance(obj, dict):
        raise InputError(f"{path}: {prefix} should be an object")
    return [x for k, v in obj.items() for x in flatten(v, f"{prefix}.{k}", path, depth - 1)]


def load_log(path):
    """question id -> (type, [(item id, score)]), in file order."""
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    q = json.loads(line)
                    ranked = [(str(x["id"]), float(x["score"])) for x in q["ranked"]]
                    qid, qtype = str(q["question_id"]), str(q["question_type"])
                except (ValueError, KeyError, TypeError) as e:
                    raise InputError(f"{path}:{no}: malformed log line ({e!r})") from None
                key, n = qid, 1
                while key in out:  # repeated ids stay apart: id#2, id#3
                    n += 1
                    key = f"{qid}#{n}"
                out[key] = (qtype, ranked)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the log: {e}") from None
    return out


def infer_counts(a, b):
    """type -> (n, source) from the recall means (hits/n) of report A, else B, else both."""
    total = int(a["questions"])

    def lcms(reports):
        out = {}
        for r in reports:
            for t, levels in r["by_type"].items():
                for name, v in ((n, v) for m in levels.values() for n, v in m.items()):
                    if name.startswith("recall"):
                        d = Fraction(v).limit_denominator(max(total, 1)).denominator
                        out[t] = math.lcm(out.get(t, 1), d)
        return out

    for reports in ((a,), (b,)):
        got = lcms(reports)
        if sum(got.values()) == total:
            return {t: (n, "report (exact: lcms sum to questions)") for t, n in got.items()}
    return {t: (n, "report (not exact)") for t, n in lcms((a, b)).items()}


def diff_group(pairs, tol_of):
    """pairs: name -> (a, b). Returns the group's summary (`at_tol`: the metrics that differ
    by their whole tolerance, within EPS: allowed, but worth naming)."""
    over, at_tol, max_diff = [], [], 0.0
    for name, (va, vb) in sorted(pairs.items()):
        d, tol = abs(va - vb), tol_of(name)
        max_diff = max(max_diff, d)
        if d > tol + EPS:
            over.append({"metric": name, "a": va, "b": vb, "diff": d, "tol": tol})
        elif d > 0 and d >= tol - EPS:
            at_tol.append(name)
    return {"compared": len(pairs), "max_diff": max_diff, "over": over, "at_tol": at_tol}


def compare_reports(a, b, overall_tol, counts):
    problems, missing = [], []
    for key in ("questions", "skipped"):
        if a.get(key) != b.get(key):
            problems.append(f"{key} differ: {a.get(key)!r} vs {b.get(key)!r}")

    def pairs(key, get, depth):
        fa, fb = (dict(flatten(get(r) or {}, key, "", depth)) for r in (a, b))
        missing.extend(sorted(set(fa) ^ set(fb)))
        return {n: (fa[n], fb[n]) for n in fa.keys() & fb.keys()}

    overall = pairs("levels", lambda r: r.get("levels"), 2)
    overall.update(pairs(ALT, alt_levels, 2))
    per_type = pairs("by_type", lambda r: r.get("by_type"), 3)
    ov = diff_group(overall, lambda _: overall_tol)
    ov["tol"] = overall_tol
    pt = diff_group(per_type, lambda n: 1.0 / counts.get(n.split(".")[1], (1, ""))[0])
    pt["counts"] = {t: {"n": n, "source": s} for t, (n, s) in sorted(counts.items())}
    if missing:
        problems.append(f"{len(missing)} metrics in one report only: {', '.join(missing[:5])}")
    return {"overall": ov, "per_type": pt, "missing_metrics": missing}, problems


def topk_diff(ra, rb, k):
    """(1-based differing positions, margin, estimated) of two rankings' top k."""
    ta, tb = [x[0] for x in ra[:k]], [x[0] for x in rb[:k]]
    if ta == tb:
        return [], 0.0, False
    occ_a, seen = {}, Counter()
    for item, score in ra:
        seen[item] += 1
        occ_a[(item, seen[item])] = score
    seen_b, positions, margin, estimated = Counter(), [], 0.0, False
    for i, (x, y) in enumerate(zip_longest(ta, tb)):
        seen_b[y] += 1
        if x == y:
            continue
        positions.append(i + 1)
        if x is None or y is None:  # one ranking holds fewer than k items
            margin = math.inf
            continue
        sa = occ_a.get((y, seen_b[y]))
        if sa is None:
            estimated = True
            m = abs(ra[min(k, len(ra)) - 1][1] - rb[i][1])
        else:
            m = abs(ra[i][1] - sa)
        margin = max(margin, m)
    return positions, margin, estimated


def compare_logs(la, lb, k, tie, strict):
    problems, rows = [], []
    only = sorted(set(la) ^ set(lb))
    if only:
        problems.append(f"{len(only)} questions in one log only: {', '.join(only[:5])}")
    n = {"identical": 0, "near_tie_only": 0, "different": 0}
    for qid in [q for q in la if q in lb]:
        (qtype, ra), (_, rb) = la[qid], lb[qid]
        positions, margin, est = topk_diff(ra, rb, k)
        if not positions:
            n["identical"] += 1
            continue
        cls = "near_tie_only" if margin <= tie else "different"
        n[cls] += 1
        rows.append({"id": qid, "type": qtype, "class": cls, "positions": positions,
                     "margin": margin if math.isfinite(margin) else None, "estimated": est})
    if n["different"] and strict:
        problems.append(f"{n['different']} questions' top-{k} differ beyond the tie {tie}")
    rows.sort(key=lambda r: -(r["margin"] if r["margin"] is not None else math.inf))
    return {"k": k, "tie": tie, "questions": sum(n.values()), **n,
            "estimated": sum(r["estimated"] for r in rows), "only_in_one": only,
            "list": rows}, problems


def config_warnings(a, b):
    # where the ranking ran (config.ranker, config.rank_batches: "cpu" vs "kernels on cuda:0")
    # and the run's timings differ by design between a CPU and a device run
    skip = {"ranker", "rank_batches", "run"}
    ca, cb = a.get("config") or {}, b.get("config") or {}
    keys = sorted(k for k in set(ca) | set(cb) if k not in skip and ca.get(k) != cb.get(k))
    return [f"config differs: {', '.join(keys)}"] if keys else []


def print_summary(res, show=15):
    print(f"eval-diff: {res['a']} vs {res['b']}")
    for w in res["warnings"]:
        print(f"  warning: {w}")
    ov, pt = res["overall"], res["per_type"]
    print(f"overall:  {ov['compared']} metrics, max |diff| {ov['max_diff']:.6f} "
          f"(tol {ov['tol']}), {len(ov['over'])} over")
    ns = ", ".join(f"{t} {c['n']}" for t, c in pt["counts"].items())
    src = sorted({c["source"] for c in pt["counts"].values()})
    print(f"per type: {pt['compared']} metrics, max |diff| {pt['max_diff']:.6f} "
          f"(tol 1/n; n: {ns}; from {', '.join(src)}), {len(pt['over'])} over")
    for o in (ov["over"] + pt["over"])[:show]:
        print(f"  OVER {o['metric']}: {o['a']:.6f} vs {o['b']:.6f} "
              f"(diff {o['diff']:.6f} > {o['tol']:.6f})")
    rk = res.get("rankings")
    if rk:
        print(f"top-{rk['k']} of {rk['questions']} questions: {rk['identical']} identical, "
              f"{rk['near_tie_only']} near-tie only, {rk['different']} different "
              f"(tie {rk['tie']}; {rk['estimated']} margins estimated)")
        for r in rk["list"][:show]:
            m = "n/a" if r["margin"] is None else f"{r['margin']:.2e}"
            print(f"  {r['class']:<13} {r['id']} [{r['type']}] margin {m}"
                  f"{' (est.)' if r['estimated'] else ''} at {r['positions']}")
        if len(rk["list"]) > show:
            print(f"  ... {len(rk['list']) - show} more in the JSON (--out)")
    print(verdict_line(res))


def verdict_line(res):
    """The last line of the output, what a caller that keeps one line keeps: the verdict, the
    counts of identical / near-tie-only / different top-k over every question both logs hold,
    and the largest metric differences against their tolerances."""
    ov, pt, rk = res["overall"], res["per_type"], res.get("rankings")
    parts = ["PASS" if res["ok"] else "FAIL"]
    if rk:
        d = rk["list"][0] if rk["different"] and rk["list"] else None
        parts.append(f"top-{rk['k']} of {rk['questions']} questions: {rk['identical']} identical, "
                     f"{rk['near_tie_only']} near ties, {rk['different']} different"
                     + (f" (largest margin {d['id']} {d['margin']:.3g})"
                        if d and d["margin"] is not None else "")
                     + (f", {len(rk['only_in_one'])} in one log only" if rk["only_in_one"] else ""))
    else:
        parts.append("top-k not compared (no logs)")
    at_tol = len(pt.get("at_tol", []))
    parts.append(f"overall max |diff| {ov['max_diff']:.4g} (tol {ov['tol']}), per type "
                 f"{pt['max_diff']:.4g} (tol 1/n{f'; {at_tol} at 1/n' if at_tol else ''})")
    line = "; ".join(parts)
    if not res["ok"]:
        line += ": " + "; ".join(res["problems"])
    return line


def main(argv):
    p = argparse.ArgumentParser(description="Diff two `memdex eval --json` reports.")
    p.add_argument("a", nargs="?", help="report A (e.g. --device cpu)")
    p.add_argument("b", nargs="?", help="report B (e.g. --device cuda)")
    p.add_argument("--log-a")
    p.add_argument("--log-b")
    p.add_argument("--overall-tol", type=float, default=0.002)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--tie", type=float, default=0.001)
    p.add_argument("--out")
    p.add_argument("--strict-rankings", action="store_true",
                   help="also fail when a question's top-k differs beyond --tie")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test()
    if not (args.a and args.b) or bool(args.log_a) != bool(args.log_b) or args.k < 1:
        p.error("give two reports, --log-a with --log-b, and --k >= 1")
    try:
        a, b = load_report(args.a), load_report(args.b)
        logs = (load_log(args.log_a), load_log(args.log_b)) if args.log_a else None
    except InputError as e:
        print(f"eval-diff: {e}", file=sys.stderr)
        return 2
    warnings = config_warnings(a, b)
    counts = infer_counts(a, b)
    if logs:
        ca, cb = (Counter(t for t, _ in lg.values()) for lg in logs)
        counts.update({t: (n, f"log {args.log_a}") for t, n in ca.items()})
        if ca != cb:
            warnings.append("the two logs count different questions per type")
        if sum(ca.values()) != a["questions"]:
            warnings.append(f"log A has {sum(ca.values())} questions, report A {a['questions']}")
    elif any(s.endswith("(not exact)") for _, s in counts.values()):
        warnings.append("per-type n not exact (a divisor or multiple of n); give --log-a/--log-b")
    res, problems = compare_reports(a, b, args.overall_tol, counts)
    if logs:
        res["rankings"], more = compare_logs(*logs, args.k, args.tie, args.strict_rankings)
        problems += more
    problems[:0] = [f"{len(g['over'])} {name} metrics over tolerance"
                    for name, g in (("overall", res["overall"]), ("per-type", res["per_type"]))
                    if g["over"]]
    res.update(a=args.a, b=args.b, ok=not problems, problems=problems, warnings=warnings)
    print_summary(res)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(res, f, indent=2)
        except OSError as e:
            print(f"eval-diff: {args.out}: cannot write: {e}", file=sys.stderr)
            return 2
    return 0 if res["ok"] else 1


def self_test():
    """Synthetic reports and logs; every outcome (exit code, JSON fields) is asserted."""
    base = {"questions": 7, "skipped": {}, "latency_ms": {}, "config": {"model": "m"},
            "levels": {"turn": {"recall_all@5": 4 / 7, "ndcg_any@5": 0.5}},
            "by_type": {"alpha": {"turn": {"recall_all@5": 0.25, "recall_any@5": 0.75,
                                           "ndcg_any@5": 0.4}},
                        "beta": {"turn": {"recall_all@5": 2 / 3, "ndcg_any@5": 0.6}}}}
    r1 = [("a", 0.9), ("b", 0.5), ("c", 0.4995), ("d", 0.1)]
    log = [(f"q{i}", "alpha" if i < 4 else "beta", r1) for i in range(7)]

    def edited(path, v):
        r = json.loads(json.dumps(base))
        *head, last = path.split(".")
        d = r
        for h in head:
            d = d[h]
        d[last] = v
        return r

    def with_q6(ranked):
        return log[:6] + [("q6", "beta", ranked)]

    fails = 0
    with tempfile.TemporaryDirectory(prefix="eval-diff-") as tmp:
        out = os.path.join(tmp, "out.json")

        def write(name, obj):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="utf-8") as f:
                if isinstance(obj, list):  # a log
                    f.writelines(json.dumps({"question_id": q, "question_type": t, "gold": [],
                                             "ranked": [{"id": i, "score": s} for i, s in r]})
                                 + "\n" for q, t, r in obj)
                else:
                    f.write(obj if isinstance(obj, str) else json.dumps(obj))
            return path

        def case(name, want, b=base, log_b=None, check=lambda o: True, extra=(), last=None,
                 log_a=None, a=base):
            """`last`: what the output's last line (the one a caller keeps) must say."""
            nonlocal fails
            if os.path.exists(out):
                os.remove(out)
            args = [write("a.json", a), write("b.json", b), "--out", out, "--k", "3", *extra]
            if log_b is not None:
                args += ["--log-a", write("a.log", log if log_a is None else log_a),
                         "--log-b", write("b.log", log_b)]
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
                got = main(args)
            ok = got == want
            if ok and got != 2:
                with open(out, encoding="utf-8") as f:
                    ok = bool(check(json.load(f)))
            lines = printed.getvalue().splitlines()
            if ok and last is not None:
                ok = bool(lines) and last in lines[-1]
            fails += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {got} (want {want})"
                  + ("" if ok or not lines else f"; last line: {lines[-1]}"))

        pt = lambda o: o["per_type"]  # noqa: E731
        rk = lambda o: o["rankings"]  # noqa: E731
        case("equal", 0, check=lambda o: o["overall"]["compared"] == 2
             and pt(o)["compared"] == 5 and pt(o)["counts"]["alpha"]["n"] == 4
             and pt(o)["counts"]["beta"]["source"].startswith("report (exact"))
        case("overall off by 0.003", 1, edited("levels.turn.ndcg_any@5", 0.503),
             check=lambda o: [x["metric"] for x in o["overall"]["over"]]
             == ["levels.turn.ndcg_any@5"])
        case("per-type off by > 1/n", 1, edited("by_type.alpha.turn.ndcg_any@5", 0.6501),
             check=lambda o: len(pt(o)["over"]) == 1)
        case("per-type off by exactly 1/n", 0, edited("by_type.alpha.turn.recall_all@5", 0.5))
        case("per-type 1/n, n from logs", 0, edited("by_type.beta.turn.recall_all@5", 1.0),
             log, check=lambda o: pt(o)["counts"]["beta"]["n"] == 3
             and pt(o)["counts"]["beta"]["source"].startswith("log "))
        case("near tie", 0, log_b=with_q6([r1[0], ("c", 0.4996), r1[1], r1[3]]),
             check=lambda o: (rk(o)["identical"], rk(o)["near_tie_only"], rk(o)["different"],
                              rk(o)["list"][0]["positions"]) == (6, 1, 0, [2, 3])
             and abs(rk(o)["list"][0]["margin"] - 0.0005) < 1e-9)
        case("k-th vs (k+1)-th swap, listed", 0, log_b=with_q6(r1[:2] + [r1[3], r1[2]]),
             check=lambda o: rk(o)["different"] == 1
             and abs(rk(o)["list"][0]["margin"] - 0.3995) < 1e-9)
        case("k-th vs (k+1)-th swap, strict", 1, log_b=with_q6(r1[:2] + [r1[3], r1[2]]),
             extra=["--strict-rankings"], check=lambda o: rk(o)["different"] == 1)
        case("item absent from A (estimated)", 1, extra=["--strict-rankings"],
             log_b=with_q6([("a", 0.9), ("z", 0.2), ("b", 0.5)]),
             check=lambda o: rk(o)["list"][0]["estimated"]
             and abs(rk(o)["list"][0]["margin"] - 0.2995) < 1e-9)
        case("ranker and its batches differ: no warning", 0,
             edited("config", {"model": "m", "ranker": "kernels on cuda:0",
                               "rank_batches": {"cuda:0": 3}}),
             check=lambda o: o["warnings"] == [])
        case("other config differs: a warning", 0, edited("config", {"model": "n"}),
             check=lambda o: o["warnings"] == ["config differs: model"])
        case("question missing from B", 1, log_b=log[:6],
             last="6 questions: 6 identical, 0 near ties, 0 different, 1 in one log only")
        # every question is counted, not only the ones listed: 40 questions, 30 identical,
        # 8 near ties, 2 different; the last line (what gpu-check.sh's verdict keeps) says so
        many_a = [(f"q{i}", "alpha" if i < 20 else "beta", r1) for i in range(40)]
        near = [r1[0], ("c", 0.4996), r1[1], r1[3]]
        far = r1[:2] + [r1[3], r1[2]]
        many_b = [(q, t, near if 30 <= i < 38 else far if i >= 38 else r)
                  for i, (q, t, r) in enumerate(many_a)]
        many = edited("questions", 40)
        case("40 questions: identical, near ties, different all counted", 0, many, many_b,
             log_a=many_a, a=many,
             check=lambda o: (rk(o)["questions"], rk(o)["identical"], rk(o)["near_tie_only"],
                              rk(o)["different"], len(rk(o)["list"])) == (40, 30, 8, 2, 10),
             last="PASS; top-3 of 40 questions: 30 identical, 8 near ties, 2 different")
        case("the verdict line names a failure", 1, edited("levels.turn.ndcg_any@5", 0.503),
             last="FAIL; top-k not compared (no logs)")
        case("a per-type metric exactly at 1/n is named", 0,
             edited("by_type.alpha.turn.recall_all@5", 0.5),
             check=lambda o: pt(o)["at_tol"] == ["by_type.alpha.turn.recall_all@5"],
             last="(tol 1/n; 1 at 1/n)")
        case("malformed report", 2, "{not json")
        case("not a report", 2, "[1, 2]")
        case("non-numeric metric", 2, edited("by_type.beta.turn.ndcg_any@5", "x"))
    print(f"self-test: {'all passed' if not fails else f'{fails} FAILED'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

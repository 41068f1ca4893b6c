#!/usr/bin/env python3
"""Independent cross-check of memdex's LongMemEval retrieval metrics.

Written from the metric definitions of LongMemEval's official `eval_utils.py`
(recall_any@k, recall_all@k, ndcg_any@k, and the turn->session rule of
`evaluate_retrieval_turn2session`), NOT from memdex's Rust code, so that the two
implementations can be compared.  Standard library only (Python 3.11).

Input: memdex's per-question JSONL log, one object per line:
  {"question_id": ..., "question_type": ..., "granularity": "turn"|"session",
   "ranked": [{"id": ..., "score": ...}, ...],   # the WHOLE corpus, best first
   "gold": [ids at the same granularity]}
Blank lines and extra fields are ignored.

Definitions (rel_i = 1 if ranked[i] in gold, i 0-based):
  recall_any@k = 1 if any gold id in ranked[:k]; recall_all@k = 1 if all are
  (all() of an empty gold list is vacuously 1, as in the official code).
  DCG@k = rel_0 + sum_{i=1}^{k-1} rel_i / log2(i+1)   (positions 0 and 1 weigh 1)
  ideal = DCG@k of all corpus relevances sorted descending; ndcg = DCG/ideal or 0.
  Turn->session: map ranked and gold turn ids to sessions (strip the last
  "_suffix"); k_eff grows from k until ranked[:k_eff] holds k distinct sessions
  or the corpus ends; the three metrics are then computed with cut-off k_eff.

Usage:
  eval_crosscheck.py LOG.jsonl [--k 1,3,5,10,30,50] [--json]
  eval_crosscheck.py LOG.jsonl --compare MEMDEX.json [--tol 1e-9]
  eval_crosscheck.py --self-test
"""
from __future__ import annotations

import argparse
import json
import math
import sys

METRICS = ("recall_any", "recall_all", "ndcg_any")


def dcg(rels: list[int], k: int) -> float:
    """LongMemEval DCG: rel_0 + sum_{i>=1} rel_i / log2(i+1) over the first k."""
    rels = rels[:k]
    if not rels:
        return 0.0
    return float(rels[0]) + sum(r / math.log2(i + 1) for i, r in enumerate(rels) if i >= 1)


def metrics_at(ranked: list[str], gold: set[str], k: int) -> dict[str, float]:
    """recall_any/recall_all/ndcg_any at cut-off k; `ranked` is the whole corpus."""
    top = set(ranked[:k])
    rels = [1 if x in gold else 0 for x in ranked]
    ideal = dcg(sorted(rels, reverse=True), k)
    actual = dcg(rels, k)
    return {
        "recall_any": 1.0 if any(g in top for g in gold) else 0.0,
        "recall_all": 1.0 if all(g in top for g in gold) else 0.0,
        "ndcg_any": 0.0 if ideal == 0 else actual / ideal,
    }


def session_of(turn_id: str) -> str:
    """Session id of a turn id: everything before the LAST underscore."""
    return turn_id.rpartition("_")[0]


def effective_k(sessions: list[str], k: int) -> int:
    """Smallest k_eff >= k whose prefix holds k distinct sessions (capped at len)."""
    k_eff = k
    seen = set(sessions[:k_eff])
    while k_eff < len(sessions) and len(seen) < k:
        seen.add(sessions[k_eff])
        k_eff += 1
    return k_eff


def turn2session_at(ranked_turns: list[str], gold_turns: set[str], k: int) -> dict[str, float]:
    sessions = [session_of(t) for t in ranked_turns]
    gold_sessions = {session_of(g) for g in gold_turns}
    return metrics_at(sessions, gold_sessions, effective_k(sessions, k))


def reciprocal_rank(ranked: list[str], gold: set[str]) -> float:
    """1 / rank of the first gold id (0 if none); ids may repeat (sessions of turns)."""
    seen: set[str] = set()
    for r in ranked:
        if r in seen:
            continue
        seen.add(r)
        if r in gold:
            return 1.0 / len(seen)
    return 0.0


def question_levels(q: dict, ks: list[int]) -> dict[str, dict[str, float]]:
    """{level: {"metric@k": value}} for one logged question."""
    ranked = [r["id"] for r in q["ranked"]]
    gold = set(q["gold"])
    gran = q.get("granularity", "turn")
    levels: dict[str, dict[str, float]] = {}
    if gran == "turn":
        levels["turn"] = {}
        levels["session"] = {}
        for k in ks:
            for m, v in metrics_at(ranked, gold, k).items():
                levels["turn"][f"{m}@{k}"] = v
            for m, v in turn2session_at(ranked, gold, k).items():
                levels["session"][f"{m}@{k}"] = v
        levels["turn"]["mrr"] = reciprocal_rank(ranked, gold)
        levels["session"]["mrr"] = reciprocal_rank(
            [session_of(t) for t in ranked], {session_of(g) for g in gold}
        )
    elif gran == "session":
        levels["session"] = {}
        for k in ks:
            for m, v in metrics_at(ranked, gold, k).items():
                levels["session"][f"{m}@{k}"] = v
        levels["session"]["mrr"] = reciprocal_rank(ranked, gold)
    else:
        raise ValueError(f"question {q.get('question_id')}: unknown granularity {gran!r}")
    return levels


def average(rows: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean per level over the questions that have that level."""
    sums: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for row in rows:
        for level, vals in row.items():
            counts[level] = counts.get(level, 0) + 1
            acc = sums.setdefault(level, {})
            for key, v in vals.items():
                acc[key] = acc.get(key, 0.0) + v
    return {lv: {key: s / counts[lv] for key, s in acc.items()} for lv, acc in sums.items()}


def evaluate(path: str, ks: list[int]) -> dict:
    rows: list[tuple[str, dict]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                q = json.loads(line)
                rows.append((q.get("question_type", "unknown"), question_levels(q, ks)))
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"{path}:{lineno}: {e}")
    by_type: dict[str, list] = {}
    for qtype, lv in rows:
        by_type.setdefault(qtype, []).append(lv)
    return {
        "questions": len(rows),
        "levels": average([lv for _, lv in rows]),
        "by_type": {t: average(v) for t, v in sorted(by_type.items())},
    }


def print_table(res: dict, ks: list[int]) -> None:
    cols = [f"{m}@{k}" for m in METRICS for k in ks]
    print(f"questions: {res['questions']}")
    sections = [("ALL", res["levels"])] + list(res["by_type"].items())
    width = max(len(name) for name, _ in sections) + 10
    print(f"{'':{width}}" + "".join(f"{c:>15}" for c in cols))
    for name, levels in sections:
        for level in ("turn", "session"):
            if level in levels:
                vals = levels[level]
                print(f"{name + ' / ' + level:{width}}" + "".join(f"{vals[c]:15.4f}" for c in cols))


def compare(res: dict, memdex_path: str, tol: float) -> int:
    with open(memdex_path, encoding="utf-8") as f:
        other = json.load(f)
    mine = [("levels", None, res["levels"])] + [("by_type", t, lv) for t, lv in res["by_type"].items()]
    checked, problems = 0, []
    for section, qtype, levels in mine:
        theirs = other.get(section, {})
        if qtype is not None:
            theirs = theirs.get(qtype, {})
        for level, vals in levels.items():
            for key, v in vals.items():
                where = f"{section}{'/' + qtype if qtype else ''}/{level}/{key}"
                checked += 1
                w = theirs.get(level, {}).get(key)
                if w is None:
                    problems.append(f"MISSING in memdex: {where} (cross-check {v!r})")
                elif not abs(float(w) - v) <= tol:
                    problems.append(f"MISMATCH {where}: cross-check {v!r} memdex {w!r} diff {float(w) - v:.3e}")
    for p in problems:
        print(p)
    if problems:
        print(f"cross-check FAILED: {len(problems)} of {checked} metrics differ (tol {tol:g})")
        return 1
    print(f"cross-check OK: {checked} metrics agree within {tol:g}")
    return 0


def self_test() -> int:
    fails = 0

    def check(name: str, got: float, want: float) -> None:
        nonlocal fails
        ok = abs(got - want) <= 1e-12
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: got {got!r} want {want!r}")

    inv_l3 = 1 / math.log2(3)
    check("dcg [1] @1", dcg([1], 1), 1.0)
    check("dcg [0,1] @2 (pos 1 weighs 1)", dcg([0, 1], 2), 1.0)
    check("dcg [0,0,1] @3", dcg([0, 0, 1], 3), inv_l3)
    check("dcg [1,1,1] @3", dcg([1, 1, 1], 3), 2 + inv_l3)
    check("dcg [] @5", dcg([], 5), 0.0)
    m = metrics_at(["x", "g"], {"g"}, 2)
    check("[x,g] ndcg@2 == 1", m["ndcg_any"], 1.0)
    check("[x,g] ndcg@1 == 0", metrics_at(["x", "g"], {"g"}, 1)["ndcg_any"], 0.0)
    check("[x,x,g] ndcg@3", metrics_at(["x", "y", "g"], {"g"}, 3)["ndcg_any"], inv_l3)
    m = metrics_at(["a", "x", "b", "y"], {"a", "b"}, 2)
    check("any@2 with one of two gold", m["recall_any"], 1.0)
    check("all@2 with one of two gold", m["recall_all"], 0.0)
    check("ndcg@2 one of two gold", m["ndcg_any"], 1.0 / 2.0)
    m = metrics_at(["a", "x", "b", "y"], {"a", "b"}, 3)
    check("all@3 with both gold", m["recall_all"], 1.0)
    check("ndcg@3 [1,0,1] / [1,1,0]", m["ndcg_any"], (1 + inv_l3) / 2.0)
    m = metrics_at(["a", "x"], {"a", "zz"}, 2)  # gold "zz" absent from corpus
    check("absent gold: any", m["recall_any"], 1.0)
    check("absent gold: all", m["recall_all"], 0.0)
    check("absent gold: ndcg (ideal only counts corpus)", m["ndcg_any"], 1.0)
    m = metrics_at(["x", "y"], {"zz"}, 2)
    check("ideal 0 -> ndcg 0", m["ndcg_any"], 0.0)
    check("ideal 0 -> any 0", m["recall_any"], 0.0)
    check("session_of with underscores", float(session_of("s_1_a_7") == "s_1_a"), 1.0)
    check("k_eff A,A,A,B k=2", effective_k(["A", "A", "A", "B"], 2), 4)
    check("k_eff A,B,A k=2", effective_k(["A", "B", "A"], 2), 2)
    check("k_eff runs off corpus", effective_k(["A", "A"], 2), 2)
    check("k_eff k > len", effective_k(["A"], 5), 5)
    turns = ["A_0", "A_1", "A_2", "B_0", "B_1"]
    m = turn2session_at(turns, {"B_1"}, 2)  # k_eff=4 -> sessions A,A,A,B; gold B (2 turns)
    check("t2s any@2", m["recall_any"], 1.0)
    check("t2s ndcg@2 [0,0,0,1]/[1,1,0,0]", m["ndcg_any"], (1 / math.log2(4)) / 2.0)
    m = turn2session_at(turns, {"B_1"}, 1)  # k_eff=1 -> A only
    check("t2s any@1", m["recall_any"], 0.0)
    m = turn2session_at(["A_0", "A_1", "B_0", "C_0"], {"A_1", "C_0"}, 2)  # k_eff=3
    check("t2s all@2 (C outside k_eff)", m["recall_all"], 0.0)
    check("t2s ndcg@2 [1,1,0]/[1,1,1]", m["ndcg_any"], 2 / (2 + inv_l3))
    q = {"granularity": "turn", "ranked": [{"id": t} for t in turns], "gold": ["A_2"]}
    lv = question_levels(q, [1, 3])
    check("question turn ndcg@3 [0,0,1]", lv["turn"]["ndcg_any@3"], inv_l3)
    check("question turn mrr [0,0,1]", lv["turn"]["mrr"], 1.0 / 3.0)
    check("rr of sessions in first-appearance order", reciprocal_rank(["a", "a", "b"], {"b"}), 0.5)
    check("question session any@1", lv["session"]["recall_any@1"], 1.0)
    print("self-test:", "PASSED" if fails == 0 else f"FAILED ({fails} failures)")
    return 1 if fails else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", nargs="?", help="memdex per-question JSONL log")
    ap.add_argument("--k", default="1,3,5,10,30,50", help="comma-separated cut-offs")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--compare", metavar="MEMDEX.json", help="memdex's own --json output")
    ap.add_argument("--tol", type=float, default=1e-9)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.log:
        ap.error("LOG.jsonl is required")
    ks = [int(k) for k in args.k.split(",") if k.strip()]
    if not ks or min(ks) < 1:
        ap.error("--k needs positive integers")
    res = evaluate(args.log, ks)
    if args.compare:
        return compare(res, args.compare, args.tol)
    if args.json:
        print(json.dumps(res))
    else:
        print_table(res, ks)
    return 0


if __name__ == "__main__":
    sys.exit(main())

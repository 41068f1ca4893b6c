#!/usr/bin/env python3
"""Leave-one-conversation-out cross-validation of ranking options on a LoCoMo file.

`memdex eval` ranks every question against its own conversation's tenant and nothing crosses
tenants (BM25 statistics, expansion terms, FragRel environments and the update stage are all
per tenant), so the ranking of a conversation's questions is the same whether the file holds
one conversation or all of them (`--verify CONV` checks this by running that conversation
alone). One eval per configuration over the whole file therefore gives every fold: for each
held-out conversation, the configuration with the best objective on the other conversations
(question-weighted) is chosen, and its metrics on the held-out one are kept. The reported
figure is the question-weighted mean over the held-out conversations, never the training one.

Configurations (a JSON file, `--grid`): a list of {"name": ..., "flags": [...]} where flags are
`memdex eval` search flags added to `--preset default` (e.g. ["--update-window", "0"]), with
an optional "index_flags" list (index-time flags such as ["--key-context", "0"]; each distinct
list gets its own store under --work).

  scripts/loco-cv.py --input locomo-dev.json --grid grid.json --work /tmp/cv \
      [--memdex target/release/memdex] [--objective session:recall_any@1] [--json OUT.json]
  scripts/loco-cv.py --input locomo-dev.json --work /tmp/cv --verify conv-26
  scripts/loco-cv.py --self-test

Metrics come from each run's `--log` through scripts/eval_crosscheck.py (LongMemEval's
definitions; memdex's own report agrees within 1e-9). Standard library only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_crosscheck import average, question_levels  # noqa: E402

KS = [1, 3, 5, 10]
# the table's columns: (level, metric, label)
COLUMNS = [
    ("session", "recall_any@1", "t→s any@1"),
    ("session", "mrr", "t→s MRR"),
    ("session", "recall_all@5", "t→s all@5"),
    ("multi-hop", "recall_all@5", "multi-hop t→s all@5"),
    ("turn", "recall_any@1", "turn any@1"),
    ("turn", "recall_all@5", "turn all@5"),
]


def mean(rows: list[dict]) -> dict:
    """`average` of question levels, plus a `multi-hop` level: the session level of the
    multi-hop questions alone (LoCoMo category 1)."""
    levels = lambda rs: average([{k: v for k, v in r.items() if k != "type"} for r in rs])  # noqa: E731
    out = levels(rows)
    multi = [r for r in rows if r.get("type") == "multi-hop"]
    out["multi-hop"] = levels(multi)["session"] if multi else {"recall_all@5": float("nan")}
    return out


def conversation(qid: str) -> str:
    """`conv-26:q1` → `conv-26` (memdex eval's LoCoMo question ids)."""
    return qid.split(":", 1)[0]


def run_eval(args, cfg: dict) -> str:
    """The log of one configuration's eval (reused when it exists)."""
    key = [os.path.abspath(args.input), cfg]
    tag = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    log = os.path.join(args.work, f"{cfg['name']}-{tag}.log.jsonl")
    if os.path.exists(log):
        return log
    index = cfg.get("index_flags", [])
    # one store per input file and index flags: a conversation run alone gets its own
    store_tag = hashlib.sha256(json.dumps([os.path.abspath(args.input), index]).encode()).hexdigest()[:12]
    store = os.path.join(args.work, f"store-{store_tag}")
    cmd = [args.memdex, "eval", "--input", args.input, "--format", "locomo", "--preset",
           "default", "--store", store, "--json", "--log", log + ".part", *index, *cfg["flags"]]
    print("+", " ".join(cmd), file=sys.stderr)
    report = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    with open(log[: -len(".log.jsonl")] + ".report.json", "w", encoding="utf-8") as f:
        f.write(report)
    os.replace(log + ".part", log)
    return log


def per_conversation(log: str) -> dict[str, list[dict]]:
    """{conversation: [question levels]} from an eval log."""
    out: dict[str, list[dict]] = {}
    with open(log, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                levels = {**question_levels(q, KS), "type": q.get("question_type")}
                out.setdefault(conversation(q["question_id"]), []).append(levels)
    return out


def objective(rows: list[dict], spec: str) -> float:
    level, metric = spec.split(":")
    return mean(rows)[level][metric] if rows else 0.0


def cross_validate(per_cfg: dict[str, dict[str, list]], spec: str) -> dict:
    """Each fold's choice (best objective on the other conversations) and the held-out mean."""
    convs = sorted(next(iter(per_cfg.values())))
    folds, held_out = [], []
    for c in convs:
        train = {n: [r for k, rows in pc.items() if k != c for r in rows] for n, pc in per_cfg.items()}
        # ties go to the configuration listed first (the grid's order)
        best = max(per_cfg, key=lambda n: (objective(train[n], spec), -list(per_cfg).index(n)))
        folds.append({"held_out": c, "chosen": best, "train": objective(train[best], spec),
                      "test": objective(per_cfg[best][c], spec), "questions": len(per_cfg[best][c])})
        held_out.extend(per_cfg[best][c])
    return {"folds": folds, "held_out": mean(held_out), "questions": len(held_out)}


def row(levels: dict) -> str:
    return " | ".join(f"{levels[lv][m]:.3f}" for lv, m, _ in COLUMNS)


def print_report(per_cfg: dict, cv: dict, spec: str) -> None:
    print("| configuration | " + " | ".join(label for _, _, label in COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for name, pc in per_cfg.items():
        print(f"| {name} (all conversations, not cross-validated) | "
              f"{row(mean([r for rows in pc.values() for r in rows]))} |")
    print(f"| **leave-one-conversation-out, chosen by {spec}** | {row(cv['held_out'])} |")
    print()
    for f in cv["folds"]:
        print(f"held out {f['held_out']} ({f['questions']} questions): chose {f['chosen']} "
              f"({spec} {f['train']:.3f} on the others, {f['test']:.3f} held out)")


def verify(args, conv: str) -> int:
    """Runs `conv` alone and compares its rankings with the whole file's default run."""
    data = json.load(open(args.input, encoding="utf-8"))
    one = [c for c in data if c.get("sample_id") == conv]
    if not one:
        raise SystemExit(f"{args.input}: no conversation with sample_id {conv!r}")
    path = os.path.join(args.work, f"only-{conv}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(one, f)
    whole = run_eval(args, {"name": "default", "flags": []})
    alone = run_eval(argparse.Namespace(**{**vars(args), "input": path}),
                     {"name": f"default-only-{conv}", "flags": []})
    rank = lambda log: {q["question_id"]: [r["id"] for r in q["ranked"]]  # noqa: E731
                        for q in map(json.loads, open(log, encoding="utf-8")) if q}
    a = {k: v for k, v in rank(whole).items() if conversation(k) == conv}
    b = rank(alone)
    same = sum(a[k] == b.get(k) for k in a)
    print(f"{conv}: {same} of {len(a)} questions ranked identically alone and in the whole file")
    return 0 if same == len(a) == len(b) else 1


def self_test() -> int:
    """Two configurations on three synthetic conversations: the fold choice and the mean."""
    def q(conv, n, gold_first):
        ranked = [{"id": "s_1_1"}, {"id": "s_2_1"}] if gold_first else [{"id": "s_2_1"}, {"id": "s_1_1"}]
        return {**question_levels({"question_id": f"{conv}:q{n}", "ranked": ranked,
                                   "gold": ["s_1_1"], "granularity": "turn"}, KS), "type": "x"}
    per_cfg = {
        # a: right on c1 and c2, wrong on c3; b: right only on c3
        "a": {"c1": [q("c1", 1, True)], "c2": [q("c2", 1, True)], "c3": [q("c3", 1, False)]},
        "b": {"c1": [q("c1", 1, False)], "c2": [q("c2", 1, False)], "c3": [q("c3", 1, True)]},
    }
    cv = cross_validate(per_cfg, "turn:recall_any@1")
    chosen = [f["chosen"] for f in cv["folds"]]
    ok = chosen == ["a", "a", "a"] and abs(cv["held_out"]["turn"]["recall_any@1"] - 2 / 3) < 1e-12
    print("self-test", "OK" if ok else f"FAILED: {chosen} {cv['held_out']['turn']}")
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input")
    p.add_argument("--grid")
    p.add_argument("--work", default="/tmp/memdex-loco-cv")
    p.add_argument("--memdex", default="target/release/memdex")
    p.add_argument("--objective", default="session:recall_any@1")
    p.add_argument("--json")
    p.add_argument("--verify")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args()
    if args.self_test:
        return self_test()
    if not args.input:
        p.error("--input is required")
    os.makedirs(args.work, exist_ok=True)
    if args.verify:
        return verify(args, args.verify)
    if not args.grid:
        p.error("--grid is required")
    grid = json.load(open(args.grid, encoding="utf-8"))
    names = [c["name"] for c in grid]
    if len(set(names)) != len(names):
        raise SystemExit(f"{args.grid}: configuration names must be unique")
    per_cfg = {c["name"]: per_conversation(run_eval(args, c)) for c in grid}
    cv = cross_validate(per_cfg, args.objective)
    print_report(per_cfg, cv, args.objective)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"objective": args.objective, "grid": grid, **cv}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

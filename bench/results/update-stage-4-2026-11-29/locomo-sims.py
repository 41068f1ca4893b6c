"""Two re-rankings of memdex's LoCoMo dev ranking, simulated on its eval log, each with its
weight chosen leave-one-conversation-out (issue 57, item 6):

  speaker   turns spoken by the one speaker the question names get +d (score units)
  session   a session scores its best turn + lam * its next (k2 - 1) turns; turns follow
            their session's order

The log's order already holds the reordering stages (time, update), so each question's
scores are first made consistent with it (the i-th best score goes to the i-th ranked
turn); d = 0 / lam = 0 then gives the logged ranking exactly.

usage: python3 locomo-sims.py LOCOMO_DEV.json EVAL_LOG.jsonl
"""
import collections
import json
import re
import sys

data = {c["sample_id"]: c for c in json.load(open(sys.argv[1]))}
log = [json.loads(line) for line in open(sys.argv[2])]
questions = {f"{cid}:q{i + 1}": q for cid, c in data.items() for i, q in enumerate(c["qa"])}


def session(turn_id):
    return turn_id.rsplit("_", 1)[0]


def speaker(cid, turn_id):
    _, s, t = turn_id.split("_")
    return data[cid]["conversation"][f"session_{s}"][int(t)]["speaker"]


def prepared():
    out = []
    for x in log:
        cid = x["question_id"].split(":")[0]
        q = questions[x["question_id"]]["question"]
        conv = data[cid]["conversation"]
        named = [n for n in (conv["speaker_a"], conv["speaker_b"]) if re.search(r"\b%s\b" % re.escape(n), q, re.I)]
        scores = sorted((r["score"] for r in x["ranked"]), reverse=True)
        turns = [(r["id"], s, len(named) == 1 and speaker(cid, r["id"]) == named[0])
                 for r, s in zip(x["ranked"], scores)]
        out.append((cid, turns, set(x["gold"])))
    return out


def score(sessions_in_order, turns_in_order, gold, m):
    gs = {session(g) for g in gold}
    m["t->s any@1"] += sessions_in_order[0] in gs
    m["t->s MRR"] += next((1 / (i + 1) for i, s in enumerate(sessions_in_order) if s in gs), 0)
    m["t->s all@5"] += gs <= set(sessions_in_order[:5])
    m["turn any@1"] += turns_in_order[0] in gold
    m["turn all@5"] += gold <= set(turns_in_order[:5])
    m["n"] += 1


def sessions_of(turns):
    seen = []
    for t in turns:
        if session(t) not in seen:
            seen.append(session(t))
    return seen


def speaker_metrics(items, d):
    m = collections.Counter()
    for _, turns, gold in items:
        order = [t[0] for t in sorted(turns, key=lambda t: -(t[1] + d * t[2]))]
        score(sessions_of(order), order, gold, m)
    return {k: round(v / m["n"], 4) for k, v in m.items() if k != "n"}


def session_metrics(items, lam, k2=3):
    m = collections.Counter()
    for _, turns, gold in items:
        by = collections.defaultdict(list)
        for t, s, _ in turns:
            by[session(t)].append(s)
        total = {s: v[0] + lam * sum(v[1:k2]) for s, v in by.items()}
        seen = sorted(total, key=lambda s: -total[s])
        rank = {s: i for i, s in enumerate(seen)}
        order = [t[0] for t in sorted(turns, key=lambda t: (rank[session(t[0])], -t[1]))]
        score(seen, order, gold, m)
    return {k: round(v / m["n"], 4) for k, v in m.items() if k != "n"}


def cross_validated(items, metrics, grid):
    total, n = collections.Counter(), 0
    for held in sorted(data):
        train = [p for p in items if p[0] != held]
        test = [p for p in items if p[0] == held]
        best = max(grid, key=lambda w: (metrics(train, w)["t->s any@1"], -w))
        got = metrics(test, best)
        print(f"  held out {held} ({len(test)} q): chose {best}, t->s any@1 {got['t->s any@1']}")
        for k, v in got.items():
            total[k] += v * len(test)
        n += len(test)
    return {k: round(v / n, 4) for k, v in total.items()}


items = prepared()
for name, metrics, grid in (
    ("speaker prior d", speaker_metrics, [0, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2]),
    ("session aggregation lam", session_metrics, [0, 0.02, 0.05, 0.1, 0.2, 0.3]),
):
    print(f"## {name}")
    for w in grid:
        print(f"  {w}: {metrics(items, w)}")
    print(f"  leave-one-conversation-out: {cross_validated(items, metrics, grid)}")

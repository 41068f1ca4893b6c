#!/usr/bin/env python3
"""Gold ranks and the asking rule on the LongMemEval fixtures (bench helper, issue 57 phase 1).

usage: lme_gold.py OUTDIR MEMDEX_BIN DATA_DIR
Reads OUTDIR/lme-{file}-{variant}.log.jsonl (memdex eval --log) and prints, per question, the
rank of each gold (has_answer) turn and of each answer session (turn -> session order), then
counts the user turns of s-haystack-dev.json that the "mostly asks" rule gives importance 1,
with a port of memdex_score::signals::asks_only checked against `memdex search --explain`.
"""
import json, os, re, subprocess, sys

OUT, BIN, DATA = sys.argv[1:4]
FILES = ["oracle-sample", "s-haystack-dev"]
VARIANTS = ["default", "importance-off"]


def session_of(turn_id):
    return turn_id.rsplit("_", 1)[0]


def gold_ranks():
    rows = []
    for f in FILES:
        qs = {q["question_id"]: q for q in json.load(open(f"{DATA}/{f}.json"))}
        for v in VARIANTS:
            for line in open(f"{OUT}/lme-{f}-{v}.log.jsonl"):
                r = json.loads(line)
                ids = [h["id"] for h in r["ranked"]]
                sessions = list(dict.fromkeys(session_of(i) for i in ids))
                turn = {g: ids.index(g) + 1 if g in ids else None for g in r["gold"]}
                q = qs[r["question_id"]]
                sess = {s: sessions.index(s) + 1 if s in sessions else None
                        for s in q["answer_session_ids"]}
                rows.append((f, v, r["question_id"], turn, sess))
    print("| file | variant | question | gold turn: rank | answer session: rank (turn -> session) |")
    print("|---|---|---|---|---|")
    for f, v, qid, turn, sess in rows:
        t = ", ".join(f"`{k}` {x}" for k, x in turn.items())
        s = ", ".join(f"`{k}` {x}" for k, x in sess.items())
        print(f"| {f} | {v} | {qid} | {t} | {s} |")
    qids = {(f, qid) for f, _, qid, _, _ in rows}
    for f in FILES:
        for q in json.load(open(f"{DATA}/{f}.json")):
            if (f, q["question_id"]) not in qids:
                print(f"({f}: {q['question_id']} is not in the eval log: memdex eval skips it)")


def asks_only(text):
    """Port of memdex_score::signals::asks_only (a458848)."""
    asked = total = 0
    for line in text.splitlines():
        who, sep, rest = line.partition(": ")
        if sep and who.lower() == "assistant":
            continue
        body = rest if sep and len(who.encode()) <= 40 and not re.search(r"[.?!]", who) else line
        for s in re.findall(r"[^.!?]*[.!?]|[^.!?]+$", body):
            words = len(s.split())
            total += words
            if s.rstrip().endswith("?"):
                asked += words
    return 2 * asked > total


def asking_rule():
    q = json.load(open(f"{DATA}/s-haystack-dev.json"))[0]
    store = "/tmp/lme-gold-store"
    env = dict(os.environ)
    if not os.path.exists(store):
        subprocess.run([BIN, "eval", "--input", f"{DATA}/s-haystack-dev.json", "--format",
                        "longmemeval", "--preset", "default", "--device", "cpu", "--store", store,
                        "--json"], env=env, check=True, capture_output=True)
    hits = json.loads(subprocess.run(
        [BIN, "search", "--store", store, "--tenant", q["question_id"], "--query", q["question"],
         "-k", "1000", "--explain", "--json"], env=env, check=True, capture_output=True,
        text=True).stdout)
    gold = {(sid, i) for sid, s in zip(q["haystack_session_ids"], q["haystack_sessions"])
            for i, t in enumerate(s) if t.get("has_answer")}
    asks = [h for h in hits if asks_only(h["value"])]
    # importance 1 <=> the signals stage leaves the score unchanged (weight 0.3 x log10(1) = 0)
    imp1 = [h for h in hits if abs(h["explain"]["signals"] - h["explain"]["fragrel"]) < 1e-6]
    print(f"s-haystack-dev: {len(hits)} items (user turns); mostly asking (port of asks_only): "
          f"{len(asks)}; importance 1 by --explain (asking or heuristic 1): {len(imp1)}; "
          f"asking items not at importance 1: {len([h for h in asks if h not in imp1])}")
    for h in hits:
        if (h["session_id"], h["turn"]) in gold:
            print(f"  gold turn {h['session_id']} #{h['turn']}: mostly asking {asks_only(h['value'])}, "
                  f"importance 1 {h in imp1}, rank {h['rank']}: {h['value'][:90]}...")


gold_ranks()
asking_rule()

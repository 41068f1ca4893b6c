"""The two LongMemEval fixtures' gold turn ranks with idf-weighted MaxSim fused in (as
locomo-late.py's maxsim-idf over the top 50); a smoke test: one question per file.

usage: MEMDEX_MODEL=models/all-MiniLM-L6-v2 python3 lme-late.py FIXTURE.json EVAL_LOG.jsonl W[,W...]"""
import json
import sys

from late import fused_order, maxsim_idf, unit_tokens

fixture = json.load(open(sys.argv[1]))
fixture = {q["question_id"]: q for q in (fixture if isinstance(fixture, list) else [fixture])}


def text(q, item_id):
    sid, turn = item_id.rsplit("_", 1)
    return q["haystack_sessions"][q["haystack_session_ids"].index(sid)][int(turn)]["content"]


for line in open(sys.argv[2]):
    x = json.loads(line)
    q = fixture[x["question_id"]]
    top = x["ranked"][:50]
    sims = maxsim_idf(unit_tokens(q["question"]), [unit_tokens(text(q, r["id"])) for r in top])
    for weight in map(float, sys.argv[3].split(",")):
        order = fused_order([r["score"] for r in top], sims, weight)
        ranks = sorted(1 + order.index(i) for i, r in enumerate(top) if r["id"] in x["gold"])
        print(f"{x['question_id']} ({q['question_type']}) w={weight}: gold turn ranks {ranks}")

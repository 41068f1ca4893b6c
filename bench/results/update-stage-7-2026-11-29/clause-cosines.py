#!/usr/bin/env python3
"""Clause-level MiniLM cosines of the update and control scenarios of one half (an offline
experiment, section 4 of this README): for each scenario, the question (in the first person)
against every clause of the two key sessions' user turns, and the best clause of each against
the other's. Prints the medians per kind, then how many of the updates the stage misses (in
RANKS, a `setrun.py` output) and how many controls clear a grid of bars on those cosines.

usage: clause-cosines.py tuning|checking RANKS.json   (from the repository root, after
       scripts/fetch-model.sh and a release build)
"""
import glob, json, os, re, subprocess, sys, tempfile
import numpy as np

FIX = "crates/memdex-testkit/fixtures/"
HALF = {"tuning": "T", "checking": "C"}[sys.argv[1]]


def fnv(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def first_person(q):
    q = re.sub(r"\bthe user's\b", "my", q, flags=re.I)
    verb = {"does": "do", "did": "did", "is": "am", "has": "have", "was": "was"}
    return re.sub(r"\b(does|did|is|has|was) the user\b",
                  lambda m: verb[m.group(1).lower()] + " I", q, flags=re.I)


def clauses(text):
    out = []
    for s in re.split(r"(?<=[.!?])\s+|\n", text):
        # a question's clauses before the one that asks
        parts = re.split(r",| - ", s)[:-1] if s.strip().endswith("?") else re.split(r",| - |;", s)
        out += [p.strip() for p in parts if len(p.split()) >= 3]
    return out


def scenarios():
    for f in sorted(glob.glob(FIX + "*.json")):
        d = json.load(open(f))
        for sc in d["scenarios"]:
            if ("T" if fnv(sc["id"]) % 2 == 0 else "C") != HALF:
                continue
            ss = {s["session_id"]: s for s in sc["sessions"]}
            user = lambda s: " ".join(t["content"] for t in ss[s]["turns"] if t["role"] == "user")
            if "old_session" in sc:
                a, b, q, kind = sc["old_session"], sc["new_session"], sc["present"], "update"
            elif sc.get("tier") == "stage":
                a, b, q, kind = sc["answer_session"], sc["related_session"], sc["question"], sc["kind"]
            else:
                continue
            yield dict(id=sc["id"], kind=kind, q=first_person(q), A=clauses(user(a)), B=clauses(user(b)))


def embed(texts):
    d = tempfile.mkdtemp()
    with open(d + "/in.jsonl", "w") as f:
        f.write("".join(json.dumps({"text": t}) + "\n" for t in texts))
    env = dict(os.environ, MEMDEX_MODEL=os.path.abspath("models/all-MiniLM-L6-v2"))
    subprocess.run(["target/release/memdex", "embed", "--input", d + "/in.jsonl", "--output",
                    d + "/out.jsonl"], env=env, check=True, capture_output=True)
    out = {}
    for line in open(d + "/out.jsonl"):
        x = json.loads(line)
        v = np.array(x["embedding"], dtype=np.float32)
        out[x["text"]] = v / np.linalg.norm(v)
    return out


def main():
    rows = list(scenarios())
    E = embed(sorted({t for r in rows for t in [r["q"]] + r["A"] + r["B"]}))
    for r in rows:
        qa = [float(E[r["q"]] @ E[c]) for c in r["A"]] or [0.0]
        qb = [float(E[r["q"]] @ E[c]) for c in r["B"]] or [0.0]
        pair = float(E[r["A"][int(np.argmax(qa))]] @ E[r["B"][int(np.argmax(qb))]]) if r["A"] and r["B"] else 0.0
        r.update(old=max(qa), new=max(qb), pair=pair)
    print("medians: kind, n, question·older clause, question·newer clause, older·newer clause")
    for kind in ["update"] + sorted({r["kind"] for r in rows} - {"update"}):
        rs = [r for r in rows if r["kind"] == kind]
        med = lambda k: float(np.median([r[k] for r in rs]))
        print("%-22s n=%3d  %.2f  %.2f  %.2f" % (kind, len(rs), med("old"), med("new"), med("pair")))
    ranks = json.load(open(sys.argv[2]))
    missed = {x["id"] for x in ranks if "present_new_old" in x and x["present_new_old"]["on"][0] != 1}
    U = [r for r in rows if r["kind"] == "update" and r["id"] in missed]
    C = [r for r in rows if r["kind"] != "update"]
    print("\nupdates the stage misses: %d; controls: %d" % (len(U), len(C)))
    for t1 in (0.35, 0.40, 0.45, 0.50):
        for t2 in (0.3, 0.4, 0.5):
            ok = lambda r: r["old"] >= t1 and r["new"] >= t1 and r["pair"] >= t2
            print("both clauses·question >= %.2f, clause·clause >= %.1f: %2d missed updates, %3d controls"
                  % (t1, t2, sum(map(ok, U)), sum(map(ok, C))))


main()

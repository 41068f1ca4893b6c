#!/usr/bin/env python3
"""Which of the update stage's tests made each move (section 6 of this README): for every
scenario whose rank-1 session differs with the stage on and off (in RANKS, a `setrun.py`
output of the same build), the pair is indexed in a store of its own, the question is
searched with `--explain`, and the moved rank-1 hit's evidence is classed: a cue of change
(`moved`, `swapped`, …), a verb of ending with the older statement's word as its object
(`left`, `quit`, …), or the value test (`same attribute, new value`). Counts are by half:
updates gained (the newer session brought to rank 1) and controls lost (the answer moved off
rank 1, tier `stage`).

usage: links-by-test.py BINARY RANKS.json [RANKS.json ...]   (from the repository root)
"""
import collections, json, os, subprocess, sys, tempfile

FIX = "crates/memdex-testkit/fixtures/"
ENDINGS = {"left", "quit", "stopped", "gave up", "given up", "dropped", "ditched", "packed in"}
FILES = {"public": ("knowledge-updates", "update-controls"), "everyday": ("updates-everyday", "controls-everyday")}


def files(set_name):
    stem = set_name.split()[0].replace("-", "")
    return FILES.get(stem, ("updates-" + stem, "controls-" + stem))


def index(binary, names, env):
    d = tempfile.mkdtemp()
    lines = []
    for prefix, name in zip(("u", "c"), names):
        for sc in json.load(open(FIX + name + ".json"))["scenarios"]:
            for s in sc["sessions"]:
                lines.append(json.dumps(dict(s, tenant=prefix + "-" + sc["id"])))
    open(d + "/a.jsonl", "w").write("\n".join(lines) + "\n")
    subprocess.run([binary, "index", "--input", d + "/a.jsonl", "--store", d + "/st"], env=env,
                   check=True, capture_output=True)
    return d + "/st"


def evidence(binary, store, tenant, question, env):
    out = subprocess.run([binary, "search", "--store", store, "--tenant", tenant, "--query",
                          question, "--json", "--explain"], env=env, check=True,
                         capture_output=True, text=True).stdout
    top = json.loads(out)[0]["explain"].get("update")
    if not top:
        return "no move at rank 1"
    cue = top["cue"]
    return "value test" if cue == "same attribute, new value" else (
        "verb of ending" if cue in ENDINGS else "cue of change")


def main():
    binary = sys.argv[1]
    env = dict(os.environ, MEMDEX_MODEL=os.path.abspath("models/all-MiniLM-L6-v2"))
    rows = [r for f in sys.argv[2:] for r in json.load(open(f))]
    by_set = collections.defaultdict(list)
    for r in rows:
        key = "present_new_old" if "present_new_old" in r else "answer_related"
        if r[key]["on"][0] != r[key]["off"][0]:
            by_set[r["set"].split()[0]].append(r)
    counts, kinds = collections.Counter(), collections.Counter()
    for set_name, changed in sorted(by_set.items()):
        names = files(set_name)
        store = index(binary, names, env)
        scenarios = {}
        for name in names:
            for sc in json.load(open(FIX + name + ".json"))["scenarios"]:
                scenarios[sc["id"]] = sc
        for r in changed:
            sc = scenarios[r["id"]]
            if "present_new_old" in r:
                gained = r["present_new_old"]["on"][0] == 1
                what = "updates gained" if gained else "updates lost"
                ev = evidence(binary, store, "u-" + r["id"], sc["present"], env)
            else:
                rep = sc["kind"] == "repeated-fact"
                kept = lambda a: a[0] == 1 or (rep and a[1] == 1)
                if sc.get("tier") != "stage" or kept(r["answer_related"]["on"]) == kept(r["answer_related"]["off"]):
                    continue
                what = "controls lost" if not kept(r["answer_related"]["on"]) else "controls gained"
                ev = evidence(binary, store, "c-" + r["id"], sc["question"], env)
            counts[(r["half"], what, ev)] += 1
            if what == "controls lost":
                kinds[(r["half"], ev, sc["kind"])] += 1
    for (half, what, ev), n in sorted(counts.items()):
        print("%-9s %-16s %-18s %3d" % (half, what, ev, n))
    print("\ncontrols lost, by kind")
    for (half, ev, kind), n in sorted(kinds.items()):
        print("%-9s %-18s %-22s %3d" % (half, ev, kind, n))


main()

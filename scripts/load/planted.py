#!/usr/bin/env python3
"""The planted facts of the load tests' histories: every tenant `tenant-T` (T = 0 … 99) holds
one session per thing, `planted-THING`, whose one round states a name only that tenant and
that thing have ("I named my kayak Delonova."). Asked "what did I name my kayak?", a search
of that tenant has one right first hit: that session, its value holding the name.

The same rule is written out in scripts/load/common.lua (wrk's checks) and in
crates/memdex-cli/src/cmd/bench_load.rs (`memdex bench load --planted N`); `--self-test`
checks that the three agree and that the names are unique.

  planted.py --self-test
"""
import re
import sys

THINGS = ["iguana", "kayak", "telescope", "harmonica"]
# two syllables: 100 names per thing, one per tenant (tenant t and thing j: SYL_A[(t + j) % 10],
# SYL_B[(t // 10 + 3 j) % 10])
SYL_A = ["Bal", "Cor", "Dun", "Fen", "Gal", "Hol", "Jas", "Kel", "Lom", "Mir"]
SYL_B = ["abar", "edric", "imon", "ova", "ulf", "enna", "orin", "astel", "ibeth", "othar"]
DATE = "2023-01-01T08:00:00Z"


def name(t, j):
    return SYL_A[(t + j) % 10] + SYL_B[(t // 10 + 3 * j) % 10]


def question(j):
    return f"what did I name my {THINGS[j]}?"


def sessions(t):
    """Tenant t's planted sessions (the JSONL / HTTP session shape, without the tenant)."""
    return [{"session_id": f"planted-{thing}", "date": DATE,
             "turns": [{"role": "user", "content": f"I named my {thing} {name(t, j)}."},
                       {"role": "assistant", "content": "Noted."}]}
            for j, thing in enumerate(THINGS)]


def self_test():
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad = []
    names = {(t, j): name(t, j) for t in range(100) for j in range(len(THINGS))}
    for j in range(len(THINGS)):
        per_thing = [names[(t, j)] for t in range(100)]
        if len(set(per_thing)) != 100:
            bad.append(f"thing {j}: names not unique over tenants")
    for t in range(100):
        if len({names[(t, j)] for j in range(len(THINGS))}) != len(THINGS):
            bad.append(f"tenant {t}: names not unique over things")

    def strings(text, label):
        # the assignment (`KEY = {...}` in Lua, `const KEY: [&str; N] = [...]` in Rust)
        m = re.search(r"\b" + label + r"\b[^=\n]*=\s*[{\[]([^}\]]*)[}\]]", text)
        return re.findall(r'"([^"]*)"', m.group(1)) if m else None

    lua = open(os.path.join(root, "scripts/load/common.lua")).read()
    rust = open(os.path.join(root, "crates/memdex-cli/src/cmd/bench_load.rs")).read()
    for label, want in (("THINGS", THINGS), ("SYL_A", SYL_A), ("SYL_B", SYL_B)):
        for lang, text, key in (("common.lua", lua, f"PLANT_{label}"),
                                ("bench_load.rs", rust, f"PLANT_{label}")):
            got = strings(text, key)
            if got != want:
                bad.append(f"{lang}: {key} is {got}, planted.py has {want}")
    for lang, text in (("common.lua", lua), ("bench_load.rs", rust)):
        if "what did I name my " not in text or "planted-" not in text:
            bad.append(f"{lang}: no planted question or session id")
    for b in bad:
        print("FAIL", b)
    print("planted self-test:", "FAILED" if bad else "ok")
    return not bad


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(0 if self_test() else 1)
    sys.exit(__doc__)

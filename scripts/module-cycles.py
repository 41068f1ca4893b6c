#!/usr/bin/env python3
"""Module cycles inside each crate: an edge a -> b when module a names `crate::b…` (or
`super::b…`) outside comments and tests. Prints each cycle (a strongly connected component of
two or more modules) and exits 1 when there is one (the workspace has none; `--allow FILE`
tolerates the cycles it lists, one `crate: module module …` per line, and fails when a listed
one is gone, for a branch that must land before its cycles are broken).

usage: scripts/module-cycles.py [--allow scripts/module-cycles.allow] [ROOT ...]
       (ROOT: a folder whose subfolders with a src/ are crates; default crates/ and the root)
       scripts/module-cycles.py --self-test
"""
import os
import re
import sys


def modules(src):
    mods = {}
    for dp, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, src)[:-3].replace(os.sep, "/")
            if rel.endswith("/mod"):
                rel = rel[:-4]
            if rel in ("lib", "main") or rel.startswith("bin/"):
                continue
            with open(path, encoding="utf-8") as fh:
                mods[rel] = fh.read()
    return mods


def strip(text):
    text = re.sub(r"#\[cfg\(test\)\]\s*mod \w+\s*\{.*", "", text, flags=re.S)
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))


def names(text, prefix):
    """First path segments after `prefix::`, including `prefix::{a, b::c}` groups."""
    out = set(re.findall(prefix + r"::([a-z_][a-z_0-9]*)", text))
    for group in re.findall(prefix + r"::\{([^}]*)\}", text):
        for item in group.split(","):
            m = re.match(r"\s*([a-z_][a-z_0-9]*)", item)
            if m:
                out.add(m.group(1))
    return out


def graph(mods):
    g = {m: set() for m in mods}
    for m, text in mods.items():
        text = strip(text)
        parent = m.rsplit("/", 1)[0] if "/" in m else ""
        targets = set(names(text, "crate"))
        targets |= {f"{parent}/{n}" if parent else n for n in names(text, "super")}
        for t in targets:
            # crate::a::b names module a/b when it exists, else a
            for cand in (t, t.split("/")[0]):
                if cand in mods and cand != m:
                    g[m].add(cand)
                    break
        for t in re.findall(r"crate::([a-z_0-9]+)::([a-z_0-9]+)", text):
            cand = "/".join(t)
            if cand in mods and cand != m:
                g[m].add(cand)
    return g


def cycles(g):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def crate_dirs(roots):
    for root in roots:
        for name in sorted(os.listdir(root)):
            src = os.path.join(root, name, "src")
            if os.path.isdir(src):
                yield name, src


def self_test():
    g = graph({"a": "use crate::b::X;", "b": "use crate::{a, c};", "c": "// crate::a", "d": "use super::e;", "e": ""})
    assert cycles(g) == [["a", "b"]], cycles(g)
    g = graph({"a": "use crate::b;\n#[cfg(test)]\nmod tests { use crate::a; }", "b": "fn f() {}"})
    assert cycles(g) == [], cycles(g)
    print("module-cycles self-test OK")


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    allow_path, roots = None, []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--allow":
            allow_path = args.pop(0)
        else:
            roots.append(a)
    here = os.path.dirname(os.path.abspath(__file__))
    # the workspace's crates: crates/* and top-level ones with a src/ (kernels)
    roots = roots or [os.path.join(here, "..", "crates"), os.path.join(here, "..")]
    allowed = set()
    if allow_path:
        with open(allow_path, encoding="utf-8") as fh:
            allowed = {l.strip() for l in fh if l.strip() and not l.startswith("#")}
    found = set()
    for crate, src in crate_dirs(roots):
        for c in cycles(graph(modules(src))):
            found.add(f"{crate}: {' '.join(c)}")
    for line in sorted(found):
        print(("allowed  " if line in allowed else "NEW      ") + line)
    new, gone = found - allowed, allowed - found
    for line in sorted(gone):
        print("GONE     " + line + "  (remove it from the allow file)")
    print(f"{len(found)} module cycles ({len(new)} new, {len(gone)} gone)")
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv) or 0)

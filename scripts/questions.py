#!/usr/bin/env python3
"""Prints `anchor-date<TAB>label<TAB>question` for every question of a LoCoMo or LongMemEval
file (anchor: the question date, else the last session date), for the query time parser check."""
import json
import re
import sys
from datetime import datetime

path = sys.argv[1]
data = json.load(open(path))
for inst in data:
    if "qa" in inst:  # LoCoMo
        conv = inst["conversation"]
        dates = [v for k, v in conv.items() if re.fullmatch(r"session_\d+_date_time", k)]
        last = max(datetime.strptime(d, "%I:%M %p on %d %B, %Y") for d in dates)
        for q in inst["qa"]:
            print(f"{last:%Y-%m-%d}\tcat{q['category']}\t{q['question']}")
    else:  # LongMemEval
        d = datetime.strptime(inst["question_date"].split(" (")[0], "%Y/%m/%d")
        print(f"{d:%Y-%m-%d}\t{inst['question_type']}\t{inst['question']}")

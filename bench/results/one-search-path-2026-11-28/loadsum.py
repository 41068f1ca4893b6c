#!/usr/bin/env python3
# medians of load.sh's runs: python3 loadsum.py DIR...
import json,sys,glob,statistics as st
def med(x): return round(st.median(x),1) if x else None
for d in sys.argv[1:]:
  print('==',d)
  for side in ['before','after']:
    for kind in ['closed','open']:
        rs=[]
        for f in sorted(glob.glob(f'{d}/{kind}-{side}-*.json')):
            try: rs.append(json.load(open(f)))
            except Exception: pass
        if not rs: continue
        ok=[r['ok_per_s'] for r in rs]; p99=[r['latency_ms']['p99'] for r in rs]; p50=[r['latency_ms']['p50'] for r in rs]
        err=sum(sum(r['errors'].values()) for r in rs); pl=[(r.get('planted_ok'),r['ok']) for r in rs]
        print(f"{side:6} {kind:6} n={len(rs)} ok/s={[round(x) for x in ok]} med {med(ok)} p50 med {med(p50)} p99={p99} med {med(p99)} errors={err} late={[r.get('late_sends') for r in rs]}")

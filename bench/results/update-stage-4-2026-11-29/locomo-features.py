# locomo-features.py LOCOMO_DEV.json EVAL_LOG.jsonl STORE OUT.json (from the repository root, after
# `memdex eval ... --store STORE --log EVAL_LOG.jsonl`): every question's top 50 by `memdex search
# --explain` on the eval's store (the same ranking: 995 of 997 top 5s equal the log's), with each
# hit's stage scores, for locomo-ltr.py
import json,subprocess,os,sys
from concurrent.futures import ThreadPoolExecutor
D=json.load(open(sys.argv[1]))
env=dict(os.environ,MEMDEX_MODEL=os.path.abspath('models/all-MiniLM-L6-v2'))
L=[json.loads(l) for l in open(sys.argv[2])]
qs={}
for c in D:
    for i,q in enumerate(c['qa']): qs[f"{c['sample_id']}:q{i+1}"]=(c['sample_id'],q['question'])
def one(x):
    cid,q=qs[x['question_id']]
    out=subprocess.run(['target/release/memdex','search','--store',sys.argv[3],'--tenant',cid,'--query',q,'--explain','--json','-k','50'],capture_output=True,text=True,env=env).stdout
    hits=json.loads(out)
    ids=['%s_%d'%(h['session_id'],h['turn']) for h in hits]
    return {'qid':x['question_id'],'gold':x['gold'],'log_top':[r['id'] for r in x['ranked'][:5]],'ids':ids,'ex':[h['explain'] for h in hits],'score':[h['score'] for h in hits]}
with ThreadPoolExecutor(2) as ex:
    res=list(ex.map(one,L))
json.dump(res,open(sys.argv[4],'w'))
print(len(res), sum(r['ids'][:5]==r['log_top'] for r in res))

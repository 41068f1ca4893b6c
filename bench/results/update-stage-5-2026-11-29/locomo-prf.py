# locomo-prf.py EVAL_LOG.jsonl STORE (from the repository root, after `memdex eval ... --store STORE --log EVAL_LOG.jsonl`):
# pseudo-relevance feedback over each LoCoMo dev question's top 50: score + g x range x cosine(item, centroid of the top m)
import json,glob,os,subprocess,sys
import numpy as np, pyarrow as pa
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo_ranking import metrics, read_store
LOG=sys.argv[1]; STORE=sys.argv[2]
env=dict(os.environ, MEMDEX_MODEL='models/all-MiniLM-L6-v2')
cnt,rows=read_store(STORE,['embedding'],['tenant','session_id','turn','content_ref','role'])
cnt={k:np.array(v['embedding'],dtype=np.float32) for k,v in cnt.items()}
vec={}
for r in rows: vec[(r['tenant'],'%s_%d'%(r['session_id'],r['turn']))]=cnt[r['content_ref']]
L=[json.loads(l) for l in open(LOG)]
print(len(vec), 'vectors', len(L),'questions', list(vec)[:2], L[0]['ranked'][0]['id'])
D=json.load(open('../shared/data/locomo/locomo-dev.json'))
qs={}
for c in D:
    for i,q in enumerate(c['qa']): qs[f"{c['sample_id']}:q{i+1}"]=q['question']
os.makedirs('/tmp/prf',exist_ok=True)
if not os.path.exists('/tmp/prf/qe.jsonl'):
    open('/tmp/prf/q.jsonl','w').write('\n'.join(json.dumps({'text':qs[x['question_id']]}) for x in L)+'\n')
    subprocess.run(['target/release/memdex','embed','--input','/tmp/prf/q.jsonl','--output','/tmp/prf/qe.jsonl','--kind','query'],env=env,check=True)
Q=[np.array(json.loads(l)['embedding'],dtype=np.float32) for l in open('/tmp/prf/qe.jsonl')]
data=[]
for x,q in zip(L,Q):
    ten=x['question_id'].split(':')[0]
    top=x['ranked'][:50]
    ids=[h["id"] for h in top]; sc=np.sort(np.array([h["score"] for h in top]))[::-1].copy()
    V=np.stack([vec[(ten,i)] for i in ids])
    data.append((ten,ids,sc,V,q,x['gold']))
def run(m,g,sub=None,mode='centroid'):
    tot=dict(s1=0,mrr=0,t1=0,s5all=0); n=0
    for ten,ids,sc,V,q,gold in data:
        if sub is not None and ten not in sub: continue
        if g==0: order=ids
        else:
            w=np.maximum(sc[:m]-sc[m:].mean() if len(sc)>m else sc[:m],1e-6)
            c=(V[:m]*w[:,None]).sum(0); c/=np.linalg.norm(c)+1e-9
            rng=sc.max()-sc.min()+1e-9
            new=sc+g*rng*(V@c)
            order=[ids[k] for k in np.argsort(-new,kind='stable')]
        r=metrics(order,gold)
        for k in tot: tot[k]+=r[k]
        n+=1
    return {k:round(v/n,4) for k,v in tot.items()}
base=run(1,0); print('base',base)
for m in (1,2,3,5):
    for g in (0.05,0.1,0.2,0.3,0.5):
        print(m,g,run(m,g))

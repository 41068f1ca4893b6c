# locomo-nextkey.py EVAL_LOG.jsonl STORE (from the repository root; run locomo-prf.py first, it embeds the questions):
# a second dense signal, the question against 'turn + the turn after it', fused with weight g; LOCO-CV over g
import json,glob,os,subprocess,sys
import numpy as np, pyarrow as pa
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo_ranking import metrics, read_store
LOG=sys.argv[1]; STORE=sys.argv[2]
env=dict(os.environ, MEMDEX_MODEL='models/all-MiniLM-L6-v2')
cnt,rows=read_store(STORE,['key','value'],['tenant','session_id','turn','content_ref','position'])
rows.sort(key=lambda r:(r['tenant'],r['position']))
texts={}; order=[]
for i,r in enumerate(rows):
    nxt=rows[i+1] if i+1<len(rows) and rows[i+1]['tenant']==r['tenant'] and rows[i+1]['session_id']==r['session_id'] else None
    t=cnt[r['content_ref']]['value']+('\n'+cnt[nxt['content_ref']]['value'] if nxt else '')
    k=(r['tenant'],'%s_%d'%(r['session_id'],r['turn'])); texts[k]=t; order.append(k)
print(cnt[rows[5]['content_ref']]['key'][:300]); print('---'); print(texts[order[5]][:300])
if not os.path.exists('/tmp/prf/ne.jsonl'):
    open('/tmp/prf/n.jsonl','w').write('\n'.join(json.dumps({'text':texts[k]}) for k in order)+'\n')
    subprocess.run(['target/release/memdex','embed','--input','/tmp/prf/n.jsonl','--output','/tmp/prf/ne.jsonl','--kind','passage'],env=env,check=True)
NE={k:np.array(json.loads(l)['embedding'],dtype=np.float32) for k,l in zip(order,open('/tmp/prf/ne.jsonl'))}
Q=[np.array(json.loads(l)['embedding'],dtype=np.float32) for l in open('/tmp/prf/qe.jsonl')]
L=[json.loads(l) for l in open(LOG)]
data=[]
for x,q in zip(L,Q):
    ten=x['question_id'].split(':')[0]; top=x['ranked'][:50]
    ids=[h['id'] for h in top]; sc=np.sort(np.array([h['score'] for h in top]))[::-1].copy()
    c=np.array([float(NE[(ten,i)]@q) for i in ids])
    data.append((ten,ids,sc,c,x['gold']))
def run(g,sub=None):
    tot=dict(s1=0,mrr=0,t1=0,s5all=0); n=0
    for ten,ids,sc,c,gold in data:
        if sub is not None and ten not in sub: continue
        rng=sc.max()-sc.min()+1e-9
        new=sc+g*rng*(c-c.min())/(c.max()-c.min()+1e-9)
        o=[ids[k] for k in np.argsort(-new,kind='stable')]
        r=metrics(o,gold)
        for k in tot: tot[k]+=r[k]
        n+=1
    return {k:round(v/n,4) for k,v in tot.items()}
for g in (0,0.05,0.1,0.2,0.3,0.5,0.8):
    print(g,run(g))
convs=sorted({d[0] for d in data}); G=(0,0.05,0.1,0.2,0.3,0.5,0.8)
cv=dict(s1=0,mrr=0,t1=0,s5all=0); N=0
for held in convs:
    train=set(convs)-{held}
    best=max(G,key=lambda g:(run(g,train)['s1'],run(g,train)['mrr']))
    r=run(best,{held}); n=sum(1 for d in data if d[0]==held)
    for k in cv: cv[k]+=r[k]*n
    N+=n; print(held,'chose',best,r)
print('LOCO-CV',{k:round(v/N,4) for k,v in cv.items()})

# locomo-ltr.py LOCOMO_DEV.json FEATURES.json: a linear re-ranking of the default's top 50 over its
# stage scores (rank, dense, BM25, expansion, first stage, FragRel's and the signals' parts, the
# time stage's preference, the score), fitted as a pairwise logistic model (gold turn against
# the first 20 others), leave-one-conversation-out
import json,re,sys,collections
import numpy as np
R=json.load(open(sys.argv[2]))
D={c['sample_id']:c for c in json.load(open(sys.argv[1]))}
qtext={}
for cid,c in D.items():
    for i,q in enumerate(c['qa']): qtext[f"{cid}:q{i+1}"]=q['question']
sess=lambda t:t.rsplit('_',1)[0]
def feats(r):
    ex=r['ex']; n=len(ex)
    bm=max((e.get('bm25',0) for e in ex),default=0) or 1
    sc=max(r['score']) or 1
    q=qtext[r['qid']]
    F=[]
    for k,e in enumerate(ex):
        fs=e.get('first_stage',0); fr=e.get('fragrel',fs); sg=e.get('signals',fr)
        F.append([1/(k+1), e.get('dense',0), e.get('bm25',0)/bm, e.get('expansion',0), fs, fr-fs, sg-fr,
                  1.0 if e.get('time')=='dated' else 0.0, 1/e['time_rank'] if e.get('time_rank') else 0, r['score'][k]/sc, 1.0])
    return np.array(F)
data=[]
for r in R:
    X=feats(r); y=np.array([i in r['gold'] for i in r['ids']],dtype=float)
    data.append((r['qid'].split(':')[0],X,y,r))
def train(items,l2=1e-2,epochs=300,lr=0.5):
    P=[];N=[]
    for _,X,y,_ in items:
        if y.sum()==0 or y.sum()==len(y): continue
        pos=X[y==1]; neg=X[y==0][:20]
        for p in pos:
            P.append(np.repeat(p[None],len(neg),0)); N.append(neg)
    P=np.concatenate(P); N=np.concatenate(N); Dd=P-N
    mu=Dd.std(0)+1e-9
    w=np.zeros(Dd.shape[1]); w[0]=1.0
    Z=Dd/mu
    for _ in range(epochs):
        m=Z@w; g=-(Z*(1/(1+np.exp(m)))[:,None]).mean(0)+l2*w
        w-=lr*g
    return w/mu
def evaluate(items,w):
    m=collections.Counter()
    for _,X,y,r in items:
        s=X@w if w is not None else -np.arange(len(X))
        order=np.argsort(-s,kind='stable'); ids=[r['ids'][i] for i in order]
        gold=set(r['gold']); gs={sess(g) for g in gold}
        seen=[]
        for i in ids:
            if sess(i) not in seen: seen.append(sess(i))
        m['t->s any@1']+=seen[0] in gs; m['t->s MRR']+=next((1/(k+1) for k,s_ in enumerate(seen) if s_ in gs),0)
        m['t->s all@5']+=gs<=set(seen[:5]); m['turn any@1']+=ids[0] in gold; m['n']+=1
    return {k:round(v/m['n'],4) for k,v in m.items() if k!='n'}
print('default (top-50 order)',evaluate(data,None))
w=train(data); print('in-sample',evaluate(data,w)); print('w',np.round(w,3))
tot=collections.Counter(); n=0
for held in sorted(D):
    tr=[d for d in data if d[0]!=held]; te=[d for d in data if d[0]==held]
    w=train(tr); e=evaluate(te,w); print(held,e, 'default',evaluate(te,None))
    for k,v in e.items(): tot[k]+=v*len(te)
    n+=len(te)
print('LOCO-CV',{k:round(v/n,4) for k,v in tot.items()})

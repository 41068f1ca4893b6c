# sum.py A.json [B.json ...] : counts only (no ids): updates newest first (present), past old first, controls kept (stage tier from stage-off)
import json,sys
def k(x,rep): return x[0]==1 or (rep and x[1]==1)
for f in sys.argv[1:]:
    d=json.load(open(f)); r={}
    for x in d:
        for h in ('all',x['half']):
            t=r.setdefault(h,dict(u=0,uon=0,uoff=0,p=0,pon=0,poff=0,c=0,con=0,hard=0))
            if 'present_new_old' in x:
                on,off=x['present_new_old']['on'],x['present_new_old']['off']
                t['u']+=1; t['uon']+=on[0]==1; t['uoff']+=off[0]==1
                on,off=x['past_new_old']['on'],x['past_new_old']['off']
                t['p']+=1; t['pon']+=on[1]<=5; t['poff']+=off[1]<=5
            else:
                rep=x['kind']=='repeated-fact'; off=x['answer_related']['off']; on=x['answer_related']['on']
                if not k(off,rep): t['hard']+=1; continue
                t['c']+=1; t['con']+=k(on,rep)
    for h,t in sorted(r.items()):
        print(f.split('/')[-1],h,'updates newest first: off %(uoff)d on %(uon)d of %(u)d | past old in top5 on %(pon)d of %(p)d | controls kept (stage tier): on %(con)d of %(c)d (retrieval-hard %(hard)d)'%t)

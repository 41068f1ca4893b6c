# pairs-hits.py BINARY STEM UPDATES CONTROLS OUT.json (from the repository root): every question of a
# fixture pair (crates/memdex-testkit/fixtures/UPDATES.json, CONTROLS.json) searched in a store of its own,
# top 50 with scores and texts, update stage on and off (--update-window 0)
import json,subprocess,os,sys,tempfile
from concurrent.futures import ThreadPoolExecutor
F='crates/memdex-testkit/fixtures/'
M,stem,un,cn,outp=sys.argv[1:6]; env=dict(os.environ, MEMDEX_MODEL=os.environ.get('MEMDEX_MODEL', 'models/all-MiniLM-L6-v2'))
def fnv(s):
    h=0xcbf29ce484222325
    for b in s.encode(): h=((h^b)*0x100000001b3)&0xffffffffffffffff
    return h
U=json.load(open(F+un+'.json'))['scenarios']; C=json.load(open(F+cn+'.json'))['scenarios']
d=tempfile.mkdtemp(); lines=[]
for p,S in (('u',U),('c',C)):
    for sc in S:
        for s in sc['sessions']:
            s=dict(s); s['tenant']=p+'-'+sc['id']; lines.append(json.dumps(s))
open(d+'/a.jsonl','w').write('\n'.join(lines)+'\n')
subprocess.run([M,'index','--input',d+'/a.jsonl','--store',d+'/st'],env=env,check=True,capture_output=True)
def hits(a):
    t,q,on=a
    args=[M,'search','--store',d+'/st','--tenant',t,'--query',q,'--json','-k','50']+([] if on else ['--update-window','0'])
    h=json.loads(subprocess.run(args,capture_output=True,text=True,env=env,check=True).stdout)
    return [{'s':x['session_id'],'score':x['score'],'t':x['timestamp_ms'],'role':x['role'],'v':x['value']} for x in h]
jobs=[]
for sc in U:
    for qk in ('present','past'):
        for on in (True,False): jobs.append(('u-'+sc['id'],sc[qk],on))
for sc in C:
    for on in (True,False): jobs.append(('c-'+sc['id'],sc['question'],on))
with ThreadPoolExecutor(2) as ex: res=dict(zip(jobs,ex.map(hits,jobs)))
out=[]
for sc in U:
    h='tuning' if fnv(sc['id'])%2==0 else 'checking'
    out.append({'set':stem+' updates','id':sc['id'],'half':h,'new':sc['new_session'],'old':sc['old_session'],
      'present':sc['present'],'past':sc['past'],
      'hits':{f'{qk}-{on}':res[('u-'+sc['id'],sc[qk],on)] for qk in ('present','past') for on in (True,False)}})
for sc in C:
    h='tuning' if fnv(sc['id'])%2==0 else 'checking'
    out.append({'set':stem+' controls','id':sc['id'],'half':h,'kind':sc['kind'],'tier':sc.get('tier','stage'),
      'answer':sc['answer_session'],'related':sc['related_session'],'question':sc['question'],
      'hits':{f'q-{on}':res[('c-'+sc['id'],sc['question'],on)] for on in (True,False)}})
json.dump(out,open(outp,'w'))

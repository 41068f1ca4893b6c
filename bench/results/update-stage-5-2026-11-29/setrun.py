# setrun.py BINARY STEM OUT.json [UPDATES CONTROLS] (from the repository root): updates-STEM/controls-STEM
# (or the fixtures UPDATES/CONTROLS, e.g. knowledge-updates update-controls) ranked by BINARY, stage on and off
import json,subprocess,os,sys,tempfile
F='crates/memdex-testkit/fixtures/'
def fnv(s):
    h=0xcbf29ce484222325
    for b in s.encode(): h=((h^b)*0x100000001b3)&0xffffffffffffffff
    return h
def half(scenario_id):
    """The scenario's half, as memdex_testkit::split_half puts it."""
    return 'tuning' if fnv(scenario_id)%2==0 else 'checking'
def env():
    return dict(os.environ, MEMDEX_MODEL=os.environ.get('MEMDEX_MODEL','models/all-MiniLM-L6-v2'))
def index_pair(M,un,cn):
    """Both fixtures' scenarios in a new store of their own, one tenant each (u-ID, c-ID): (store, U, C)."""
    U=json.load(open(F+un+'.json'))['scenarios']; C=json.load(open(F+cn+'.json'))['scenarios']
    d=tempfile.mkdtemp(); lines=[]
    for p,S in (('u',U),('c',C)):
        for sc in S:
            for s in sc['sessions']:
                s=dict(s); s['tenant']=p+'-'+sc['id']; lines.append(json.dumps(s))
    open(d+'/a.jsonl','w').write('\n'.join(lines)+'\n')
    subprocess.run([M,'index','--input',d+'/a.jsonl','--store',d+'/st'],env=env(),check=True,capture_output=True)
    return d+'/st',U,C
def main():
    M=sys.argv[1]; stem=sys.argv[2]; un,cn=(sys.argv[4],sys.argv[5]) if len(sys.argv)>5 else ('updates-'+stem,'controls-'+stem)
    st,U,C=index_pair(M,un,cn)
    def ranks(t,q,a,b,on):
        args=[M,'search','--store',st,'--tenant',t,'--query',q,'--json']+([] if on else ['--update-window','0'])
        hits=json.loads(subprocess.run(args,capture_output=True,text=True,env=env(),check=True).stdout)
        f=lambda s: next((h['rank'] for h in hits if h['session_id']==s),99)
        return [f(a),f(b)]
    out=[]
    for sc in U:
        t='u-'+sc['id']
        out.append({'set':stem+' updates','id':sc['id'],'half':half(sc['id']),
          'present_new_old':{'on':ranks(t,sc['present'],sc['new_session'],sc['old_session'],True),'off':ranks(t,sc['present'],sc['new_session'],sc['old_session'],False)},
          'past_new_old':{'on':ranks(t,sc['past'],sc['new_session'],sc['old_session'],True),'off':ranks(t,sc['past'],sc['new_session'],sc['old_session'],False)}})
    for sc in C:
        t='c-'+sc['id']
        out.append({'set':stem+' controls','id':sc['id'],'half':half(sc['id']),'kind':sc['kind'],'tier':sc.get('tier','stage'),
          'answer_related':{'on':ranks(t,sc['question'],sc['answer_session'],sc['related_session'],True),'off':ranks(t,sc['question'],sc['answer_session'],sc['related_session'],False)}})
    json.dump(out,open(sys.argv[3],'w'),indent=1)
if __name__=='__main__':
    main()

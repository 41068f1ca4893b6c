# pairs-hits.py BINARY STEM UPDATES CONTROLS OUT.json (from the repository root): every question of a
# fixture pair (crates/memdex-testkit/fixtures/UPDATES.json, CONTROLS.json) searched in a store of its own,
# top 50 with scores and texts, update stage on and off (--update-window 0). The store and the halves
# are phase 5's setrun.py's (index_pair, half).
import importlib.util
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

spec = importlib.util.spec_from_file_location("setrun", "bench/results/update-stage-5-2026-11-29/setrun.py")
setrun = importlib.util.module_from_spec(spec)
spec.loader.exec_module(setrun)


def main():
    M, stem, un, cn, outp = sys.argv[1:6]
    st, U, C = setrun.index_pair(M, un, cn)

    def hits(job):
        t, q, on = job
        args = [M, 'search', '--store', st, '--tenant', t, '--query', q, '--json', '-k', '50']
        args += [] if on else ['--update-window', '0']
        h = json.loads(subprocess.run(args, capture_output=True, text=True, env=setrun.env(), check=True).stdout)
        return [{'s': x['session_id'], 'score': x['score'], 't': x['timestamp_ms'], 'role': x['role'], 'v': x['value']} for x in h]

    jobs = [('u-' + sc['id'], sc[qk], on) for sc in U for qk in ('present', 'past') for on in (True, False)]
    jobs += [('c-' + sc['id'], sc['question'], on) for sc in C for on in (True, False)]
    with ThreadPoolExecutor(2) as ex:
        res = dict(zip(jobs, ex.map(hits, jobs)))
    out = []
    for sc in U:
        out.append({'set': stem + ' updates', 'id': sc['id'], 'half': setrun.half(sc['id']), 'new': sc['new_session'],
                    'old': sc['old_session'], 'present': sc['present'], 'past': sc['past'],
                    'hits': {f'{qk}-{on}': res[('u-' + sc['id'], sc[qk], on)] for qk in ('present', 'past') for on in (True, False)}})
    for sc in C:
        out.append({'set': stem + ' controls', 'id': sc['id'], 'half': setrun.half(sc['id']), 'kind': sc['kind'],
                    'tier': sc.get('tier', 'stage'), 'answer': sc['answer_session'], 'related': sc['related_session'],
                    'question': sc['question'], 'hits': {f'q-{on}': res[('c-' + sc['id'], sc['question'], on)] for on in (True, False)}})
    json.dump(out, open(outp, 'w'))


main()

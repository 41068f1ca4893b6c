# locomo_ranking.py: what locomo-prf.py and locomo-nextkey.py share: an eval log's turn ranking
# scored as LongMemEval scores it at the top (turn -> session any@1, MRR, all@5; turn any@1)
def sess(turn_id):
    return turn_id.rsplit('_', 1)[0]

def metrics(order, gold):
    gs = {sess(g) for g in gold}
    seen = []
    for i in order:
        s = sess(i)
        if s not in seen:
            seen.append(s)
    rr = next((1 / (k + 1) for k, s in enumerate(seen) if s in gs), 0)
    return dict(s1=float(seen[0] in gs), mrr=rr, t1=float(order[0] in gold), s5all=float(gs <= set(seen[:5])))


def read_store(store, content_cols, row_cols):
    """The store's content rows by content_ref (only `content_cols`) and its item rows (only
    `row_cols`), read with pyarrow from its segments."""
    import glob
    import pyarrow as pa
    cnt, rows = {}, []
    for p in sorted(glob.glob(store + '/segments/*.arrow')):
        t = pa.ipc.open_file(p).read_all()
        if 'embedding' in t.schema.names and 'content_ref' in t.schema.names:
            for r in t.select(['content_ref'] + content_cols).to_pylist():
                cnt[r['content_ref']] = r
        elif 'tenant' in t.schema.names:
            rows += t.select(row_cols).to_pylist()
    return cnt, rows

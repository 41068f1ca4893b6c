"""A store's files are plain Arrow IPC: pyarrow, polars and DuckDB open them. In the default (shared) layout a segment holds
the rows and references each row's content (key, value, terms, embedding) in a content file by `content_ref`; a join
gives every row its key and embedding, which hold exactly what the store's model gives for the key.
Each reader is skipped with a notice when not installed, unless MEMDEX_REQUIRE_PYARROW=1 (CI)
makes a missing one a failure."""

import glob
import json
import os

import numpy as np
import pytest

from conftest import require

SESSIONS = [
    {"tenant": t, "session_id": f"{t}-{i}", "date": f"2023-05-{i + 1:02d}",
     "turns": [{"role": "user", "content": f"{t} note {i}: I bought {i + 2} apples in Oslo."},
               {"role": "assistant", "content": "Noted."}]}
    for t in ("alice", "bob") for i in range(3)
]


@pytest.fixture
def store(mem):
    mem.add(SESSIONS)
    with open(os.path.join(mem.store, "manifest.json")) as f:
        m = json.load(f)
    assert m["layout"] == "shared"
    segs = [os.path.join(mem.store, "segments", s["file"]) for s in m["segments"]]
    cnts = [os.path.join(mem.store, "segments", c["file"]) for c in m["contents"]]
    words = [os.path.join(mem.store, "segments", w["file"]) for w in m["words"]]
    assert segs and cnts and words, (segs, cnts, words)
    assert sorted(glob.glob(os.path.join(mem.store, "segments", "*.arrow"))) == sorted(segs + cnts + words)
    return mem, segs, cnts, words


def check(mem, keys, emb):
    emb = np.asarray(emb, dtype=np.float32)
    assert emb.shape == (len(keys), mem.dim)
    np.testing.assert_allclose(emb, mem.embed(keys), atol=1e-5)


def test_pyarrow_memory_maps_a_segment(store):
    pa = require("pyarrow")
    import pyarrow.ipc as ipc

    mem, segs, cnts, words = store
    rows = pa.concat_tables(ipc.open_file(pa.memory_map(s)).read_all() for s in segs)
    contents = pa.concat_tables(ipc.open_file(pa.memory_map(c)).read_all() for c in cnts)
    assert rows.num_rows == 6 and contents.num_rows == 6
    # the join, columnar: each row's content by position (Acero's join takes no list columns)
    import pyarrow.compute as pc
    t = contents.take(pc.index_in(rows["content_ref"], value_set=contents["content_ref"]))
    assert t.num_rows == 6 and t.column("key").null_count == 0
    t = t.append_column("tenant", rows["tenant"])
    assert t.schema.field("embedding").type == pa.list_(pa.field("item", pa.float32(), False), mem.dim)
    assert set(t.column("tenant").to_pylist()) == {"alice", "bob"}
    flat = t.column("embedding").combine_chunks().flatten().to_numpy()
    check(mem, t.column("key").to_pylist(), flat.reshape(t.num_rows, mem.dim))
    # the word table: a vector per BM25 term, the store's model's embedding of its word
    w = pa.concat_tables(ipc.open_file(pa.memory_map(p)).read_all() for p in words)
    assert w.column_names == ["term", "word", "embedding"]
    by_term = dict(zip(w.column("term").to_pylist(), w.column("word").to_pylist()))
    assert by_term["appl"] == "apples" and by_term["oslo"] == "oslo", by_term
    vecs = w.column("embedding").combine_chunks().flatten().to_numpy()
    check(mem, w.column("word").to_pylist(), vecs.reshape(w.num_rows, mem.dim))


def test_polars_reads_a_segment(store):
    pl = require("polars")
    mem, segs, cnts, _ = store
    rows = pl.concat([pl.read_ipc(s) for s in segs])
    df = rows.join(pl.concat([pl.read_ipc(c) for c in cnts]), on="content_ref")
    assert df.schema["embedding"] == pl.Array(pl.Float32, mem.dim)
    assert df.filter(pl.col("tenant") == "bob").height == 3
    check(mem, df["key"].to_list(), df["embedding"].to_numpy())


def test_duckdb_queries_a_segment(store):
    duckdb = require("duckdb")
    pa = require("pyarrow")
    import pyarrow.ipc as ipc

    mem, segs, cnts, _ = store
    # DuckDB has no built-in Arrow IPC file reader (that is an extension it would download):
    # it scans the memory-mapped pyarrow tables in place
    rows = pa.concat_tables(ipc.open_file(pa.memory_map(s)).read_all() for s in segs)
    contents = pa.concat_tables(ipc.open_file(pa.memory_map(c)).read_all() for c in cnts)
    con = duckdb.connect()
    con.register("seg_rows", rows)
    con.register("contents", contents)
    con.execute("create view seg as select * from seg_rows join contents using (content_ref)")
    assert con.execute("select typeof(embedding) from seg limit 1").fetchone()[0] == f"FLOAT[{mem.dim}]"
    rows = con.execute(
        "select key, embedding from seg where tenant = 'alice' order by position"
    ).fetchall()
    assert len(rows) == 3
    check(mem, [r[0] for r in rows], [r[1] for r in rows])
    # vector search in SQL agrees with the stored vectors: each key, embedded again, finds its
    # own row first (every key mentions apples, so a word test could not tell rows apart)
    for key in [r[0] for r in rows]:
        q = [float(x) for x in mem.embed([key])[0]]
        best = con.execute(
            "select key from seg order by array_inner_product(embedding, ?::FLOAT[%d]) desc limit 1"
            % mem.dim,
            [q],
        ).fetchone()[0]
        assert best == key, (key, best)

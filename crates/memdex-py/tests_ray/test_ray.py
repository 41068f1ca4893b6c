"""memdex on a local Ray cluster with two worker nodes (a head with no CPUs and two workers
of 2 logical CPUs each, as ray.cluster_utils builds it: 2 writer actors plus room for the
shuffle feeding them): the Ray Data job builds tenant-sharded stores from
JSONL and from LongMemEval, each a normal store holding exactly its tenants; Ray Serve routes
each tenant's searches and appends to the replica holding its shard, in-process and over
HTTP. Run by scripts/test-ray.sh."""

import json
import os
import pathlib
import socket
import urllib.request

import pytest

import memdex
from memdex.ray import _writer_pool, build_shards, serve_app, shard_dir, shard_of

ray = pytest.importorskip("ray")

TINY = str(pathlib.Path(__file__).resolve().parents[3]
           / "crates" / "memdex-embed" / "tests" / "fixtures" / "tiny-bert")
TENANTS = ["alice", "bob", "carol", "dave", "erin", "frank"]
SHARDS = 2


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for _ in range(2):
        c.add_node(num_cpus=2)
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False)
    assert len([n for n in ray.nodes() if n["Alive"]]) == 3
    assert ray.cluster_resources()["CPU"] == 4
    yield c
    ray.shutdown()
    c.shutdown()


def sessions():
    for i, t in enumerate(TENANTS):
        for j in range(2):
            yield {"tenant": t, "session_id": f"s{j}", "date": f"2023-05-{10 + j:02d}T10:00:00Z",
                   "turns": [{"role": "user", "content": f"I am {t}; my pet number {j} is a {'dog' if j else 'cat'} called P{i}{j}."},
                             {"role": "assistant", "content": "Noted."}]}


def test_tenant_hash_is_stable_and_spreads():
    assert [shard_of(t, SHARDS) for t in TENANTS] == [shard_of(t, SHARDS) for t in TENANTS]
    assert {shard_of(t, SHARDS) for t in TENANTS} == {0, 1}
    assert shard_of("alice", 1) == 0
    with pytest.raises(ValueError):
        shard_of("alice", 0)


def test_writer_pool_leaves_a_cpu_for_the_shuffle():
    assert _writer_pool(4, 1.0, 2, None) == 2      # room for 3, capped at the shards
    assert _writer_pool(4, 1.0, 8, None) == 3
    assert _writer_pool(2, 1.0, 8, None) == 1
    assert _writer_pool(4, 1.0, 2, 3) == 3
    with pytest.raises(ValueError, match="leave none for the shuffle"):
        _writer_pool(2, 1.0, 2, 2)                 # the pool would hold every CPU: a hang
    with pytest.raises(ValueError, match="needs 1 more"):
        _writer_pool(1, 1.0, 2, None)
    with pytest.raises(ValueError):
        _writer_pool(4, 0.0, 2, None)


def test_a_pool_that_would_hang_is_refused(cluster, tmp_path):
    inp = tmp_path / "history.jsonl"
    inp.write_text("".join(json.dumps(s) + "\n" for s in sessions()))
    with pytest.raises(ValueError, match="would take all"):
        build_shards(str(inp), str(tmp_path / "x"), SHARDS, model=TINY, device="cpu",
                     concurrency=2, num_cpus=2.0)


def test_offline_build_then_online_routing(cluster, tmp_path):
    inp = tmp_path / "history.jsonl"
    inp.write_text("".join(json.dumps(s) + "\n" for s in sessions()))
    root = tmp_path / "shards"
    rows = build_shards(str(inp), str(root), SHARDS, model=TINY, device="cpu", concurrency=2)
    assert [r["shard"] for r in rows] == [0, 1]
    assert sum(r["records"] for r in rows) == 2 * len(TENANTS)
    assert all(r["items_written"] > 0 for r in rows)
    # each shard is a normal store with exactly its tenants
    for s in range(SHARDS):
        with memdex.Memory(shard_dir(str(root), s), model=TINY, device="cpu") as m:
            assert set(m.tenants()) == {t for t in TENANTS if shard_of(t, SHARDS) == s}
    # idempotent, like memdex index
    again = build_shards(str(inp), str(root), SHARDS, model=TINY, device="cpu", concurrency=2)
    assert all(r["items_written"] == 0 for r in again)

    from ray import serve

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        handle = serve.run(serve_app(str(root), model=TINY, device="cpu"), name="memdex",
                           route_prefix="/memdex")
        for t in TENANTS:
            hits = handle.call.remote("search", tenant=t, query="my dog", k=2).result()
            assert hits and all(h["tenant"] == t for h in hits), (t, hits)
        # an append goes to the tenant's shard and is searchable at once
        new = {"session_id": "s9", "turns": [{"role": "user", "content": "I moved to Oslo."}]}
        out = handle.call.remote("add", tenant="erin", sessions=[new]).result()
        assert out[0]["tenant"] == "erin"
        hits = handle.call.remote("search", tenant="erin", query="Oslo", k=1).result()
        assert "Oslo" in hits[0]["value"]
        # over HTTP, errors included
        def post(body):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/memdex",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())
        r = post({"tenant": "bob", "query": "cat", "k": 1})
        assert r["shard"] == shard_of("bob", SHARDS) and r["result"][0]["tenant"] == "bob"
        r = post({"tenant": "zed", "query": "cat"})
        assert r["error"]["type"] == "NotFound" and "has no memory" in r["error"]["message"], r
        r = post({"tenant": "bob", "query": "cat", "stages": {"retriever": "magic"}})
        assert r["error"]["type"] == "InvalidInput", r
    finally:
        serve.shutdown()


def test_longmemeval_input(cluster, tmp_path):
    data = [{"question_id": f"q{i}", "question_type": "single-session-user",
             "question": "What is my pet?", "answer": "a dog",
             "question_date": "2023/06/01 (Thu) 10:00",
             "haystack_session_ids": [f"h{i}a", f"h{i}b"],
             "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 10:00"],
             "haystack_sessions": [
                 [{"role": "user", "content": f"My pet {i} is a dog.", "has_answer": True}],
                 [{"role": "user", "content": "I like tea."}]]} for i in range(5)]
    inp = tmp_path / "lme.json"
    inp.write_text(json.dumps(data))
    root = tmp_path / "lme-shards"
    rows = build_shards(str(inp), str(root), SHARDS, fmt="longmemeval", model=TINY,
                        device="cpu", concurrency=2)
    # memdex's LongMemEval reader made them sessions: two per question
    assert sum(r["records"] for r in rows) == 10
    found = {}
    for s in range(SHARDS):
        if os.path.exists(shard_dir(str(root), s)):
            with memdex.Memory(shard_dir(str(root), s), model=TINY, device="cpu") as m:
                found.update({t: s for t in m.tenants()})
    assert found == {f"q{i}": shard_of(f"q{i}", SHARDS) for i in range(5)}

"""memdex.Memory end to end over the committed tiny model: every input shape, search with
stages, dates and recent turns, hits as objects and as a pyarrow table, list, forget,
compact, embed, errors as exceptions with memdex's messages, threads."""

import datetime as dt
import re
import threading

import numpy as np
import pytest

import memdex
from conftest import require

HISTORY = [
    {"tenant": "alice", "session_id": "s1", "date": "2023-05-01T10:00:00Z",
     "turns": [{"role": "user", "content": "I adopted a dog named Rex."},
               {"role": "assistant", "content": "Congrats on Rex!"}]},
    {"tenant": "alice", "session_id": "s2", "date": "2023-05-20T10:00:00Z",
     "turns": [{"role": "user", "content": "My sister lives in Lisbon."},
               {"role": "assistant", "content": "Nice city."}]},
    {"tenant": "bob", "session_id": "b1", "date": dt.datetime(2023, 5, 2, 10),
     "turns": [{"role": "user", "content": "I play the cello every evening."}]},
]


def test_add_is_durable_and_idempotent(mem):
    out = mem.add(HISTORY)
    assert [r["tenant"] for r in out] == ["alice", "bob"]
    assert [s["status"] for s in out[0]["report"]["sessions"]] == ["stored", "stored"]
    again = mem.add(HISTORY)
    assert all(r["report"]["items_written"] == 0 for r in again)
    assert mem.tenants() == {"alice": 2, "bob": 1}
    with pytest.raises(memdex.Conflict, match="already stored with different content"):
        mem.add({"session_id": "s1", "turns": [{"role": "user", "content": "other"}]},
                tenant="alice")


def test_search_hits_stages_and_table(mem):
    mem.add(HISTORY)
    hits = mem.search("alice", "sister Lisbon", k=2, retriever="bm25")
    assert isinstance(hits[0], memdex.Hit)
    assert hits[0].session_id == "s2" and "Lisbon" in hits[0].value
    assert hits[0].date == dt.datetime(2023, 5, 20, 10, tzinfo=dt.timezone.utc)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(h.tenant == "alice" for h in mem.search("alice", "cello", k=5))
    dated = mem.search("alice", "dog", k=1, date=dt.date(2023, 6, 1), time="boost")
    assert len(dated) == 1
    pa = require("pyarrow")
    table = mem.search("alice", "dog Rex", k=2, as_table=True)
    assert isinstance(table, pa.Table)
    assert table.num_rows == 2
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert table.column("tenant").to_pylist() == ["alice", "alice"]
    assert all(h.explain is None for h in hits)
    why = mem.search("alice", "dog Rex", k=2, explain=True)
    assert [h.item_id for h in why] == table.column("item_id").to_pylist()
    assert all(h.explain["score_rank"] >= 1 and "first_stage" in h.explain for h in why)


def test_hits_carry_their_timings_and_k_defaults_as_everywhere(mem):
    import inspect

    mem.add(HISTORY)
    hits = mem.search("alice", "dog Rex")
    assert isinstance(hits, memdex.Hits) and isinstance(hits, list)
    assert list(hits.timings) == ["tokenize", "model_queue", "embed", "rank_queue", "rank"]
    assert all(isinstance(us, int) and us >= 0 for us in hits.timings.values())
    assert hits.timings["embed"] > 0
    # the defaults and the bound are the Rust door's (DEFAULT_K, MAX_K), read from it
    assert (memdex.DEFAULT_K, memdex.MAX_K) == (10, 1000)
    for f in (memdex.Memory.search, memdex.Memory.context):
        assert inspect.signature(f).parameters["k"].default == memdex.DEFAULT_K
    assert len(mem.search("alice", "dog", k=memdex.MAX_K)) == 2
    with pytest.raises(memdex.InvalidInput, match="k must be 1 to 1000"):
        mem.search("alice", "dog", k=memdex.MAX_K + 1)
    # past the Python check, the native door refuses the same bound
    with pytest.raises(memdex.InvalidInput, match="1000"):
        memdex._call(mem._native.search, "alice", "dog", memdex.MAX_K + 1, None, [], "{}",
                     False)


def test_explain_names_what_the_update_stage_linked(mem):
    mem.add([
        {"session_id": "porto", "date": "2023-05-01",
         "turns": [{"role": "user", "content": "My sister lives in Porto."}]},
        {"session_id": "lisbon", "date": "2023-09-01",
         "turns": [{"role": "user", "content": "My sister moved to Lisbon and lives there now."}]},
    ], tenant="carol")
    # lexical retrieval: the tiny model's vectors are random
    hits = mem.search("carol", "where does my sister live?", k=2, explain=True, retriever="bm25")
    assert hits[0].session_id == "lisbon"
    why = hits[0].explain["update"]
    assert why["linked_session_id"] == "porto"
    assert (why["cue"], why["direction"]) == ("moved", "newest_first")
    off = mem.search("carol", "where does my sister live?", k=2, explain=True,
                     retriever="bm25", update_window=0)
    assert off[0].session_id == "porto" and "update" not in off[0].explain


def test_context_and_recent_turns(mem):
    mem.add(HISTORY)
    cx = mem.context("alice", "when did I adopt my dog?", k=2, date="2023-06-01")
    assert "prompt" in cx and cx["items"], cx
    # an ambiguous query is searched with the recent turns
    hits = mem.search("alice", "and its name?", k=1, recent_turns=["my dog"])
    assert len(hits) == 1


def test_list_delete_compact(mem):
    mem.add(HISTORY)
    assert [s["session_id"] for s in mem.sessions("alice")] == ["s1", "s2"]
    item = mem.items("alice", "s2")[0]
    assert mem.delete("alice", item_id=item["item_id"])["items_deleted"] == 1
    with pytest.raises(memdex.NotFound):
        mem.items("alice", "s2")
    assert mem.delete("alice", session_id="s1")["items_deleted"] == 1
    with pytest.raises(memdex.NotFound, match='tenant "alice" has no memory'):
        mem.search("alice", "dog")
    with pytest.raises(memdex.NotFound):
        mem.delete("alice")
    assert mem.compact()["rows_removed"] >= 2
    assert mem.tenants() == {"bob": 1}


def test_longmemeval_and_locomo_objects(mem):
    lme = {"question_id": "q_1", "question_type": "single-session-user",
           "question": "What is my dog called?", "answer": "Rex",
           "question_date": "2023/06/01 (Thu) 10:00",
           "haystack_session_ids": ["h1", "h2"],
           "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 10:00"],
           "haystack_sessions": [
               [{"role": "user", "content": "My dog is called Rex.", "has_answer": True}],
               [{"role": "user", "content": "I like tea."}]]}
    locomo = {"sample_id": "conv-1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Oslo."},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "Cool!"}]}, "qa": []}
    out = mem.add([lme, locomo])
    assert [r["tenant"] for r in out] == ["q_1", "conv-1"]
    assert mem.search("q_1", "dog", k=1)[0].session_id in ("h1", "h2")
    assert "Ann: I moved to Oslo." in mem.search("conv-1", "Oslo", k=1)[0].value


LME = [{"question_id": "q1", "question_type": "single-session-user", "question": "what?",
        "answer": 3, "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["h1", "h2"],
        "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [[{"role": "user", "content": "I adopted a dog.", "has_answer": True},
                               {"role": "assistant", "content": ""}],
                              [{"role": "assistant", "content": "y"}]]}]


def test_read_sessions_uses_the_format_registry(tmp_path):
    assert memdex.FORMATS == ("jsonl", "longmemeval", "locomo")
    path = tmp_path / "lme.json"
    path.write_text(__import__("json").dumps(LME))
    for fmt in (None, "longmemeval"):
        got = memdex.read_sessions(path, fmt)
        assert [(s["tenant"], s["session_id"], s["date"]) for s in got] == [
            ("q1", "h1", "2023-05-20T10:00:00.000Z"), ("q1", "h2", "2023-05-21T10:00:00.000Z")]
        assert got[0]["turns"][1] == {"role": "assistant", "content": ""}, "blank turns kept"
    assert memdex.read_sessions(LME) == memdex.read_sessions(str(path))
    # what it reads goes back in unchanged
    assert memdex.read_sessions(memdex.read_sessions(HISTORY)) == memdex.read_sessions(HISTORY)
    with pytest.raises(memdex.InvalidInput, match="unknown format \"csv\""):
        memdex.read_sessions(path, "csv")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tenant": "a", "session_id": "s", "turns": []}\n')
    with pytest.raises(memdex.InvalidInput, match="bad.jsonl:1"):
        memdex.read_sessions(bad)


def test_build_is_the_batch_build_keyed_as_the_format(tmp_path, tiny_model):
    store = tmp_path / "built"
    sessions = memdex.read_sessions(LME)
    out = memdex.build(store, sessions, format="longmemeval", model=tiny_model, device="cpu")
    assert out["tenants"] == 1 and out["report"]["items_written"] == 2
    again = memdex.build(store, sessions, format="longmemeval", model=tiny_model, device="cpu")
    assert again["report"]["items_written"] == 0, "idempotent"
    with memdex.Memory(str(store), model=tiny_model, device="cpu") as m:
        assert m.tenants() == {"q1": 2}
        assert m.search("q1", "dog", k=1)[0].session_id == "h1"
    with pytest.raises(memdex.InvalidInput, match="unknown format"):
        memdex.build(store, sessions, format="csv", model=tiny_model, device="cpu")


def test_embed_is_numpy(mem, tiny_model):
    v = mem.embed(["hello world", "a dog"])
    assert isinstance(v, np.ndarray) and v.dtype == np.float32
    assert v.shape == (2, mem.dim)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-4)
    assert mem.embed([]).shape == (0, mem.dim)
    assert mem.embed("one").shape == (1, mem.dim)
    v[0, 0] = 1.0  # writable


@pytest.mark.parametrize("call, exc, message", [
    (lambda m: m.search("alice", " "), memdex.InvalidInput, "the query is empty"),
    (lambda m: m.search("alice", "x", k=0), memdex.InvalidInput, "k must be 1 to 1000, got 0"),
    (lambda m: m.search("a b", "x"), memdex.InvalidInput, "tenant"),
    (lambda m: m.search("alice", "x", date="someday"), memdex.InvalidInput, 'date "someday"'),
    (lambda m: m.search("alice", "x", dense_weight=2), memdex.InvalidInput,
     r"dense_weight must be in \[0, 1\], got 2"),
    (lambda m: m.search("alice", "x", colour="red"), memdex.InvalidInput,
     "unknown field `colour`"),
    (lambda m: m.search("alice", "x", retriever="magic"), memdex.InvalidInput,
     "unknown variant `magic`"),
    (lambda m: m.search("nobody", "x"), memdex.NotFound, 'tenant "nobody" has no memory'),
    (lambda m: m.add([{"tenant": "a", "session_id": "s", "turns": []}]), memdex.InvalidInput,
     re.escape('sessions[0]: session "s": turns: no turns')),
    (lambda m: m.add([{"tenant": "a", "session_id": "s", "title": "t", "turns": []}]),
     memdex.InvalidInput, "unknown field `title`"),
    (lambda m: m.add({"session_id": "s", "turns": [{"role": "user", "content": "x"}]}),
     memdex.InvalidInput, "tenant: missing"),
    (lambda m: m.add("not sessions"), TypeError, "not text"),
    (lambda m: m.delete("alice", session_id="s", item_id=1), memdex.InvalidInput, "not both"),
    (lambda m: m.search("alice", "x", k="3"), TypeError, "k must be an int"),
    (lambda m: m.search("alice", "x", recent_turns="abc"), TypeError, "not a str"),
    (lambda m: m.embed([1]), TypeError, "must hold str"),
])
def test_bad_calls_raise_with_memdex_messages(mem, call, exc, message):
    mem.add(HISTORY)
    with pytest.raises(exc, match=message) as info:
        call(mem)
    if exc is not TypeError:
        assert isinstance(info.value, memdex.MemdexError)


def test_stages_lists_every_stage_search_takes(mem):
    mem.add(HISTORY)
    with pytest.raises(memdex.InvalidInput) as info:
        mem.search("alice", "dog", no_such_stage=1)
    # serde names every field it expects: the same set as memdex.STAGES
    expected = set(re.findall(r"`(\w+)`", str(info.value).split("expected", 1)[1]))
    assert expected == set(memdex.STAGES), expected ^ set(memdex.STAGES)


def test_a_store_path_of_the_wrong_type_is_a_type_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match="store must be a str or os.PathLike, not int"):
        memdex.Memory(123)
    assert not (tmp_path / "123").exists()
    with pytest.raises(TypeError, match="model must be"):
        memdex.Memory(tmp_path / "s", model=5)


def test_errors_are_standard_classes_too():
    assert issubclass(memdex.InvalidInput, ValueError)
    assert issubclass(memdex.NotFound, LookupError)


def test_open_errors(tmp_path, tiny_model):
    with pytest.raises(memdex.InvalidInput, match="device"):
        memdex.Memory(tmp_path / "s", model=tiny_model, device="tpu")
    with pytest.raises(memdex.InvalidInput, match="model"):
        memdex.Memory(tmp_path / "s", model=str(tmp_path / "no-model"), device="cpu")
    with memdex.Memory(tmp_path / "s", model=tiny_model, device="cpu") as m:
        with pytest.raises(memdex.MemdexError):
            memdex.Memory(tmp_path / "s", model=tiny_model, device="cpu")
        assert "tiny" in repr(m)
    # closed: calls fail, the store is free again
    with pytest.raises(memdex.Closed):
        m.search("nobody", "x")
    assert m.tenants() == {}
    memdex.Memory(tmp_path / "s", model=tiny_model, device="cpu").close()


def test_threads_share_one_memory(mem):
    mem.add(HISTORY)
    errors, results = [], []

    def work():
        try:
            for _ in range(5):
                results.append(mem.search("alice", "dog Rex", k=1)[0].session_id)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 20 and len(set(results)) == 1


def test_texts_the_server_refuses_are_refused(mem):
    # the HTTP server's default limits (memdex-memory's one definition): 32 KiB a text
    big = "w " * (16 * 1024 + 1)
    with pytest.raises(memdex.InvalidInput, match="the limit is 32768"):
        mem.add({"tenant": "alice", "session_id": "big",
                 "turns": [{"role": "user", "content": big}]})
    assert "alice" not in mem.tenants()
    with pytest.raises(memdex.InvalidInput, match="at most 32768 bytes"):
        mem.search("alice", big)
    with pytest.raises(memdex.InvalidInput, match="at most 32768 bytes"):
        mem.search("alice", "x", recent_turns=[big])
    with pytest.raises(memdex.InvalidInput, match="the limit is 32768"):
        mem.embed([big])

"""memdex: long-term memory for chat assistants, in-process.

    import memdex
    with memdex.Memory("mem/", model="models/all-MiniLM-L6-v2") as mem:
        mem.add([{"tenant": "alice", "session_id": "s1", "date": "2023-05-30",
                  "turns": [{"role": "user", "content": "I adopted a dog named Rex."}]}])
        for hit in mem.search("alice", "what is my dog called?", k=3):
            print(hit.score, hit.value)

A ``Memory`` holds one store (a directory) open for writing and its model: the same engine as
``memdex serve`` (appends are durable and idempotent when ``add`` returns, deletes are
visible when ``delete`` returns), with the GIL released while memdex works, so threads may
share one ``Memory``. One writer per store: a second ``Memory`` (or a ``memdex serve``) on the
same directory is refused until ``close()``.
"""

from __future__ import annotations

import datetime as _dt
import os
import json as _json
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Union,
)

from . import _memdex

if TYPE_CHECKING:
    import os

    import numpy
    import pyarrow

__version__: str = _memdex.__version__

__all__ = [
    "Memory",
    "Hit",
    "MemdexError",
    "InvalidInput",
    "NotFound",
    "Conflict",
    "Busy",
    "NotCommitted",
    "TooLarge",
    "DiskFull",
    "Closed",
    "STAGES",
    "MAX_K",
    "DEFAULT_K",
    "Hits",
    "FORMATS",
    "read_sessions",
    "build",
]

#: The input formats memdex reads (memdex-ingest's registry, read from the native module:
#: ``memdex index --format``).
FORMATS: "tuple[str, ...]" = tuple(_memdex.FORMATS)

#: The ranking stages ``search`` takes as keyword arguments (``memdex search``'s flags).
STAGES = (
    "retriever",
    "bm25",
    "fusion",
    "dense_weight",
    "fragrel_alpha",
    "fragrel_w",
    "fragrel_scope",
    "fragrel_semantic",
    "recency",
    "importance",
    "time",
    "time_boost",
    "when_boost",
    "thought_weight",
    "thought_k",
    "thought_probes",
    "tree_weight",
    "tree_k",
    "update_window",
    "update_relevance",
    "expand_terms",
    "expand_weight",
)

#: Hits one search returns at most (memdex's ``MAX_K``, as over HTTP and MCP).
MAX_K: int = _memdex.MAX_K

#: Hits a search returns when ``k`` is not given (memdex's ``DEFAULT_K``, as over HTTP and
#: MCP).
DEFAULT_K: int = _memdex.DEFAULT_K


class MemdexError(Exception):
    """A memdex failure; the message is memdex's own."""


class InvalidInput(MemdexError, ValueError):
    """A malformed session, an unknown stage, a bad date or k, an empty query."""


class NotFound(MemdexError, LookupError):
    """No such tenant, session or item (or nothing live left of it)."""


class Conflict(MemdexError):
    """The same session id is stored with other content."""


class Busy(MemdexError):
    """A queue is full; retry later."""


class TooLarge(InvalidInput):
    """A text, a session or a call over a size limit (the HTTP server's 413)."""


class NotCommitted(MemdexError):
    """A write that was not committed (e.g. the disk is full): nothing of it is stored, so
    retrying it later is safe."""


class DiskFull(NotCommitted):
    """A write that was not committed because the store's disk is full: free space, then
    retry."""


class Closed(MemdexError):
    """The memory was closed."""


_ERRORS = {
    "invalid": InvalidInput,
    "too_large": TooLarge,
    "not_found": NotFound,
    "conflict": Conflict,
    "busy": Busy,
    "not_committed": NotCommitted,
    "disk_full": DiskFull,
    "closed": Closed,
}


def _call(f: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return f(*args, **kwargs)
    except _memdex.NativeError as e:
        code, message = e.args
        raise _ERRORS.get(code, MemdexError)(message) from None


@dataclass(frozen=True)
class Hit:
    """One retrieved memory item."""

    rank: int
    score: float
    item_id: int
    tenant: str
    session_id: str
    turn: int
    #: Position in the tenant's history.
    position: int
    #: Session date, ms since the epoch (UTC).
    timestamp_ms: int
    #: ``user`` or ``assistant``.
    role: str
    #: The item's text.
    value: str
    #: With ``search(..., explain=True)``: the score after each ranking stage and the rank
    #: before the time and update stages reordered it; else None.
    explain: Optional[Dict[str, Any]] = None

    @property
    def date(self) -> _dt.datetime:
        """The session date (UTC)."""
        return _dt.datetime.fromtimestamp(self.timestamp_ms / 1000, tz=_dt.timezone.utc)


class Hits(List[Hit]):
    """``search``'s answer: the hits, best first (a ``list``), and ``timings``: the
    microseconds the search spent in each serving stage (``tokenize``, ``model_queue``,
    ``embed``, ``rank_queue``, ``rank``: the figures ``memdex serve``'s ``/metrics`` sums),
    or None when nothing was ranked (a tenant with no memory)."""

    timings: Optional[Dict[str, int]]

    def __init__(self, hits: Iterable[Hit], timings: Optional[Dict[str, int]] = None) -> None:
        super().__init__(hits)
        self.timings = timings


DateLike = Union[str, _dt.date, _dt.datetime]


def _date_text(d: Optional[DateLike]) -> Optional[str]:
    if d is None or isinstance(d, str):
        return d
    if isinstance(d, _dt.datetime):
        if d.tzinfo is not None:
            d = d.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return d.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(d, _dt.date):
        return d.strftime("%Y-%m-%d")
    raise TypeError(f"date must be a str, datetime.date or datetime.datetime, not {type(d).__name__}")


def _json_default(o: Any) -> Any:
    if isinstance(o, (_dt.date, _dt.datetime)):
        return _date_text(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def _k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, not {type(k).__name__}")
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be 1 to {MAX_K}, got {k}")
    return k


def _texts(texts: Union[str, Iterable[str]], what: str) -> List[str]:
    if isinstance(texts, str):
        raise TypeError(f"{what} must be a list of str, not a str")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"{what} must hold str, not {type(t).__name__}")
    return out


_HIT_FIELDS = tuple(Hit.__dataclass_fields__)


class Memory:
    """One memdex store, open for writing, and its embedding model.

    ``store``: the store directory (created if missing). ``model``: a sentence-transformers
    BERT-family directory or a repo id in the local Hugging Face cache; default: the model
    the store was built with, else ``models/all-MiniLM-L6-v2`` under the working directory.
    ``device``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``. ``compact_every``: seconds
    between background compaction checks (``None`` or ``0``: only ``compact()``).
    ``rank_device``: where searches are ranked: ``auto`` (memdex's CUDA kernels when the
    model runs on CUDA, else the CPU), ``cpu``, ``cuda`` or ``kernels`` (as ``memdex serve
    --rank-device``).
    """

    def __init__(
        self,
        store: Union[str, "os.PathLike[str]"],
        model: Optional[str] = None,
        device: str = "auto",
        compact_every: Optional[float] = 30.0,
        rank_device: str = "auto",
    ) -> None:
        path = os.fspath(store) if isinstance(store, (str, os.PathLike)) else None
        if not isinstance(path, str):
            raise TypeError(f"store must be a str or os.PathLike, not {type(store).__name__}")
        if model is not None and not isinstance(model, (str, os.PathLike)):
            raise TypeError(f"model must be a str or os.PathLike, not {type(model).__name__}")
        model = None if model is None else os.fspath(model)
        self._native = _call(_memdex.Native, path, model, device, compact_every, rank_device)

    # -- writing -------------------------------------------------------------------------

    def add(
        self,
        sessions: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        tenant: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """Stores sessions, durably, before returning.

        ``sessions``: one or a list of: memdex sessions (the JSONL line shape,
        ``{"tenant", "session_id", "date", "turns": [{"role", "content"}]}``), official
        LongMemEval question instances (each question its own tenant) or official LoCoMo
        conversations (each its own tenant). ``tenant``: the tenant of sessions naming none.
        Idempotent: a session stored with the same content is ``unchanged``; the same id with
        other content raises ``Conflict``. Nothing is stored when any session is invalid.
        Returns one report per tenant: ``{"tenant", "report": {"sessions": [{"session_id",
        "status", "item_ids"}], "items_written", "manifest_version"}}``.
        """
        if isinstance(sessions, (str, bytes)):
            raise TypeError("sessions must be a dict or a list of dicts, not text")
        if not isinstance(sessions, Mapping):
            sessions = list(sessions)
        text = _json.dumps(sessions, default=_json_default)
        return _json.loads(_call(self._native.add, text, tenant))

    def delete(
        self, tenant: str, session_id: Optional[str] = None, item_id: Optional[int] = None
    ) -> Dict[str, Any]:
        """Forgets a whole tenant, one of its sessions, or one item (an id from ``search`` or
        ``add``). Searches no longer see it when this returns; ``compact()`` removes the
        bytes. Raises ``NotFound`` when nothing live matches."""
        return _json.loads(_call(self._native.delete, tenant, session_id, item_id))

    def compact(self) -> Dict[str, Any]:
        """Removes deleted rows from disk and merges small segments; returns the report."""
        return _json.loads(_call(self._native.compact))

    # -- reading -------------------------------------------------------------------------

    def search(
        self,
        tenant: str,
        query: str,
        k: int = DEFAULT_K,
        date: Optional[DateLike] = None,
        *,
        recent_turns: Sequence[str] = (),
        as_table: bool = False,
        explain: bool = False,
        **stages: Any,
    ) -> Any:
        """The tenant's top ``k`` items for ``query``, best first.

        ``date``: when the question is asked (time references such as "last weekend", and
        recency); default now. ``recent_turns``: the conversation's last turns, oldest
        first, searched with the query when it is ambiguous alone. ``**stages``: ranking
        stages by the names of ``memdex search``'s flags (see ``STAGES``), e.g.
        ``retriever="dense"``, ``dense_weight=0.7``, ``time="boost"``.
        ``explain=True``: each hit's ``explain`` holds its score after every stage.
        Returns ``Hits`` (a list of ``Hit`` with the search's ``timings``), or with
        ``as_table=True`` a ``pyarrow.Table``.
        """
        answer = self._search(tenant, query, k, date, recent_turns, stages, False, explain)
        hits = [Hit(**{f: h.get(f) for f in _HIT_FIELDS}) for h in answer["hits"]]
        if as_table:
            return hits_table(hits)
        timings = answer.get("timings")
        if timings is not None:
            timings = {name[: -len("_us")]: int(us) for name, us in timings.items()}
        return Hits(hits, timings)

    def context(
        self,
        tenant: str,
        query: str,
        k: int = DEFAULT_K,
        date: Optional[DateLike] = None,
        *,
        recent_turns: Sequence[str] = (),
        **stages: Any,
    ) -> Dict[str, Any]:
        """``search``'s hits as the reading stage wants them: ``{query, question_date,
        items (sorted by time), prompt}`` (a Chain-of-Note prompt), ready for an LLM."""
        return self._search(tenant, query, k, date, recent_turns, stages, True)

    def _search(
        self,
        tenant: str,
        query: str,
        k: int,
        date: Optional[DateLike],
        recent_turns: Sequence[str],
        stages: Dict[str, Any],
        context: bool,
        explain: bool = False,
    ) -> Dict[str, Any]:
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        turns = _texts(recent_turns, "recent_turns")
        text = _call(
            self._native.search,
            tenant,
            query,
            _k(k),
            _date_text(date),
            turns,
            _json.dumps(stages),
            context,
            explain,
        )
        return _json.loads(text)

    def embed(self, texts: Union[str, Iterable[str]], query: bool = False) -> "numpy.ndarray":
        """``texts`` embedded by the store's model: a float32 array of shape (len, dim),
        normalised as the model says. ``query=True`` adds the model's query prefix (E5)."""
        import numpy

        if isinstance(texts, str):
            texts = [texts]
        data, rows, dim = _call(self._native.embed, _texts(texts, "texts"), query)
        return numpy.frombuffer(data, dtype="<f4").reshape(rows, dim)

    def tenants(self) -> Dict[str, int]:
        """Every tenant with live items, and how many."""
        return dict(_call(self._native.tenants))

    def sessions(self, tenant: str) -> List[Dict[str, Any]]:
        """The tenant's live sessions, oldest first: ``{session_id, timestamp_ms, items}``."""
        return _json.loads(_call(self._native.sessions, tenant))

    def items(self, tenant: str, session_id: Optional[str] = None) -> List[Dict[str, Any]]:
        """The tenant's live items in timeline order (of one session if given)."""
        return _json.loads(_call(self._native.items, tenant, session_id))

    # -- the rest --------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return str(self._native.model)

    @property
    def dim(self) -> int:
        return int(self._native.dim)

    @property
    def device(self) -> str:
        return str(self._native.device)

    @property
    def store(self) -> str:
        return str(self._native.store)

    def close(self) -> None:
        """Finishes queued work and releases the store (idempotent)."""
        self._native.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"memdex.Memory({self.store!r}, model={self.model!r}, device={self.device!r})"


def read_sessions(source: Any, format: Optional[str] = None) -> List[Dict[str, Any]]:
    """The sessions of a file (``source`` a path) or of values in memory (a session, a
    LongMemEval question instance, a LoCoMo conversation, or a list of them), read by memdex's
    format registry: the readers and checks of ``memdex index --format``. ``format``: one of
    ``FORMATS`` (None: told from the file's first bytes, or from each value's keys). Each
    session comes in memdex's shape, ``{tenant, session_id, date, turns: [{role, content}]}``
    (``date`` RFC 3339, to the millisecond), ready for ``Memory.add`` or ``build``."""
    if isinstance(source, (str, os.PathLike)):
        text = _call(_memdex.read_sessions, path=os.fspath(source), format=format)
    else:
        value = _json.dumps(source, default=_json_default)
        text = _call(_memdex.read_sessions, value_json=value, format=format)
    return _json.loads(text)


def build(
    store: Union[str, "os.PathLike[str]"],
    sessions: Iterable[Mapping[str, Any]],
    format: str = "jsonl",
    model: Optional[str] = None,
    device: str = "auto",
    granularity: str = "round",
) -> Dict[str, Any]:
    """Builds (or extends) the store in ``store`` from ``sessions`` (memdex's session shape,
    as ``read_sessions`` gives them) through memdex's batch build, the one ``memdex index``
    runs (read, embed and write overlapped; a segment per batch), each session cut into
    ``granularity`` items and keyed as ``format`` does by default (LongMemEval and LoCoMo: the
    user turns). A new store gets ``memdex index``'s defaults; an existing one keeps its own.
    Idempotent: sessions already stored are skipped. The store must not be open (a
    ``Memory`` or ``memdex serve`` holds it). Returns ``{report, tenants}``: the index report
    and how many tenants the store holds."""
    if not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a path, not {type(store).__name__}")
    text = _json.dumps(list(sessions), default=_json_default)
    out = _call(_memdex.build, os.fspath(store), text, format, model, device, granularity)
    return _json.loads(out)


def hits_table(hits: Sequence[Hit]) -> "pyarrow.Table":
    """Hits as a ``pyarrow.Table`` (``timestamp`` as UTC milliseconds)."""
    import pyarrow as pa

    schema = pa.schema(
        [
            ("rank", pa.int32()),
            ("score", pa.float32()),
            ("item_id", pa.uint64()),
            ("tenant", pa.string()),
            ("session_id", pa.string()),
            ("turn", pa.uint32()),
            ("position", pa.uint64()),
            ("timestamp", pa.timestamp("ms", tz="UTC")),
            ("role", pa.string()),
            ("value", pa.string()),
        ]
    )
    cols = {name: [getattr(h, name) for h in hits] for name in _HIT_FIELDS if name != "explain"}
    cols["timestamp"] = cols.pop("timestamp_ms")
    return pa.table({f.name: pa.array(cols[f.name], type=f.type) for f in schema}, schema=schema)


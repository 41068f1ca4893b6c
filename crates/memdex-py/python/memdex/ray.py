"""memdex on Ray: tenant-sharded stores built by a Ray Data job, served by Ray Serve.

Sharding: a tenant lives in exactly one shard, ``shard_of(tenant, shards)`` (a stable hash,
the same in every process and on every node); each shard is a normal memdex store
(``ROOT/shard-0000``, ...), which ``memdex search``/``serve``/``memdex.Memory`` open as is.

* Offline, ``build_shards``: memdex's format registry reads the input (any format ``memdex
  index`` reads: JSONL, LongMemEval, LoCoMo; ``memdex.read_sessions``) into one record per
  session, ``ray.data`` holds them, ``map_batches`` tags each record with its shard, and
  ``groupby(shard).map_groups`` hands each shard's sessions to one ``ShardWriter`` actor (a
  memdex actor: it builds the shards it is given, one at a time, through memdex's batch build,
  ``memdex.build``, keyed as the input format does by default), so each store has exactly one
  writer, as memdex requires. Actors ask for ``num_gpus`` when the cluster has GPUs.
* Online, ``serve_app``: one Ray Serve deployment per shard (``ShardReplica``: one replica,
  the store's single writer, holding a ``memdex.Memory``) and a ``Router`` deployment that
  sends each tenant's request to the replica holding its shard.

The same code runs on a multi-node cluster (``ray.init(address="auto")``): see
docs/scale-out.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, Iterator, List, Optional

__all__ = [
    "shard_of",
    "shard_dir",
    "build_shards",
    "ShardWriter",
    "ShardReplica",
    "Router",
    "serve_app",
]


def shard_of(tenant: str, shards: int) -> int:
    """The shard holding ``tenant``: the first 8 bytes of its BLAKE2b digest, modulo
    ``shards`` (stable across processes, unlike ``hash()``)."""
    if shards < 1:
        raise ValueError(f"shards must be ≥ 1, got {shards}")
    digest = hashlib.blake2b(tenant.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def shard_dir(root: str, shard: int) -> str:
    return os.path.join(root, f"shard-{shard:04d}")


def _records(path: str, fmt: str) -> Iterator[Dict[str, str]]:
    """``{"tenant", "record"}`` per session of the file, read by memdex's format registry
    (``memdex.read_sessions``: the readers and checks of ``memdex index --format``), the
    session kept as JSON text so Ray's schema inference never rewrites dates or shapes."""
    import memdex

    for s in memdex.read_sessions(path, fmt):
        yield {"tenant": s["tenant"], "record": json.dumps(s)}


class ShardWriter:
    """A memdex actor: builds whole shards (``map_groups`` gives it one shard's sessions at a
    time; it is that store's only writer) through memdex's batch build (``memdex.build``, the
    one ``memdex index`` runs), each session keyed as its input format does by default."""

    def __init__(self, root: str, shards: int, model: Optional[str], device: str,
                 fmt: str = "jsonl") -> None:
        self.root, self.shards, self.model, self.device = root, shards, model, device
        self.fmt = fmt

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, List[Any]]:
        import memdex

        shard_ids = {int(s) for s in batch["shard"]}
        if len(shard_ids) != 1:
            raise RuntimeError(f"one shard per group expected, got {sorted(shard_ids)}")
        shard = shard_ids.pop()
        sessions = [json.loads(r) for r in batch["record"]]
        out = memdex.build(shard_dir(self.root, shard), sessions, format=self.fmt,
                           model=self.model, device=self.device)
        return {"shard": [shard], "records": [len(sessions)],
                "items_written": [out["report"]["items_written"]], "tenants": [out["tenants"]]}


def _writer_pool(cpus: float, per_writer: float, shards: int,
                 concurrency: Optional[int]) -> int:
    """The writer pool's size: the requested one if it leaves at least one CPU for the
    tasks feeding it, else ``ValueError``; by default the largest such pool (≤ ``shards``)."""
    if per_writer <= 0:
        raise ValueError(f"num_cpus per writer must be > 0, got {per_writer}")
    room = int((cpus - 1.0) // per_writer)
    if concurrency is None:
        if room < 1:
            raise ValueError(
                f"the cluster has {cpus:g} CPUs: a writer needs {per_writer:g} and the shuffle "
                "feeding the writers needs 1 more (lower num_cpus or add CPUs)")
        return max(1, min(shards, room))
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, got {concurrency}")
    if concurrency > room:
        raise ValueError(
            f"{concurrency} writers × {per_writer:g} CPUs would take all of the cluster's "
            f"{cpus:g} CPUs and leave none for the shuffle feeding them (the job would hang): "
            f"use concurrency ≤ {max(room, 0)} or a smaller num_cpus")
    return concurrency


def build_shards(
    input_path: str,
    root: str,
    shards: int,
    fmt: str = "jsonl",
    model: Optional[str] = None,
    device: str = "auto",
    concurrency: Optional[int] = None,
    num_gpus: Optional[float] = None,
    num_cpus: float = 1.0,
) -> List[Dict[str, Any]]:
    """Builds ``shards`` memdex stores under ``root`` from ``input_path`` with a Ray Data job
    on the connected cluster (``ray.init`` first). ``num_gpus`` per writer actor: default 1
    when the cluster has GPUs (with ``device="auto"`` the model then runs on CUDA if memdex
    was built with it), else 0. ``num_cpus`` per writer actor (default 1).

    ``concurrency`` writer actors (default: as many as the cluster's CPUs allow after one CPU
    is left for the tagging and shuffle tasks, at most ``shards``). The writers hold their
    CPUs for the whole job, so a pool that takes every CPU would leave the shuffle feeding
    them unschedulable and the job would hang: that is refused with ``ValueError``.

    Idempotent like ``memdex index``: sessions already stored are skipped. Returns one row per
    shard: ``{shard, records, items_written, tenants}``, and writes ``root/shards.json`` (the
    shard count the router needs)."""
    import ray

    resources = ray.cluster_resources()
    if num_gpus is None:
        num_gpus = 1.0 if resources.get("GPU", 0) >= 1 else 0.0
    concurrency = _writer_pool(resources.get("CPU", 0.0), num_cpus, shards, concurrency)
    os.makedirs(root, exist_ok=True)
    ds = ray.data.from_items(list(_records(input_path, fmt)))

    def tag(batch: Dict[str, Any]) -> Dict[str, Any]:
        batch["shard"] = [shard_of(t, shards) for t in batch["tenant"]]
        return batch

    out = (
        ds.map_batches(tag, batch_format="numpy")
        .groupby("shard")
        .map_groups(
            ShardWriter,
            fn_constructor_args=(os.path.abspath(root), shards, model, device, fmt),
            concurrency=concurrency,
            num_gpus=num_gpus,
            num_cpus=num_cpus,
            batch_format="numpy",
        )
        .take_all()
    )
    rows = sorted(
        ({k: int(v) for k, v in r.items()} for r in out), key=lambda r: r["shard"]
    )
    with open(os.path.join(root, "shards.json"), "w") as f:
        json.dump({"shards": shards, "hash": "blake2b-64 mod shards", "built": rows}, f, indent=1)
    return rows


# -- online: Ray Serve ----------------------------------------------------------------------


class ShardReplica:
    """Holds one shard's store open (its single writer) and answers its tenants."""

    def __init__(self, path: str, model: Optional[str], device: str) -> None:
        import memdex

        self.mem = memdex.Memory(path, model=model, device=device)

    def search(self, tenant: str, query: str, k: Optional[int] = None, date: Optional[str] = None,
               recent_turns: Optional[List[str]] = None,
               stages: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        import memdex

        k = memdex.DEFAULT_K if k is None else k
        hits = self.mem.search(tenant, query, k, date, recent_turns=recent_turns or (),
                               **(stages or {}))
        return [h.__dict__ for h in hits]

    def add(self, sessions: Any, tenant: Optional[str] = None) -> List[Dict[str, Any]]:
        return self.mem.add(sessions, tenant)

    def delete(self, tenant: str, session_id: Optional[str] = None,
               item_id: Optional[int] = None) -> Dict[str, Any]:
        return self.mem.delete(tenant, session_id, item_id)

    def tenants(self) -> Dict[str, int]:
        return self.mem.tenants()


class Router:
    """Routes each request to the replica holding its tenant's shard. HTTP: POST a JSON body
    ``{"op": "search"|"add"|"delete", "tenant": ..., ...}`` (the ``ShardReplica`` method's
    arguments); memdex errors answer ``{"error": {"type", "message"}}``."""

    def __init__(self, *replicas: Any) -> None:
        self.replicas = list(replicas)

    def shard(self, tenant: str) -> int:
        return shard_of(tenant, len(self.replicas))

    async def call(self, op: str, tenant: str, **kwargs: Any) -> Any:
        if op not in ("search", "add", "delete"):
            raise ValueError(f"op must be search, add or delete, not {op!r}")
        handle = self.replicas[self.shard(tenant)]
        return await getattr(handle, op).remote(tenant=tenant, **kwargs)

    async def __call__(self, request: Any) -> Any:
        import memdex

        try:
            body = await request.json()
            if not isinstance(body, dict) or not isinstance(body.get("tenant"), str):
                raise memdex.InvalidInput("body: a JSON object with a string `tenant`")
            op = body.pop("op", "search")
            return {"shard": self.shard(body["tenant"]), "result": await self.call(op, **body)}
        except (memdex.MemdexError, ValueError, TypeError) as e:
            e = _cause(e)
            return {"error": {"type": type(e).__name__, "message": str(e)}}


def _cause(e: BaseException) -> BaseException:
    """The replica's own exception: an error raised in a replica reaches the router as Ray's
    ``RayTaskError(NotFound)`` (a subclass of both, its message a remote traceback); its
    ``cause`` is the memdex exception with memdex's message."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e


def serve_app(root: str, model: Optional[str] = None, device: str = "auto",
              num_gpus: float = 0.0) -> Any:
    """The Ray Serve application over the shards under ``root`` (``shards.json`` names their
    count): ``serve.run(serve_app(root))``. Each shard is one deployment with one replica
    (its store's only writer); the router may have many replicas."""
    from ray import serve

    with open(os.path.join(root, "shards.json")) as f:
        shards = int(json.load(f)["shards"])
    replica = serve.deployment(ShardReplica, num_replicas=1,
                               ray_actor_options={"num_gpus": num_gpus, "num_cpus": 0.5})
    router = serve.deployment(Router, ray_actor_options={"num_cpus": 0.25})
    handles = [
        replica.options(name=f"memdex-shard-{i:04d}").bind(
            os.path.abspath(shard_dir(root, i)), model, device)
        for i in range(shards)
    ]
    return router.bind(*handles)

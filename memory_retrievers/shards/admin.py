"""Administration of a sharded store (``ShardedMemoryStore.admin``).

Calls that name a namespace (``export``, ``expire`` of one namespace) run on its shard; the others
(``optimize``, ``cluster``, ``purge``, ``stats``, ``expire`` of all, ``flush_access``) run on every shard, one
after the other: each shard is its own table, so one shard's rewrite never waits for another's.
Resharding is :func:`memory_retrievers.reshard` (``resharding.py``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.runtime.twins import sync_twin
from memory_retrievers.storage.cluster import ClusterResult
from memory_retrievers.storage.stats import IndexCoverage, NamespaceCounts, StoreStats
from memory_retrievers.storage.transfer import RestoreResult, parse_restore_record
from memory_retrievers.store.admin import StoreAdmin
from memory_retrievers.store.call_checks import checker
from memory_retrievers.store.memory_store import MemoryStore


class _Sharded(Protocol):
    """What the admin needs of a :class:`~memory_retrievers.ShardedMemoryStore` (which imports this module)."""

    @property
    def config(self) -> Any: ...
    @property
    def uri(self) -> str: ...
    @property
    def table_name(self) -> str: ...
    def shard_index(self, namespace: str) -> int: ...
    async def ashard(self, index: int) -> MemoryStore: ...
    async def ashard_for(self, namespace: str) -> MemoryStore: ...
    def _open_shard(self, index: int) -> MemoryStore | None: ...
    async def _every_shard(self) -> builtins.list[MemoryStore]: ...
    def _opened(self) -> builtins.list[MemoryStore]: ...
    def _ensure_open(self) -> None: ...
    def _check_process(self) -> None: ...


__all__ = ["ShardedAdmin", "ShardedClusterResult", "ShardedStats"]


P = ParamSpec("P")
R = TypeVar("R")


def _sync(method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]) -> Callable[Concatenate[Any, P], R]:
    """:func:`~memory_retrievers.runtime.twins.sync_twin` typed for an override (its ``self`` is the subclass)."""
    return sync_twin(method)


@dataclass(frozen=True, slots=True)
class ShardedStats(StoreStats):
    """:class:`~memory_retrievers.storage.stats.StoreStats` summed over the shards, and each shard's own.

    ``rows``, ``fragments``, ``small_fragments``, ``versions`` and the byte counts are sums;
    ``namespaces`` lists every shard's (a namespace lives in one shard); ``indexes`` adds up the
    coverage of each index name; ``version`` is the highest shard version (each shard has its own
    sequence: see ``shards``).

    Attributes:
        shards: Each shard's statistics, in shard order.
    """

    shards: tuple[StoreStats, ...] = field(default=())

    @classmethod
    def combine(cls, uri: str, table: str, shards: builtins.list[StoreStats]) -> ShardedStats:
        """The statistics of a sharded store at ``uri`` from its shards'."""
        coverage: dict[str, IndexCoverage] = {}
        for index in (i for s in shards for i in s.indexes):
            seen = coverage.get(index.name)
            coverage[index.name] = (
                index
                if seen is None
                else IndexCoverage(
                    index.name,
                    index.index_type,
                    index.columns,
                    seen.indexed_rows + index.indexed_rows,
                    seen.unindexed_rows + index.unindexed_rows,
                )
            )
        namespaces: builtins.list[NamespaceCounts] = sorted((n for s in shards for n in s.namespaces), key=_name)
        disks = [s.disk_bytes for s in shards]
        return cls(
            uri=uri,
            table=table,
            embedder=shards[0].embedder,
            dimension=shards[0].dimension,
            schema_version=shards[0].schema_version,
            rows=sum(s.rows for s in shards),
            namespaces=tuple(namespaces),
            indexes=tuple(coverage[name] for name in sorted(coverage)),
            fragments=sum(s.fragments for s in shards),
            small_fragments=sum(s.small_fragments for s in shards),
            version=max(s.version for s in shards),
            versions=sum(s.versions for s in shards),
            data_bytes=sum(s.data_bytes for s in shards),
            disk_bytes=None if None in disks else sum(d for d in disks if d is not None),
            shards=tuple(shards),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (each shard's own under ``shards``)."""
        return asdict(self)


@dataclass(frozen=True)
class ShardedClusterResult(ClusterResult):
    """:class:`~memory_retrievers.storage.cluster.ClusterResult` summed over the shards, and each shard's own.

    ``moved``, ``skipped``, ``runs_before``, ``runs_after`` and ``elapsed_s`` are sums (the shards
    are clustered one after the other); ``merged`` is whether every shard merged its runs.

    Attributes:
        shards: Each shard's result, in shard order.
    """

    shards: tuple[ClusterResult, ...] = field(default=())

    @classmethod
    def combine(cls, shards: builtins.list[ClusterResult]) -> ShardedClusterResult:
        """The result of a pass over every shard from the shards' own."""
        return cls(
            moved=sum(s.moved for s in shards),
            skipped=sum(s.skipped for s in shards),
            runs_before=sum(s.runs_before for s in shards),
            runs_after=sum(s.runs_after for s in shards),
            merged=all(s.merged for s in shards),
            elapsed_s=sum(s.elapsed_s for s in shards),
            shards=tuple(shards),
        )


def _name(counts: NamespaceCounts) -> str:
    return counts.namespace


class ShardedAdmin(StoreAdmin):
    """The administrative operations of a :class:`~memory_retrievers.ShardedMemoryStore`, across its shards.

    Args:
        store: The sharded store (``store.admin`` makes this for you).
    """

    def __init__(self, store: _Sharded) -> None:
        super().__init__(store)  # type: ignore[arg-type]  # a ShardedMemoryStore is a MemoryStore
        self._sharded = store

    async def apurge(self, *, remove_uncommitted: bool = False) -> None:
        """Purge every shard (see :meth:`StoreAdmin.purge`; it opens every shard)."""
        if not isinstance(remove_uncommitted, bool):  # before the shards open (bad input creates nothing)
            raise InvalidInputError(f"remove_uncommitted must be True or False, got {remove_uncommitted!r}")
        for shard in await self._every():
            await shard.admin.apurge(remove_uncommitted=remove_uncommitted)

    async def aoptimize(self) -> None:
        """Optimize every shard (see :meth:`StoreAdmin.optimize`)."""
        for shard in await self._every():
            await shard.admin.aoptimize()

    async def acluster(self) -> ShardedClusterResult:
        """Cluster every shard, one after the other (see :meth:`StoreAdmin.cluster`; it opens every shard)."""
        return ShardedClusterResult.combine([await shard.admin.acluster() for shard in await self._every()])

    async def aexpire(self, namespace: str | None = None) -> int:
        """Delete expired memories of one namespace (on its shard) or of all (every shard); returns how many."""
        if namespace is not None:
            return await (await self._sharded.ashard_for(namespace)).admin.aexpire(namespace)
        return sum([await shard.admin.aexpire() for shard in await self._every()])

    async def aflush_access(self) -> int:
        """Write every open shard's pending access statistics (a shard never opened has none)."""
        self._sharded._check_process()
        return sum([await shard.admin.aflush_access() for shard in self._sharded._opened()])

    async def aexport(
        self, namespace: str, *, limit: int | None = None, offset: int = 0, include_vectors: bool = True
    ) -> builtins.list[dict[str, Any]]:
        """Export one namespace from its shard (see :meth:`StoreAdmin.export`)."""
        index = self._sharded.shard_index(namespace)
        if self._sharded._open_shard(index) is None:  # bad paging must not create the shard
            _EXPORT(
                cast(MemoryStore, self._sharded),
                (namespace,),
                {"limit": limit, "offset": offset, "include_vectors": include_vectors},
            )
        shard = await self._sharded.ashard(index)
        return await shard.admin.aexport(namespace, limit=limit, offset=offset, include_vectors=include_vectors)

    async def arestore(self, records: Iterable[Mapping[str, Any]], *, namespace: str | None = None) -> RestoreResult:
        """Restore export records, each on its namespace's shard (one commit per shard).

        Every record is checked before anything is written, as :meth:`StoreAdmin.restore`.
        """
        self._sharded._ensure_open()
        if isinstance(records, (str, bytes, Mapping)):
            raise InvalidInputError("records must be a list of dicts, e.g. what export() returned")
        groups: dict[int, builtins.list[Mapping[str, Any]]] = {}
        for i, raw in enumerate(records):
            try:
                row = parse_restore_record(raw, self._sharded.config, namespace=namespace)
            except InvalidInputError as exc:
                raise InvalidInputError(f"record {i}: {exc}") from None
            groups.setdefault(self._sharded.shard_index(row.row["namespace"]), []).append(raw)
        added = replaced = embedded = 0
        for index, raws in sorted(groups.items()):
            done = await (await self._sharded.ashard(index)).admin.arestore(raws, namespace=namespace)
            added, replaced, embedded = added + done.added, replaced + done.replaced, embedded + done.embedded
        return RestoreResult(added=added, replaced=replaced, embedded=embedded)

    async def astats(self) -> ShardedStats:
        """Statistics of every shard, and their sums (see :class:`ShardedStats`)."""
        shards = [await shard.admin.astats() for shard in await self._every()]
        return ShardedStats.combine(self._sharded.uri, self._sharded.table_name, shards)

    async def _every(self) -> builtins.list[MemoryStore]:
        self._sharded._ensure_open()
        return await self._sharded._every_shard()

    purge = _sync(apurge)
    optimize = _sync(aoptimize)
    cluster = _sync(acluster)
    expire = _sync(aexpire)
    flush_access = _sync(aflush_access)
    export = _sync(aexport)
    restore = _sync(arestore)
    stats = _sync(astats)


_EXPORT = checker(StoreAdmin.aexport)

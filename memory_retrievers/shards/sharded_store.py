"""A store over several LanceDB tables ("shards"), each namespace routed to one of them by a stable hash.

Each table is its own manifest and commit sequence: shards spread many tenants' commits (and their
object-store requests) over independent sequences. A namespace lives in exactly one shard, chosen by
:func:`shard_of` (a stable hash: the same in every process), so every process finds a tenant there.

:class:`ShardedMemoryStore` is a :class:`~memory_retrievers.MemoryStore` (the retriever, the
LangChain and LlamaIndex adapters and :class:`~memory_retrievers.PerProcess` take it as one): a call
that names a namespace runs on that namespace's shard; :meth:`~ShardedMemoryStore.namespaces`,
``close``/``flush`` and ``store.admin`` (``optimize``, ``purge``, ``stats``...) run on every shard.
Shards open on first use, so a process serving a few tenants opens only their shards.
Moving to another number of shards: :func:`memory_retrievers.reshard`.
"""

from __future__ import annotations

import builtins
import functools
import os
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import pyarrow as pa

import memory_retrievers.runtime.loop as _loop
from memory_retrievers.config import StoreConfig, validated
from memory_retrievers.embeddings import Embedder
from memory_retrievers.errors import ConfigError, InvalidInputError
from memory_retrievers.filters import MemoryFilter
from memory_retrievers.models import AddedMemory
from memory_retrievers.runtime.twins import sync_twin
from memory_retrievers.shards.admin import ShardedAdmin
from memory_retrievers.shards.calls import check_cloud, check_shards, namespace_at, table_identity
from memory_retrievers.shards.opening import ShardOpener
from memory_retrievers.shards.routing import shard_of
from memory_retrievers.storage.connect import CloudAccess
from memory_retrievers.storage.location import TableLocation
from memory_retrievers.storage.vectors import VectorMaker
from memory_retrievers.store.base import (
    DEFAULT_TABLE,
    FLUSH_TIMEOUT_S,
    _now_utc,
    check_embedder,
    check_table_name,
    deadline_in,
)
from memory_retrievers.store.call_checks import Checker, check_batch_size, check_progress, checker
from memory_retrievers.store.memory_store import MemoryStore
from memory_retrievers.store.pending import PendingWrite
from memory_retrievers.store.reads import ReadAPI
from memory_retrievers.store.writes import WriteAPI
from memory_retrievers.validation import validate_record

if TYPE_CHECKING:
    from memory_retrievers.store.admin import StoreAdmin
    from memory_retrievers.store.barrier import Ticket

__all__ = ["ShardedMemoryStore", "shard_of"]

P = ParamSpec("P")
R = TypeVar("R")


def _sync(method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]) -> Callable[Concatenate[Any, P], R]:
    """:func:`~memory_retrievers.runtime.twins.sync_twin` typed for an override (its ``self`` is the subclass)."""
    return sync_twin(method)


def _routed(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]], position: int | None = None
) -> Callable[Concatenate[ShardedMemoryStore, P], Coroutine[Any, Any, R]]:
    """``method`` run on the shard of the namespace the call names (``position``: its index in ``*args``).

    A shard not open yet opens only once the arguments passed the method's own checks: opening
    creates the shard's table, and a refused call must leave nothing behind.
    """
    check = checker(method)

    @functools.wraps(method)
    async def routed(self: ShardedMemoryStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        index = self.shard_index(namespace_at(args, kwargs, position, method.__name__))
        self._ensure_open()  # a closed (or forked-from) sharded store refuses even where its shard would not
        shard = self._open_shard(index)
        if shard is None:
            args, kwargs = check(self, args, kwargs)  # type: ignore[assignment]
            shard = await self.ashard(index)
        return await method(shard, *args, **kwargs)

    return routed


class ShardedMemoryStore(MemoryStore):
    """A :class:`~memory_retrievers.MemoryStore` over several LanceDB tables, routed by namespace.

    Args:
        shards: One location per shard (a local folder or LanceDB URI, e.g. one ``s3://`` prefix
            each), opened on first use; or open :class:`~memory_retrievers.MemoryStore` objects
            (one embedder; :meth:`close` closes them too). The order matters: shard ``i`` holds
            the namespaces :func:`shard_of` maps to ``i``. At least one.
        table_name: The table inside each location (default: the table of the open stores given,
            when they share one, else ``"memories"``).
        embedder: One embedder for every shard (default: the offline all-MiniLM-L6-v2 model).
        config: :class:`~memory_retrievers.StoreConfig` of every shard.
        storage_options: LanceDB storage options of every shard (object-store credentials...).
        clock: As for :class:`~memory_retrievers.MemoryStore`.
        api_key: For the ``db://`` shards (LanceDB Cloud or Enterprise), with ``region`` and
            ``host_override`` (the other shards take none).
        region: See ``api_key``.
        host_override: See ``api_key``.

    Raises:
        ConfigError: No shards, a location that is not a str or path, the same location twice,
            stores with different embedders, a sharded store given as a shard, or Cloud settings
            that are not non-empty strings or given without a ``db://`` shard.
    """

    def __init__(
        self,
        shards: Sequence[str | os.PathLike[str] | MemoryStore],
        *,
        table_name: str | None = None,
        embedder: Embedder | None = None,
        config: StoreConfig | Mapping[str, Any] | None = None,
        storage_options: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        api_key: str | None = None,
        region: str | None = None,
        host_override: str | None = None,
    ) -> None:
        given = check_shards(shards, ShardedMemoryStore)
        opened = [s for s in given if isinstance(s, MemoryStore)]
        first = opened[0] if opened else None
        self._config = (
            first.config if first is not None and config is None else validated(StoreConfig, config, "StoreConfig")
        )
        self._embedder = check_embedder(embedder if embedder is not None or first is None else first.embedder)
        for store in opened:
            if store.embedder.name != self._embedder.name or store.embedder.dimension != self._embedder.dimension:
                raise ConfigError(
                    f"every shard must use one embedder: {store!r} uses {store.embedder.name!r}, the sharded "
                    f"store {self._embedder.name!r}; open the shards with the same embedder"
                )
        self._clock = clock or (first.clock if first is not None else _now_utc)
        # Query embedding needs no shard; ``_vectors`` also checks a caller's vectors before one opens.
        self._vectors = self._queries = VectorMaker(
            self._embedder, int(self._embedder.dimension), self._config.embed_batch_size
        )
        shared = {s.table_name for s in opened}
        self._table_name = check_table_name(
            table_name if table_name is not None else shared.pop() if len(shared) == 1 else DEFAULT_TABLE
        )
        self._storage_options = storage_options
        self._locations = tuple(s.uri if isinstance(s, MemoryStore) else str(s) for s in given)
        self._cloud = check_cloud(self._locations, api_key=api_key, region=region, host_override=host_override)
        self._cloud_id = CloudAccess(**self._cloud).identity() if self._cloud else None
        self._tables = tuple(s.table_name if isinstance(s, MemoryStore) else self._table_name for s in given)
        if len({table_identity(*shard) for shard in zip(self._locations, self._tables, strict=True)}) < len(given):
            raise ConfigError(f"shards must be distinct tables; {list(self._locations)} names one twice")
        self._shards = ShardOpener(self._construct, {i: s for i, s in enumerate(given) if isinstance(s, MemoryStore)})
        self._closed = False
        self._pid = os.getpid()  # each shard is tracked by the lifecycle itself (fork, exit) once opened

    @classmethod
    async def aopen(cls, *args: Any, **kwargs: Any) -> MemoryStore:
        """Not needed: constructing a :class:`ShardedMemoryStore` does no I/O (shards open on first use).

        Raises:
            ConfigError: Always; construct it instead, also in async code.
        """
        raise ConfigError("ShardedMemoryStore opens its shards on first use: construct it, ShardedMemoryStore([...])")

    @classmethod
    def from_table(cls, *args: Any, **kwargs: Any) -> MemoryStore:
        """Not for a sharded store: pass open stores as shards, ``ShardedMemoryStore([MemoryStore.from_table(t)...])``.

        Raises:
            ConfigError: Always.
        """
        raise ConfigError("a ShardedMemoryStore is not one table: ShardedMemoryStore([MemoryStore.from_table(t), ...])")

    afrom_table = from_table  # type: ignore[assignment]

    # ------------------------------------------------------------------ the shards
    @property
    def uri(self) -> str:
        """Names the shards (``shards://<location>,<location>...``); :attr:`locations` lists them."""
        return "shards://" + ",".join(self._locations)

    @property
    def table_name(self) -> str:
        """The table inside each location."""
        return self._table_name

    @property
    def tables(self) -> tuple[str, ...]:
        """Each shard's table, in shard order (an open store given as a shard keeps its own)."""
        return self._tables

    @property
    def locations(self) -> tuple[str, ...]:
        """Each shard's location, in shard order."""
        return self._locations

    def table_locations(self) -> builtins.list[TableLocation]:
        """Each shard's table, where it lives and how to reach it, in shard order (no shard is opened).

        An open store given as a shard reports its own settings; the others, the sharded store's
        storage options and, for a ``db://`` shard, its Cloud settings. The API key and storage
        option values never appear in an entry's repr.
        """
        given = self._shards.opened()
        cloud = CloudAccess(**self._cloud) if self._cloud else None
        return [
            given[i].table_locations()[0]
            if i in given
            else TableLocation(where, table, self._storage_options, cloud if where.startswith("db://") else None)
            for i, (where, table) in enumerate(zip(self._locations, self._tables, strict=True))
        ]

    @property
    def open_shards(self) -> builtins.list[int]:
        """The shards opened so far (by a call on one of their namespaces, or an admin call on all)."""
        return sorted(self._shards.opened())

    def __repr__(self) -> str:
        shards, name = len(self._locations), self._embedder.name
        return f"ShardedMemoryStore({shards} shards, table={self._table_name!r}, embedder={name!r})"

    def shard_index(self, namespace: str) -> int:
        """Which shard holds ``namespace`` (see :func:`shard_of`).

        Raises:
            InvalidInputError: Not a valid namespace.
        """
        return shard_of(self._ns(namespace), len(self._locations))

    async def ashard(self, index: int) -> MemoryStore:
        """Shard ``index``'s store, opened now if it is not yet.

        Raises:
            InvalidInputError: No such shard.
            StorageError: It could not be opened (the next call tries again).
        """
        self._ensure_open()
        self._check_int(index, "index", 0, len(self._locations) - 1)
        return await self._shards.open(index)

    def shard(self, index: int) -> MemoryStore:
        """Sync twin of :meth:`ashard`."""
        store = self._shards.get(index)
        return store if store is not None else _loop.run_sync(self.ashard(index))

    async def ashard_for(self, namespace: str) -> MemoryStore:
        """The store of the shard that holds ``namespace``, opened now if needed."""
        return await self.ashard(self.shard_index(namespace))

    def _construct(self, index: int) -> MemoryStore:
        """Shard ``index``'s store, constructed without I/O (the :class:`ShardOpener` opens it)."""
        return MemoryStore(
            self._locations[index],
            table_name=self._tables[index],
            embedder=self._embedder,
            config=self._config,
            clock=self._clock,
            storage_options=self._storage_options,
            **(self._cloud if self._locations[index].startswith("db://") else {}),
            _open=False,
        )

    async def _every_shard(self) -> builtins.list[MemoryStore]:
        return [await self.ashard(i) for i in range(len(self._locations))]

    def _opened(self) -> builtins.list[MemoryStore]:
        return builtins.list(self._shards.opened().values())

    def _open_shard(self, index: int) -> MemoryStore | None:
        """Shard ``index``'s store if it is open, else None (no I/O)."""
        return self._shards.get(index)

    def _sync_shard_for(
        self, check: Checker, namespace: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> MemoryStore:
        """The shard of ``namespace`` for a sync call; one not open yet opens once ``check`` passed the arguments."""
        index = self.shard_index(namespace)
        store = self._open_shard(index)
        if store is None:
            check(self, args, kwargs)
            store = self.shard(index)
        return store

    @functools.cached_property
    def admin(self) -> StoreAdmin:
        """Administration across the shards (see :class:`~memory_retrievers.shards.admin.ShardedAdmin`)."""
        return ShardedAdmin(self)

    async def aclose(self, *, timeout: float | None = FLUSH_TIMEOUT_S) -> None:
        """Close every open shard (each writes its pending access statistics and queued writes).

        ``timeout`` bounds the whole close, as :meth:`MemoryStore.close`'s does: every shard's
        queued writes are waited for first, so a close that raises ``FlushTimeoutError`` leaves
        every shard open.
        """
        if self._closed or self._forked():
            return
        deadline = deadline_in(timeout)
        for store in self._opened():
            await store._writes_by(deadline, timeout, "close")
        self._closed = True
        await self._shards.aclose(deadline, timeout)

    async def aflush(self, *, timeout: float | None = FLUSH_TIMEOUT_S) -> None:
        """Wait for every open shard's queued writes and background maintenance (``timeout``: for all of them)."""
        self._check_process()
        deadline = deadline_in(timeout)
        for store in self._opened():
            await store._flush_by(deadline, timeout)

    # ------------------------------------------------------------------ routed to one shard
    aadd = _routed(WriteAPI.aadd)
    areplace = _routed(WriteAPI.areplace, 0)
    aupdate = _routed(WriteAPI.aupdate)
    asupersede = _routed(WriteAPI.asupersede)
    adelete = _routed(WriteAPI.adelete)
    aforget = _routed(WriteAPI.aforget, 0)
    aget = _routed(ReadAPI.aget)
    alist = _routed(ReadAPI.alist, 0)
    acount = _routed(ReadAPI.acount, 0)
    avector_search = _routed(ReadAPI.avector_search)
    afts_search = _routed(ReadAPI.afts_search)
    aentity_search = _routed(ReadAPI.aentity_search)
    arecency_search = _routed(ReadAPI.arecency_search)
    ahas_entities = _routed(ReadAPI.ahas_entities, 0)
    aspeakers = _routed(ReadAPI.aspeakers, 0)
    arecall_source = _routed(ReadAPI.arecall_source, 0)
    aversion = _routed(ReadAPI.aversion, 0)
    arecord_access = _routed(ReadAPI.arecord_access)

    def add_later(self, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> PendingWrite:
        """Queue one memory on its namespace's shard (see :meth:`MemoryStore.add_later`)."""
        shard = self._sync_shard_for(_ADD_LATER, namespace, (text,), {"namespace": namespace, "dedup": dedup, **fields})
        return shard.add_later(text, namespace=namespace, dedup=dedup, **fields)

    def add_many_later(
        self, records: Iterable[Mapping[str, Any]], *, namespace: str, dedup: bool | None = None
    ) -> builtins.list[PendingWrite]:
        """Queue memories of one namespace on its shard (see :meth:`MemoryStore.add_many_later`)."""
        if isinstance(records, Iterator):
            records = builtins.list(records)
        kwargs = {"namespace": namespace, "dedup": dedup}
        shard = self._sync_shard_for(_ADD_MANY_LATER, namespace, (records,), kwargs)
        return shard.add_many_later(records, namespace=namespace, dedup=dedup)

    def record_access(self, ids: Sequence[str], *, namespace: str, at: datetime | None = None) -> None:
        """Count an access of each id on its namespace's shard (see :meth:`MemoryStore.record_access`)."""
        self._sync_shard_for(_RECORD_ACCESS, namespace, (ids,), {"namespace": namespace, "at": at}).record_access(
            ids, namespace=namespace, at=at
        )

    def _forget_ticket(self, namespace: str) -> Ticket:
        # The barrier needs no table: a shard still opening gives its ticket at once (this may run on
        # the private loop, which cannot wait for an opening it runs).
        return self._shards.made(self.shard_index(namespace))._forget_ticket(namespace)

    # ------------------------------------------------------------------ across namespaces
    async def aadd_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int | None = None,
        dedup: bool | None = None,
        progress: bool | None = None,
    ) -> builtins.list[AddedMemory]:
        """Store many memories, each on its namespace's shard; results in the order given.

        Every record is validated before anything is written, as :meth:`MemoryStore.add_many`.
        """
        self._ensure_open()
        check_batch_size(batch_size if batch_size is not None else self._config.write_batch_size)
        check_progress(progress)
        self._check_dedup(dedup)
        if isinstance(records, (str, bytes, Mapping)):
            raise InvalidInputError("records must be a list of dicts; for one memory use add()")
        records = builtins.list(records)
        groups: dict[int, builtins.list[int]] = {}
        for i, raw in enumerate(records):
            try:
                rec = validate_record(raw, self._config, namespace=namespace)
            except InvalidInputError as exc:
                raise type(exc)(f"record {i}: {exc}") from None
            groups.setdefault(self.shard_index(rec["namespace"]), []).append(i)
        results: builtins.list[AddedMemory | None] = [None] * len(records)
        for index, positions in groups.items():
            shard = await self.ashard(index)
            added = await shard.aadd_many(
                [records[i] for i in positions],
                namespace=namespace,
                batch_size=batch_size,
                dedup=dedup,
                progress=progress,
            )
            for i, result in zip(positions, added, strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    async def anamespaces(self) -> builtins.list[str]:
        """Every namespace of every shard, sorted (opens every shard)."""
        found: set[str] = set()
        for store in await self._every_shard():
            found.update(await store.anamespaces())
        return sorted(found)

    async def acolumns(
        self,
        namespace: str | Sequence[str],
        columns: Sequence[str],
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        """Columns of one or several namespaces' memories, one query per shard (see :meth:`MemoryStore.columns`)."""
        self._ensure_open()
        names, wanted, _ = self._column_read(namespace, columns, filter, limit)  # checked before a shard opens
        groups: dict[int, builtins.list[str]] = {}
        for ns in names:
            groups.setdefault(self.shard_index(ns), []).append(ns)
        parts = [
            await (await self.ashard(index)).acolumns(group, wanted, filter=filter, limit=limit)
            for index, group in sorted(groups.items())
        ]
        table = pa.concat_tables(parts)
        return table if limit is None else table.slice(0, limit)

    async def aembed_query(self, query: str) -> Any:
        """Embed a query with the shards' embedder (the same for every shard; no shard is opened)."""
        return await self._queries.query(query)

    async def aembed_queries(self, queries: Sequence[str]) -> Any:
        """Embed queries with the shards' embedder (no shard is opened)."""
        return await self._queries.queries(queries)

    # ------------------------------------------------------------------ sync twins of the routed methods
    add = _sync(aadd)
    add_many = _sync(aadd_many)
    replace = _sync(areplace)
    update = _sync(aupdate)
    supersede = _sync(asupersede)
    delete = _sync(adelete)
    forget = _sync(aforget)
    list = _sync(alist)
    count = _sync(acount)
    namespaces = _sync(anamespaces)
    columns = _sync(acolumns)
    version = _sync(aversion)
    vector_search = _sync(avector_search)
    fts_search = _sync(afts_search)
    entity_search = _sync(aentity_search)
    recency_search = _sync(arecency_search)


_ADD_LATER = checker(MemoryStore.add_later)
_ADD_MANY_LATER = checker(MemoryStore.add_many_later)
_RECORD_ACCESS = checker(MemoryStore.record_access)

"""The everyday read API of the store, async: get, list, count, the search primitives, recall's source.

Every read names a namespace and never returns a memory of another one. The sync twins are made
from these (see ``store.py``).
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from memory_retrievers.errors import InvalidInputError, NotFoundError
from memory_retrievers.filters import MemoryFilter, build_where, recency_slot
from memory_retrievers.models import FtsField, Hit, Memory
from memory_retrievers.recall.source import RecallSource
from memory_retrievers.storage.fields import FIELDS
from memory_retrievers.storage.pending import PendingSource, queued_memories
from memory_retrievers.storage.search import hits
from memory_retrievers.storage.sources import TableSource, ViewSource
from memory_retrievers.store.base import MAX_PAGE, MAX_QUERY_K, StoreBase
from memory_retrievers.validation import MAX_QUERY_CHARS, check_key, check_text, to_utc

__all__ = ["COLUMNS", "ReadAPI"]

#: The columns :meth:`ReadAPI.acolumns` reads: every field of a :class:`Memory`, in schema order.
COLUMNS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.public)

logger = logging.getLogger("memory_retrievers.store.memory_store")


class ReadAPI(StoreBase):
    """Reads of one namespace at a time: by id, by page, by count, and the recall search primitives.

    Read-your-writes for ``add_later``: these reads wait for this process's queued writes of the
    namespace to commit (without lingering), then read the table; recall does not wait, it merges
    them (:meth:`arecall_source`).
    """

    async def _committed(self, namespace: str | None) -> None:
        """Wait for this process's queued ``add_later`` writes of ``namespace`` (every one for ``None``)."""
        await self._pending.settled(namespace, self._queue.hurry)

    async def aget(
        self, ids: str | Sequence[str], *, namespace: str, include_vector: bool = False
    ) -> Memory | builtins.list[Memory]:
        """Fetch memories by id, in the order asked (superseded ones included).

        Returns one :class:`Memory` for a str id, a list for a list of ids.

        Raises:
            NotFoundError: Any id is missing from the namespace.
        """
        self._ensure_open()
        ns = self._ns(namespace)
        await self._committed(ns)
        mems, missing = await self._searcher.memories(ns, self._ids(ids), include_vector=include_vector)
        if missing:
            raise NotFoundError(f"{len(missing)} id(s) not found in namespace {ns!r}: {missing[:5]}", missing)
        return mems[0] if isinstance(ids, str) else mems

    async def alist(
        self,
        namespace: str,
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[Memory]:
        """Memories of a namespace ordered by ``created_at``, optionally filtered and paged."""
        self._ensure_open()
        ns = self._ns(namespace)
        self._check_int(limit, "limit", 1, MAX_PAGE)
        self._check_int(offset, "offset", 0, MAX_PAGE)
        await self._committed(ns)
        return await self._searcher.page(ns, self._live(filter), limit=limit, offset=offset, newest_first=newest_first)

    async def acount(self, namespace: str, *, filter: MemoryFilter | Mapping[str, Any] | None = None) -> int:
        """Number of memories in a namespace (superseded ones excluded unless the filter asks)."""
        self._ensure_open()
        where = build_where(self._ns(namespace), self._live(filter))
        await self._committed(self._ns(namespace))
        return await self._table.count(where, action="count memories")

    async def acolumns(
        self,
        namespace: str | Sequence[str],
        columns: Sequence[str],
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        """A few stored columns of the memories of ``namespace`` (or of several namespaces), as Arrow.

        For summaries and dashboards: a figure over 100,000 memories needs two or three small
        columns of each, which costs a fraction of reading whole memories. Values are as stored
        (timestamps in UTC, ``metadata`` as its JSON text). Rows come in no particular order.

        Args:
            namespace: Whose memories; a list of namespaces reads them all in one query (an
                administrative read across the tenants named, like ``admin.stats``): add
                ``"namespace"`` to ``columns`` to tell them apart.
            columns: Fields of :class:`Memory` (see :data:`COLUMNS`), e.g. ``["kind", "created_at"]``.
            filter: As for :meth:`alist` (superseded, expired and archived memories left out
                unless it asks for them).
            limit: At most this many rows (``None``: every match).

        Returns:
            A ``pyarrow.Table`` with ``columns``, in the order given.

        Raises:
            InvalidInputError: A bad namespace, an unknown column (the message lists them) or a bad limit.
            FilterError: A bad filter.
        """
        self._ensure_open()
        names, wanted, flt = self._column_read(namespace, columns, filter, limit)
        where = build_where(names[0] if len(names) == 1 else names, flt)
        return await self._table.rows(where, wanted, limit=limit, action="read columns")

    def _column_read(
        self,
        namespace: str | Sequence[str],
        columns: Sequence[str],
        filter: MemoryFilter | Mapping[str, Any] | None,
        limit: int | None,
    ) -> tuple[builtins.list[str], builtins.list[str], MemoryFilter]:
        """:meth:`acolumns`' arguments, checked: the namespaces, the columns and the live filter."""
        given = [namespace] if isinstance(namespace, str) else namespace
        if not isinstance(given, Sequence) or not given:
            raise InvalidInputError(f"namespace must be a namespace or a non-empty list of them, got {namespace!r}")
        names = builtins.list(dict.fromkeys(self._ns(ns) for ns in given))
        if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns:
            raise InvalidInputError(f"columns must be a non-empty list of column names, e.g. ['kind'], got {columns!r}")
        unknown = [c for c in columns if c not in COLUMNS]
        if unknown:
            raise InvalidInputError(f"unknown column(s) {unknown!r}; the columns are {', '.join(COLUMNS)}")
        if limit is not None:
            self._check_int(limit, "limit", 1, MAX_PAGE)
        return names, builtins.list(dict.fromkeys(columns)), self._live(filter)

    async def aversion(self, namespace: str) -> int:
        """The version of the table holding ``namespace``, as this store sees it now.

        Every commit to that table makes a new version, so anything read from the namespace at
        version ``v`` is current while this returns ``v`` (a cache of figures can key on it). All
        namespaces of a :class:`MemoryStore` share one table, hence one version; each shard of a
        :class:`~memory_retrievers.ShardedMemoryStore` has its own. Other processes' commits are
        seen after ``StoreConfig.read_consistency_interval``.

        Raises:
            InvalidInputError: Not a valid namespace.
        """
        self._ensure_open()
        self._ns(namespace)
        return await self._table.version()

    async def anamespaces(self) -> builtins.list[str]:
        """Every namespace that holds at least one memory, sorted.

        An administrative read across tenants (the only one): it lets adapters such as the
        LangGraph store list their namespaces. It scans the ``namespace`` column only.
        """
        self._ensure_open()
        await self._committed(None)
        return await self._searcher.namespaces()

    async def avector_search(
        self,
        query: str | Sequence[float] | np.ndarray,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Nearest memories by cosine similarity (``Hit.score`` in [-1, 1], higher is better).

        ``query`` is a text (embedded with the store's embedder) or a vector.
        """
        self._ensure_open()
        where = build_where(self._ns(namespace), self._live(filter))
        self._check_int(k, "k", 1, MAX_QUERY_K)
        if isinstance(query, str):
            vector = await self._vectors.query(query)
        else:
            vector = self._vectors.given(query, source="the query vector")
        await self._committed(self._ns(namespace))
        return hits(await self._searcher.nearest(vector, where, k, ["id"]))

    async def aembed_query(self, query: str) -> np.ndarray:
        """Embed a query text with the store's embedder (checked, unit length)."""
        return await self._vectors.query(query)

    async def aembed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Embed a few query texts, in one forward pass when the embedder offers ``aembed_queries``.

        Returns:
            One checked unit vector per query, shape ``(len(queries), dimension)``.
        """
        return await self._vectors.queries(queries)

    async def afts_search(
        self,
        query: str,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        field: FtsField | str = FtsField.TEXT,
    ) -> builtins.list[Hit]:
        """Full-text (BM25) search via LanceDB's native FTS index (``Hit.score`` = BM25, higher is better).

        Args:
            query: Keywords or a question (keep it short: long FTS queries are slow).
            namespace: Whose memories to search.
            k: How many hits.
            filter: Metadata prefilter.
            field: What to match: :attr:`FtsField.TEXT` (the memory alone), :attr:`FtsField.CONTEXT`
                (the memory together with its ``context``, e.g. neighbouring turns) or
                :attr:`FtsField.ENTITIES`.
        """
        self._ensure_open()
        where = build_where(self._ns(namespace), self._live(filter))
        self._check_int(k, "k", 1, MAX_QUERY_K)
        text = check_text(query, field="query", max_chars=MAX_QUERY_CHARS)
        try:
            fts_field = FtsField(field)
        except ValueError:
            valid = ", ".join(f.value for f in FtsField)
            raise InvalidInputError(f"field must be one of {valid}, got {field!r}") from None
        await self._committed(self._ns(namespace))
        return hits(await self._searcher.fts(text, where, k, fts_field, ["id"]))

    async def aentity_search(
        self,
        entities: Sequence[str],
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Memories sharing entities with ``entities`` (case-insensitive), most shared first.

        Ties go to the newer memory. ``Hit.score`` = number of shared entities.
        """
        self._ensure_open()
        where = build_where(self._ns(namespace), self._live(filter))
        self._check_int(k, "k", 1, MAX_QUERY_K)
        if isinstance(entities, str):
            raise InvalidInputError(f"entities must be a list of str; wrap it: [{entities!r}]")
        wanted = [check_key(e, field="entity", max_chars=self._config.max_key_chars) for e in entities]
        await self._committed(self._ns(namespace))
        return hits(await self._searcher.by_entities(wanted, where, k, ["id"]))

    async def arecency_search(
        self,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """The newest memories (``Hit.score`` = ``created_at`` as POSIX seconds)."""
        self._ensure_open()
        ns, flt = self._ns(namespace), self._live(filter)
        self._check_int(k, "k", 1, MAX_QUERY_K)
        await self._committed(ns)
        return hits(await self._searcher.newest(build_where(ns, flt), k, ["id"], slot=recency_slot(ns, flt)))

    async def ahas_entities(self, namespace: str, *, max_age_s: float = 60.0) -> bool:
        """Whether any memory of the namespace has entities (lets recall skip a useless query).

        Cached per namespace: a write through this store with entities sets it at once; writes by
        other processes are seen after at most ``max_age_s`` seconds.
        """
        self._check_process()
        return await self._searcher.has_entities(self._ns(namespace), max_age_s=max_age_s)

    async def aspeakers(self, namespace: str, *, max_age_s: float = 60.0) -> frozenset[str]:
        """Who speaks in the namespace's chat: the ``Name`` of its ``"Name: text"`` message memories.

        Read from the namespace's view when this store holds or is loading one (recall reads this
        while its view loads: no query of its own), else cached per namespace. A speaker written
        through this store joins at once; other processes' as soon as the view sees their commits
        (see ``read_consistency_interval``), or without a view within ``max_age_s`` seconds.
        """
        self._ensure_open()
        ns = self._ns(namespace)
        view = await self._views.current(ns)
        if view is not None:
            return view.speakers
        return await self._searcher.speakers(ns, max_age_s=max_age_s)

    async def arecall_source(
        self, namespace: str, *, filter: MemoryFilter | Mapping[str, Any] | None = None
    ) -> RecallSource:
        """What a recall of ``namespace`` under ``filter`` reads through (see :mod:`memory_retrievers.recall`).

        An in-memory view of the namespace while it has at most ``StoreConfig.recall_view_max_rows``
        memories, else LanceDB queries; both give the same results. Memories queued in this process
        by ``add_later``/``add_many_later`` and not committed yet are merged in (see
        :mod:`memory_retrievers.storage.pending`).
        """
        self._ensure_open()
        ns = self._ns(namespace)
        flt = self._live(filter)
        # Read before the view: a write that settles meanwhile is then in the view or in this list.
        queued = self._pending.batches(ns)
        view = await self._views.get(ns)
        source: RecallSource = (
            ViewSource(view, flt, self._searcher) if view is not None else TableSource(ns, flt, self._searcher)
        )
        if not queued:
            return source
        # Writes queued by add_later and not committed yet: recall in this process reads them too.
        return PendingSource(source, await queued_memories(self._vectors, queued, ns), flt)

    def record_access(self, ids: Sequence[str], *, namespace: str, at: datetime | None = None) -> None:
        """Count an access of each id (e.g. recalled).

        Held in memory (reads count it in at once) and written, off the caller's path, by an
        optimize that ``StoreConfig.access_flush_size`` pending accesses start in the background:
        it writes them and folds the rows it rewrote back into the indexes, so recording accesses
        never leaves rows out of the full-text index (a later recall would scan them).
        """
        self._ensure_open()
        ns = self._ns(namespace)
        when = to_utc(at, "at") if at is not None else self._clock()
        pending = self._access.record(ns, self._ids(ids), when)
        if pending >= self._config.access_flush_size:
            self._maintainer.fold_access()

    async def arecord_access(self, ids: Sequence[str], *, namespace: str, at: datetime | None = None) -> None:
        """Async twin of :meth:`record_access` (never waits for the write)."""
        self.record_access(ids, namespace=namespace, at=at)

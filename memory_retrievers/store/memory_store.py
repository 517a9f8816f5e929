"""`MemoryStore`: memories in one LanceDB table, with dedup, supersession and search primitives.

The store is a facade: it validates the public arguments and hands the work to small components
(``memory_retrievers.storage``): a table layer that owns LanceDB and tells its subscribers what
each commit changed, the write path, edits, search, namespace views for recall, maintenance and
the access log. The implementation is an async core over LanceDB's native async API (the
everyday writes in ``_store_writes``, the reads in ``_store_reads``, administration apart in
:mod:`memory_retrievers.store.admin`); every sync method is made from its async twin (``_twins``) and
runs it on a private loop thread (see ``_loop``), so both behave identically.
"""

from __future__ import annotations

import builtins
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, overload

import memory_retrievers.runtime.loop as _loop
import memory_retrievers.store.lifecycle as _store_lifecycle
from memory_retrievers.config import StoreConfig
from memory_retrievers.embeddings import Embedder
from memory_retrievers.models import Memory
from memory_retrievers.runtime.twins import sync_twin
from memory_retrievers.store.admin import StoreAdmin
from memory_retrievers.store.base import DEFAULT_TABLE, default_store_path
from memory_retrievers.store.reads import ReadAPI
from memory_retrievers.store.writes import WriteAPI

__all__ = ["DEFAULT_TABLE", "MemoryStore", "default_store_path"]


class MemoryStore(WriteAPI, ReadAPI):
    """Long-term memories in one embedded LanceDB table.

    Every read and write names a ``namespace`` (the user or tenant); no call ever returns a memory
    of another namespace. Writes validate everything first, then commit once per batch.
    Administration (optimize, purge, expire, stats, export, restore) is :attr:`admin`.

    Args:
        uri: A local folder (created if missing) or a LanceDB URI such as ``s3://bucket/path``.
            Defaults to :func:`default_store_path`. An existing table is opened, never overwritten.
        table_name: Table inside the database.
        embedder: Any :class:`~memory_retrievers.embeddings.Embedder`; defaults to the offline
            all-MiniLM-L6-v2 :class:`SentenceTransformerEmbedder`.
        config: :class:`StoreConfig` or a dict of its fields.
        storage_options: Passed to LanceDB for object storage (credentials, endpoint...). Not
            with ``connection``: the connection carries its own.
        clock: Returns the current UTC time; inject one for reproducible timestamps.
        connection: Your own LanceDB connection (``lancedb.connect(...)`` or
            ``await lancedb.connect_async(...)``) instead of ``uri``: the table ``table_name`` is
            opened on it (created if missing), with the connection's storage options and caches
            (``StoreConfig.index_cache_bytes`` and ``metadata_cache_bytes`` are then not used);
            the store's reads still follow ``read_consistency_interval``. The store never
            closes it. A process forked after LanceDB ran cannot use it (``ForkedStoreError``:
            open the connection after the fork, or pass a ``uri``). See :meth:`from_table`.
        api_key: The API key of LanceDB Cloud or Enterprise, for a ``db://<database>`` ``uri``
            (read it from where you keep secrets, e.g. ``os.environ["LANCEDB_API_KEY"]``: the store
            reads no environment variable itself). Never shown in the store's repr or errors.
        region: The LanceDB Cloud region (LanceDB's default: ``us-east-1``); ``db://`` only.
        host_override: The URL of a LanceDB Enterprise deployment; ``db://`` only.

    Raises:
        ConfigError: Bad config or embedder; ``connection`` is not a LanceDB connection, comes with
            ``uri`` or ``storage_options``, or its table has columns this store cannot use;
            ``api_key``, ``region`` or ``host_override`` without a ``db://`` URI.
        SchemaMismatchError: The table was written by another schema version or embedding model
            (an :class:`~memory_retrievers.EmbedderMismatchError` for another model, whichever detail
            differs).
        ForkedStoreError: ``connection`` was opened in a process this one was forked from.
        StorageError: The database could not be opened.

    Example:
        >>> store = MemoryStore("./memories")                                   # doctest: +SKIP
        >>> store.add("Alice prefers the dark theme", namespace="alice", kind="preference")
        >>> store.fts_search("theme", namespace="alice")
    """

    @classmethod
    async def aopen(
        cls,
        uri: str | os.PathLike[str] | None = None,
        *,
        table_name: str = DEFAULT_TABLE,
        embedder: Embedder | None = None,
        config: StoreConfig | Mapping[str, Any] | None = None,
        storage_options: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        connection: Any = None,
        api_key: str | None = None,
        region: str | None = None,
        host_override: str | None = None,
    ) -> MemoryStore:
        """Async constructor: same arguments as :class:`MemoryStore`, opens without blocking."""
        store = cls(
            uri,
            table_name=table_name,
            embedder=embedder,
            config=config,
            storage_options=storage_options,
            clock=clock,
            connection=connection,
            api_key=api_key,
            region=region,
            host_override=host_override,
            _open=False,
        )
        await store._table.open()
        _store_lifecycle.register(store)
        return store

    @classmethod
    def from_table(
        cls,
        table: Any,
        *,
        embedder: Embedder | None = None,
        config: StoreConfig | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> MemoryStore:
        """A store over your own LanceDB table handle (``lancedb.table.Table`` or ``AsyncTable``).

        The table must have the store's columns (a table this library created, e.g. through
        ``MemoryStore(connection=db, table_name=...)``, or one created with
        :func:`memory_retrievers.storage.schema.memory_schema`); its handle stays usable after
        :meth:`close`, which never closes it. Same arguments as :class:`MemoryStore` otherwise.

        Raises:
            ConfigError: ``table`` is not a LanceDB table, or lacks columns the store needs (the
                message names them).
            SchemaMismatchError: The table was written by another schema version or embedder.
        """
        from memory_retrievers.storage.caller import CallerTable

        caller = CallerTable.from_table(table)
        name = caller.table_name or DEFAULT_TABLE
        return cls(table_name=name, embedder=embedder, config=config, clock=clock, _caller=caller)

    @classmethod
    async def afrom_table(
        cls,
        table: Any,
        *,
        embedder: Embedder | None = None,
        config: StoreConfig | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> MemoryStore:
        """Async twin of :meth:`from_table`: opens without blocking."""
        from memory_retrievers.storage.caller import CallerTable

        caller = CallerTable.from_table(table)
        name = caller.table_name or DEFAULT_TABLE
        store = cls(table_name=name, embedder=embedder, config=config, clock=clock, _caller=caller, _open=False)
        await store._table.open()
        _store_lifecycle.register(store)
        return store

    @functools.cached_property
    def admin(self) -> StoreAdmin:
        """Administration: optimize, purge, expire, stats, export, restore, flush_access (and async twins)."""
        return StoreAdmin(self)

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ sync twins of the async core
    add = sync_twin(WriteAPI.aadd)
    add_many = sync_twin(WriteAPI.aadd_many)
    replace = sync_twin(WriteAPI.areplace)
    update = sync_twin(WriteAPI.aupdate)
    supersede = sync_twin(WriteAPI.asupersede)
    delete = sync_twin(WriteAPI.adelete)
    forget = sync_twin(WriteAPI.aforget)

    @overload
    def get(self, ids: str, *, namespace: str, include_vector: bool = ...) -> Memory: ...  # type: ignore[overload-overlap]
    @overload
    def get(self, ids: Sequence[str], *, namespace: str, include_vector: bool = ...) -> builtins.list[Memory]: ...

    def get(
        self, ids: str | Sequence[str], *, namespace: str, include_vector: bool = False
    ) -> Memory | builtins.list[Memory]:
        """Fetch memories by id, in the order asked (superseded ones included).

        Returns one :class:`Memory` for a str id, a list for a list of ids.

        Raises:
            NotFoundError: Any id is missing from the namespace.
        """
        return _loop.run_sync(self.aget(ids, namespace=namespace, include_vector=include_vector))

    list = sync_twin(ReadAPI.alist)
    count = sync_twin(ReadAPI.acount)
    namespaces = sync_twin(ReadAPI.anamespaces)
    columns = sync_twin(ReadAPI.acolumns)
    version = sync_twin(ReadAPI.aversion)
    vector_search = sync_twin(ReadAPI.avector_search)
    fts_search = sync_twin(ReadAPI.afts_search)
    entity_search = sync_twin(ReadAPI.aentity_search)
    recency_search = sync_twin(ReadAPI.arecency_search)

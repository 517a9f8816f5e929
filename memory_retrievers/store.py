"""`MemoryStore`: memories in one LanceDB table, with dedup, supersession and search primitives.

The store is a facade: it validates the public arguments and hands the work to small components
(``memory_retrievers.storage``): a table layer that owns LanceDB and tells its subscribers what
each commit changed, the write path, edits, search, namespace views for recall, maintenance and
the access log. The implementation is async, over LanceDB's native async API; every sync method is
a one-line shell that runs its async twin on a private loop thread (see ``_loop``), so both behave
identically.
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import contextlib
import functools
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import thread as _futures_thread  # noqa: F401  (its exit hook first, see _commit_queued_writes)
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, overload

import numpy as np

from . import _loop
from ._barrier import ForgetBarrier, Ticket, current_check
from .config import StoreConfig, validated
from .embeddings import Embedder, SentenceTransformerEmbedder
from .errors import (
    ConfigError,
    ForkedStoreError,
    InvalidInputError,
    MemoryRetrieversError,
    NotFoundError,
    StorageError,
)
from .fields import WRITABLE_FIELDS
from .filters import MemoryFilter, build_where, coerce_filter, recency_slot
from .models import AddedMemory, FtsField, Hit, Memory
from .pending import PendingWrite
from .recall.source import RecallSource
from .schema import memory_schema
from .storage.access import AccessLog
from .storage.connect import CacheSizes
from .storage.context_fill import ContextFiller
from .storage.duplicates import DuplicateFinder
from .storage.edits import Editor
from .storage.maintenance import Maintainer
from .storage.queue import AddBatch, WriteQueue
from .storage.search import Searcher, hits
from .storage.sources import TableSource, ViewSource
from .storage.stats import StoreStats, read_stats
from .storage.table import MemoryTable
from .storage.transfer import RestoreResult, Transfer, parse_restore_record
from .storage.vectors import VectorMaker
from .storage.views import ViewCache
from .storage.writes import Writer, record_vectors
from .validation import MAX_QUERY_CHARS, check_key, check_namespace, check_text, to_utc, validate_record

__all__ = ["DEFAULT_TABLE", "MemoryStore", "default_store_path"]

logger = logging.getLogger(__name__)

DEFAULT_TABLE = "memories"

#: Stores not closed yet: at interpreter exit they are closed, so pending access statistics and
#: queued writes are not lost by a program that never called close().
_OPEN: weakref.WeakSet[MemoryStore] = weakref.WeakSet()


def _forget_parents_stores() -> None:
    # Stores of the parent are the parent's to close: at this child's exit, closing them would write
    # the parent's pending access statistics a second time, through LanceDB handles unsafe here.
    _OPEN.clear()


#: How long ``os.fork()`` waits for the writes queued when it was called to commit before it forks
#: anyway. Only those: writes other threads keep queueing meanwhile are the parent's to commit.
_FORK_COMMIT_WAIT_S = 60.0


def _stores_with_queued_writes() -> list[MemoryStore]:
    """This process's open stores that have writes queued or being committed."""
    return [store for store in list(_OPEN) if not store._forked() and not store._queue.idle]


def _commit_before_fork() -> None:
    # A child must find what its parent queued before the fork (add_later, other threads' writes)
    # already in the table: read-your-writes across the fork. The parent would commit them anyway.
    if _loop.on_loop_thread():  # the queue's own thread cannot wait for itself
        return
    for store in _stores_with_queued_writes():
        if not store._queue.wait_queued(_FORK_COMMIT_WAIT_S):
            logger.warning(
                "memory-retrievers: forking while writes to %s are still queued after %.0f s; the parent "
                "commits them, the child may not see them",
                store.uri,
                _FORK_COMMIT_WAIT_S,
            )


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_commit_before_fork, after_in_child=_forget_parents_stores)


def _commit_queued_writes() -> None:
    # Runs in threading's shutdown, before concurrent.futures refuses new work: a plug-in that embeds
    # on an executor (asyncio.to_thread) still can. Registered after concurrent.futures' own hook,
    # so it runs first. Stores stay open: the user's atexit handlers may still use them.
    for store in _stores_with_queued_writes():
        try:
            store.flush()
        except Exception:  # at exit: report, never raise
            logger.warning("memory-retrievers: committing queued writes at exit failed", exc_info=True)


_register_threading_exit = getattr(threading, "_register_atexit", None)
if _register_threading_exit is not None:  # CPython; elsewhere the atexit close below commits them
    _register_threading_exit(_commit_queued_writes)


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN):
        try:
            store.close()
        except Exception:  # at exit: report, never raise
            logger.warning("memory-retrievers: closing a store at exit failed", exc_info=True)


_MAX_QUERY_K = 10_000
# LanceDB takes limit and offset as unsigned 32-bit ints: larger ones raise OverflowError inside it.
_MAX_PAGE = 2**32 - 1


def default_store_path() -> Path:
    """Where ``MemoryStore()`` keeps its table when no URI is given.

    The user data directory (``~/.local/share/memory-retrievers/store`` on Linux), never a temp dir.
    """
    import platformdirs

    return platformdirs.user_data_path("memory-retrievers") / "store"


def _now_utc() -> datetime:
    return datetime.now(timezone.utc)


class MemoryStore:
    """Long-term memories in one embedded LanceDB table.

    Every read and write names a ``namespace`` (the user or tenant); no call ever returns a memory
    of another namespace. Writes validate everything first, then commit once per batch.

    Args:
        uri: A local folder (created if missing) or a LanceDB URI such as ``s3://bucket/path``.
            Defaults to :func:`default_store_path`. An existing table is opened, never overwritten.
        table_name: Table inside the database.
        embedder: Any :class:`~memory_retrievers.embeddings.Embedder`; defaults to the offline
            all-MiniLM-L6-v2 :class:`SentenceTransformerEmbedder`.
        config: :class:`StoreConfig` or a dict of its fields.
        storage_options: Passed to LanceDB for object storage (credentials, endpoint...).
        clock: Returns the current UTC time; inject one for reproducible timestamps.

    Raises:
        ConfigError: Bad config or embedder.
        SchemaMismatchError: The table was written by another schema version or embedding model
            (an :class:`~memory_retrievers.EmbedderMismatchError` for another model, whichever detail
            differs).
        StorageError: The database could not be opened.

    Example:
        >>> store = MemoryStore("./memories")                                   # doctest: +SKIP
        >>> store.add("Alice prefers the dark theme", namespace="alice", kind="preference")
        >>> store.fts_search("theme", namespace="alice")
    """

    def __init__(
        self,
        uri: str | os.PathLike[str] | None = None,
        *,
        table_name: str = DEFAULT_TABLE,
        embedder: Embedder | None = None,
        config: StoreConfig | Mapping[str, Any] | None = None,
        storage_options: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        _open: bool = True,
    ) -> None:
        self._config: StoreConfig = validated(StoreConfig, config, "StoreConfig")
        self._embedder: Embedder = embedder if embedder is not None else SentenceTransformerEmbedder()
        if not isinstance(self._embedder, Embedder):
            raise ConfigError(
                f"embedder {type(self._embedder).__name__} does not implement the Embedder protocol "
                "(name, dimension, embed_documents, embed_query, aembed_documents, aembed_query)"
            )
        if not isinstance(table_name, str) or not table_name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError(f"table_name must be letters, digits, '_' or '-', got {table_name!r}")
        self._clock = clock or _now_utc
        dimension = int(self._embedder.dimension)
        cfg = self._config
        # The components, wired once. Subscription order is commit-notification order: views are
        # brought up to date before maintenance runs.
        self._table = MemoryTable(
            uri=str(uri) if uri is not None else str(default_store_path()),
            table_name=table_name,
            schema=memory_schema(dimension, self._embedder.name),
            storage_options=storage_options,
            read_consistency_interval=cfg.read_consistency_interval,
            caches=CacheSizes(cfg.index_cache_bytes, cfg.metadata_cache_bytes),
            timeout=cfg.storage_timeout,
        )
        self._views = ViewCache(
            self._table,
            cfg.recall_view_max_rows,
            cfg.recall_view_total_rows,
            # A namespace read from LanceDB wants the vector index (built in the background).
            on_outgrown=lambda _namespace: self._maintainer.note_large_namespace(),
        )
        self._access = AccessLog(self._table)
        self._searcher = Searcher(self._table, self._access)
        self._maintainer = Maintainer(self._table, cfg, self.aflush_access)
        self._vectors = VectorMaker(self._embedder, dimension, cfg.embed_batch_size)
        context = ContextFiller(self._table, cfg)
        duplicates = DuplicateFinder(self._table, cfg, self._clock)
        self._writer = Writer(self._table, cfg, self._vectors, duplicates, context, self._searcher, self._clock)
        self._editor = Editor(self._table, cfg, self._vectors, self._writer, duplicates, context, self._clock)
        # Every write of this store goes through one queue (see storage/queue.py); writes of work
        # handed over before a forget are checked there against it (see _barrier.py).
        self._forgets = ForgetBarrier()
        self._queue = WriteQueue(
            self._writer.write_group,
            max_records=cfg.write_batch_size,
            prepare=self._table.refresh,
            linger_s=cfg.write_linger.total_seconds(),
            barrier=lambda: current_check(self._forgets),
            max_queued=cfg.max_queued_records,
            full_timeout_s=cfg.queue_full_timeout.total_seconds(),
        )
        self._closed = False
        self._embedder_loaded = False
        self._pid = os.getpid()  # a forked child must not use this store (see _check_process)
        if _open:
            _loop.run_sync(self._table.open())
            _OPEN.add(self)

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
    ) -> MemoryStore:
        """Async constructor: same arguments as :class:`MemoryStore`, opens without blocking."""
        store = cls(
            uri,
            table_name=table_name,
            embedder=embedder,
            config=config,
            storage_options=storage_options,
            clock=clock,
            _open=False,
        )
        await store._table.open()
        _OPEN.add(store)
        return store

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> StoreConfig:
        """The frozen configuration."""
        return self._config

    @property
    def embedder(self) -> Embedder:
        """The embedder that wrote (and queries) this table."""
        return self._embedder

    @property
    def uri(self) -> str:
        """Where the database lives."""
        return self._table.uri

    @property
    def table_name(self) -> str:
        """The LanceDB table name."""
        return self._table.table_name

    @property
    def clock(self) -> Callable[[], datetime]:
        """The store's clock (timestamps of writes, and the default ``now`` of recall)."""
        return self._clock

    def __repr__(self) -> str:
        return f"MemoryStore(uri={self.uri!r}, table={self.table_name!r}, embedder={self._embedder.name!r})"

    # ------------------------------------------------------------------ open / close
    def close(self) -> None:
        """Write pending access statistics. The store must not be used afterwards.

        In a child forked after the store was opened, this does nothing: the store belongs to the
        parent process, which still writes and closes it.
        """
        if self._forked():
            return
        _loop.run_sync(self.aclose())

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: waits for queued writes and running maintenance too."""
        if self._closed or self._forked():
            return
        try:
            await self.aflush_access()
        except MemoryRetrieversError as exc:  # e.g. a read-only store: closing must still work
            logger.warning("memory-retrievers: access statistics could not be written at close: %s", exc)
        await self.aflush()
        self._closed = True
        self._table.close()
        _OPEN.discard(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise ForkedStoreError(
            "a MemoryStore cannot be sent to another process (pickled): send its location and open a new "
            "MemoryStore there, e.g. MemoryStore(store.uri); see docs/DEPLOYMENT.md",
            opened_in=self._pid,
        )

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _ensure_open(self) -> None:
        self._check_process()
        if self._closed:
            raise StorageError("this MemoryStore is closed; open a new one")

    def _forked(self) -> bool:
        return os.getpid() != self._pid

    def _check_process(self) -> None:
        """Refuse use in a child forked after the store was opened (its handles are the parent's)."""
        if self._forked():
            raise ForkedStoreError(
                f"this MemoryStore was opened in process {self._pid} and cannot be used in process {os.getpid()}, "
                "which was forked from it: open a new MemoryStore in each process after it starts (gunicorn without "
                "--preload or in a post_fork hook, Celery's worker_process_init signal, multiprocessing with the "
                "'forkserver' or 'spawn' start method, or memory_retrievers.PerProcess); see docs/DEPLOYMENT.md",
                opened_in=self._pid,
            )

    # ------------------------------------------------------------------ writes
    def add(self, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> AddedMemory:
        """Store one memory and return it (``.action`` says added, updated or skipped).

        Args:
            text: What to remember. Stored verbatim.
            namespace: The user or tenant it belongs to.
            dedup: Override the config: ``False`` skips duplicate detection.
            **fields: Any writable field: ``id`` (an existing id is upserted), ``kind``,
                ``session_id``, ``project``, ``topic``, ``tags``, ``entities``, ``priority``,
                ``pinned``, ``importance``, ``created_at``, ``context``, ``metadata``, ``links``,
                ``supersedes``, ``vector`` (scaled to unit length; all zeros is refused).

        Raises:
            InvalidInputError: Bad text or field (nothing is written).
            EmbeddingError: The embedder failed (nothing is written).
        """
        return _loop.run_sync(self.aadd(text, namespace=namespace, dedup=dedup, **fields))

    async def aadd(self, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> AddedMemory:
        """Async twin of :meth:`add`."""
        (result,) = await self.aadd_many([{**fields, "text": text, "namespace": namespace}], dedup=dedup)
        return result

    def add_later(self, text: str, *, namespace: str, dedup: bool | None = None, **fields: Any) -> PendingWrite:
        """Queue one memory and return at once, without waiting for its commit (micro-batching).

        The record is validated now; it is embedded and committed with the writes queued around it,
        within ``StoreConfig.write_linger`` plus one commit. Use it where a commit is slow (object
        storage) and the caller need not wait, e.g. logging chat turns.

        Acknowledgement: :meth:`add` returns once the memory is committed; ``add_later`` returns a
        :class:`PendingWrite` that is committed once its ``result()`` returns. :meth:`flush`,
        :meth:`close`, interpreter exit and ``os.fork()`` all wait for queued writes, so a program
        that ends normally loses none; a process killed (or ended by ``os._exit``) before the commit
        loses what was still queued. It does not wait for the commit, so async code may call it too
        (``await store.add_later(...)`` waits for the commit).

        Backpressure: when ``StoreConfig.max_queued_records`` records are already queued, it waits
        for room (at most ``StoreConfig.queue_full_timeout``), then raises
        :class:`~memory_retrievers.QueueFullError` with nothing queued. Called from a running event
        loop it never waits (that would block the loop): a full queue raises at once there; async
        code that wants to wait for room awaits :meth:`aadd` instead.

        Args:
            text: What to remember. Stored verbatim.
            namespace: The user or tenant it belongs to.
            dedup: Override the config: ``False`` skips duplicate detection.
            **fields: Any writable field, as for :meth:`add`.

        Returns:
            The queued write: ``.result()`` (or ``await``) gives the :class:`AddedMemory`.

        Raises:
            InvalidInputError: Bad text or field (nothing is queued).
            QueueFullError: The queue stayed full (nothing is queued).
            StorageError: The store is closed.
        """
        self._ensure_open()
        self._check_dedup(dedup)
        recs = self._records([{**fields, "text": text, "namespace": namespace}], None)
        if not self._embedder_loaded:
            # A lazily loaded model must not load at interpreter exit (see SentenceTransformerEmbedder.load).
            load = getattr(self._embedder, "load", None)
            if callable(load):
                load()
            self._embedder_loaded = True
        return PendingWrite(self._queue.add_nowait(AddBatch(recs, dedup)), recs[0]["text"])

    def add_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int | None = None,
        dedup: bool | None = None,
        progress: bool | None = None,
    ) -> builtins.list[AddedMemory]:
        """Store many memories: embedded in batches, one LanceDB commit per batch.

        Args:
            records: Dicts with ``text`` and any writable field (see :meth:`add`).
            namespace: Namespace for records that do not name one.
            batch_size: Records per commit (default ``StoreConfig.write_batch_size``).
            dedup: Override the config's duplicate detection.
            progress: Show a tqdm progress bar. ``None`` (default): when stderr is a terminal
                and the records need more than one batch.

        Returns:
            One :class:`AddedMemory` per record, in order.

        Raises:
            InvalidInputError: A record is invalid. Every record is validated before the first
                commit, so an invalid record means nothing at all was written.
        """
        return _loop.run_sync(
            self.aadd_many(records, namespace=namespace, batch_size=batch_size, dedup=dedup, progress=progress)
        )

    async def aadd_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int | None = None,
        dedup: bool | None = None,
        progress: bool | None = None,
    ) -> builtins.list[AddedMemory]:
        """Async twin of :meth:`add_many`."""
        self._ensure_open()
        size = batch_size if batch_size is not None else self._config.write_batch_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInputError(f"batch_size must be a positive int, got {size!r}")
        if progress is not None and not isinstance(progress, bool):
            raise InvalidInputError(f"progress must be True, False or None, got {progress!r}")
        self._check_dedup(dedup)
        recs = self._records(records, namespace)
        if progress is None:
            progress = len(recs) > size and sys.stderr is not None and sys.stderr.isatty()
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(recs), unit="memory", desc="add_many")
        results: builtins.list[AddedMemory] = []
        starts = range(0, len(recs), size)
        # The next batch is embedded while this one is planned and committed: the two overlap, so a
        # long load runs near the embedding's own speed (the commit, dedup and context reads of a
        # batch took a third of the time when they waited for each other).
        ahead: asyncio.Future[builtins.list[dict[str, Any]]] | None = None
        try:
            for n, start in enumerate(starts):
                try:
                    batch = await (ahead or self._embedded(recs[start : start + size]))
                    ahead = None
                    if n + 1 < len(starts):
                        ahead = asyncio.ensure_future(self._embedded(recs[start + size : start + 2 * size]))
                    results.extend(await self._queue.add(AddBatch(batch, dedup, start)))
                except MemoryRetrieversError as exc:
                    if results:  # earlier batches are stored: say which, so nothing is written twice
                        exc.written = results
                        exc.args = (
                            f"{exc} (records 0-{len(results) - 1} were stored, see .written; records "
                            f"{len(results)} onwards were not)",
                        )
                    raise
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if ahead is not None:  # the load stopped early: the batch embedded ahead is not written
                ahead.cancel()
                with contextlib.suppress(BaseException):
                    await ahead
            if bar is not None:
                bar.close()
        return results

    async def _embedded(self, batch: builtins.list[dict[str, Any]]) -> builtins.list[dict[str, Any]]:
        """The batch's records, each with its vector (embedded now unless the caller gave one)."""
        vectors = await record_vectors(self._vectors, batch)  # a caller's vector was checked in _records
        return [{**r, "vector": v} for r, v in zip(batch, vectors, strict=True)]

    def replace(
        self,
        namespace: str,
        records: Iterable[Mapping[str, Any]],
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[AddedMemory]:
        """Replace the memories of a namespace that match ``filter`` by ``records``, in one commit.

        Readers see the old memories or the new ones, never neither; a crash or an invalid record
        leaves the old ones untouched (every record is checked before anything is written). Made
        for chat stores that set a whole session (``filter={"session_ids": [...], "kinds":
        ["message"], "include_superseded": True}``): chat turns get their context from the new
        records alone, and nothing is deduplicated.

        Returns:
            One :class:`AddedMemory` per record, in order.

        Raises:
            InvalidInputError: A record is invalid, or names another namespace.
        """
        return _loop.run_sync(self.areplace(namespace, records, filter=filter))

    async def areplace(
        self,
        namespace: str,
        records: Iterable[Mapping[str, Any]],
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[AddedMemory]:
        """Async twin of :meth:`replace`."""
        self._ensure_open()
        ns = self._ns(namespace)
        where = build_where(ns, coerce_filter(filter))
        recs = self._records(records, ns)
        other = next((r["namespace"] for r in recs if r["namespace"] != ns), None)
        if other is not None:
            raise InvalidInputError(f"replace() writes one namespace ({ns!r}); a record names {other!r}")

        async def run() -> builtins.list[AddedMemory]:
            doomed = (await self._table.rows(where, ["id"])).column("id").to_pylist()
            return await self._writer.write(recs, dedup=False, replacing=(ns, doomed))

        return await self._queue.exclusive(run)

    def update(self, id: str, /, *, namespace: str, **fields: Any) -> Memory:
        """Change fields of one memory; text changes are re-embedded.

        Raises:
            NotFoundError: No memory with that id in the namespace.
            InvalidInputError: Bad field values, or ``id``/``namespace`` in ``fields``.
        """
        return _loop.run_sync(self.aupdate(id, namespace=namespace, **fields))

    async def aupdate(self, id: str, /, *, namespace: str, **fields: Any) -> Memory:
        """Async twin of :meth:`update`."""
        self._ensure_open()
        ns = self._ns(namespace)
        id_ = check_key(id, field="id", max_chars=self._config.max_key_chars)
        if not fields:
            raise InvalidInputError("update() needs at least one field to change")
        for fixed in ("id", "namespace"):
            if fixed in fields:
                raise InvalidInputError(f"{fixed} cannot be changed by update(); add a new memory instead")
        unknown = set(fields) - WRITABLE_FIELDS
        if unknown:
            raise InvalidInputError(
                f"unknown field(s) {sorted(unknown)}; writable fields are: {', '.join(sorted(WRITABLE_FIELDS))}"
            )
        return await self._queue.exclusive(lambda: self._editor.update(ns, id_, fields))

    def supersede(
        self, old_id: str, new: str | Mapping[str, Any], *, namespace: str, dedup: bool | None = None
    ) -> AddedMemory:
        """Replace a memory by a newer one, keeping both linked.

        The new memory inherits the old one's fields unless ``new`` (a text or a dict of fields)
        sets them; it records ``supersedes=old_id`` and the old one ``superseded_by=<new id>``
        (two commits: the new memory, then the link; a crash between them leaves both live, and
        superseding again finishes the job). Superseded memories are left out of searches unless a
        filter asks for them. Deleting the newer memory later makes the old one live again.

        Duplicates are detected as on :meth:`add` (same tests, same scope, same
        ``StoreConfig`` settings). When the new record duplicates a live memory and the
        ``dedup_policy`` is ``skip`` (default) or ``update``, nothing new is stored, in one commit
        (none if nothing changes):

        - the duplicate is another memory: the old one is superseded by it (``superseded_by`` is
          its id; the duplicate's own ``supersedes`` is left as it is). It takes the new record as
          on ``add``: ``skip`` adds the annotations (tags, entities, links, metadata keys, pinned,
          the higher priority and importance), ``update`` rewrites it with the fields ``new`` sets;
        - the duplicate is the old memory itself (superseded by its own text): it stays live,
          not superseded, and takes the record as above;
        - the old memory is already superseded by the duplicate (a repeated supersede, e.g. a
          script run again): nothing more is linked; any other superseded ``old_id`` is refused.

        The result is then the duplicate, with ``action`` ``skipped`` (``updated`` when it took new
        annotations or fields), ``duplicate_of`` its id, ``similarity`` and ``reason``. A record
        naming an ``id`` is compared with the memory of that id only. With ``keep_both`` the new
        memory is stored and the result still names the duplicate.

        Args:
            old_id: The memory to replace.
            new: The new text, or a dict of fields with ``text`` (any writable field, as for :meth:`add`).
            namespace: The namespace of both.
            dedup: Override the config: ``False`` skips duplicate detection (always a new memory).

        Raises:
            NotFoundError: ``old_id`` does not exist in the namespace.
            InvalidInputError: ``old_id`` is already superseded (and the new record does not
                duplicate its successor), the new record is invalid, or ``dedup`` is not a bool or None.
        """
        return _loop.run_sync(self.asupersede(old_id, new, namespace=namespace, dedup=dedup))

    async def asupersede(
        self, old_id: str, new: str | Mapping[str, Any], *, namespace: str, dedup: bool | None = None
    ) -> AddedMemory:
        """Async twin of :meth:`supersede`."""
        self._ensure_open()
        self._check_dedup(dedup)
        ns = self._ns(namespace)
        old_key = check_key(old_id, field="old_id", max_chars=self._config.max_key_chars)
        return await self._queue.exclusive(lambda: self._editor.supersede(ns, old_key, new, dedup=dedup))

    def delete(self, ids: str | Sequence[str], *, namespace: str, missing_ok: bool = False) -> int:
        """Delete memories by id; returns how many were deleted.

        A memory superseded by a deleted one becomes live again (in the same commit).

        Raises:
            NotFoundError: Some ids do not exist (and ``missing_ok`` is false); nothing is deleted.
        """
        return _loop.run_sync(self.adelete(ids, namespace=namespace, missing_ok=missing_ok))

    async def adelete(self, ids: str | Sequence[str], *, namespace: str, missing_ok: bool = False) -> int:
        """Async twin of :meth:`delete`."""
        self._ensure_open()
        ns, wanted = self._ns(namespace), self._ids(ids)
        return await self._queue.exclusive(lambda: self._editor.delete(ns, wanted, missing_ok=missing_ok))

    def forget(self, namespace: str) -> int:
        """Delete every memory of a namespace (a user's right to be forgotten); returns the count.

        A barrier: writes queued before it (``add_later``) commit first and are deleted with the
        rest, and memory formation handed over before it (``MemoryFormer.form_later``, a running
        ``form``) stores nothing once it is applied; that run fails with
        :class:`~memory_retrievers.errors.NamespaceForgottenError`.
        """
        return _loop.run_sync(self.aforget(namespace))

    async def aforget(self, namespace: str) -> int:
        """Async twin of :meth:`forget`."""
        self._ensure_open()
        ns = self._ns(namespace)
        number = self._forgets.request(ns)

        async def run() -> int:
            self._forgets.apply(ns, number)  # first: a failed delete still refuses work from before it
            return await self._editor.forget(ns)

        return await self._queue.exclusive(run)

    def _forget_ticket(self, namespace: str) -> Ticket:
        """A ticket for work on ``namespace`` handed over now: its writes never land after a later forget."""
        return self._forgets.ticket(self._ns(namespace))

    # ------------------------------------------------------------------ reads
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

    async def aget(
        self, ids: str | Sequence[str], *, namespace: str, include_vector: bool = False
    ) -> Memory | builtins.list[Memory]:
        """Async twin of :meth:`get`."""
        self._ensure_open()
        ns = self._ns(namespace)
        mems, missing = await self._searcher.memories(ns, self._ids(ids), include_vector=include_vector)
        if missing:
            raise NotFoundError(f"{len(missing)} id(s) not found in namespace {ns!r}: {missing[:5]}", missing)
        return mems[0] if isinstance(ids, str) else mems

    def list(
        self,
        namespace: str,
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[Memory]:
        """Memories of a namespace ordered by ``created_at``, optionally filtered and paged."""
        return _loop.run_sync(
            self.alist(namespace, filter=filter, limit=limit, offset=offset, newest_first=newest_first)
        )

    async def alist(
        self,
        namespace: str,
        *,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[Memory]:
        """Async twin of :meth:`list`."""
        self._ensure_open()
        ns = self._ns(namespace)
        self._check_int(limit, "limit", 1, _MAX_PAGE)
        self._check_int(offset, "offset", 0, _MAX_PAGE)
        return await self._searcher.page(ns, self._live(filter), limit=limit, offset=offset, newest_first=newest_first)

    def count(self, namespace: str, *, filter: MemoryFilter | Mapping[str, Any] | None = None) -> int:
        """Number of memories in a namespace (superseded ones excluded unless the filter asks)."""
        return _loop.run_sync(self.acount(namespace, filter=filter))

    async def acount(self, namespace: str, *, filter: MemoryFilter | Mapping[str, Any] | None = None) -> int:
        """Async twin of :meth:`count`."""
        self._ensure_open()
        return await self._table.count(build_where(self._ns(namespace), self._live(filter)), action="count memories")

    def namespaces(self) -> builtins.list[str]:
        """Every namespace that holds at least one memory, sorted.

        An administrative read across tenants (the only one): it lets adapters such as the
        LangGraph store list their namespaces. It scans the ``namespace`` column only.
        """
        return _loop.run_sync(self.anamespaces())

    async def anamespaces(self) -> builtins.list[str]:
        """Async twin of :meth:`namespaces`."""
        self._ensure_open()
        return await self._searcher.namespaces()

    # ------------------------------------------------------------------ search primitives
    def vector_search(
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
        return _loop.run_sync(self.avector_search(query, namespace=namespace, k=k, filter=filter))

    async def avector_search(
        self,
        query: str | Sequence[float] | np.ndarray,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`vector_search`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), self._live(filter))
        self._check_int(k, "k", 1, _MAX_QUERY_K)
        if isinstance(query, str):
            vector = await self._vectors.query(query)
        else:
            vector = self._vectors.given(query, source="the query vector")
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

    def fts_search(
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
        return _loop.run_sync(self.afts_search(query, namespace=namespace, k=k, filter=filter, field=field))

    async def afts_search(
        self,
        query: str,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
        field: FtsField | str = FtsField.TEXT,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`fts_search`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), self._live(filter))
        self._check_int(k, "k", 1, _MAX_QUERY_K)
        text = check_text(query, field="query", max_chars=MAX_QUERY_CHARS)
        try:
            fts_field = FtsField(field)
        except ValueError:
            valid = ", ".join(f.value for f in FtsField)
            raise InvalidInputError(f"field must be one of {valid}, got {field!r}") from None
        return hits(await self._searcher.fts(text, where, k, fts_field, ["id"]))

    def entity_search(
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
        return _loop.run_sync(self.aentity_search(entities, namespace=namespace, k=k, filter=filter))

    async def aentity_search(
        self,
        entities: Sequence[str],
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`entity_search`."""
        self._ensure_open()
        where = build_where(self._ns(namespace), self._live(filter))
        self._check_int(k, "k", 1, _MAX_QUERY_K)
        if isinstance(entities, str):
            raise InvalidInputError(f"entities must be a list of str; wrap it: [{entities!r}]")
        wanted = [check_key(e, field="entity", max_chars=self._config.max_key_chars) for e in entities]
        return hits(await self._searcher.by_entities(wanted, where, k, ["id"]))

    def recency_search(
        self,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """The newest memories (``Hit.score`` = ``created_at`` as POSIX seconds)."""
        return _loop.run_sync(self.arecency_search(namespace=namespace, k=k, filter=filter))

    async def arecency_search(
        self,
        *,
        namespace: str,
        k: int = 10,
        filter: MemoryFilter | Mapping[str, Any] | None = None,
    ) -> builtins.list[Hit]:
        """Async twin of :meth:`recency_search`."""
        self._ensure_open()
        ns, flt = self._ns(namespace), self._live(filter)
        self._check_int(k, "k", 1, _MAX_QUERY_K)
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

        Cached per namespace (recall reads it for the speaker cue): a speaker written through this
        store joins at once, other processes' within ``max_age_s`` seconds.
        """
        self._ensure_open()
        return await self._searcher.speakers(self._ns(namespace), max_age_s=max_age_s)

    async def arecall_source(
        self, namespace: str, *, filter: MemoryFilter | Mapping[str, Any] | None = None
    ) -> RecallSource:
        """What a recall of ``namespace`` under ``filter`` reads through (see :mod:`memory_retrievers.recall`).

        An in-memory view of the namespace while it has at most ``StoreConfig.recall_view_max_rows``
        memories, else LanceDB queries; both give the same results.
        """
        self._ensure_open()
        ns = self._ns(namespace)
        flt = self._live(filter)
        view = await self._views.get(ns)
        return ViewSource(view, flt, self._searcher) if view is not None else TableSource(ns, flt, self._searcher)

    # ------------------------------------------------------------------ maintenance
    def flush(self) -> None:
        """Wait until every write handed to this store is committed and background maintenance is done.

        Writes return once committed anyway; this also waits for maintenance that a write started
        in the background (``optimize`` after ``optimize_after_commits``...), e.g. before measuring.
        """
        _loop.run_sync(self.aflush())

    async def aflush(self) -> None:
        """Async twin of :meth:`flush`."""
        self._check_process()
        await self._queue.await_idle()
        await self._maintainer.await_idle()

    def purge(self, *, remove_uncommitted: bool = False) -> None:
        """Remove deleted and forgotten memories from disk, for good.

        ``delete`` and ``forget`` hide memories from every read at once, but their bytes stay on
        disk: in the data files (a deletion file only marks the rows), in every index (ids,
        namespace, tags, entities, project, topic, session ids, text tokens, vectors), in older
        versions and their transaction files. ``optimize`` does not reliably remove them: it
        rewrites a file only once more than 10% of its rows are deleted, never drops deleted
        values from an index, and keeps versions for ``StoreConfig.version_retention``.

        When ``purge`` returns, no file of the table holds them: every row is rewritten into new
        files if any deleted row is still stored, every index is rebuilt from the remaining rows
        (one this library does not build is dropped, with a warning), and every older version and
        unreferenced file is deleted. Not covered: copies outside the table (exports, backups,
        snapshots, object versions kept by a versioned bucket) and freed disk blocks, which the
        file system does not overwrite.

        It costs a rewrite of the table and a rebuild of every index (measured in
        docs/DEPLOYMENT.md: about 1.3 s at 20,000 memories; 30-90 s with a vector index, at
        20,000-100,000 memories, almost all of it rebuilding that index). Writes of this process
        wait for it. Writes of other processes may run meanwhile and are kept; their reads of an
        older version at that moment fail (retry them). Time travel to earlier versions is no
        longer possible afterwards.

        Args:
            remove_uncommitted: Also delete files no version references: those of a write that a
                killed process never committed (they may hold what it was writing). Only when no
                other process writes this store: a write in flight there would commit a version
                whose files are gone. Without it (default) they are kept until 7 days old.
        """
        _loop.run_sync(self.apurge(remove_uncommitted=remove_uncommitted))

    async def apurge(self, *, remove_uncommitted: bool = False) -> None:
        """Async twin of :meth:`purge`."""
        self._ensure_open()
        if not isinstance(remove_uncommitted, bool):
            raise InvalidInputError(f"remove_uncommitted must be True or False, got {remove_uncommitted!r}")
        await self.aflush_access()
        await self._maintainer.await_idle()
        await self._queue.exclusive(functools.partial(self._maintainer.purge, remove_uncommitted=remove_uncommitted))

    def optimize(self) -> None:
        """Delete expired memories, fold new rows into the indexes, compact small fragments, prune old versions.

        Also builds missing indexes. The store runs the index work on its own thresholds (see
        :class:`StoreConfig`), never on every write; expired memories are deleted here and by
        :meth:`expire` (reads leave them out from the moment they expire either way).
        """
        _loop.run_sync(self.aoptimize())

    async def aoptimize(self) -> None:
        """Async twin of :meth:`optimize`."""
        self._ensure_open()
        await self.aexpire()
        await self._maintainer.optimize(wait=True)

    def _live(self, filter: MemoryFilter | Mapping[str, Any] | None) -> MemoryFilter:
        """The caller's filter, leaving out what has expired by now unless it says otherwise."""
        flt = coerce_filter(filter)
        if flt.include_expired or flt.live_at is not None:
            return flt
        return flt.model_copy(update={"live_at": self._clock()})

    def expire(self, namespace: str | None = None) -> int:
        """Delete the memories whose ``expires_at`` has passed (in one namespace, or all).

        Reads already leave them out; this frees them for good, like :meth:`delete` (a memory
        that superseded another makes the older one live again). Returns how many were deleted.
        """
        return _loop.run_sync(self.aexpire(namespace))

    async def aexpire(self, namespace: str | None = None) -> int:
        """Async twin of :meth:`expire`."""
        self._ensure_open()
        ns = self._ns(namespace) if namespace is not None else None
        # Read and delete in one queued operation, each delete conditional on the row being expired
        # still: a put that refreshed it in between (issue 27 item 7) is never deleted.
        return await self._queue.exclusive(lambda: self._editor.expire(ns, self._clock()))

    # ------------------------------------------------------------------ access statistics
    def record_access(self, ids: Sequence[str], *, namespace: str, at: datetime | None = None) -> None:
        """Count an access of each id (e.g. recalled).

        Held in memory and written in one batch once ``StoreConfig.access_flush_size`` accesses
        are pending, off the caller's path.
        """
        self._ensure_open()
        ns = self._ns(namespace)
        when = to_utc(at, "at") if at is not None else self._clock()
        pending = self._access.record(ns, self._ids(ids), when)
        if pending >= self._config.access_flush_size:
            _loop.submit(self._flush_logged())

    async def arecord_access(self, ids: Sequence[str], *, namespace: str, at: datetime | None = None) -> None:
        """Async twin of :meth:`record_access` (never waits for the write)."""
        self.record_access(ids, namespace=namespace, at=at)

    async def _flush_logged(self) -> None:
        try:
            await self.aflush_access()
        except Exception:  # background work: report, never raise into nowhere
            logger.warning("memory-retrievers: writing access statistics failed; will retry", exc_info=True)

    def flush_access(self) -> int:
        """Write pending access statistics now; returns how many memories were updated."""
        return _loop.run_sync(self.aflush_access())

    async def aflush_access(self) -> int:
        """Async twin of :meth:`flush_access` (queued behind writes in progress)."""
        self._check_process()
        return await self._queue.exclusive(self._access.flush)

    # ------------------------------------------------------------------ export, restore, stats
    def export(
        self, namespace: str, *, limit: int | None = None, offset: int = 0, include_vectors: bool = True
    ) -> builtins.list[dict[str, Any]]:
        """Every stored field of a namespace's memories, as JSON-friendly records (a backup or a move).

        Superseded memories are included; records come oldest first (equal timestamps by id), so
        ``limit``/``offset`` page through a namespace. Pending access statistics are written first,
        so the records carry them. :meth:`restore` writes the records back exactly: ids,
        timestamps, access statistics, supersession links and (with ``include_vectors``) vectors.

        Args:
            namespace: Whose memories.
            limit: At most this many records (``None``: all).
            offset: Records to skip.
            include_vectors: Include the stored vectors (without them, a restore re-embeds).

        Returns:
            One dict per memory: :meth:`Memory.to_dict` plus ``vector`` as a list of floats.

        Raises:
            InvalidInputError: Bad namespace, limit or offset.
            StorageError: The table could not be read.
        """
        return _loop.run_sync(self.aexport(namespace, limit=limit, offset=offset, include_vectors=include_vectors))

    async def aexport(
        self, namespace: str, *, limit: int | None = None, offset: int = 0, include_vectors: bool = True
    ) -> builtins.list[dict[str, Any]]:
        """Async twin of :meth:`export`."""
        self._ensure_open()
        ns = self._ns(namespace)
        if limit is not None:
            self._check_int(limit, "limit", 1, _MAX_PAGE)
        self._check_int(offset, "offset", 0, _MAX_PAGE)
        await self._access.flush()
        return await self._transfer().export(ns, limit=limit, offset=offset, include_vectors=include_vectors)

    def restore(self, records: Iterable[Mapping[str, Any]], *, namespace: str | None = None) -> RestoreResult:
        """Write export records back exactly as they were, in one commit.

        Unlike :meth:`add_many`, nothing is recomputed: ids, ``created_at``/``updated_at``, access
        statistics, ``supersedes``/``superseded_by`` and ``context`` are written as given (no
        duplicate detection, no context fill). A memory with the same (namespace, id) is replaced
        whole, so restoring an export twice leaves the table as after the first time. Records
        without ``vector`` are embedded with the store's embedder.

        Args:
            records: Dicts as returned by :meth:`export` (timestamps as datetimes or ISO strings).
            namespace: For records that name none.

        Returns:
            A :class:`~memory_retrievers.storage.transfer.RestoreResult`: memories added and replaced.

        Raises:
            InvalidInputError: A record is invalid (it is named by its position); nothing is written.
            EmbeddingError: Embedding a record without a vector failed; nothing is written.
        """
        return _loop.run_sync(self.arestore(records, namespace=namespace))

    async def arestore(self, records: Iterable[Mapping[str, Any]], *, namespace: str | None = None) -> RestoreResult:
        """Async twin of :meth:`restore`."""
        self._ensure_open()
        if isinstance(records, (str, bytes, Mapping)):
            raise InvalidInputError("records must be a list of dicts, e.g. what export() returned")
        rows = []
        for i, raw in enumerate(records):
            try:
                rows.append(parse_restore_record(raw, self._config, namespace=namespace))
            except InvalidInputError as exc:
                raise InvalidInputError(f"record {i}: {exc}") from None
        transfer = self._transfer()
        return await self._queue.exclusive(lambda: transfer.restore(rows))

    def stats(self) -> StoreStats:
        """Health of the table: memories per namespace and kind, index coverage, fragments, versions, size.

        An administrative read across namespaces, like :meth:`namespaces`.

        Returns:
            A :class:`~memory_retrievers.storage.stats.StoreStats` (``to_dict()`` for JSON).

        Raises:
            StorageError: The statistics could not be read.
        """
        return _loop.run_sync(self.astats())

    async def astats(self) -> StoreStats:
        """Async twin of :meth:`stats`."""
        self._ensure_open()
        return await read_stats(self._table)

    def _transfer(self) -> Transfer:
        # Stateless over the store's components; built per call so the constructor stays as it was.
        return Transfer(self._table, self._vectors, self._writer)

    # ------------------------------------------------------------------ helpers
    def _records(self, records: Iterable[Mapping[str, Any]], namespace: str | None) -> builtins.list[dict[str, Any]]:
        """Every record checked before any write: a bad one in batch 3 must stop batch 1 too."""
        if isinstance(records, (str, bytes, Mapping)):
            raise InvalidInputError("records must be a list of dicts; for one memory use add()")
        recs: builtins.list[dict[str, Any]] = []
        for i, raw in enumerate(records):
            try:
                rec = validate_record(raw, self._config, namespace=namespace)
            except InvalidInputError as exc:
                raise type(exc)(f"record {i}: {exc}") from None
            if rec.get("vector") is not None:
                rec["vector"] = self._vectors.given(rec["vector"], source=f"the vector of record {i}")
            recs.append(rec)
        return recs

    @staticmethod
    def _check_dedup(dedup: Any) -> None:
        if dedup is not None and not isinstance(dedup, bool):
            raise InvalidInputError(f"dedup must be True, False or None (the config decides), got {dedup!r}")

    def _ns(self, namespace: Any) -> str:
        return check_namespace(namespace, max_chars=self._config.max_key_chars)

    def _ids(self, ids: str | Sequence[str]) -> builtins.list[str]:
        if isinstance(ids, str):
            ids = [ids]
        if not isinstance(ids, Sequence) or isinstance(ids, bytes):
            raise InvalidInputError(f"ids must be a str or a list of str, got {type(ids).__name__}")
        if not ids:
            raise InvalidInputError("ids is empty; pass at least one id")
        return [check_key(i, field="id", max_chars=self._config.max_key_chars) for i in ids]

    @staticmethod
    def _check_int(value: Any, name: str, low: int, high: int | None = None) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
            bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
            raise InvalidInputError(f"{name} must be an int {bound}, got {value!r}")

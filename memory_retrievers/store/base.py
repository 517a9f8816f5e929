"""The store's wiring: its components, its lifecycle and the argument checks every method shares.

``MemoryStore`` (``store.py``) is this base plus the everyday async API (``_store_writes``,
``_store_reads``), a thin sync facade made from it (``_twins``) and, apart, the administration
(``admin.py``).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import memory_retrievers.runtime.loop as _loop
import memory_retrievers.store.lifecycle as _store_lifecycle
from memory_retrievers.config import StoreConfig, validated
from memory_retrievers.embeddings import Embedder, SentenceTransformerEmbedder
from memory_retrievers.errors import (
    ConfigError,
    FlushTimeoutError,
    ForkedStoreError,
    InvalidInputError,
    MemoryRetrieversError,
    StorageError,
)
from memory_retrievers.filters import MemoryFilter, coerce_filter
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.connect import CacheSizes, cloud_access
from memory_retrievers.storage.context_fill import ContextFiller
from memory_retrievers.storage.duplicates import DuplicateFinder
from memory_retrievers.storage.edits import Editor
from memory_retrievers.storage.location import TableLocation
from memory_retrievers.storage.maintenance import Maintainer
from memory_retrievers.storage.pending import PendingOverlay
from memory_retrievers.storage.queue import WriteQueue
from memory_retrievers.storage.schema import memory_schema
from memory_retrievers.storage.search import Searcher
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.storage.vectors import VectorMaker
from memory_retrievers.storage.views import ViewCache
from memory_retrievers.storage.writes import Writer
from memory_retrievers.store.barrier import ForgetBarrier, current_check
from memory_retrievers.validation import check_key, check_namespace, validate_record

if TYPE_CHECKING:
    from memory_retrievers.storage.caller import CallerTable

__all__ = ["DEFAULT_TABLE", "FLUSH_TIMEOUT_S", "StoreBase", "default_store_path", "deadline_in"]

logger = logging.getLogger("memory_retrievers.store.memory_store")

DEFAULT_TABLE = "memories"

#: How long ``flush()`` and ``close()`` wait by default, in seconds: a full write queue (4,096
#: records embed in about 8 s with the default model on 2 cores) behind a commit as slow as
#: ``StoreConfig.storage_timeout`` allows (120 s), with room to spare.
FLUSH_TIMEOUT_S = 300.0

MAX_QUERY_K = 10_000
# LanceDB takes limit and offset as unsigned 32-bit ints: larger ones raise OverflowError inside it.
MAX_PAGE = 2**32 - 1


def default_store_path() -> Path:
    """Where ``MemoryStore()`` keeps its table when no URI is given.

    The user data directory (``~/.local/share/memory-retrievers/store`` on Linux), never a temp dir.
    """
    import platformdirs

    return platformdirs.user_data_path("memory-retrievers") / "store"


def _now_utc() -> datetime:
    return datetime.now(timezone.utc)


def check_embedder(embedder: Embedder | None) -> Embedder:
    """The given embedder (checked against the protocol), or the default one."""
    found = embedder if embedder is not None else SentenceTransformerEmbedder()
    if not isinstance(found, Embedder):
        raise ConfigError(
            f"embedder {type(found).__name__} does not implement the Embedder protocol "
            "(name, dimension, embed_documents, embed_query, aembed_documents, aembed_query)"
        )
    return found


def check_table_name(table_name: Any) -> str:
    """A table name LanceDB accepts on every storage."""
    if not isinstance(table_name, str) or not table_name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"table_name must be letters, digits, '_' or '-', got {table_name!r}")
    return table_name


def deadline_in(timeout: float | None) -> float | None:
    """The monotonic time ``timeout`` seconds from now (``None``: none).

    Raises:
        InvalidInputError: ``timeout`` is not a positive, finite number or ``None``.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise InvalidInputError(f"timeout must be a positive number of seconds or None (no limit), got {timeout!r}")
    return time.monotonic() + timeout


def _seconds(timeout: float | None) -> str:
    return "without limit" if timeout is None else f"{timeout:g}"


def _left(deadline: float | None) -> float | None:
    """Seconds left until ``deadline`` (never negative; ``None``: no limit)."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class StoreBase:
    """The components of one store, wired once, and what every method of the store shares.

    See :class:`~memory_retrievers.MemoryStore` for the arguments.
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
        connection: Any = None,
        api_key: str | None = None,
        region: str | None = None,
        host_override: str | None = None,
        _caller: CallerTable | None = None,
        _open: bool = True,
    ) -> None:
        self._config: StoreConfig = validated(StoreConfig, config, "StoreConfig")
        self._embedder: Embedder = check_embedder(embedder)
        # The default model loads (seconds, cold) while the table opens, not on the first write.
        preload = getattr(self._embedder, "load_in_background", None)
        if callable(preload):
            preload()
        table_name = check_table_name(table_name)
        self._clock = clock or _now_utc
        cloud = cloud_access(
            None if uri is None else str(uri), api_key=api_key, region=region, host_override=host_override
        )
        if connection is not None and _caller is None:
            from memory_retrievers.storage.caller import CallerTable

            _caller = CallerTable.from_connection(connection, uri=uri, storage_options=storage_options)
        cfg = self._config
        self._table = MemoryTable(
            uri=_caller.uri if _caller is not None else str(uri) if uri is not None else str(default_store_path()),
            table_name=table_name,
            schema=memory_schema(int(self._embedder.dimension), self._embedder.name),
            storage_options=storage_options,
            read_consistency_interval=cfg.read_consistency_interval,
            caches=CacheSizes(cfg.index_cache_bytes, cfg.metadata_cache_bytes),
            timeout=cfg.storage_timeout,
            maintenance_timeout=cfg.maintenance_timeout,
            caller=_caller,
            cloud=cloud,
        )
        self._wire(cfg)
        # Which account's database a db:// URI names (a digest, never the key): see handles.register.
        self._cloud_id = cloud.identity() if cloud is not None else None
        self._reach = (storage_options, cloud)  # for table_locations(): how another process reaches the table
        self._closed = False
        self._embedder_loaded = False
        self._pid = os.getpid()  # a forked child must not use this store (see _check_process)
        if _open:
            _loop.run_sync(self._table.open())
            _store_lifecycle.register(self)

    def _wire(self, cfg: StoreConfig) -> None:
        """The components over the table.

        Subscription order is commit-notification order: views are brought up to date before
        maintenance runs.
        """
        self._views = ViewCache(
            self._table,
            cfg.recall_view_max_rows,
            cfg.recall_view_total_rows,
            # A namespace read from LanceDB wants the vector index (built in the background).
            on_outgrown=lambda _namespace: self._maintainer.note_large_namespace(),
        )
        self._access = AccessLog(self._table)
        self._searcher = Searcher(self._table, self._access)
        self._vectors = VectorMaker(self._embedder, int(self._embedder.dimension), cfg.embed_batch_size)
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
        # Batches queued by add_later, shown to this process's recall until their write settles.
        self._pending = PendingOverlay()
        # Maintenance writes access statistics through the queue before an optimize: it gets the log
        # and the queue themselves, never a method of this store (nothing below calls back up).
        self._maintainer = Maintainer(self._table, cfg, self._access, self._queue)

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

    def table_locations(self) -> builtins.list[TableLocation]:
        """Where the store's table lives and how to reach it: what another process needs to open it again.

        One entry (a :class:`~memory_retrievers.ShardedMemoryStore` gives one per shard). The API key
        and storage option values never appear in an entry's repr.
        """
        return [TableLocation(self._table.uri, self._table.table_name, *self._reach)]

    def __repr__(self) -> str:
        return f"MemoryStore(uri={self.uri!r}, table={self.table_name!r}, embedder={self._embedder.name!r})"

    # ------------------------------------------------------------------ open / close
    def close(self, *, timeout: float | None = FLUSH_TIMEOUT_S) -> None:
        """Commit queued writes and write pending access statistics. The store must not be used afterwards.

        In a child forked after the store was opened, this does nothing: the store belongs to the
        parent process, which still writes and closes it. A store opened on a caller's LanceDB
        connection or table leaves that connection open: it is the caller's to close.

        Args:
            timeout: Longest wait, in seconds (``None``: no limit), for queued writes to commit and
                background maintenance to finish. Past it, maintenance still running is stopped
                (each of its steps is one commit: the table is left as before that step), but
                queued writes are never dropped: the store stays open and this raises.

        Raises:
            FlushTimeoutError: Writes were still queued or committing at the deadline; they still
                commit in the background. Call ``close()`` again.
            InvalidInputError: ``timeout`` is not a positive number or ``None``.
        """
        if self._forked():
            return
        _loop.run_sync(self.aclose(timeout=timeout))

    async def aclose(self, *, timeout: float | None = FLUSH_TIMEOUT_S) -> None:
        """Async twin of :meth:`close`: waits for queued writes and running maintenance too."""
        await self._close_by(deadline_in(timeout), timeout)

    def _finish_at_exit(self) -> None:
        """Commit queued writes and write pending access statistics, leaving the store open (see ``lifecycle``)."""
        if self._closed or self._forked():
            return
        _loop.run_sync(self._finish_by(deadline_in(FLUSH_TIMEOUT_S), FLUSH_TIMEOUT_S))

    async def _finish_by(self, deadline: float | None, timeout: float | None) -> None:
        await self._writes_by(deadline, timeout, "close")  # the access statistics' rows are committed first
        try:
            if self._access.pending:
                # Written by an optimize, which folds the rows they rewrite back into the indexes:
                # the next process's searches find every row indexed (see storage/access.py).
                await asyncio.wait_for(self._maintainer.optimize(wait=True), _left(deadline))
        except asyncio.TimeoutError:  # access statistics only: the memories themselves are committed
            raise self._late("close", timeout) from None
        except MemoryRetrieversError as exc:  # e.g. a read-only store: closing must still work
            logger.warning("memory-retrievers: access statistics could not be written at close: %s", exc)

    def _drop_access_statistics(self) -> None:
        """Forget pending access statistics (at exit, once LanceDB can no longer write them)."""
        if self._access.pending:
            unwritten = self._access.pending
            logger.debug("memory-retrievers: %d memories' access statistics were not written at exit", unwritten)
            self._access.drop()

    async def _close_by(self, deadline: float | None, timeout: float | None) -> None:
        """:meth:`aclose` with its deadline (a monotonic time) set by the caller (a sharded store's, for all)."""
        if self._closed or self._forked():
            return
        await self._finish_by(deadline, timeout)
        await self._writes_by(deadline, timeout, "close")
        if not await self._maintainer.await_idle(_left(deadline)) and self._maintainer.abandon():
            logger.warning(
                "memory-retrievers: closing %s stopped maintenance still running after %s s (the table is intact; "
                "the next optimize starts it over)",
                self.uri,
                _seconds(timeout),
            )
        self._closed = True
        self._table.close()
        _store_lifecycle.unregister(self)

    def flush(self, *, timeout: float | None = FLUSH_TIMEOUT_S) -> None:
        """Wait until every write handed to this store is committed and background maintenance is done.

        Writes return once committed anyway; this also waits for maintenance that a write started
        in the background (``optimize`` after ``optimize_after_commits``...), e.g. before measuring.

        Args:
            timeout: Longest wait, in seconds (``None``: no limit). Nothing is stopped or dropped
                when it passes: the writes still commit and the maintenance goes on.

        Raises:
            FlushTimeoutError: Writes or maintenance were still running at the deadline.
            InvalidInputError: ``timeout`` is not a positive number or ``None``.
        """
        _loop.run_sync(self.aflush(timeout=timeout))

    async def aflush(self, *, timeout: float | None = FLUSH_TIMEOUT_S) -> None:
        """Async twin of :meth:`flush`."""
        self._check_process()
        await self._flush_by(deadline_in(timeout), timeout)

    async def _flush_by(self, deadline: float | None, timeout: float | None) -> None:
        """:meth:`aflush` with its deadline (a monotonic time) set by the caller (a sharded store's, for all)."""
        await self._writes_by(deadline, timeout, "flush")
        if not await self._maintainer.await_idle(_left(deadline)):
            raise FlushTimeoutError(
                f"flush() waited {_seconds(timeout)} s and background maintenance of {self.uri!r} is still running "
                "(every write is committed; maintenance goes on): call flush() again, or pass a longer timeout"
            )

    async def _writes_by(self, deadline: float | None, timeout: float | None, call: str) -> None:
        """Wait until nothing is queued or committing, at most until ``deadline``.

        Raises:
            FlushTimeoutError: Writes were still queued or committing at the deadline (nothing is dropped).
        """
        if not await self._queue.await_writes(_left(deadline)):
            raise self._late(call, timeout)

    def _late(self, call: str, timeout: float | None) -> FlushTimeoutError:
        """The error of a ``flush``/``close`` whose deadline passed with writes still queued or committing."""
        queued = self._queue.waiting()
        after = " The store stays open: call close() again." if call == "close" else ""
        return FlushTimeoutError(
            f"{call}() waited {_seconds(timeout)} s and {queued} write(s) to {self.uri!r} are still queued or "
            f"committing; nothing was dropped: they commit in the background.{after} Pass a longer timeout on slow "
            "storage",
            queued=queued,
        )

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise ForkedStoreError(
            "a MemoryStore cannot be sent to another process (pickled): send its location and open a new "
            "MemoryStore there, e.g. MemoryStore(store.uri); see docs/how-to/deploy.md",
            opened_in=self._pid,
        )

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
                "'forkserver' or 'spawn' start method, or memory_retrievers.PerProcess); see docs/how-to/deploy.md",
                opened_in=self._pid,
            )

    # ------------------------------------------------------------------ shared checks
    def _live(self, filter: MemoryFilter | Mapping[str, Any] | None) -> MemoryFilter:
        """The caller's filter, leaving out what has expired by now unless it says otherwise."""
        flt = coerce_filter(filter)
        if flt.include_expired or flt.live_at is not None:
            return flt
        return flt.model_copy(update={"live_at": self._clock()})

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

"""Index builds, ``optimize()`` and the cleanup of killed writers' temp files, run one at a time.

Maintenance subscribes to the table's commits: it counts rows and commits, builds the base indexes
after the first write, and optimizes once a threshold of :class:`~memory_retrievers.StoreConfig`
is reached, never per write.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import warnings
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

import memory_retrievers.runtime.loop as _loop
from memory_retrievers.config import StoreConfig
from memory_retrievers.errors import StorageError
from memory_retrievers.models import FtsField
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.backend import IndexKind
from memory_retrievers.storage.cluster import Clusterer, ClusterResult
from memory_retrievers.storage.conflicts import retry_conflicts
from memory_retrievers.storage.index_child import build_in_child, build_vector_index
from memory_retrievers.storage.queue import WriteQueue
from memory_retrievers.storage.table import CommitEvent, MemoryTable
from memory_retrievers.storage.temp_files import aremove_stale_temp_files

__all__ = ["FTS_COLUMNS", "Maintainer", "build_in_child"]

logger = logging.getLogger(__name__)

#: Scalar indexes the store keeps: column -> index kind (built by the backend, see backend.py).
SCALAR_INDEXES: dict[str, IndexKind] = {
    "namespace": "Bitmap",
    "id": "BTree",
    "kind": "Bitmap",
    "session_id": "BTree",
    "project": "Bitmap",
    "topic": "Bitmap",
    "pinned": "Bitmap",
    "created_at": "BTree",
    "content_hash": "BTree",
    "tags": "LabelList",
    "entities": "LabelList",
}
#: Full-text (BM25) indexes. Positions stay off: phrase positions crash optimize() (lance#7653).
FTS_COLUMNS = {FtsField.TEXT: "text", FtsField.CONTEXT: "search_text", FtsField.ENTITIES: "entities"}

_LOCK_POLL_S = 0.01
# Fewest rows an ANN index is built on (StoreConfig.ann_index_min_rows's own floor): IVF
# partitions need rows to train on.
_ANN_MIN_ROWS = 256


def _own_kind(index_type: str, column: str) -> IndexKind | None:
    """The kind this library builds index ``index_type`` on ``column`` as, or None if not one of its own."""
    if column in FTS_COLUMNS.values() and index_type == "FTS":
        return "FTS"
    if column == "vector":
        return "HnswSq"
    kind = SCALAR_INDEXES.get(column)
    if kind is not None and kind.lower() == index_type.replace("_", "").lower():
        return kind
    return None


class Maintainer:
    """Keeps one store's indexes built and its table compact.

    Args:
        table: The table layer (this subscribes to its commits).
        config: Thresholds and retention.
        access: The access log: its pending statistics are written before every optimize, so they
            are folded in with the rest.
        queue: The store's write queue, which that write goes through (behind writes in progress);
            without one it is written directly.
    """

    def __init__(
        self, table: MemoryTable, config: StoreConfig, access: AccessLog, queue: WriteQueue | None = None
    ) -> None:
        self._table = table
        self._config = config
        self._access = access
        self._queue = queue
        self._counter_lock = threading.Lock()
        self._rows = 0
        self._commits = 0
        # A thread lock, not an asyncio one: the sync and async APIs run on different loops.
        self._lock = threading.Lock()
        self._background: Future[None] | None = None
        # Set once a namespace outgrew the in-memory views: its vector search runs in LanceDB,
        # where an ANN index beats a flat scan well before the table reaches ann_index_min_rows.
        self._large_namespace = False
        table.subscribe(self._on_commit)

    def _reset(self) -> None:
        with self._counter_lock:
            self._rows = 0
            self._commits = 0

    async def _on_commit(self, event: CommitEvent) -> None:
        if event.failed:
            return
        with self._counter_lock:
            self._rows += event.row_count
            self._commits += 1
            due = self._rows >= self._config.optimize_after_rows or self._commits >= self._config.optimize_after_commits
        if not self.has_base_indexes():
            # The first build, inline: until they exist, full-text search finds nothing. It covers
            # every row written so far, once per table. Only the full-text indexes: the scalar ones
            # pay off on large tables (a prefilter over 1M rows) and come with the first optimize;
            # building all 14 made a new store's first write about 3x slower (and 11 versions).
            try:
                await self.ensure_indexes(wait=False, scalar=False)
            except StorageError as exc:  # the write is committed: never make it look failed
                logger.warning("building the indexes after a write failed and will be retried: %s", exc)
            self._reset()
        elif due:
            self._start_background()

    def note_large_namespace(self) -> None:
        """A namespace is too large for a view: build the vector index now (in the background) if missing.

        Measured on a 20,000-memory namespace (hash vectors, 384 dimensions): recall 62 ms with a
        flat scan, 26 ms with the index; the build took 4.5 s on 2 cores.
        """
        if self._large_namespace:
            return
        self._large_namespace = True
        if any(key.endswith(":vector") for key in self._table.indexed):
            return
        with self._counter_lock:
            if self._background is not None and not self._background.done():
                return  # the running optimize builds missing indexes first
            self._background = _loop.submit(self._build_logged())

    async def _build_logged(self) -> None:
        try:
            await self.ensure_indexes(wait=False)
        except Exception as exc:  # background work: report; the next optimize builds it
            logger.warning("building the vector index failed and will be retried: %s", exc)

    def fold_access(self) -> None:
        """Write the pending access statistics now, in the background, inside an optimize.

        The optimize folds the rows the statistics rewrote back into the indexes right after
        writing them (see :mod:`.access`); one already running writes them at its next run.
        """
        self._start_background()

    def _start_background(self) -> None:
        """Optimize off the writer's path: the commit that tripped the threshold returns at once."""
        with self._counter_lock:
            if self._background is not None and not self._background.done():
                return  # the running one covers the new rows
            self._background = _loop.submit(self._optimize_logged())

    async def _optimize_logged(self) -> None:
        try:
            await self.optimize(wait=False)
        except Exception as exc:  # background work: report, never raise into nowhere; the next commit retries
            logger.warning("maintenance after writes failed and will be retried: %s", exc)

    async def await_idle(self, timeout: float | None = None) -> bool:
        """Wait for background maintenance to finish; whether it did within ``timeout`` s (``None``: no limit)."""
        running = self._background
        if running is None or running.done():
            return True
        # asyncio.wait, not wait_for: the deadline passing must not cancel the maintenance itself.
        done, _ = await asyncio.wait({asyncio.wrap_future(running)}, timeout=timeout)
        return bool(done)

    def abandon(self) -> bool:
        """Stop the background maintenance still running (a store closing past its deadline); whether one was.

        Every step of maintenance is one commit, so a step cut short leaves the table as it was
        before it; the next optimize starts it over.
        """
        running = self._background
        return running is not None and running.cancel()

    def has_base_indexes(self) -> bool:
        """Whether the full-text indexes exist (built inline after the first write)."""
        return all(f"FTS:{column}" in self._table.indexed for column in FTS_COLUMNS.values())

    async def _exclusive(self, work: Callable[[], Awaitable[Any]], *, wait: bool) -> bool:
        """Run maintenance of this store one at a time; returns False when skipped.

        Two maintenance runs of one store would only conflict with each other's commits.
        Automatic maintenance (``wait=False``) skips when another run is in progress: that run
        covers the new rows. The lock is taken by polling, never by a thread blocked in
        ``acquire``: a waiter cancelled while a thread waits for it would leave the lock taken
        when that thread finally gets it, and every later maintenance would hang.
        """
        if wait:
            while not self._lock.acquire(blocking=False):
                await asyncio.sleep(_LOCK_POLL_S)
        elif not self._lock.acquire(blocking=False):
            return False
        try:
            await work()
        finally:
            self._lock.release()
        return True

    async def ensure_indexes(self, *, wait: bool = True, scalar: bool = True) -> None:
        """Create any missing FTS index, and with ``scalar`` the scalar and (on a large table) ANN ones."""
        build = functools.partial(self._build_missing, scalar=scalar)
        await self._exclusive(lambda: retry_conflicts("build indexes", build), wait=wait)

    async def _build_missing(self, *, scalar: bool = True) -> None:
        await self._table.refresh()
        rows = await self._table.count()
        if rows == 0:
            return
        backend = self._table.backend
        # Re-read on every attempt: after a conflict, the other writer may have built the index.
        indexed = await self._table.refresh_indexes()
        build = self._table.maintain
        for column in FTS_COLUMNS.values():
            if f"FTS:{column}" not in indexed:
                await build(backend.create_index(column, "FTS"), f"build the full-text index of {column}")
        if not scalar:
            await self._table.refresh_indexes()
            return
        for column, kind in SCALAR_INDEXES.items():
            if f"{kind}:{column}" not in indexed:
                await build(backend.create_index(column, kind), f"build the {column} index")
        wanted = rows >= self._config.ann_index_min_rows or (self._large_namespace and rows >= _ANN_MIN_ROWS)
        if wanted and not any(k.endswith(":vector") for k in indexed):
            # A build in a child process is killed when its deadline passes (see index_child).
            in_child = self._config.index_in_child_process
            await build(build_vector_index(self._table, in_child=in_child), "build the vector index")
        await self._table.refresh_indexes()

    async def _flush_access(self) -> int:
        if self._queue is None:
            return await self._access.flush()
        return await self._queue.exclusive(self._access.flush)

    async def optimize(self, *, wait: bool) -> None:
        """Flush access statistics, build missing indexes, fold new rows in, compact, prune versions."""
        self._reset()
        await self._flush_access()

        async def work() -> None:
            if self._config.cluster_on_optimize:  # first, so the same optimize folds moved rows back in
                await retry_conflicts("cluster the table", self._clusterer().run, defer_ok=True)
            await retry_conflicts("build indexes", self._build_missing)
            await retry_conflicts("optimize the table", self._compact_between_writes, defer_ok=True)

        if not await self._exclusive(work, wait=wait):
            return
        removed = await aremove_stale_temp_files(self._table)
        if removed:
            logger.info("optimize removed %d temporary file(s) left by interrupted writes", removed)

    def _clusterer(self) -> Clusterer:
        config = self._config
        return Clusterer(
            self._table,
            min_run_rows=config.cluster_min_run_rows,
            max_runs=config.cluster_max_runs,
            chunk_rows=config.cluster_chunk_rows,
        )

    async def cluster(self) -> ClusterResult:
        """One clustering pass (see ``cluster.py``), never beside another maintenance run of this store."""
        done: list[ClusterResult] = []

        async def work() -> None:
            done.append(await retry_conflicts("cluster the table", self._clusterer().run))

        await self._exclusive(work, wait=True)
        return done[0]

    async def _compact_between_writes(self) -> None:
        """Compact while no write of this store commits: they wait behind it in the queue, in order.

        Beside them it lost: a chat turn's write updates its neighbours' context (an Update), which
        preempts a compaction of the same fragments; all ten attempts failed on a single-process chat
        loop, so compaction and pruning never ran and versions piled up (issue 40 items 11 and 12).
        Other processes' writes can still preempt it: those conflicts are what the retries are for.
        """
        if self._queue is None:
            await self._compact()
        else:
            await self._queue.exclusive(self._compact, maintenance=True)

    async def _compact(self) -> None:
        # From the latest version on every attempt: a handle left at the version a conflict was
        # found at would compact the same fragments again and lose to the same commit every time
        # (seen with writers in other processes, and its rewritten files left for cleanup).
        await self._table.refresh()
        await self._table.maintain(self._table.backend.optimize(self._config.kept_versions_age), "optimize the table")

    async def purge(self, *, remove_uncommitted: bool = False) -> None:
        """Remove deleted memories from disk: their rows, index entries, older versions and files.

        Three steps, each its own commit (conflicts retried), so a purge interrupted between them
        leaves every memory intact and the next one finishes the work: rewrite every row of the
        table when the latest version still hides deleted rows behind deletion files (LanceDB
        0.40's ``optimize`` only rewrites a fragment once more than 10% of it is deleted, and its
        Python API takes no compaction options); rebuild every index from the rows that remain (an
        index keeps the values of deleted rows, and incremental index updates never drop them);
        then delete every older version and every file only older versions reference.

        Files no version references (uploaded by a write that has not committed yet, or never
        will: a killed writer) are removed only with ``remove_uncommitted``: a write in flight in
        another process would otherwise commit a version whose data files are gone, and every
        later read of the table would fail. Without it, LanceDB removes them once 7 days old.
        Pending access statistics are not flushed here: the caller runs this on the write queue,
        behind a flush (a flush queued from here would wait for this very operation). Other
        processes reading an older version at this moment fail (its files are removed).
        """

        async def work() -> None:
            await self._table.refresh()
            if await self._hides_deleted_rows():
                await retry_conflicts("rewrite the rows of files holding deleted memories", self._rewrite_rows)
            await self._rebuild_indexes()
            with warnings.catch_warnings():  # LanceDB warns about exactly what purge is for
                warnings.filterwarnings("ignore", message=".*cleanup_older_than=0.*")
                prune = functools.partial(self._prune_everything, remove_uncommitted)
                await retry_conflicts("purge old versions", prune)
            await self._table.refresh_indexes()

        self._reset()
        await self._exclusive(work, wait=True)
        # Another process's write in flight has temp files too: only past an hour unless told.
        await aremove_stale_temp_files(self._table, 0.0 if remove_uncommitted else 3600.0)

    async def _hides_deleted_rows(self) -> bool:
        """Whether the latest version has deletion files (deleted rows still in its data files)."""
        versions = await self._table.bounded(
            self._table.backend.versions(), f"list the versions of {self._table.where}"
        )
        latest = max(versions, key=lambda v: int(v["version"]), default=None)
        if latest is None:
            return False
        # A summary without the count (older table formats) is treated as holding deleted rows.
        return str(latest.get("metadata", {}).get("total_deletion_files", "1")) != "0"

    async def _rewrite_rows(self) -> None:
        """Write every live row into new files, in one commit; the old files drop out of the version.

        An update that sets a column to itself rewrites whole rows (all columns); a fragment whose
        rows all moved is removed from the version, deletion file and all. The rows' content,
        revision and timestamps are unchanged.
        """
        await self._table.refresh()  # as in _compact
        await self._table.maintain(self._table.backend.rewrite_all_rows(), "rewrite the rows of the table")

    async def _rebuild_indexes(self) -> None:
        """Rebuild every index from the live rows (or drop it when no row is left).

        ``replace=True`` builds the new index under a new folder and swaps it in one commit, so
        searches keep working meanwhile; the old folder becomes unreferenced and is pruned.
        """
        backend = self._table.backend
        await self._table.refresh()
        rows = await self._table.count()
        listed = await self._table.bounded(backend.listed_indexes(), f"list the indexes of {self._table.where}")
        for name, index_type, column in listed:
            kind = _own_kind(index_type, column)
            if rows == 0 or kind is None:
                if kind is None:
                    logger.warning(
                        "purge dropped index %r on %r: not one this library builds, so it cannot be rebuilt here "
                        "and could hold deleted values; build it again if you need it",
                        name,
                        column,
                    )
                await retry_conflicts("drop an index", functools.partial(self._drop_index, name))
                continue
            await retry_conflicts(f"rebuild the {column} index", functools.partial(self._rebuild, column, kind))

    async def _drop_index(self, name: str) -> None:
        await self._table.bounded(self._table.backend.drop_index(name), f"drop the index {name}")

    async def _rebuild(self, column: str, kind: IndexKind) -> None:
        await self._table.maintain(self._table.backend.create_index(column, kind), f"rebuild the {column} index")

    async def _prune_everything(self, remove_uncommitted: bool) -> None:
        await self._table.refresh()  # as in _compact
        prune = self._table.backend.optimize(timedelta(0), delete_unverified=remove_uncommitted)
        await self._table.maintain(prune, "prune old versions")

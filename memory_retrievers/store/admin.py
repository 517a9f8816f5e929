"""Administration of a store, apart from its everyday API: optimize, purge, expire, stats, export, restore.

Reached as ``store.admin`` (a :class:`StoreAdmin`); every method has an async twin (``aoptimize``...).
These read or rewrite the table across namespaces or for good, cost a rewrite or a scan, and are
run by operators and scripts rather than by an agent's recall and writes.

Example:
    >>> store.admin.optimize()                                                  # doctest: +SKIP
    >>> store.admin.stats().to_dict()
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Iterable, Mapping
from typing import Any

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.runtime.twins import sync_twin
from memory_retrievers.storage.cluster import ClusterResult
from memory_retrievers.storage.stats import StoreStats, read_stats
from memory_retrievers.storage.transfer import RestoreResult, Transfer, parse_restore_record
from memory_retrievers.store.base import MAX_PAGE, StoreBase

__all__ = ["StoreAdmin"]


class StoreAdmin:
    """The administrative operations of one :class:`~memory_retrievers.MemoryStore`.

    Args:
        store: The store administered (``store.admin`` makes this for you).
    """

    def __init__(self, store: StoreBase) -> None:
        self._store = store

    def __repr__(self) -> str:
        return f"StoreAdmin({self._store!r})"

    async def apurge(self, *, remove_uncommitted: bool = False) -> None:
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
        docs/how-to/deploy.md: about 1.3 s at 20,000 memories; 30-90 s with a vector index, at
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
        self._store._ensure_open()
        if not isinstance(remove_uncommitted, bool):
            raise InvalidInputError(f"remove_uncommitted must be True or False, got {remove_uncommitted!r}")
        await self.aflush_access()
        await self._store._maintainer.await_idle()
        await self._store._queue.exclusive(
            functools.partial(self._store._maintainer.purge, remove_uncommitted=remove_uncommitted)
        )

    async def aoptimize(self) -> None:
        """Delete expired memories, fold new rows into the indexes, compact small fragments, prune old versions.

        Also builds missing indexes. The store runs the index work on its own thresholds (see
        :class:`StoreConfig`), never on every write; expired memories are deleted here and by
        :meth:`expire` (reads leave them out from the moment they expire either way).
        """
        self._store._ensure_open()
        await self.aexpire()
        await self._store._maintainer.optimize(wait=True)

    async def acluster(self) -> ClusterResult:
        """Rewrite the table so each namespace's rows are contiguous (a cold tenant on S3 costs a few requests).

        Incremental: the rows written since the last pass (and runs shorter than
        ``StoreConfig.cluster_min_run_rows``) are rewritten in ``(namespace, created_at, id)`` order
        as one new run; once more than ``StoreConfig.cluster_max_runs`` runs would be left, every
        row is rewritten as one. Progress is the layout itself: another process, or this one after
        a crash, continues where the last pass left. Nothing a concurrent writer does is lost: a
        row changed or deleted meanwhile is left as that writer left it (``skipped``), and the
        rewrite is one commit. Ids, revisions and values are unchanged; moved rows stay findable
        by every search at once and are folded back into the indexes by :meth:`optimize`.

        Measured in docs/how-to/deploy.md (``benchmarks/capacity.py --scenario cold-tenant``).
        ``StoreConfig.cluster_on_optimize`` runs a pass at the start of every optimize.

        Returns:
            A :class:`~memory_retrievers.storage.cluster.ClusterResult` (``to_dict()`` for JSON).

        Raises:
            StorageError: The table could not be read or rewritten.
        """
        self._store._ensure_open()
        await self.aflush_access()
        return await self._store._maintainer.cluster()

    async def aexpire(self, namespace: str | None = None) -> int:
        """Delete the memories whose ``expires_at`` has passed (in one namespace, or all).

        Reads already leave them out; this frees them for good, like :meth:`delete` (a memory
        that superseded another makes the older one live again). Returns how many were deleted.
        """
        self._store._ensure_open()
        ns = self._store._ns(namespace) if namespace is not None else None
        # Read and delete in one queued operation, each delete conditional on the row being expired
        # still: a put that refreshed it in between (issue 27 item 7) is never deleted.
        return await self._store._queue.exclusive(lambda: self._store._editor.expire(ns, self._store._clock()))

    async def aflush_access(self) -> int:
        """Write pending access statistics now; returns how many memories were updated."""
        self._store._check_process()
        return await self._store._queue.exclusive(self._store._access.flush)

    async def aexport(
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
        self._store._ensure_open()
        ns = self._store._ns(namespace)
        if limit is not None:
            self._store._check_int(limit, "limit", 1, MAX_PAGE)
        self._store._check_int(offset, "offset", 0, MAX_PAGE)
        await self._store._access.flush()
        return await self._transfer().export(ns, limit=limit, offset=offset, include_vectors=include_vectors)

    async def arestore(self, records: Iterable[Mapping[str, Any]], *, namespace: str | None = None) -> RestoreResult:
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
        self._store._ensure_open()
        if isinstance(records, (str, bytes, Mapping)):
            raise InvalidInputError("records must be a list of dicts, e.g. what export() returned")
        rows = []
        for i, raw in enumerate(records):
            try:
                rows.append(parse_restore_record(raw, self._store._config, namespace=namespace))
            except InvalidInputError as exc:
                raise InvalidInputError(f"record {i}: {exc}") from None
        transfer = self._transfer()
        return await self._store._queue.exclusive(lambda: transfer.restore(rows))

    async def astats(self) -> StoreStats:
        """Health of the table: memories per namespace and kind, index coverage, fragments, versions, size.

        An administrative read across namespaces, like :meth:`namespaces`.

        Returns:
            A :class:`~memory_retrievers.storage.stats.StoreStats` (``to_dict()`` for JSON).

        Raises:
            StorageError: The statistics could not be read.
        """
        self._store._ensure_open()
        return await read_stats(self._store._table)

    def _transfer(self) -> Transfer:
        # Stateless over the store's components; built per call so the constructor stays as it was.
        return Transfer(self._store._table, self._store._vectors, self._store._writer)

    purge = sync_twin(apurge)
    optimize = sync_twin(aoptimize)
    cluster = sync_twin(acluster)
    expire = sync_twin(aexpire)
    flush_access = sync_twin(aflush_access)
    export = sync_twin(aexport)
    restore = sync_twin(arestore)
    stats = sync_twin(astats)

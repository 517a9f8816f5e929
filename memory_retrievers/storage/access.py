"""Access statistics: recorded by recall, held in memory, written by maintenance (never per recall).

A LanceDB update rewrites rows and pushes them out of the indexes until the next optimize: a
rewritten row is then scanned, not looked up, by every full-text search (with long texts, recall
took 6.55x LanceDB's hybrid query after a few hundred recalls, 1.15x after an optimize:
``benchmarks/long_turns.py``). So the statistics are written only by an optimize, right before it
folds the rewritten rows back into the indexes (see ``Maintainer.optimize``): a batch that fills
up (``StoreConfig.access_flush_size``) starts one in the background, and ``close()`` runs one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

import pyarrow as pa

from memory_retrievers.models import Memory
from memory_retrievers.storage.table import MemoryTable

__all__ = ["AccessLog"]

Pending = dict[tuple[str, str], tuple[int, datetime]]


class AccessLog:
    """Pending accesses per (namespace, id), and their batched write.

    Args:
        table: The table layer the statistics are written through.
    """

    def __init__(self, table: MemoryTable) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._pending: Pending = {}

    def record(self, namespace: str, ids: Iterable[str], at: datetime) -> int:
        """Count one access of each id at ``at``; returns how many memories have pending accesses."""
        with self._lock:
            for id_ in ids:
                count, last = self._pending.get((namespace, id_), (0, at))
                self._pending[(namespace, id_)] = (count + 1, max(last, at))
            return len(self._pending)

    @property
    def pending(self) -> int:
        """How many memories have accesses not written yet."""
        with self._lock:
            return len(self._pending)

    def drop(self) -> None:
        """Forget the pending statistics (they are statistics, not memories: nothing stored is lost)."""
        self._take()

    def _take(self) -> Pending:
        with self._lock:
            pending, self._pending = self._pending, {}
            return pending

    def _restore(self, pending: Pending) -> None:
        with self._lock:
            for key, (count, last) in pending.items():
                have, have_last = self._pending.get(key, (0, last))
                self._pending[key] = (have + count, max(have_last, last))

    def overlay(self, memory: Memory) -> Memory:
        """``memory`` with its not-yet-written accesses counted in."""
        with self._lock:
            pending = self._pending.get((memory.namespace, memory.id))
        if pending is None:
            return memory
        count, last = pending
        newest = max(last, memory.last_accessed_at) if memory.last_accessed_at else last
        return replace(memory, access_count=memory.access_count + count, last_accessed_at=newest)

    async def flush(self) -> int:
        """Write pending statistics in one commit; returns how many memories were updated.

        Deleted memories' accesses are dropped. On failure the accesses are kept for the next
        flush and the StorageError is raised.
        """
        pending = self._take()
        if not pending or not self._table.is_open:
            return 0
        by_ns: dict[str, list[str]] = {}
        for ns, id_ in pending:
            by_ns.setdefault(ns, []).append(id_)
        ns_col: list[str] = []
        id_col: list[str] = []
        counts: list[int] = []
        lasts: list[datetime] = []
        try:
            for ns, ids in by_ns.items():
                rows = await self._table.rows_by_id(ns, ids, columns=["id", "access_count", "last_accessed_at"])
                for id_, row in rows.items():
                    count, last = pending[(ns, id_)]
                    ns_col.append(ns)
                    id_col.append(id_)
                    counts.append(int(row["access_count"]) + count)
                    prev = row["last_accessed_at"]
                    lasts.append(max(prev, last) if prev is not None else last)
            if not id_col:
                return 0
            data = pa.table(
                {
                    "namespace": pa.array(ns_col, pa.string()),
                    "id": pa.array(id_col, pa.string()),
                    "access_count": pa.array(counts, pa.int64()),
                    "last_accessed_at": pa.array(lasts, pa.timestamp("us", tz="UTC")),
                }
            )
            await self._table.update(data)
        except BaseException:
            self._restore(pending)
            raise
        return len(id_col)

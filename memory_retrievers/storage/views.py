"""In-memory views of namespaces, for recall.

A recall touches a few dozen memories but pays several milliseconds of LanceDB overhead per query;
loading a namespace's rows and vectors once costs about one query (4 ms for 600 memories) and makes
the vector, entity, recency and link channels numpy/dict work. BM25 still runs in LanceDB.

The :class:`ViewCache` subscribes to the table's commits. A view stays valid while every table
version after it was written by this store; anything else (another process's commit seen through
``read_consistency_interval``, compaction, index builds) rebuilds it. This store's own writes to
the namespace are patched in: the next recall re-reads just the rows they touched (by id, so a
conditional rewrite that did not land is read as it stands) instead of the whole namespace, which
on object storage is about one request per memory of the namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..filters import MemoryFilter, build_where, is_unconstrained, matches
from ..models import Memory
from ..schema import SCALAR_COLUMNS, row_to_memory, vectors_of
from .table import CommitEvent, MemoryTable

__all__ = ["NamespaceView", "ViewCache"]


@dataclass
class NamespaceView:
    """Rows (all public columns), vectors and derived arrays of one namespace at one table version."""

    namespace: str
    version: int
    rows: list[dict[str, Any]]
    vectors: np.ndarray
    index: dict[str, int] = field(default_factory=dict)
    live: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    created: np.ndarray = field(default_factory=lambda: np.zeros(0))
    newest: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Row indices newest first, equal timestamps by id (LanceDB's order for the same query)."""
    _memories: dict[int, Memory] = field(default_factory=dict)

    @classmethod
    def from_table(cls, namespace: str, version: int, table: pa.Table) -> NamespaceView:
        """Build from a query result with every public column and ``vector``."""
        return cls._build(namespace, version, table.drop_columns(["vector"]).to_pylist(), vectors_of(table))

    def patched(self, touched: set[str], fresh: pa.Table, version: int) -> NamespaceView:
        """This view with the ``touched`` ids replaced by ``fresh`` (their stored rows now; absent = gone).

        Touched rows move to the end, where LanceDB's merge and append put rewritten and new rows.
        """
        keep = [i for i, row in enumerate(self.rows) if row["id"] not in touched]
        fresh_rows = fresh.drop_columns(["vector"]).to_pylist()
        rows = [self.rows[i] for i in keep] + fresh_rows
        width = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        added = vectors_of(fresh) if fresh_rows else np.zeros((0, width), dtype=self.vectors.dtype)
        old = self.vectors[keep] if self.vectors.ndim == 2 else np.zeros((0, added.shape[1]), dtype=added.dtype)
        vectors = np.concatenate([old, added]).astype(added.dtype, copy=False)
        return NamespaceView._build(self.namespace, version, rows, vectors)

    @classmethod
    def _build(cls, namespace: str, version: int, rows: list[dict[str, Any]], vectors: np.ndarray) -> NamespaceView:
        view = cls(namespace, version, rows, vectors)
        view.index = {row["id"]: i for i, row in enumerate(rows)}
        view.live = np.asarray([row["superseded_by"] is None for row in rows], dtype=bool)
        view.created = np.asarray([row["created_at"].timestamp() for row in rows], dtype=np.float64)
        ids = np.asarray([row["id"] for row in rows], dtype=object)
        view.newest = np.asarray(sorted(range(len(rows)), key=lambda i: (-view.created[i], ids[i])), dtype=np.int64)
        return view

    def __len__(self) -> int:
        return len(self.rows)

    def memory(self, i: int) -> Memory:
        """Row ``i`` as a :class:`Memory` (without vector), built once."""
        mem = self._memories.get(i)
        if mem is None:
            mem = self._memories[i] = row_to_memory(self.rows[i])
        return mem

    def mask(self, flt: MemoryFilter) -> np.ndarray:
        """Which rows pass the filter (the same predicate LanceDB applies)."""
        if is_unconstrained(flt):
            return self.live.copy() if not flt.include_superseded else np.ones(len(self), dtype=bool)
        return np.fromiter((matches(self.memory(i), flt) for i in range(len(self))), dtype=bool, count=len(self))

    def top_by_vector(self, query: np.ndarray, mask: np.ndarray, k: int) -> tuple[list[int], list[float]]:
        """The ``k`` rows most cosine-similar to ``query`` among ``mask``, best first: indices and similarities."""
        candidates = np.flatnonzero(mask)
        if not len(candidates):
            return [], []
        sims = self.vectors[candidates] @ query
        k = min(k, len(candidates))
        top = np.argpartition(-sims, k - 1)[:k]
        order = top[np.lexsort((candidates[top], -sims[top]))]
        return [int(candidates[j]) for j in order], [float(sims[j]) for j in order]

    def top_by_recency(self, mask: np.ndarray, k: int) -> list[int]:
        """Indices of the ``k`` newest rows among ``mask`` (equal timestamps by id)."""
        return [int(i) for i in self.newest[mask[self.newest]][:k]]

    def top_by_entities(self, entities: Sequence[str], mask: np.ndarray, k: int) -> list[tuple[int, int]]:
        """Rows sharing entities with how many they share: most shared first, then newest, then by id."""
        wanted = {e.strip().casefold() for e in entities}
        scored = []
        for i in np.flatnonzero(mask):
            shared = len(wanted.intersection(self.rows[i]["entities"] or ()))
            if shared:
                scored.append((-shared, -self.created[i], self.rows[i]["id"], int(i)))
        scored.sort()
        return [(i, -neg) for neg, _, _, i in scored[:k]]


class ViewCache:
    """Views of the namespaces recall reads, kept valid across this store's own commits.

    Args:
        table: The table layer (this subscribes to its commits).
        max_rows: Namespaces larger than this get no view (0 disables views); at most four times
            this many rows are held over all views.
    """

    def __init__(self, table: MemoryTable, max_rows: int) -> None:
        self._table = table
        self._max_rows = max_rows
        self._views: dict[str, NamespaceView] = {}
        # The table versions this store wrote, and a per-namespace write counter that tells a view
        # built during a write to go away.
        self._own_versions: set[int] = set()
        self._epochs: dict[str, int] = {}
        # Ids this store's commits touched since a view was last patched, per namespace.
        self._touched: dict[str, set[str]] = {}
        table.subscribe(self._on_commit)

    def cached(self, namespace: str) -> NamespaceView | None:
        """The view held for ``namespace``, without checking or loading anything."""
        return self._views.get(namespace)

    @property
    def own_versions(self) -> frozenset[int]:
        """Table versions remembered as this store's own (bounded: see :meth:`_on_commit`)."""
        return frozenset(self._own_versions)

    def _on_commit(self, event: CommitEvent) -> None:
        """Note the ids the commit touched; move views up to the version the commit made.

        Views move up when every version since theirs is one of ours, so the set of versions to
        remember stays small. Forgetting a version can only make a view rebuild, never keep a
        stale one. A view whose namespace the commit touched is patched on its next read; one the
        commit may have changed in ways its ids do not say (a failed commit, ``forget``) is dropped.
        """
        touched = _touched_ids(event)
        for ns in event.namespaces:
            self._epochs[ns] = self._epochs.get(ns, 0) + 1
            ids = touched.get(ns)
            if event.version is None or ids is None:
                self._views.pop(ns, None)
                self._touched.pop(ns, None)
            elif ns in self._views:
                self._touched.setdefault(ns, set()).update(ids)
        if event.version is None:
            return
        version = event.version
        self._own_versions.add(version)
        for ns, view in list(self._views.items()):
            if all(v in self._own_versions for v in range(view.version + 1, version + 1)):
                view.version = version
            else:  # something else changed the table in between: the view is stale anyway
                del self._views[ns]
        oldest = min((v.version for v in self._views.values()), default=version)
        self._own_versions = {v for v in self._own_versions if v > oldest}

    async def get(self, namespace: str) -> NamespaceView | None:
        """The namespace's view, loaded when missing or stale; ``None`` when disabled or too large."""
        if self._max_rows == 0:
            return None
        current = await self._table.version()
        view = self._views.get(namespace)
        if view is not None and all(v in self._own_versions for v in range(view.version + 1, current + 1)):
            touched = self._touched.pop(namespace, None)
            if touched:
                # Ids touched by a commit that lands during this read are noted again, and re-read next time.
                where = build_where(namespace, MemoryFilter(include_superseded=True), ids=sorted(touched))
                fresh = await self._table.rows(where, [*SCALAR_COLUMNS, "vector"], action="patch a namespace view")
                view = view.patched(touched, fresh, current)
                if len(view) > self._max_rows:
                    self._views.pop(namespace, None)
                    return None
                if self._views.get(namespace) is not None:
                    self._views[namespace] = view
            view.version = current
            return view
        self._touched.pop(namespace, None)
        epoch = self._epochs.get(namespace, 0)
        if await self._table.count_namespace(namespace) > self._max_rows:
            return None
        everything = build_where(namespace, MemoryFilter(include_superseded=True))
        table = await self._table.rows(everything, [*SCALAR_COLUMNS, "vector"], action="load a namespace view")
        view = NamespaceView.from_table(namespace, current, table)
        if self._epochs.get(namespace, 0) == epoch:  # no write of ours raced the load
            self._views[namespace] = view
            while sum(len(v) for v in self._views.values()) > 4 * self._max_rows and len(self._views) > 1:
                self._views.pop(next(iter(self._views)))  # evict the oldest view
        return view


def _touched_ids(event: CommitEvent) -> dict[str, set[str]]:
    """Ids per namespace that a commit wrote or deleted; a namespace deleted whole is absent."""
    out: dict[str, set[str]] = {}
    rows = event.rows
    if rows is not None and rows.num_rows:
        if "namespace" not in rows.column_names or "id" not in rows.column_names:
            return {}  # no way to say which rows changed: every touched view is dropped
        for ns, row_id in zip(rows.column("namespace").to_pylist(), rows.column("id").to_pylist(), strict=True):
            out.setdefault(ns, set()).add(row_id)
    if event.deleted is not None:
        for ns, ids in event.deleted.items():
            out.setdefault(ns, set()).update(ids)
    return out

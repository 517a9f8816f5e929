"""In-memory views of namespaces, for recall.

A recall touches a few dozen memories but pays several milliseconds of LanceDB overhead per query;
loading a namespace's rows and vectors once costs about one query (4 ms for 600 memories) and makes
the vector, entity, recency and link channels numpy/dict work. BM25 still runs in LanceDB.

The :class:`ViewCache` subscribes to the table's commits. A view stays valid while every table
version after it was written by this store; anything else (another process's commit seen through
``read_consistency_interval``, compaction, index builds) makes it stale. This store's own writes to
the namespace are patched in: the next recall re-reads just the rows they touched (by id, so a
conditional rewrite that did not land is read as it stands) instead of the whole namespace, which
on object storage is about one request per memory of the namespace.

A stale view is brought up to date the same way when it can be: every write bumps a row's
``revision`` or ``updated_at`` and every read records its access in ``access_count``, so reading
those few columns of the namespace tells which rows another writer added, changed or deleted, and
only those rows are re-read whole (compaction and index builds change none: nothing is re-read).
When more than half of the namespace changed, a full reload is cheaper and is done instead.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..filters import MemoryFilter, build_where, is_unconstrained, matches
from ..models import Memory
from ..schema import SCALAR_COLUMNS, row_to_memory, vectors_of
from .table import CommitEvent, MemoryTable

__all__ = ["NamespaceView", "ViewCache"]

# What changes whenever a row does: a rewrite bumps ``revision`` and ``updated_at`` (a delete and
# re-add of one id gets a new ``updated_at``), an access bumps ``access_count``/``last_accessed_at``.
_SIGNATURE = ("id", "revision", "updated_at", "access_count", "last_accessed_at")
_EPOCH_BUCKETS = 4096
# A view holds every public column, the vector, and ``revision`` (for the signature).
_VIEW_COLUMNS = [*SCALAR_COLUMNS, "revision", "vector"]


class NamespaceView:
    """Rows, vectors and derived arrays of one namespace at one table version, column by column.

    Rows stay an Arrow table (every public column and ``revision``; the vector apart as a numpy
    matrix) and become Python objects only when recall touches them: a view of 20,000 memories is
    built, patched and checked with array operations, not 20,000 dicts.

    Attributes:
        namespace: The namespace.
        version: The table version the view reflects.
        table: The rows (without ``vector``), in LanceDB's order.
        vectors: Unit vectors, one row per memory.
        ids: Memory ids, in row order.
        index: Row index of each id.
        live: Not superseded.
        created: ``created_at`` in POSIX seconds.
        newest: Row indices newest first, equal timestamps by id (LanceDB's order for the same query).
        signature: Per row ``revision``, ``updated_at``, ``access_count``, ``last_accessed_at``
            (integers): what changes whenever the stored row does.
        stale: Another writer (or a compaction) moved the table since ``version``: check before use.
    """

    def __init__(self, namespace: str, version: int, table: pa.Table, vectors: np.ndarray) -> None:
        self.namespace = namespace
        self.version = version
        self.table = table
        self.vectors = vectors
        self.ids: list[str] = table.column("id").to_pylist()
        self.index = {row_id: i for i, row_id in enumerate(self.ids)}
        self.live = pc.is_null(table.column("superseded_by")).to_numpy(zero_copy_only=False).astype(bool)
        self.created = _microseconds(table.column("created_at")) / 1e6
        self.newest = np.lexsort((np.asarray(self.ids, dtype=str), -self.created)).astype(np.int64)
        self.signature = _signature(table)
        self.stale = False
        self._memories: dict[str, Memory] = {}
        self._entities: list[Any] | None = None

    @classmethod
    def from_table(cls, namespace: str, version: int, table: pa.Table) -> NamespaceView:
        """Build from a query result with every public column, ``revision`` and ``vector``."""
        return cls(namespace, version, table.drop_columns(["vector"]), vectors_of(table))

    def patched(self, touched: set[str], fresh: pa.Table, version: int) -> NamespaceView:
        """This view with the ``touched`` ids replaced by ``fresh`` (their stored rows now; absent = gone).

        Touched rows move to the end, where LanceDB's merge and append put rewritten and new rows.
        """
        keep = np.asarray([row_id not in touched for row_id in self.ids], dtype=bool)
        kept = self.table.filter(pa.array(keep)) if len(keep) else self.table
        fresh_rows = fresh.drop_columns(["vector"]).select(self.table.column_names)
        table = pa.concat_tables([kept, fresh_rows.cast(self.table.schema)])
        width = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        added = vectors_of(fresh) if fresh.num_rows else np.zeros((0, width), dtype=self.vectors.dtype)
        old = self.vectors[keep] if self.vectors.ndim == 2 else np.zeros((0, added.shape[1]), dtype=added.dtype)
        vectors = np.concatenate([old, added]).astype(added.dtype, copy=False)
        view = NamespaceView(self.namespace, version, table, vectors)
        # Memories already built stay valid for the rows not touched.
        view._memories = {k: m for k, m in self._memories.items() if k not in touched}
        return view

    def changed_since(self, signature: pa.Table) -> set[str]:
        """Ids whose stored ``signature`` (columns ``_SIGNATURE``) differs from this view: new, changed or gone."""
        stored_ids = signature.column("id").to_pylist()
        position = np.fromiter((self.index.get(i, -1) for i in stored_ids), dtype=np.int64, count=len(stored_ids))
        known = position >= 0
        theirs = _signature(signature)
        differs = np.any(self.signature[position[known]] != theirs[known], axis=1)
        changed = {stored_ids[i] for i in np.flatnonzero(~known)}
        changed.update(self.ids[p] for p in position[known][differs])
        present = np.zeros(len(self.ids), dtype=bool)
        present[position[known]] = True
        changed.update(self.ids[i] for i in np.flatnonzero(~present))
        return changed

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row as a dict (built on each call: for tests and debugging, not for recall)."""
        rows: list[dict[str, Any]] = self.table.to_pylist()
        return rows

    def __len__(self) -> int:
        return len(self.ids)

    def memory(self, i: int) -> Memory:
        """Row ``i`` as a :class:`Memory` (without vector), built once."""
        row_id = self.ids[i]
        mem = self._memories.get(row_id)
        if mem is None:
            mem = self._memories[row_id] = row_to_memory(self.table.slice(i, 1).to_pylist()[0])
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
        if self._entities is None:
            self._entities = self.table.column("entities").to_pylist()
        scored = []
        for i in np.flatnonzero(mask):
            shared = len(wanted.intersection(self._entities[i] or ()))
            if shared:
                scored.append((-shared, -self.created[i], self.ids[i], int(i)))
        scored.sort()
        return [(i, -neg) for neg, _, _, i in scored[:k]]


def _microseconds(column: pa.ChunkedArray) -> np.ndarray:
    """A timestamp column as int64 microseconds since the epoch (nulls: -1)."""
    as_int = pc.cast(column, pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return np.asarray(pc.fill_null(as_int, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _signature(table: pa.Table) -> np.ndarray:
    """The ``_SIGNATURE`` columns but ``id`` as an (n, 4) int64 matrix."""
    if "revision" not in table.column_names:
        raise ValueError("a namespace view needs the revision column")
    return np.stack(
        [
            np.asarray(pc.fill_null(table.column("revision"), -1).to_numpy(zero_copy_only=False), dtype=np.int64),
            _microseconds(table.column("updated_at")),
            np.asarray(pc.fill_null(table.column("access_count"), -1).to_numpy(zero_copy_only=False), dtype=np.int64),
            _microseconds(table.column("last_accessed_at")),
        ],
        axis=1,
    ).reshape(table.num_rows, 4)


class ViewCache:
    """Views of the namespaces recall reads, kept valid across this store's own commits.

    Memory is bounded whatever the number of namespaces: views hold at most ``total_rows`` rows
    (least recently used dropped first), and the write counters that detect a write racing a load
    live in a fixed number of buckets (two namespaces sharing one only cost a view not kept once).

    Args:
        table: The table layer (this subscribes to its commits).
        max_rows: Namespaces larger than this get no view (0 disables views).
        total_rows: Rows held over all views (default four times ``max_rows``; at least ``max_rows``).
        on_outgrown: Called with a namespace found larger than ``max_rows`` (it is read from LanceDB).
    """

    def __init__(
        self,
        table: MemoryTable,
        max_rows: int,
        total_rows: int | None = None,
        on_outgrown: Callable[[str], None] | None = None,
    ) -> None:
        self._table = table
        self._on_outgrown = on_outgrown
        self._max_rows = max_rows
        self._total_rows = max(max_rows, total_rows if total_rows is not None else 4 * max_rows)
        self._views: dict[str, NamespaceView] = {}  # least recently used first
        # The table versions this store wrote, and write counters that tell a view built during a
        # write to its namespace to go away (bucketed by namespace hash: bounded memory).
        self._own_versions: set[int] = set()
        self._epochs = [0] * _EPOCH_BUCKETS
        # Ids this store's commits touched since a view was last patched, per namespace.
        self._touched: dict[str, set[str]] = {}
        # How stale views were brought up to date: whole reloads vs signature checks (for tests
        # and benchmarks; a reload is about one request per memory on object storage).
        self.reloads = 0
        self.refreshes = 0
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
            self._epochs[_bucket(ns)] += 1
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
        for view in self._views.values():
            if view.stale:
                continue
            if all(v in self._own_versions for v in range(view.version + 1, version + 1)):
                view.version = version
            else:  # something else changed the table in between: checked on the next read
                view.stale = True
        oldest = min((v.version for v in self._views.values() if not v.stale), default=version)
        self._own_versions = {v for v in self._own_versions if v > oldest}

    async def get(self, namespace: str) -> NamespaceView | None:
        """The namespace's view, loaded when missing or stale; ``None`` when disabled or too large."""
        if self._max_rows == 0:
            return None
        current = await self._table.version()
        view = self._views.pop(namespace, None)
        if view is not None:
            self._views[namespace] = view  # most recently used last
        if (
            view is not None
            and not view.stale
            and all(v in self._own_versions for v in range(view.version + 1, current + 1))
        ):
            touched = self._touched.pop(namespace, None)
            if touched:
                # Ids touched by a commit that lands during this read are noted again, and re-read next time.
                view = await self._patch(view, touched, current)
                if view is None:
                    return None
            view.version = current
            return view
        if view is not None:
            # Stale: another writer, a compaction or an index build moved the table since.
            epoch = self._epochs[_bucket(namespace)]
            self._touched.pop(namespace, None)
            everything = build_where(namespace, MemoryFilter(include_superseded=True))
            signature = await self._table.rows(everything, list(_SIGNATURE), action="check a namespace view")
            changed = view.changed_since(signature)
            if len(changed) <= signature.num_rows // 2 and signature.num_rows <= self._max_rows:
                self.refreshes += 1
                fresh_view = await self._patch(view, changed, current) if changed else view
                if fresh_view is not None:
                    fresh_view.version = current
                    fresh_view.stale = False
                    if self._epochs[_bucket(namespace)] != epoch:  # a write of ours raced the read
                        self._views.pop(namespace, None)
                return fresh_view
            self._views.pop(namespace, None)
        self._touched.pop(namespace, None)
        epoch = self._epochs[_bucket(namespace)]
        if await self._table.count_namespace(namespace) > self._max_rows:
            if self._on_outgrown is not None:
                self._on_outgrown(namespace)
            return None
        everything = build_where(namespace, MemoryFilter(include_superseded=True))
        table = await self._table.rows(everything, _VIEW_COLUMNS, action="load a namespace view")
        self.reloads += 1
        view = NamespaceView.from_table(namespace, current, table)
        if self._epochs[_bucket(namespace)] == epoch:  # no write of ours raced the load
            self._views[namespace] = view
            held = sum(len(v) for v in self._views.values())
            while held > self._total_rows and len(self._views) > 1:
                evicted = next(iter(self._views))  # the least recently used
                held -= len(self._views.pop(evicted))
                self._touched.pop(evicted, None)
        return view

    @property
    def rows_held(self) -> int:
        """Rows held over all views (at most ``total_rows``)."""
        return sum(len(v) for v in self._views.values())

    async def _patch(self, view: NamespaceView, ids: set[str], version: int) -> NamespaceView | None:
        """``view`` with the rows of ``ids`` re-read (stored again where it is held); ``None`` if too large."""
        namespace = view.namespace
        where = build_where(namespace, MemoryFilter(include_superseded=True), ids=sorted(ids))
        fresh = await self._table.rows(where, _VIEW_COLUMNS, action="patch a namespace view")
        view = view.patched(ids, fresh, version)
        if len(view) > self._max_rows:
            self._views.pop(namespace, None)
            return None
        if self._views.get(namespace) is not None:
            self._views[namespace] = view
        return view


def _bucket(namespace: str) -> int:
    # crc32, not hash(): deterministic across runs (hash() of a str is salted per process).
    return zlib.crc32(namespace.encode()) % _EPOCH_BUCKETS


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

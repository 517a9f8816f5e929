"""One namespace's rows and vectors in memory, column by column (see :mod:`.views` for the cache).

Rows stay an Arrow table and a numpy matrix and become Python objects only when recall touches
them, so a view of 20,000 memories is built, patched and checked with array operations.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_retrievers.filters import MemoryFilter, expiry_cutoff, hides_archived, is_unconstrained, matches
from memory_retrievers.models import Memory
from memory_retrievers.storage.schema import SCALAR_COLUMNS, row_to_memory, vectors_of
from memory_retrievers.storage.search import joined_speakers
from memory_retrievers.storage.view_cues import VectorBuffer, message_speakers, speakers_in, tagged
from memory_retrievers.text.dates import DateSpan

__all__ = ["SIGNATURE", "VIEW_COLUMNS", "NamespaceView", "context_present", "exact_order"]

# What changes whenever a row does: every write of a row draws a new ``stamp`` (a restore or a
# delete and re-add can reproduce ``revision`` and ``updated_at`` exactly, so those alone can be
# fooled), and an access bumps ``access_count``/``last_accessed_at`` without rewriting the row.
SIGNATURE = ("id", "stamp", "revision", "updated_at", "access_count", "last_accessed_at")
# A view holds every public column, the vector, and ``stamp`` and ``revision`` (for the signature).
VIEW_COLUMNS = [*SCALAR_COLUMNS, "stamp", "revision", "vector"]


class NamespaceView:
    """Rows, vectors and derived arrays of one namespace at one table version, column by column.

    Rows stay an Arrow table (every public column, ``stamp`` and ``revision``; the vector apart as a numpy
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
        signature: Per row ``stamp``, ``revision``, ``updated_at``, ``access_count``, ``last_accessed_at``
            (integers): what changes whenever the stored row does.
        present: Not replaced or deleted since the view was built. A rewritten or deleted row
            stays in the arrays as a tombstone (its id indexed at its new row, if any) until a
            quarter of the rows are tombstones and the view is rebuilt compact.
        stale: Another writer (or a compaction) moved the table since ``version``: check before use.
    """

    def __init__(self, namespace: str, version: int, table: pa.Table, vectors: np.ndarray) -> None:
        self.namespace = namespace
        self.version = version
        # One chunk per column: a row is then sliced out in constant time (a query result comes in
        # many batches, and slicing walks them).
        self.table = table.combine_chunks()
        self._buffer = VectorBuffer(vectors)
        self.vectors = vectors
        self.ids: list[str] = table.column("id").to_pylist()
        self.index = {row_id: i for i, row_id in enumerate(self.ids)}
        self.live = pc.is_null(table.column("superseded_by")).to_numpy(zero_copy_only=False).astype(bool)
        self.created = _microseconds(table.column("created_at")) / 1e6
        self.expires = _expiry_seconds(table)
        self.archived = _archived(table)
        self.signature = _signature(table)
        self.present = np.ones(len(self.ids), dtype=bool)
        self.dead = 0
        self.stale = False
        self._newest: np.ndarray | None = None
        self._memories: dict[str, Memory] = {}
        self._has_context: np.ndarray | None = None
        self._entity_index: dict[str, list[int]] | None = None
        self._speakers: frozenset[str] | None = None
        self._tagged: bool | None = None

    @property
    def speakers(self) -> frozenset[str]:
        """Who speaks in the namespace's chat (see :mod:`.view_cues`), built on first use, kept by patches."""
        if self._speakers is None:
            self._speakers = speakers_in(self.table, self.present)
        return self._speakers

    @property
    def has_entities(self) -> bool:
        """Whether any memory had entities (see :mod:`.view_cues`), built on first use, kept by patches."""
        if self._tagged is None:
            self._tagged = tagged(self.table.filter(pa.array(self.present)))
        return self._tagged

    def _cues_to(self, view: NamespaceView, rows: pa.Table) -> None:
        """Give ``view`` (this view plus ``rows``) this view's cues, joined by those of ``rows``."""
        view._speakers = None if self._speakers is None else joined_speakers(self._speakers, message_speakers(rows))
        view._tagged = None if self._tagged is None else self._tagged or tagged(rows)

    @property
    def has_context(self) -> np.ndarray:
        """Per row: the memory has a (non-empty) context. Built on first use, extended by appends."""
        if self._has_context is None:
            self._has_context = context_present(self.table)
        return self._has_context

    @property
    def newest(self) -> np.ndarray:
        """Row indices newest first, equal timestamps by id (LanceDB's order for the same query)."""
        if self._newest is None:  # only the recency channel needs it: sorted on first use
            self._newest = np.lexsort((np.asarray(self.ids, dtype=str), -self.created)).astype(np.int64)
        return self._newest

    def _appended(self, rows: pa.Table, vectors: np.ndarray, version: int, gone: set[str]) -> NamespaceView:
        """This view with ``gone`` ids made tombstones and new rows at the end: no row copied.

        A chat loop's write adds one memory (and rewrites the context of the turns before it);
        rebuilding a 20,000-row view for that would cost more than the recall that follows.
        """
        view = object.__new__(NamespaceView)
        view.namespace, view.version, view.stale = self.namespace, version, False
        table = pa.concat_tables([self.table, rows])
        # Each append adds a chunk; row access slows down with many, so merge them now and then.
        view.table = table.combine_chunks() if table.column("id").num_chunks > 32 else table
        view._buffer = self._buffer
        view.vectors = self._buffer.extended(self.vectors, vectors)
        new_ids: list[str] = rows.column("id").to_pylist()
        view.ids = self.ids + new_ids
        view.index = dict(self.index)
        view.present = np.concatenate([self.present, np.ones(len(new_ids), dtype=bool)])
        for row_id in gone:
            at = view.index.pop(row_id, None)
            if at is not None:
                view.present[at] = False
        view.dead = int(len(view.present) - view.present.sum())
        view.index.update((row_id, len(self.ids) + j) for j, row_id in enumerate(new_ids))
        view.live = np.concatenate([self.live, pc.is_null(rows.column("superseded_by")).to_numpy(zero_copy_only=False)])
        view.created = np.concatenate([self.created, _microseconds(rows.column("created_at")) / 1e6])
        view.expires = np.concatenate([self.expires, _expiry_seconds(rows)])
        view.archived = np.concatenate([self.archived, _archived(rows)])
        view.signature = np.concatenate([self.signature, _signature(rows)])
        view._newest = None
        view._memories = {k: m for k, m in self._memories.items() if k not in gone}
        view._entity_index = (
            None
            if self._entity_index is None
            else _with_entities(self._entity_index, rows.column("entities").to_pylist(), len(self.ids))
        )
        view._has_context = (
            None if self._has_context is None else np.concatenate([self._has_context, context_present(rows)])
        )
        self._cues_to(view, rows)
        return view

    @classmethod
    def from_table(cls, namespace: str, version: int, table: pa.Table) -> NamespaceView:
        """Build from a query result with every public column, ``stamp``, ``revision`` and ``vector``."""
        return cls(namespace, version, table.drop_columns(["vector"]), vectors_of(table))

    def patched(self, touched: set[str], fresh: pa.Table | None, version: int) -> NamespaceView:
        """This view with the ``touched`` ids replaced by ``fresh`` (their stored rows now; absent = gone).

        Touched rows move to the end, where LanceDB's merge and append put rewritten and new rows.
        ``fresh=None`` means no rows (the touched ids were deleted).
        """
        width = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        if fresh is None or fresh.num_rows == 0:
            fresh_rows = self.table.slice(0, 0)
            added = np.zeros((0, width), dtype=self.vectors.dtype)
        else:
            fresh_rows = fresh.drop_columns(["vector"]).select(self.table.column_names).cast(self.table.schema)
            added = vectors_of(fresh)
        if self.vectors.ndim == 2:
            replaced = sum(1 for row_id in touched if row_id in self.index)
            if (self.dead + replaced) * 4 <= len(self.ids) + fresh_rows.num_rows:
                return self._appended(fresh_rows, added, version, touched)
        keep = self.present & np.asarray([row_id not in touched for row_id in self.ids], dtype=bool)
        kept = self.table.filter(pa.array(keep)) if len(keep) else self.table
        table = pa.concat_tables([kept, fresh_rows])
        old = self.vectors[keep] if self.vectors.ndim == 2 else np.zeros((0, added.shape[1]), dtype=added.dtype)
        vectors = np.concatenate([old, added]).astype(added.dtype, copy=False)
        view = NamespaceView(self.namespace, version, table, vectors)
        # Memories already built stay valid for the rows not touched.
        view._memories = {k: m for k, m in self._memories.items() if k not in touched}
        self._cues_to(view, fresh_rows)
        return view

    def changed_since(self, signature: pa.Table) -> set[str]:
        """Ids whose stored ``signature`` (columns ``SIGNATURE``) differs from this view: new, changed or gone."""
        stored_ids = signature.column("id").to_pylist()
        position = np.fromiter((self.index.get(i, -1) for i in stored_ids), dtype=np.int64, count=len(stored_ids))
        known = position >= 0
        theirs = _signature(signature)
        differs = np.any(self.signature[position[known]] != theirs[known], axis=1)
        changed = {stored_ids[i] for i in np.flatnonzero(~known)}
        changed.update(self.ids[p] for p in position[known][differs])
        stored = np.zeros(len(self.ids), dtype=bool)
        stored[position[known]] = True
        changed.update(self.ids[i] for i in np.flatnonzero(self.present & ~stored))
        return changed

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row held (tombstones left out) as a dict, built on each call: for tests and debugging."""
        rows: list[dict[str, Any]] = self.table.filter(pa.array(self.present)).to_pylist()
        return rows

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` of the arrays (see ``index``) as a dict."""
        row: dict[str, Any] = self.table.slice(i, 1).to_pylist()[0]
        return row

    def __len__(self) -> int:
        """Memories held (tombstones not counted)."""
        return len(self.ids) - self.dead

    def memory(self, i: int) -> Memory:
        """Row ``i`` as a :class:`Memory` (without vector), built once."""
        return self.memories([i])[0]

    def memories(self, rows: Sequence[int]) -> list[Memory]:
        """:meth:`memory` of each row index; the ones not built yet are converted in one ``take``."""
        ids = self.ids
        missing = sorted({i for i in rows if ids[i] not in self._memories})
        if missing:
            taken = _take_sorted(self.table, missing)
            for i, row in zip(missing, taken, strict=True):
                self._memories[ids[i]] = row_to_memory(row)
        return [self._memories[ids[i]] for i in rows]

    def mask(self, flt: MemoryFilter) -> np.ndarray:
        """Which rows pass the filter (the same predicate LanceDB applies)."""
        if is_unconstrained(flt):
            passing = self.live & self.present if not flt.include_superseded else self.present.copy()
        else:
            n = len(self.ids)
            present = self.present
            passing = np.fromiter(
                (bool(present[i]) and matches(self.memory(i), flt) for i in range(n)), dtype=bool, count=n
            )
        cutoff = expiry_cutoff(flt)
        if cutoff is not None:
            passing &= self.expires > cutoff.timestamp()
        if hides_archived(flt):
            passing &= ~self.archived
        return passing

    def top_by_vector(self, query: np.ndarray, mask: np.ndarray, k: int) -> tuple[list[int], list[float]]:
        """The ``k`` rows most cosine-similar to ``query`` among ``mask``, best first: indices and similarities."""
        candidates = np.flatnonzero(mask)
        if not len(candidates):
            return [], []
        # One product over the whole matrix, then the mask: gathering the masked rows first would
        # copy the matrix (150 MB at 100,000 memories) on every query.
        sims = (self.vectors @ query)[candidates]
        k = min(k, len(candidates))
        kth = np.partition(sims, len(sims) - k)[len(sims) - k]
        # The product ranks only roughly: everything near the k-th is ranked by exact_order.
        near = candidates[np.flatnonzero(sims >= kth - _NEAR)]
        order, exact = exact_order([self.ids[i] for i in near], self.vectors[near], query, k)
        return [int(near[j]) for j in order], exact

    def created_within(self, spans: Sequence[DateSpan]) -> np.ndarray:
        """Which rows were created within any of ``spans`` (as :func:`~memory_retrievers.filters.created_within`)."""
        out = np.zeros(len(self.ids), dtype=bool)
        for span in spans:
            out |= (self.created >= span.start.timestamp()) & (self.created < span.end.timestamp())
        return out

    def top_by_recency(self, mask: np.ndarray, k: int) -> list[int]:
        """Indices of the ``k`` newest rows among ``mask`` (equal timestamps by id)."""
        return [int(i) for i in self.newest[mask[self.newest]][:k]]

    def top_by_entities(self, entities: Sequence[str], mask: np.ndarray, k: int) -> list[tuple[int, int]]:
        """Rows sharing entities with how many they share: most shared first, then newest, then by id."""
        rows = self._entity_rows()
        shared: dict[int, int] = {}
        for entity in {e.strip().casefold() for e in entities}:
            for i in rows.get(entity, ()):
                shared[i] = shared.get(i, 0) + 1
        scored = sorted((-n, -self.created[i], self.ids[i], i) for i, n in shared.items() if mask[i])
        return [(i, -neg) for neg, _, _, i in scored[:k]]

    def _entity_rows(self) -> dict[str, list[int]]:
        """Row indices per entity, built on first use (a scan of every row's list costs 17 ms at 100,000)."""
        if self._entity_index is None:
            self._entity_index = _with_entities({}, self.table.column("entities").to_pylist(), 0)
        return self._entity_index


def _with_entities(index: dict[str, list[int]], entities: Sequence[Any], first: int) -> dict[str, list[int]]:
    """``index`` plus the rows from ``first`` on with their ``entities``; lists touched are copied.

    Copy on write: an older view shares the dict and lists it was built with, and must not see
    rows past its own end.
    """
    out = dict(index)
    touched: set[str] = set()
    for j, names in enumerate(entities):
        for name in set(names or ()):
            if name not in touched:
                out[name] = list(out.get(name, ()))
                touched.add(name)
            out[name].append(first + j)
    return out


# A matrix product's similarities are within this of exact_order's (float32 rounding, in blocks).
_NEAR = 1e-4


def exact_order(ids: Sequence[str], vectors: np.ndarray, query: np.ndarray, k: int) -> tuple[list[int], list[float]]:
    """The ``k`` best of ``vectors`` (unit rows) by cosine similarity to ``query``, ties by id.

    Both recall sources rank their vector hits with this, so a view and LanceDB give the same
    order. A matrix product computes rows in blocks with different float32 rounding, so two equal
    vectors could get similarities a few ULPs apart and rank by position; here each row is summed
    alone in float64, and equal rows always tie (measured: a view and LanceDB ranked two equal
    vectors differently before).

    Returns:
        Positions in ``ids``, best first, and their similarities.
    """
    exact = np.sum(vectors.astype(np.float64) * query.astype(np.float64), axis=1)
    order = sorted(range(len(ids)), key=lambda j: (-exact[j], ids[j]))[:k]
    return order, [float(exact[j]) for j in order]


def context_present(table: pa.Table) -> np.ndarray:
    """``context IS NOT NULL AND context <> ''`` per row (the context channel's "has a context")."""
    context = table.column("context")
    present = pc.and_(pc.is_valid(context), pc.not_equal(context, "")).fill_null(False)
    return np.asarray(present.to_numpy(zero_copy_only=False), dtype=bool)


def _archived(table: pa.Table) -> np.ndarray:
    """Which rows are archived (``lifecycle == "archived"``)."""
    if "lifecycle" not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    flags = pc.fill_null(pc.equal(table.column("lifecycle"), "archived"), False)
    return np.asarray(flags.to_numpy(zero_copy_only=False), dtype=bool)


def _expiry_seconds(table: pa.Table) -> np.ndarray:
    """``expires_at`` in POSIX seconds, +inf where a memory never expires."""
    if "expires_at" not in table.column_names:
        return np.full(table.num_rows, np.inf)
    column = table.column("expires_at")
    never = pc.is_null(column).to_numpy(zero_copy_only=False).astype(bool)
    return np.where(never, np.inf, _microseconds(column) / 1e6)


def _take_sorted(table: pa.Table, rows: list[int]) -> list[dict[str, Any]]:
    """Rows at the sorted indices ``rows`` as dicts, taken batch by batch (``take`` per chunk)."""
    # Table.take concatenates every chunk first, and each append adds one (_appended): that
    # copied the namespace's text on every recall after a write (3-4 ms at 5,000 memories).
    out: list[dict[str, Any]] = []
    start, at = 0, 0
    for batch in table.to_batches():
        end = start + batch.num_rows
        stop = bisect.bisect_left(rows, end, at)
        if stop > at:
            out += batch.take(pa.array([i - start for i in rows[at:stop]], pa.int64())).to_pylist()
        start, at = end, stop
    return out


def _microseconds(column: pa.ChunkedArray) -> np.ndarray:
    """A timestamp column as int64 microseconds since the epoch (nulls: -1)."""
    as_int = pc.cast(column, pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return np.asarray(pc.fill_null(as_int, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _signature(table: pa.Table) -> np.ndarray:
    """The ``SIGNATURE`` columns but ``id`` as an (n, 5) int64 matrix."""
    if "revision" not in table.column_names or "stamp" not in table.column_names:
        raise ValueError("a namespace view needs the stamp and revision columns")
    return np.stack(
        [
            np.asarray(pc.fill_null(table.column("stamp"), 0).to_numpy(zero_copy_only=False), dtype=np.int64),
            np.asarray(pc.fill_null(table.column("revision"), -1).to_numpy(zero_copy_only=False), dtype=np.int64),
            _microseconds(table.column("updated_at")),
            np.asarray(pc.fill_null(table.column("access_count"), -1).to_numpy(zero_copy_only=False), dtype=np.int64),
            _microseconds(table.column("last_accessed_at")),
        ],
        axis=1,
    ).reshape(table.num_rows, 5)

"""The two :class:`~memory_retrievers.recall.RecallSource` implementations: a namespace view, or the table.

Both apply the same namespace and filter, rank ties the same way and resolve the memories their
searches found, so recall gives the same results through either (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from memory_retrievers.filters import MemoryFilter, build_where, created_within, matches, recency_slot
from memory_retrievers.models import FtsField, Memory
from memory_retrievers.recall.source import SourceHits
from memory_retrievers.storage.schema import SCALAR_COLUMNS, row_to_memory, vectors_of
from memory_retrievers.storage.search import Searcher
from memory_retrievers.storage.view import context_present, exact_order
from memory_retrievers.storage.views import NamespaceView
from memory_retrievers.text.dates import DateSpan

__all__ = ["TableSource", "ViewSource"]

_COLUMNS = [*SCALAR_COLUMNS, "vector"]
# The context channel wants memories that have a context. Asking LanceDB to prefilter on that
# scans the whole unindexed ``context`` column (measured: 50 ms of a 56 ms search at 100,000
# rows), so it searches the namespace for this many times ``k`` hits and keeps those with one.
# In a chat store nearly every memory has a context, so the cut rarely leaves fewer than ``k``.
_CONTEXT_OVERFETCH = 4
# Vector hits past ``k`` fetched so that ties at the k-th rank are cut by id, as in a view.
_TIE_MARGIN = 8


def _scores(table: pa.Table) -> tuple[float, ...]:
    return tuple(float(s) for s in table.column("_score").to_pylist())


class ViewSource:
    """Recall over a namespace's in-memory view; only BM25 asks LanceDB (for ids, resolved here)."""

    def __init__(self, view: NamespaceView, flt: MemoryFilter, searcher: Searcher) -> None:
        self._view = view
        self._filter = flt
        self._where = build_where(view.namespace, flt)
        self._searcher = searcher
        self._mask = view.mask(flt)

    @property
    def namespace(self) -> str:
        """The namespace read."""
        return self._view.namespace

    @property
    def description(self) -> str:
        """For the plan's notes."""
        return f"namespace view: {len(self._view)} memories in memory"

    def _ids(self, indices: Sequence[int]) -> tuple[str, ...]:
        ids = self._view.ids
        return tuple(ids[i] for i in indices)

    def holds(self, id_: str) -> bool:
        """Whether the view holds a stored memory of that id (whatever the filter)."""
        return id_ in self._view.index

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        """BM25 in LanceDB; ids the view does not hold (written since by another process) are dropped."""
        asked = k * _CONTEXT_OVERFETCH if with_context_only else k
        table = await self._searcher.fts(text, self._where, asked, field, ["id"])
        index = self._view.index
        has_context = self._view.has_context if with_context_only else None
        pairs = [
            (i, float(s))
            for i, s in zip(table.column("id").to_pylist(), table.column("_score").to_pylist(), strict=True)
            if i in index and (has_context is None or has_context[index[i]])
        ][:k]
        return SourceHits(tuple(i for i, _ in pairs), tuple(s for _, s in pairs))

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        """Exact dot products over the view's unit vectors."""
        mask = self._mask & self._view.created_within(within) if within else self._mask
        indices, sims = self._view.top_by_vector(vector, mask, k)
        return SourceHits(self._ids(indices), tuple(sims))

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        """Shared entities counted in Python."""
        found = self._view.top_by_entities(entities, self._mask, k)
        return SourceHits(self._ids([i for i, _ in found]), tuple(float(n) for _, n in found))

    async def recency_search(self, k: int) -> SourceHits:
        """Newest rows of the view."""
        indices = self._view.top_by_recency(self._mask, k)
        return SourceHits(self._ids(indices), tuple(float(self._view.created[i]) for i in indices))

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        """Ids the view holds that pass the filter."""
        index = self._view.index
        held = [i for i in ids if i in index]
        memories = self._view.memories([index[i] for i in held])
        return tuple(i for i, m in zip(held, memories, strict=True) if matches(m, self._filter))

    async def has_entities(self) -> bool:
        """From the view's rows (no query; the table source asks the store's cache)."""
        return self._view.has_entities

    async def speakers(self) -> frozenset[str]:
        """From the view's rows (no query; the table source asks the store's cache)."""
        return self._view.speakers

    def memory(self, id_: str) -> Memory:
        """The view's memory (built once per view)."""
        return self._view.memory(self._view.index[id_])

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        """Built in one pass over the view's columns (5x faster than row by row at 60 memories)."""
        index = self._view.index
        return self._view.memories([index[i] for i in ids])

    def vector(self, id_: str) -> np.ndarray:
        """A row of the view's matrix (no copy)."""
        vector: np.ndarray = self._view.vectors[self._view.index[id_]]
        return vector


class TableSource:
    """Recall straight from LanceDB (namespaces over the view limit, or views disabled)."""

    def __init__(self, namespace: str, flt: MemoryFilter, searcher: Searcher) -> None:
        self._namespace = namespace
        self._filter = flt
        self._where = build_where(namespace, flt)
        self._searcher = searcher
        self._rows: dict[str, dict[str, Any]] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._memories: dict[str, Memory] = {}

    @property
    def namespace(self) -> str:
        """The namespace read."""
        return self._namespace

    @property
    def description(self) -> str:
        """For the plan's notes."""
        return "no view"

    def _keep(self, table: pa.Table) -> tuple[str, ...]:
        """Hold a result's rows (first occurrence wins); returns its ids in order."""
        ids = table.column("id").to_pylist()
        new = [i for i, id_ in enumerate(ids) if id_ not in self._rows]
        if new:
            part = table.take(pa.array(new, pa.int64()))
            vectors = vectors_of(part)
            for j, row in enumerate(part.drop_columns(["vector"]).to_pylist()):
                self._rows[row["id"]] = row
                self._vectors[row["id"]] = vectors[j]
        return tuple(ids)

    def _hits(self, table: pa.Table) -> SourceHits:
        return SourceHits(self._keep(table), _scores(table))

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        """BM25 rows, with everything recall needs of them."""
        if not with_context_only:
            return self._hits(await self._searcher.fts(text, self._where, k, field, _COLUMNS))
        table = await self._searcher.fts(text, self._where, k * _CONTEXT_OVERFETCH, field, _COLUMNS)
        return self._hits(table.filter(pa.array(context_present(table))).slice(0, k))

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        """LanceDB's vector search (flat, or the ANN index with refinement on large tables)."""
        where = f"{self._where} AND {created_within(within)}" if within else self._where
        ids = self._keep(await self._searcher.nearest(vector, where, k + _TIE_MARGIN, _COLUMNS))
        if not ids:
            return SourceHits((), ())
        order, sims = exact_order(ids, np.stack([self._vectors[i] for i in ids]), vector, k)
        return SourceHits(tuple(ids[j] for j in order), tuple(sims))

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        """Entity overlap via LanceDB's label-list filter."""
        return self._hits(await self._searcher.by_entities(entities, self._where, k, _COLUMNS))

    async def recency_search(self, k: int) -> SourceHits:
        """Newest rows, ordered by LanceDB."""
        slot = recency_slot(self._namespace, self._filter)
        return self._hits(await self._searcher.newest(self._where, k, _COLUMNS, slot=slot))

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        """One query for the ids not held yet; the filter applies in SQL and again in Python."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._rows]
        if missing:
            table = await self._searcher.rows(build_where(self._namespace, self._filter, ids=missing), _COLUMNS)
            self._keep(table)
        return tuple(i for i in ids if i in self._rows and matches(self.memory(i), self._filter))

    async def has_entities(self) -> bool:
        """Asked of the store's cache."""
        return await self._searcher.has_entities(self._namespace)

    async def speakers(self) -> frozenset[str]:
        """Asked of the store's cache."""
        return await self._searcher.speakers(self._namespace)

    def memory(self, id_: str) -> Memory:
        """Built once from the held row."""
        mem = self._memories.get(id_)
        if mem is None:
            mem = self._memories[id_] = row_to_memory(self._rows[id_])
        return mem

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        """Each built from its held row (rows arrive as Python values already)."""
        return [self.memory(i) for i in ids]

    def vector(self, id_: str) -> np.ndarray:
        """The held vector."""
        return self._vectors[id_]

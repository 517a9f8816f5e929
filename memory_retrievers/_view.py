"""An in-memory view of one namespace, for recall.

A recall touches a few dozen memories but pays several milliseconds of LanceDB overhead per
query; loading a namespace's rows and vectors once costs about one query (4 ms for 600 memories)
and makes the vector, entity, recency and link channels numpy/dict work. Views are rebuilt when
the table changes in a way that could affect the namespace (see ``MemoryStore._aview``); BM25
still runs in LanceDB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .models import Memory
from .schema import row_to_memory, vectors_of

__all__ = ["NamespaceView"]


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
    _memories: dict[int, Memory] = field(default_factory=dict)

    @classmethod
    def from_table(cls, namespace: str, version: int, table: pa.Table) -> NamespaceView:
        """Build from a query result with every public column and ``vector``."""
        vectors = vectors_of(table)
        rows = table.drop_columns(["vector"]).to_pylist()
        view = cls(namespace, version, rows, vectors)
        view.index = {row["id"]: i for i, row in enumerate(rows)}
        view.live = np.asarray([row["superseded_by"] is None for row in rows], dtype=bool)
        view.created = np.asarray([row["created_at"].timestamp() for row in rows], dtype=np.float64)
        return view

    def __len__(self) -> int:
        return len(self.rows)

    def memory(self, i: int) -> Memory:
        """Row ``i`` as a :class:`Memory` (without vector), built once."""
        mem = self._memories.get(i)
        if mem is None:
            mem = self._memories[i] = row_to_memory(self.rows[i])
        return mem

    def top_by_vector(self, query: np.ndarray, mask: np.ndarray, k: int) -> list[int]:
        """Indices of the ``k`` rows most cosine-similar to ``query`` among ``mask``, best first."""
        candidates = np.flatnonzero(mask)
        if not len(candidates):
            return []
        sims = self.vectors[candidates] @ query
        k = min(k, len(candidates))
        top = np.argpartition(-sims, k - 1)[:k]
        order = top[np.lexsort((candidates[top], -sims[top]))]
        return [int(candidates[j]) for j in order]

    def top_by_recency(self, mask: np.ndarray, k: int) -> list[int]:
        """Indices of the ``k`` newest rows among ``mask``."""
        candidates = np.flatnonzero(mask)
        order = candidates[np.argsort(-self.created[candidates], kind="stable")]
        return [int(i) for i in order[:k]]

    def top_by_entities(self, entities: Sequence[str], mask: np.ndarray, k: int) -> list[int]:
        """Rows sharing entities, most shared first, ties newest first."""
        wanted = {e.strip().casefold() for e in entities}
        scored = []
        for i in np.flatnonzero(mask):
            shared = len(wanted.intersection(self.rows[i]["entities"] or ()))
            if shared:
                scored.append((shared, self.created[i], int(i)))
        scored.sort(key=lambda t: (t[0], t[1]), reverse=True)
        return [i for _, _, i in scored[:k]]

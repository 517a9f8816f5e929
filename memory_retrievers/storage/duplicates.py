"""Duplicate detection on write: against stored memories (LanceDB queries) and within the batch.

Exact duplicates share a ``content_hash``; near duplicates have a cosine similarity of at least
``StoreConfig.near_duplicate_threshold``. Vectors are unit length (see ``vectors``), so the batch
side compares them by dot product and the table side by LanceDB's cosine distance, which agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..config import StoreConfig
from ..dedup import first_duplicate_in_batch
from ..filters import MemoryFilter, build_where, sql_in
from .table import MemoryTable

__all__ = ["DuplicateFinder"]

#: Per record: ``(existing id, similarity)``, ``(index of an earlier record of the batch, similarity)``, or ``None``.
DuplicateOf = tuple[str | int, float] | None


class DuplicateFinder:
    """Finds, for each record of a write, the memory it duplicates.

    Args:
        table: The table layer.
        config: Thresholds, exempt kinds and whether exact dedup is on.
    """

    def __init__(self, table: MemoryTable, config: StoreConfig) -> None:
        self._table = table
        self._config = config

    @property
    def enabled(self) -> bool:
        """Whether any duplicate detection is configured."""
        return self._config.exact_dedup or self._config.near_duplicate_threshold is not None

    async def detect(
        self,
        recs: Sequence[Mapping[str, Any]],
        hashes: Sequence[str],
        vectors: np.ndarray,
        by_ns: Mapping[str, Sequence[int]],
    ) -> list[DuplicateOf]:
        """The duplicate of each record: a stored memory, an earlier record of the batch, or ``None``.

        Records that name an ``id`` (upserts), supersede a memory, or are of an exempt kind never
        count as duplicates.
        """
        dup_of: list[DuplicateOf] = [None] * len(recs)
        candidate = [
            r["kind"] not in self._config.dedup_exempt_kinds and r.get("id") is None and r.get("supersedes") is None
            for r in recs
        ]
        for ns, idx in by_ns.items():
            cidx = [i for i in idx if candidate[i]]
            if not cidx:
                continue
            found = await self._stored(ns, [hashes[i] for i in cidx], vectors[cidx])
            for i, hit in zip(cidx, found, strict=False):
                dup_of[i] = hit
            in_batch = first_duplicate_in_batch(
                [hashes[i] for i in idx],
                vectors[list(idx)],
                [candidate[i] and dup_of[i] is None for i in idx],
                self._config.near_duplicate_threshold,
            )
            for i, own in zip(idx, in_batch, strict=False):
                if own is not None:
                    dup_of[i] = (idx[own[0]], own[1])
        return dup_of

    async def _stored(self, namespace: str, hashes: Sequence[str], vectors: np.ndarray) -> list[DuplicateOf]:
        """For each candidate, an existing (not superseded) memory it duplicates, if any."""
        out: list[DuplicateOf] = [None] * len(hashes)
        if not len(hashes) or await self._table.count_namespace(namespace) == 0:
            return out
        live = build_where(namespace, MemoryFilter())
        if self._config.exact_dedup:
            where = f"{live} AND {sql_in('content_hash', sorted(set(hashes)))}"
            rows = (await self._table.rows(where, ["id", "content_hash"])).to_pylist()
            found = {r["content_hash"]: r["id"] for r in rows}
            for i, h in enumerate(hashes):
                if h in found:
                    out[i] = (found[h], 1.0)
        threshold = self._config.near_duplicate_threshold
        todo = [i for i in range(len(hashes)) if out[i] is None]
        if threshold is not None and todo:
            query = (
                self._table.query()
                .nearest_to([vectors[i] for i in todo])
                .distance_type("cosine")
                .where(live)
                .select(["id", "_distance"])
                .limit(1)
            )
            table = await self._table.read(query, "search for near duplicates")
            qidx = (
                table.column("query_index").to_pylist() if "query_index" in table.column_names else [0] * table.num_rows
            )
            for q, id_, dist in zip(
                qidx, table.column("id").to_pylist(), table.column("_distance").to_pylist(), strict=False
            ):
                sim = 1.0 - float(dist)
                if sim >= threshold:
                    out[todo[q]] = (id_, sim)
        return out

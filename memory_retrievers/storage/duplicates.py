"""Duplicate detection on write: against stored memories (LanceDB queries) and within the batch.

What counts as a duplicate is defined in :mod:`memory_retrievers.text.dedup`: the same text up to
whitespace, or a near-identical vector *and* the same words, and always within one scope (kind,
project, topic). Vectors are unit length (see ``vectors``), so the batch side compares them by dot
product and the table side by LanceDB's cosine distance, which agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from memory_retrievers.config import StoreConfig
from memory_retrievers.filters import MemoryFilter, build_where, sql_in, sql_literal
from memory_retrievers.storage.backend import Request
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.text.dedup import Scope, first_duplicate_in_batch, same_words, scope_of

__all__ = ["DuplicateFinder", "Match"]

#: Stored neighbours looked at per record: the nearest may fail the same-words test while the next passes.
_NEIGHBOURS = 3


class Match(NamedTuple):
    """A record's duplicate: a stored memory's id, or the index of an earlier record of the batch."""

    of: str | int
    similarity: float
    exact: bool


class DuplicateFinder:
    """Finds, for each record of a write, the memory it duplicates.

    Args:
        table: The table layer.
        config: Thresholds, exempt kinds and whether exact dedup is on.
    """

    def __init__(self, table: MemoryTable, config: StoreConfig, clock: Callable[[], datetime]) -> None:
        self._table = table
        self._config = config
        self._clock = clock

    @property
    def enabled(self) -> bool:
        """Whether any duplicate detection is configured."""
        return self._config.exact_dedup or self._config.near_duplicate_threshold is not None

    def exempt(self, rec: Mapping[str, Any]) -> bool:
        """Whether a record's kind is never deduplicated (``StoreConfig.dedup_exempt_kinds``)."""
        return rec["kind"] in self._config.dedup_exempt_kinds

    def compare(self, row: Mapping[str, Any], rec: Mapping[str, Any], chash: str, vector: np.ndarray) -> Match | None:
        """Whether ``rec`` duplicates the stored ``row`` (whole, vector included), by the tests of :meth:`detect`.

        Liveness is the caller's to check: this compares the two memories only.
        """
        if scope_of(row) != scope_of(rec):
            return None
        if self._config.exact_dedup and row["content_hash"] == chash:
            return Match(row["id"], 1.0, True)
        threshold = self._config.near_duplicate_threshold
        if threshold is not None:
            sim = float(np.dot(np.asarray(row["vector"], dtype=np.float32), vector))  # both unit length
            if sim >= threshold and same_words(row["text"], rec["text"]):
                return Match(row["id"], sim, False)
        return None

    async def find(self, namespace: str, rec: Mapping[str, Any], chash: str, vector: np.ndarray) -> Match | None:
        """A live stored memory that one record duplicates, as :meth:`detect` finds it (exemptions aside)."""
        (hit,) = await self._stored(namespace, scope_of(rec), [chash], vector.reshape(1, -1), [rec["text"]])
        return hit

    async def detect(
        self,
        recs: Sequence[Mapping[str, Any]],
        hashes: Sequence[str],
        vectors: np.ndarray,
        by_ns: Mapping[str, Sequence[int]],
    ) -> list[Match | None]:
        """The duplicate of each record: a stored memory, an earlier record of the batch, or ``None``.

        Records that name an ``id`` (upserts), supersede a memory, or are of an exempt kind never
        count as duplicates.
        """
        dup_of: list[Match | None] = [None] * len(recs)
        candidate = [
            r["kind"] not in self._config.dedup_exempt_kinds and r.get("id") is None and r.get("supersedes") is None
            for r in recs
        ]
        scopes = [scope_of(r) for r in recs]
        for ns, idx in by_ns.items():
            by_scope: dict[Scope, list[int]] = {}
            for i in idx:
                if candidate[i]:
                    by_scope.setdefault(scopes[i], []).append(i)
            for scope, cidx in by_scope.items():
                found = await self._stored(
                    ns, scope, [hashes[i] for i in cidx], vectors[cidx], [recs[i]["text"] for i in cidx]
                )
                for i, hit in zip(cidx, found, strict=True):
                    dup_of[i] = hit
            in_batch = first_duplicate_in_batch(
                [hashes[i] for i in idx],
                vectors[list(idx)],
                [candidate[i] and dup_of[i] is None for i in idx],
                self._config.near_duplicate_threshold,
                texts=[recs[i]["text"] for i in idx],
                scopes=[scopes[i] for i in idx],
            )
            for i, own in zip(idx, in_batch, strict=True):
                if own is not None:
                    dup_of[i] = Match(idx[own[0]], own[1], hashes[i] == hashes[idx[own[0]]])
        return dup_of

    async def _stored(
        self, namespace: str, scope: Scope, hashes: Sequence[str], vectors: np.ndarray, texts: Sequence[str]
    ) -> list[Match | None]:
        """For each candidate of one scope, a live stored memory it duplicates, if any."""
        out: list[Match | None] = [None] * len(hashes)
        if not len(hashes) or await self._table.count_namespace(namespace) == 0:
            return out
        # Only what a caller can still see: an expired or archived memory must not swallow a write.
        live = f"{build_where(namespace, MemoryFilter(live_at=self._clock()))} AND {_scope_sql(scope)}"
        if self._config.exact_dedup:
            where = f"{live} AND {sql_in('content_hash', sorted(set(hashes)))}"
            rows = (await self._table.rows(where, ["id", "content_hash"])).to_pylist()
            found = {r["content_hash"]: r["id"] for r in sorted(rows, key=lambda r: r["id"])}
            for i, h in enumerate(hashes):
                if h in found:
                    out[i] = Match(found[h], 1.0, True)
        threshold = self._config.near_duplicate_threshold
        todo = [i for i in range(len(hashes)) if out[i] is None]
        if threshold is not None and todo:
            request = Request(live, ["id", "text", "_distance"], limit=_NEIGHBOURS, vector=[vectors[i] for i in todo])
            table = await self._table.search(request, "search for near duplicates")
            qidx = (
                table.column("query_index").to_pylist() if "query_index" in table.column_names else [0] * table.num_rows
            )
            hits = sorted(
                zip(
                    qidx,
                    table.column("_distance").to_pylist(),
                    table.column("id").to_pylist(),
                    table.column("text").to_pylist(),
                    strict=True,
                )
            )
            for q, dist, id_, text in hits:  # nearest first per query
                i = todo[q]
                sim = 1.0 - float(dist)
                if out[i] is None and sim >= threshold and same_words(text, texts[i]):
                    out[i] = Match(id_, sim, False)
        return out


def _scope_sql(scope: Scope) -> str:
    kind, project, topic = scope
    clauses = [f"kind = {sql_literal(kind)}"]
    for column, value in (("project", project), ("topic", topic)):
        clauses.append(f"{column} IS NULL" if value is None else f"{column} = {sql_literal(value)}")
    return " AND ".join(f"({c})" for c in clauses)

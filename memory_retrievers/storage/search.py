"""Search primitives over the table: BM25, vector, entity overlap, recency; and plain reads.

Each search returns an Arrow table of the asked columns plus ``_score`` (higher is better), ranked,
ties by id: LanceDB returns equal scores in arbitrary (parallel) order, and rank fusion would turn
that into different results for the same query.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_retrievers.filters import MemoryFilter, build_where, sql_list, sql_literal
from memory_retrievers.models import FtsField, Hit, Memory, MemoryKind
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.backend import Request
from memory_retrievers.storage.bounded import bounded_put
from memory_retrievers.storage.maintenance import FTS_COLUMNS
from memory_retrievers.storage.schema import SCALAR_COLUMNS, rows_to_memories
from memory_retrievers.storage.table import CommitEvent, MemoryTable
from memory_retrievers.text.speakers import speaker_of

__all__ = ["ENTITY_CACHE_NAMESPACES", "SPEAKER_SAMPLE", "Searcher", "hits", "joined_speakers"]

#: Namespaces whose "has any entity-tagged memory" answer, and whose speakers, are cached (about
#: 200 bytes each, plus the speakers' names).
ENTITY_CACHE_NAMESPACES = 10_000
#: Newest chat turns of a namespace read to learn who speaks in it (one read per namespace and
#: ``max_age_s``; speakers of a chat recur, so its newest turns name them all).
SPEAKER_SAMPLE = 2_000
#: Most speakers remembered per namespace (a query is matched against each of them).
MAX_SPEAKERS = 500


def ranked(table: pa.Table) -> pa.Table:
    """Rows by ``_score`` descending, ties by id."""
    if table.num_rows < 2 or "id" not in table.column_names:
        return table
    return table.sort_by([("_score", "descending"), ("id", "ascending")])


def hits(table: pa.Table) -> list[Hit]:
    """Ranked ``Hit``s from a search table with ``id`` and ``_score`` columns."""
    return [
        Hit(id_, float(score))
        for id_, score in zip(table.column("id").to_pylist(), table.column("_score").to_pylist(), strict=True)
    ]


class Searcher:
    """The store's reads: search primitives, get/list/count, and the entity cue cache.

    Args:
        table: The table layer (this subscribes to its commits for the entity cache).
        access: Pending access statistics, counted into every memory read returns.
    """

    def __init__(self, table: MemoryTable, access: AccessLog) -> None:
        self._table = table
        self._access = access
        # namespace -> (has entity-tagged memories, monotonic time checked); see has_entities()
        self._entity_cache: dict[str, tuple[bool, float]] = {}
        # namespace -> what is known of who speaks in it; see speakers()
        self._speaker_cache: dict[str, _Speakers] = {}
        # filter -> created_at of the k-th newest row its last recency search found; see newest()
        self._newest_cutoff: dict[str, datetime] = {}
        table.subscribe(self._on_commit)

    def _on_commit(self, event: CommitEvent) -> None:
        if event.rows is None or event.failed:
            return
        columns = event.rows.column_names
        if "entities" in columns:
            lengths = pc.list_value_length(event.rows.column("entities")).fill_null(0)
            tagged = pc.filter(event.rows.column("namespace"), pc.greater(lengths, 0))
            now = time.monotonic()
            for ns in set(tagged.to_pylist()):
                _bounded_put(self._entity_cache, ns, (True, now))
        if {"text", "kind"} <= set(columns) and self._speaker_cache:
            # Only namespaces already read: a new speaker joins them at once. An unread namespace
            # is read whole (its newest turns) on first use, so nothing is added from part of it.
            message = pc.equal(event.rows.column("kind"), MemoryKind.MESSAGE.value)
            for ns, text in zip(
                pc.filter(event.rows.column("namespace"), message).to_pylist(),
                pc.filter(event.rows.column("text"), message).to_pylist(),
                strict=True,
            ):
                if (cached := self._speaker_cache.get(ns)) is not None:
                    cached.add([speaker_of(text or "")])

    def _empty(self, columns: Sequence[str]) -> pa.Table:
        schema = self._table.schema
        return pa.table(
            {c: pa.array([], schema.field(c).type) for c in columns} | {"_score": pa.array([], pa.float32())}
        )

    async def fts(self, text: str, where: str, k: int, field: FtsField, columns: Sequence[str]) -> pa.Table:
        """BM25 rows with ``columns`` and ``_score``; empty when nothing was ever indexed."""
        column = FTS_COLUMNS[field]
        if not await self._table.has_index(f"FTS:{column}"):
            return self._empty(columns)
        request = Request(where, [*columns, "_score"], limit=k, text=text, text_column=column)
        return ranked(await self._table.search(request, "run a full-text search"))

    async def nearest(self, vector: np.ndarray, where: str, k: int, columns: Sequence[str]) -> pa.Table:
        """Nearest rows with ``columns`` and ``_score`` (cosine similarity)."""
        # With a (quantized) vector index, candidates are re-ranked with full vectors.
        refine = 5 if any(key.endswith(":vector") for key in self._table.indexed) else None
        request = Request(where, [*columns, "_distance"], limit=k, vector=vector, refine=refine)
        table = await self._table.search(request, "run a vector search")
        # The one place a distance becomes a score: cosine similarity = 1 - cosine distance.
        similarity = pc.subtract(pa.scalar(1.0, pa.float32()), table.column("_distance").cast(pa.float32()))
        return ranked(table.drop_columns(["_distance"]).append_column("_score", similarity))

    async def by_entities(self, entities: Sequence[str], where: str, k: int, columns: Sequence[str]) -> pa.Table:
        """Rows sharing entities, most shared first (ties: newer first, then by id), ``_score`` = count."""
        wanted = sorted({e.strip().casefold() for e in entities})
        if not wanted:
            return self._empty(columns)
        cols = list(dict.fromkeys([*columns, "id", "entities", "created_at"]))
        table = await self._table.rows(where + f" AND array_has_any(entities, {sql_list(wanted)})", cols)
        want = set(wanted)
        overlap = [float(len(want.intersection(e or []))) for e in table.column("entities").to_pylist()]
        created = [ts.timestamp() for ts in table.column("created_at").to_pylist()]
        ids = table.column("id").to_pylist()
        order = sorted(range(table.num_rows), key=lambda i: (-overlap[i], -created[i], ids[i]))[:k]
        out = table.take(pa.array(order, pa.int64())).select(list(columns))
        return out.append_column("_score", pa.array([overlap[i] for i in order], pa.float32()))

    async def newest(self, where: str, k: int, columns: Sequence[str], *, slot: str | None = None) -> pa.Table:
        """Newest rows (ties by id) with ``_score`` = ``created_at`` in POSIX seconds.

        Ordering a namespace by time sorts all of it (17 ms at 100,000 memories). So the time of
        the k-th newest row is remembered under ``slot`` (the filter, without the moment it is
        judged at), and the next search reads only rows created since then through the
        ``created_at`` index (5 ms): when at least ``k`` rows are found there, nothing older can be
        among the newest ``k``, whatever was written or deleted since; when fewer are, the whole
        filter is read again.
        """
        cols = list(dict.fromkeys([*columns, "created_at"]))
        since = self._newest_cutoff.get(slot) if slot is not None else None
        table = None
        if since is not None:
            recent = f"{where} AND created_at >= {sql_literal(since)}"
            table = await self._table.rows(recent, cols, limit=k, newest_first=True, action="run a recency search")
        if table is None or table.num_rows < k:
            table = await self._table.rows(where, cols, limit=k, newest_first=True, action="run a recency search")
        created = table.column("created_at").to_pylist()
        if slot is not None and len(created) == k:
            _bounded_put(self._newest_cutoff, slot, created[-1])
        seconds = [ts.timestamp() for ts in created]
        return table.select(list(columns)).append_column("_score", pa.array(seconds, pa.float64()))

    async def has_entities(self, namespace: str, *, max_age_s: float = 60.0) -> bool:
        """Whether any memory of the namespace has entities (lets recall skip a useless query).

        Cached per namespace: a write through this store with entities sets it at once; writes by
        other processes are seen after at most ``max_age_s`` seconds.
        """
        cached = self._entity_cache.get(namespace)
        now = time.monotonic()
        if cached is not None and (cached[0] or now - cached[1] < max_age_s):
            return cached[0]
        where = build_where(namespace, MemoryFilter(include_superseded=True)) + " AND array_length(entities) > 0"
        found = await self._table.count(where, action="count entity-tagged memories") > 0
        _bounded_put(self._entity_cache, namespace, (found, now))
        return found

    async def speakers(self, namespace: str, *, max_age_s: float = 60.0) -> frozenset[str]:
        """Who speaks in the namespace's chat: the ``Name`` of its ``"Name: text"`` message memories.

        Read from the :data:`SPEAKER_SAMPLE` messages written last (by ``updated_at``: a chat
        imported with its original times counts as new), then cached per namespace. A speaker
        written through this store joins at once; other processes' join within ``max_age_s``, when
        the cache reads the messages written since its last read (measured at 100,000 memories:
        the first read 50 ms, sorting the namespace by time; each later one 5 ms, no sort).
        """
        cached = self._speaker_cache.get(namespace)
        now = time.monotonic()
        if cached is not None and now - cached.checked < max_age_s:
            return cached.names
        where = build_where(namespace, MemoryFilter(kinds=(MemoryKind.MESSAGE,), include_superseded=True))
        if cached is None or cached.watermark is None:
            table = await self._table.rows(
                where,
                ["id", "updated_at", "text"],  # ordering needs its columns selected
                limit=SPEAKER_SAMPLE,
                newest_first=True,
                by="updated_at",  # written last, not created last: imported history counts too
                action="read who speaks in a namespace",
            )
            cached = _Speakers(frozenset(), now, None)
        else:
            since = cached.watermark - timedelta(seconds=_CLOCK_SKEW_S)
            table = await self._table.rows(
                f"{where} AND updated_at >= {sql_literal(since)}",
                ["updated_at", "text"],
                limit=SPEAKER_SAMPLE,
                action="read who joined a namespace's chat",
            )
        cached.add(speaker_of(text or "") for text in table.column("text").to_pylist())
        newest = max((t for t in table.column("updated_at").to_pylist() if t is not None), default=None)
        if newest is not None and (cached.watermark is None or newest > cached.watermark):
            cached.watermark = newest
        cached.checked = now
        _bounded_put(self._speaker_cache, namespace, cached)
        return cached.names

    # ------------------------------------------------------------------ plain reads
    async def rows(self, where: str, columns: Sequence[str]) -> pa.Table:
        """Rows matching ``where`` (no order, no limit)."""
        return await self._table.rows(where, columns)

    async def memories(
        self, namespace: str, ids: Sequence[str], *, include_vector: bool = False
    ) -> tuple[list[Memory], list[str]]:
        """The memories of ``ids`` in the order asked (repeats once), and the ids not found."""
        columns = [*SCALAR_COLUMNS, "vector"] if include_vector else list(SCALAR_COLUMNS)
        rows = await self._table.rows_by_id(namespace, ids, columns=columns)
        missing = [i for i in ids if i not in rows]
        ordered = [rows[i] for i in dict.fromkeys(ids) if i in rows]
        if not ordered:
            return [], missing
        return [self._access.overlay(m) for m in rows_to_memories(pa.Table.from_pylist(ordered))], missing

    async def page(
        self, namespace: str, flt: MemoryFilter, *, limit: int, offset: int, newest_first: bool
    ) -> list[Memory]:
        """Memories of a namespace ordered by ``created_at``, filtered and paged."""
        table = await self._table.rows(
            build_where(namespace, flt),
            SCALAR_COLUMNS,
            limit=limit,
            offset=offset,
            newest_first=newest_first,
            action="list memories",
        )
        return [self._access.overlay(m) for m in rows_to_memories(table)]

    async def namespaces(self) -> list[str]:
        """Every namespace with at least one memory, sorted (scans the ``namespace`` column only)."""
        table = await self._table.search(Request(None, ["namespace"]), "list namespaces")
        return sorted(str(v) for v in pc.unique(table.column("namespace")).to_pylist())


# Other processes' clocks may lag ours by this much: the refresh re-reads messages written this
# long before the newest one it has seen.
_CLOCK_SKEW_S = 300.0


@dataclass
class _Speakers:
    """What the cache knows of one namespace's speakers (mutated on the store's loop only)."""

    names: frozenset[str]
    checked: float
    """``time.monotonic()`` of the last read."""
    watermark: datetime | None
    """The newest ``updated_at`` read so far (``None``: nothing read yet)."""

    def add(self, names: Iterable[str | None]) -> None:
        """Add speakers, at most :data:`MAX_SPEAKERS` in all."""
        self.names = joined_speakers(self.names, names)


def joined_speakers(known: frozenset[str], names: Iterable[str | None]) -> frozenset[str]:
    """``known`` plus ``names`` (``None`` skipped), at most :data:`MAX_SPEAKERS` in all."""
    new = [n for n in dict.fromkeys(names) if n is not None and n not in known]
    return known | frozenset(new[: max(0, MAX_SPEAKERS - len(known))]) if new else known


def _bounded_put(cache: dict[str, Any], namespace: str, entry: Any) -> None:
    """The searcher's caches hold at most :data:`ENTITY_CACHE_NAMESPACES` entries each."""
    bounded_put(cache, namespace, entry, ENTITY_CACHE_NAMESPACES)

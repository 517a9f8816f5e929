"""Writing validated records: embed, detect duplicates, resolve upserts, fill context, one commit.

Every write of the store ends in :meth:`Writer.commit`, the one place rows become Arrow data
(``search_text`` is derived there).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ..config import StoreConfig
from ..fields import build_row
from ..models import AddedMemory, DedupPolicy, Memory, WriteAction
from ..schema import rows_to_memories, search_text, to_arrow
from ..validation import content_hash
from .context_fill import ContextFiller
from .duplicates import DuplicateFinder
from .search import Searcher
from .table import CommitEvent, MemoryTable
from .vectors import VectorMaker

__all__ = ["Writer", "added", "public"]


def public(row: dict[str, Any]) -> dict[str, Any]:
    """A row without the private ``_`` bookkeeping keys of the write path."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def added(mem: Memory, action: WriteAction, dup: str | None, sim: float | None) -> AddedMemory:
    """The result of a write for one record."""
    fields = {f: getattr(mem, f) for f in Memory.__dataclass_fields__}
    return AddedMemory(**fields, action=action, duplicate_of=dup, similarity=sim)


class _Outcome(NamedTuple):
    """What a write did with one record: the memory it landed in, and how."""

    key: tuple[str, str]
    action: WriteAction
    duplicate_of: str | None
    similarity: float | None


class Writer:
    """The store's write path.

    Args:
        table: The table layer.
        config: Dedup policy and limits.
        vectors: Embeds records and checks caller vectors.
        duplicates: Duplicate detection.
        context: Chat-turn context fill.
        searcher: Reads memories a skipped record points at.
        clock: The store's clock.
    """

    def __init__(
        self,
        table: MemoryTable,
        config: StoreConfig,
        vectors: VectorMaker,
        duplicates: DuplicateFinder,
        context: ContextFiller,
        searcher: Searcher,
        clock: Callable[[], datetime],
    ) -> None:
        self._table = table
        self._config = config
        self._vectors = vectors
        self._duplicates = duplicates
        self._context = context
        self._searcher = searcher
        self._clock = clock

    async def write(self, recs: list[dict[str, Any]], *, dedup: bool | None, first_index: int = 0) -> list[AddedMemory]:
        """Write one batch of validated records in one commit; one result per record, in order."""
        if not recs:
            return []
        vectors = await self._vectors.for_records(recs, first_index=first_index)
        now = self._clock()
        hashes = [content_hash(r["text"]) for r in recs]
        by_ns: dict[str, list[int]] = {}
        for i, r in enumerate(recs):
            by_ns.setdefault(r["namespace"], []).append(i)
        # Rows that caller ids will replace (upsert), fetched whole so their history survives.
        existing: dict[tuple[str, str], dict[str, Any]] = {}
        for ns, idx in by_ns.items():
            ids = [recs[i]["id"] for i in idx if recs[i].get("id") is not None]
            for id_, row in (await self._table.rows_by_id(ns, ids)).items():
                existing[(ns, id_)] = row
        dup_of = (
            await self._duplicates.detect(recs, hashes, vectors, by_ns)
            if self._duplicates.enabled and dedup is not False
            else [None] * len(recs)
        )
        last_with_id = {(r["namespace"], r["id"]): i for i, r in enumerate(recs) if r.get("id") is not None}

        policy = self._config.dedup_policy
        target: list[str] = [""] * len(recs)
        outcomes: list[_Outcome] = []
        writes: dict[tuple[str, str], dict[str, Any]] = {}  # key -> row (the last record for a key wins)
        for i, r in enumerate(recs):
            ns = r["namespace"]
            if r.get("id") is not None and last_with_id[(ns, r["id"])] != i:
                target[i] = r["id"]  # a later record of this batch rewrites the same id
                outcomes.append(_Outcome((ns, r["id"]), WriteAction.SKIPPED, None, None))
                continue
            dup_id: str | None = None
            sim: float | None = None
            hit = dup_of[i]
            if hit is not None:
                ref, sim = hit
                dup_id = target[ref] if isinstance(ref, int) else ref
                if policy is DedupPolicy.SKIP:
                    target[i] = dup_id
                    outcomes.append(_Outcome((ns, dup_id), WriteAction.SKIPPED, dup_id, sim))
                    continue
            update_dup = hit is not None and policy is DedupPolicy.UPDATE
            target[i] = r.get("id") or (dup_id if update_dup and dup_id else uuid.uuid4().hex)
            key = (ns, target[i])
            prior = existing.get(key) or writes.get(key)
            if prior is None and update_dup:
                prior = (await self._table.rows_by_id(ns, [target[i]])).get(target[i])
            row = build_row(r, hashes[i], prior, now, offset_us=first_index + i, row_id=target[i])
            row["_auto_context"] = r.get("context") is None
            row["_vector"] = i
            writes[key] = row
            outcomes.append(_Outcome(key, WriteAction.UPDATED if prior is not None else WriteAction.ADDED, dup_id, sim))

        rows = list(writes.values())
        refreshed = await self._context.fill(rows)
        if rows:
            upsert = bool(refreshed) or any(o.action is WriteAction.UPDATED for o in outcomes)
            await self.commit(rows, vectors[[row["_vector"] for row in rows]], extra=refreshed, upsert=upsert)

        by_key = {key: rows_to_memories(pa.Table.from_pylist([public(row)]))[0] for key, row in writes.items()}
        out: list[AddedMemory] = []
        for outcome in outcomes:
            mem = by_key.get(outcome.key)
            if mem is None:  # skipped as a duplicate of a stored memory
                ns, id_ = outcome.key
                found, _ = await self._searcher.memories(ns, [id_])
                mem = found[0]
            out.append(added(mem, outcome.action, outcome.duplicate_of, outcome.similarity))
        return out

    async def commit(
        self,
        rows: Sequence[dict[str, Any]],
        vectors: np.ndarray,
        *,
        extra: Sequence[dict[str, Any]] = (),
        upsert: bool,
    ) -> CommitEvent:
        """Write rows (and whole stored rows, with their vectors, in ``extra``) in exactly one commit."""
        clean = [public(r) for r in rows]
        if extra:
            extra_vectors = np.asarray([r["vector"] for r in extra], dtype=np.float32)
            clean += [{k: v for k, v in r.items() if k != "vector"} for r in extra]
            vectors = np.concatenate([vectors.reshape(-1, self._vectors.dimension), extra_vectors])
        for row in clean:  # derived here, the one place every write passes through
            row["search_text"] = search_text(row["text"], row["context"])
        data = to_arrow(clean, vectors, self._table.schema)
        return await (self._table.upsert(data) if upsert else self._table.add(data))

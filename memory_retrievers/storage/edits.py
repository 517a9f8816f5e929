"""Changing stored memories: ``update``, ``supersede``, ``delete`` and ``forget``.

Arguments arrive validated by the facade; each operation is one commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from ..config import StoreConfig
from ..errors import InvalidInputError, NotFoundError
from ..fields import INHERITED_FIELDS, WRITABLE_FIELDS, build_row
from ..filters import MemoryFilter, build_where, sql_in
from ..models import AddedMemory, Memory, WriteAction
from ..schema import rows_to_memories
from ..validation import content_hash, validate_record
from .table import MemoryTable
from .vectors import VectorMaker
from .writes import Writer, added

__all__ = ["Editor"]


class Editor:
    """Update, supersede and delete memories of a namespace.

    Args:
        table: The table layer.
        config: Limits for re-validated records.
        vectors: Embeds changed text, checks caller vectors.
        writer: Its :meth:`Writer.commit` writes the rows.
        clock: The store's clock.
    """

    def __init__(
        self,
        table: MemoryTable,
        config: StoreConfig,
        vectors: VectorMaker,
        writer: Writer,
        clock: Callable[[], datetime],
    ) -> None:
        self._table = table
        self._config = config
        self._vectors = vectors
        self._writer = writer
        self._clock = clock

    async def update(self, namespace: str, id_: str, fields: Mapping[str, Any]) -> Memory:
        """Change fields of one memory (the record is re-validated whole; changed text is re-embedded).

        Raises:
            NotFoundError: No such memory.
            InvalidInputError: Bad field values.
        """
        prior = (await self._table.rows_by_id(namespace, [id_])).get(id_)
        if prior is None:
            raise NotFoundError(f"no memory {id_!r} in namespace {namespace!r}", [id_])
        merged = {k: prior[k] for k in WRITABLE_FIELDS if k in prior and k != "vector"}
        merged["metadata"] = json.loads(prior["metadata"])
        merged.update(fields)
        rec = validate_record(merged, self._config)
        if "vector" in fields:
            vector = (await self._vectors.for_records([rec]))[0]
        elif rec["text"] != prior["text"]:
            vector = (await self._vectors.embed([rec["text"]]))[0]
        else:
            vector = np.asarray(prior["vector"], dtype=np.float32)
        row = build_row(rec, content_hash(rec["text"]), prior, self._clock())
        await self._writer.commit([row], vector.reshape(1, -1), upsert=True)
        return rows_to_memories(pa.Table.from_pylist([row]))[0]

    async def supersede(self, namespace: str, old_id: str, new: str | Mapping[str, Any]) -> AddedMemory:
        """Write a memory that replaces ``old_id``; both are linked, in one commit.

        Raises:
            NotFoundError: ``old_id`` does not exist.
            InvalidInputError: ``old_id`` is already superseded, or the new record is invalid.
        """
        old = (await self._table.rows_by_id(namespace, [old_id])).get(old_id)
        if old is None:
            raise NotFoundError(f"no memory {old_id!r} in namespace {namespace!r}", [old_id])
        if old["superseded_by"] is not None:
            raise InvalidInputError(
                f"memory {old_id!r} is already superseded by {old['superseded_by']!r}; supersede that one instead"
            )
        fields: dict[str, Any] = {"text": new} if isinstance(new, str) else dict(new)
        inherited = {k: old[k] for k in INHERITED_FIELDS}
        inherited["metadata"] = json.loads(old["metadata"])
        rec = validate_record({**inherited, **fields, "supersedes": old_id, "namespace": namespace}, self._config)
        if rec.get("id") == old_id:
            raise InvalidInputError("the new memory needs an id different from old_id")
        if rec.get("id") is not None and (await self._table.rows_by_id(namespace, [rec["id"]])):
            raise InvalidInputError(f"id {rec['id']!r} already exists; omit id to generate one")
        vector = await self._vectors.for_records([rec])
        now = self._clock()
        row = build_row(rec, content_hash(rec["text"]), None, now)
        old_row = {**old, "superseded_by": row["id"], "updated_at": now}
        await self._writer.commit([row], vector, extra=[old_row], upsert=True)
        mem = rows_to_memories(pa.Table.from_pylist([row]))[0]
        return added(mem, WriteAction.ADDED, None, None)

    async def delete(self, namespace: str, ids: Sequence[str], *, missing_ok: bool) -> int:
        """Delete memories by id, all or nothing unless ``missing_ok``; returns how many were deleted.

        A memory that a deleted one had superseded becomes live again in the same commit: its
        ``superseded_by`` would otherwise point at nothing and hide it from every search for good.

        Raises:
            NotFoundError: Some ids do not exist (and not ``missing_ok``); nothing is deleted.
        """
        found = await self._table.rows_by_id(namespace, ids, columns=["id"])
        missing = [i for i in ids if i not in found]
        if missing and not missing_ok:
            raise NotFoundError(
                f"{len(missing)} id(s) not found in namespace {namespace!r}: {missing[:5]}; nothing was deleted "
                "(pass missing_ok=True to delete the others)",
                missing,
            )
        if not found:
            return 0
        doomed = list(found)
        orphans = await self._predecessors(namespace, doomed)
        if orphans:
            restored = pa.table(
                {
                    "namespace": pa.array([namespace] * len(orphans), pa.string()),
                    "id": pa.array(orphans, pa.string()),
                    "superseded_by": pa.array([None] * len(orphans), pa.string()),
                    "updated_at": pa.array([self._clock()] * len(orphans), pa.timestamp("us", tz="UTC")),
                }
            )
            await self._table.delete_and_restore(namespace, doomed, restored)
        else:
            await self._table.delete(namespace, doomed)
        return len(found)

    async def _predecessors(self, namespace: str, ids: Sequence[str]) -> list[str]:
        """Memories superseded by one of ``ids`` and not deleted with them."""
        gone = set(ids)
        everything = build_where(namespace, MemoryFilter(include_superseded=True))
        out: list[str] = []
        for start in range(0, len(ids), 1000):
            rows = await self._table.rows(
                f"{everything} AND {sql_in('superseded_by', ids[start : start + 1000])}", ["id"]
            )
            out.extend(i for i in rows.column("id").to_pylist() if i not in gone)
        return out

    async def forget(self, namespace: str) -> int:
        """Delete every memory of a namespace; returns the count."""
        count = await self._table.count_namespace(namespace)
        if count:
            await self._table.delete(namespace, None)
        return count

"""Changing stored memories: ``update``, ``supersede``, ``delete`` and ``forget``.

Arguments arrive validated by the facade, and each operation runs alone on the write queue. Every
rewrite of a stored row is conditional on the row being the one read (see ``table``); when another
process changed it in between, the operation reads again and retries, and a deleted row stays
deleted (an ``update`` of it is a :class:`NotFoundError`, never a re-insert).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from memory_retrievers.config import StoreConfig
from memory_retrievers.errors import InvalidInputError, NotFoundError, StorageError
from memory_retrievers.filters import MemoryFilter, build_where, matches, sql_in, sql_literal
from memory_retrievers.models import AddedMemory, DedupPolicy, Memory, WriteAction
from memory_retrievers.storage.context_fill import ContextFiller
from memory_retrievers.storage.duplicates import DuplicateFinder, Match
from memory_retrievers.storage.fields import INHERITED_FIELDS, WRITABLE_FIELDS, build_row
from memory_retrievers.storage.landing import (
    after_commit,
    checked_delete,
    checked_delete_and_rewrite,
    checked_link,
    checked_rewrite,
    ids_left,
)
from memory_retrievers.storage.schema import row_to_memory, rows_to_memories, search_text, to_arrow
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.storage.vectors import VectorMaker
from memory_retrievers.storage.write_plan import rewritten_duplicate
from memory_retrievers.storage.writes import Writer, added, duplicate_kind, public
from memory_retrievers.validation import content_hash, validate_record

__all__ = ["Editor"]

_ATTEMPTS = 5
_DELETE_COLUMNS = ["id", "kind", "session_id", "text", "created_at"]


def _gone(namespace: str, id_: str) -> NotFoundError:
    return NotFoundError(f"no memory {id_!r} in namespace {namespace!r}", [id_])


def _changing(what: str) -> StorageError:
    return StorageError(f"could not {what}: the memory kept changing under concurrent writers; retry")


class Editor:
    """Update, supersede and delete memories of a namespace.

    Args:
        table: The table layer.
        config: Limits for re-validated records.
        vectors: Embeds changed text, checks caller vectors.
        writer: Its :meth:`Writer.commit` writes the rows.
        duplicates: Finds the memory a superseding record duplicates.
        context: Rewrites neighbours' context when chat turns are deleted or re-worded.
        clock: The store's clock.
    """

    def __init__(
        self,
        table: MemoryTable,
        config: StoreConfig,
        vectors: VectorMaker,
        writer: Writer,
        duplicates: DuplicateFinder,
        context: ContextFiller,
        clock: Callable[[], datetime],
    ) -> None:
        self._table = table
        self._config = config
        self._vectors = vectors
        self._writer = writer
        self._duplicates = duplicates
        self._context = context
        self._clock = clock

    async def update(self, namespace: str, id_: str, fields: Mapping[str, Any]) -> Memory:
        """Change fields of one memory (the record is re-validated whole; changed text is re-embedded).

        Raises:
            NotFoundError: No such memory (or it was deleted meanwhile).
            InvalidInputError: Bad field values.
        """
        for _ in range(_ATTEMPTS):
            prior = (await self._table.rows_by_id(namespace, [id_])).get(id_)
            if prior is None:
                raise _gone(namespace, id_)
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
            # Who filled the context changes only when the caller sets it.
            row["context_auto"] = fields["context"] is None if "context" in fields else prior.get("context_auto")
            row["search_text"] = search_text(row["text"], row["context"])
            data = to_arrow([row], vector.reshape(1, -1), self._table.schema)
            neighbours = (
                [n for n in await self._context.after_change(namespace, [prior], {id_: rec["text"]}) if n["id"] != id_]
                if rec["text"] != prior["text"]
                else []
            )
            event = await checked_rewrite(self._table, data)
            if event.updated == 1:
                if neighbours:
                    # Conditional: if another process deleted this turn meanwhile, its delete rewrote
                    # these neighbours first, and this stale rewrite does not land.
                    await checked_rewrite(self._table, self._table.whole_rows(neighbours), after="update")
                return rows_to_memories(pa.Table.from_pylist([row]))[0]
        raise _changing(f"update memory {id_!r}")

    async def supersede(
        self, namespace: str, old_id: str, new: str | Mapping[str, Any], *, dedup: bool | None
    ) -> AddedMemory:
        """Write a memory that replaces ``old_id``, and link both; or link ``old_id`` to the duplicate.

        The new record (``new`` over the fields inherited from the old memory) is first compared
        with the live memories of the namespace as :meth:`Writer.write` compares an added one
        (:meth:`_duplicate` says with which). A duplicate, unless ``dedup`` is ``False`` or
        ``StoreConfig.dedup_policy`` is ``keep_both``, is what the old memory is superseded by:
        see :meth:`_onto_duplicate`, one commit. Otherwise the new memory is stored:

        Two commits, in this order: the new memory (it can never overwrite an existing id), then
        the old one's ``superseded_by``, conditional and update-only. If the second does not land
        (another process changed, superseded or deleted the old memory meanwhile), the new memory
        is taken back and the old one read again. A single merge would be one commit, but on a
        concurrent delete it would insert the old memory back. A crash between the two commits
        leaves both memories live, linked one way (``supersedes``): nothing lost, nothing
        deleted brought back.

        Raises:
            NotFoundError: ``old_id`` does not exist (or was deleted meanwhile).
            InvalidInputError: ``old_id`` is already superseded (by a memory the new record does not
                duplicate), or the new record is invalid.
        """
        fields: dict[str, Any] = {"text": new} if isinstance(new, str) else dict(new)
        keep_both = self._config.dedup_policy is DedupPolicy.KEEP_BOTH
        for _ in range(_ATTEMPTS):
            old = (await self._table.rows_by_id(namespace, [old_id])).get(old_id)
            if old is None:
                raise _gone(namespace, old_id)
            inherited = {k: old[k] for k in INHERITED_FIELDS}
            inherited["metadata"] = json.loads(old["metadata"])
            rec = validate_record({**inherited, **fields, "supersedes": old_id, "namespace": namespace}, self._config)
            if rec.get("id") == old_id:
                raise InvalidInputError("the new memory needs an id different from old_id")
            vector = await self._vectors.for_records([rec])
            chash = content_hash(rec["text"])
            hit = None if dedup is False else await self._duplicate(namespace, old, rec, chash, vector[0])
            successor = old["superseded_by"]
            if successor is not None and (hit is None or hit.of != successor or keep_both):
                raise InvalidInputError(
                    f"memory {old_id!r} is already superseded by {successor!r}; supersede that one instead"
                )
            if hit is not None and not keep_both:
                done = await self._onto_duplicate(namespace, old, rec, set(fields), hit, chash, vector[0])
                if done is not None:
                    return done
                continue  # a row changed under us: read again
            stored = await self._store_successor(namespace, old, rec, chash, vector)
            if stored is not None:
                if hit is None:
                    return added(stored, WriteAction.ADDED, None, None)
                dup = str(hit.of)
                why = f"kept beside its {duplicate_kind(hit)} {dup}"
                return added(stored, WriteAction.ADDED, dup, hit.similarity, why)
        raise _changing(f"supersede memory {old_id!r}")

    async def _store_successor(
        self, namespace: str, old: dict[str, Any], rec: dict[str, Any], chash: str, vector: np.ndarray
    ) -> Memory | None:
        """Store ``rec`` as a new memory, then link ``old`` to it (two commits, see :meth:`supersede`).

        Returns:
            The new memory, or ``None`` when the link did not land (the old memory moved on
            meanwhile): the new memory is taken back, to be read again.

        Raises:
            InvalidInputError: The record's id already exists.
        """
        now = self._clock()
        row = build_row(rec, chash, None, now)
        first = await self._writer.commit([row], vector, upsert=True)  # revision 0: lands only as a new id
        if first.inserted != 1:
            raise InvalidInputError(f"id {row['id']!r} already exists; omit id to generate one")
        old_row = {**old, "superseded_by": row["id"], "updated_at": now}
        second = await checked_link(self._table, old["id"], row["id"], self._table.whole_rows([old_row]))
        if second.updated != 1:
            await checked_delete(self._table, namespace, [row["id"]])  # the old memory moved on: take ours back
            return None
        # A turn of a session: its context, and its neighbours', as if it had been written there.
        around = await self._context.after_change(namespace, [row], {})
        if around:
            await checked_rewrite(self._table, self._table.whole_rows(around), after="supersede")
            await self._context.settle(namespace, [row])
            row["context"] = next((r["context"] for r in around if r["id"] == row["id"]), row["context"])
        return rows_to_memories(pa.Table.from_pylist([public(row)]))[0]

    async def _duplicate(
        self, namespace: str, old: dict[str, Any], rec: dict[str, Any], chash: str, vector: np.ndarray
    ) -> Match | None:
        """The live memory a superseding record duplicates, by the rules and settings of ``add``.

        Exempt kinds and a store without detection have none. Which memories are compared:

        - a record naming an ``id``: the memory of that id only (``add`` never compares such a
          record; here it finds the memory a repeated or interrupted supersede already wrote);
        - else, when the old memory is already superseded: its successor only (a repeat);
        - else the old memory itself first (superseding a memory by its own text), then every live
          memory of the namespace, as ``add`` does.
        """
        if not self._duplicates.enabled or self._duplicates.exempt(rec):
            return None
        named = rec.get("id") or old["superseded_by"]
        if named is None:
            own = self._live_match(old, rec, chash, vector)
            return own if own is not None else await self._duplicates.find(namespace, rec, chash, vector)
        row = (await self._table.rows_by_id(namespace, [named])).get(named)
        return None if row is None else self._live_match(row, rec, chash, vector)

    def _live_match(self, row: dict[str, Any], rec: dict[str, Any], chash: str, vector: np.ndarray) -> Match | None:
        """``rec``'s match with a stored row that readers still see (the stored side of dedup sees no other)."""
        visible = matches(row_to_memory(row), MemoryFilter(live_at=self._clock()))
        return self._duplicates.compare(row, rec, chash, vector) if visible else None

    async def _onto_duplicate(
        self,
        namespace: str,
        old: dict[str, Any],
        rec: dict[str, Any],
        given: set[str],
        hit: Match,
        chash: str,
        vector: np.ndarray,
    ) -> AddedMemory | None:
        """Supersede ``old`` by the memory the new record duplicates; nothing new is stored.

        The duplicate takes the record as a duplicate ``add`` would (``dedup_policy``): ``skip``
        merges the record's annotations into it (action ``updated`` if any were new, else
        ``skipped``); ``update`` rewrites it with the fields ``new`` set (action ``updated``). Its
        own ``supersedes`` is left as it is. The old memory gets ``superseded_by`` the duplicate,
        unless it is the duplicate (superseded by its own text: it stays live) or already links to it
        (a repeat). The changed rows are one conditional commit; nothing changed, no commit.

        Returns:
            The result, or ``None`` when a row changed or vanished meanwhile (read again). A link to
            a duplicate that another process deleted meanwhile is taken back first, so the old
            memory is never left pointing at nothing.
        """
        dup_id = str(hit.of)
        target = old if dup_id == old["id"] else (await self._table.rows_by_id(namespace, [dup_id])).get(dup_id)
        if target is None:
            return None
        now = self._clock()
        merged, changed = rewritten_duplicate(target, rec, given, (chash, vector), now, self._config.dedup_policy)
        link = dup_id not in (old["id"], old["superseded_by"])
        rows = [{**old, "superseded_by": dup_id, "updated_at": now}] if link else []
        if changed:
            rows.append(merged)
        if rows:
            event = await checked_rewrite(self._table, self._table.whole_rows(rows))
            if link and not await self._link_holds(namespace, old["id"], dup_id):
                return None
            if event.updated != len(rows):
                return None
        why = f"{duplicate_kind(hit)} {dup_id}"
        if dup_id == old["id"]:
            why += "; it is the memory to supersede, which stays live"
        elif link:
            why += f"; memory {old['id']} is superseded by it"
        else:
            why += f", which already supersedes memory {old['id']}"
        if changed:
            policy = self._config.dedup_policy
            why += (
                "; rewritten (dedup_policy=update)"
                if policy is DedupPolicy.UPDATE
                else "; merged into it: " + ", ".join(changed)
            )
        final = merged if changed else target
        mem = row_to_memory({k: v for k, v in final.items() if k != "vector"})
        return added(mem, WriteAction.UPDATED if changed else WriteAction.SKIPPED, dup_id, hit.similarity, why)

    async def _link_holds(self, namespace: str, old_id: str, dup_id: str) -> bool:
        """After a link to ``dup_id`` was committed: whether it points at a memory that still exists.

        Another process may delete the duplicate between our read and our commit; its delete made
        live again what pointed at it then, not our link. Whichever of the two checks later sees
        the other's commit: if the duplicate is gone, the link is taken back (conditionally).
        """
        await self._table.refresh()
        now_rows = await self._table.rows_by_id(namespace, [old_id, dup_id])
        linked = now_rows.get(old_id)
        if linked is None or linked["superseded_by"] != dup_id or dup_id in now_rows:
            return True
        unlinked = {**linked, "superseded_by": None, "updated_at": self._clock()}
        await checked_rewrite(self._table, self._table.whole_rows([unlinked]))
        return False

    async def delete(self, namespace: str, ids: Sequence[str], *, missing_ok: bool, only: str | None = None) -> int:
        """Delete memories by id, all or nothing unless ``missing_ok``; returns how many were deleted.

        In the same commit: a memory that a deleted one had superseded becomes live again (its
        ``superseded_by`` would otherwise point at nothing and hide it for good), and chat turns
        next to a deleted turn get a context without its words. Rows not satisfying ``only`` (a SQL
        predicate, checked when read and when deleted) are kept and count as missing.

        Raises:
            NotFoundError: Some ids do not exist (and not ``missing_ok``); nothing is deleted.
        """
        found = await self._table.rows_by_id(namespace, ids, columns=_DELETE_COLUMNS, only=only)
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
        gone: dict[str, str | None] = dict.fromkeys(doomed)
        for _ in range(_ATTEMPTS):
            rewrites = {r["id"]: r for r in await self._context.after_change(namespace, list(found.values()), gone)}
            now = self._clock()
            for row in await self._orphan_restores(namespace, doomed):
                rewrites[row["id"]] = {**rewrites.get(row["id"], row), "superseded_by": None, "updated_at": now}
            if not rewrites:
                await checked_delete(self._table, namespace, doomed, only=only)
                await after_commit(lambda: self._sweep(namespace, list(found.values()), gone), "delete")
                return len(found)
            event = await checked_delete_and_rewrite(
                self._table, namespace, doomed, self._table.whole_rows(list(rewrites.values())), only=only
            )
            doomed_left = await ids_left(self._table, namespace, doomed, only)
            if event.updated == len(rewrites) or (
                not doomed_left and not await self._orphan_restores(namespace, doomed)
            ):  # the deletes landed (context rewrites that met a concurrent change are swept below)
                await after_commit(lambda: self._sweep(namespace, list(found.values()), gone), "delete")
                return len(found)
        raise _changing(f"delete {len(doomed)} memor{'y' if len(doomed) == 1 else 'ies'}")

    async def _sweep(self, namespace: str, deleted: list[dict[str, Any]], gone: dict[str, str | None]) -> None:
        """After a delete, take the deleted words out of turns another process wrote meanwhile.

        Such a turn's context was made from turns read before this delete. With the writer's own
        check after its commit (``ContextFiller.scrub_vanished``) this closes the window:
        whichever of the two runs later sees the other's commit.
        """
        await self._table.refresh()
        rewrites = await self._context.after_change(namespace, deleted, gone)
        if rewrites:
            await checked_rewrite(self._table, self._table.whole_rows(rewrites))

    async def _orphan_restores(self, namespace: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Stored rows superseded by one of ``ids`` and not deleted with them (to be made live again)."""
        gone = set(ids)
        everything = build_where(namespace, MemoryFilter(include_superseded=True))
        out: list[dict[str, Any]] = []
        for start in range(0, len(ids), 1000):
            where = f"{everything} AND {sql_in('superseded_by', ids[start : start + 1000])}"
            rows = await self._table.rows(where, self._table.schema.names)
            out.extend(r for r in rows.to_pylist() if r["id"] not in gone)
        return out

    async def expire(self, namespace: str | None, now: datetime) -> int:
        """Delete the memories expired at ``now`` (of one namespace, or all); returns how many.

        Each delete requires the row to be expired still: one refreshed since (by another process) stays.
        """
        expired = f"expires_at <= {sql_literal(now)}"
        where = expired if namespace is None else f"namespace = {sql_literal(namespace)} AND ({expired})"
        by_namespace: dict[str, list[str]] = {}
        for row in (await self._table.rows(where, ["id", "namespace"])).to_pylist():
            by_namespace.setdefault(row["namespace"], []).append(row["id"])
        return sum([await self.delete(ns, ids, missing_ok=True, only=expired) for ns, ids in by_namespace.items()])

    async def forget(self, namespace: str) -> int:
        """Delete every memory of a namespace; returns the count."""
        count = await self._table.count_namespace(namespace)
        if count:
            await checked_delete(self._table, namespace, None)
        return count

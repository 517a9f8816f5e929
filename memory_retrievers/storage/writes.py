"""Writing validated records: embed, detect duplicates, resolve upserts, fill context, commit.

Every write of the store ends in :meth:`Writer.commit`, the one place rows become Arrow data
(``search_text`` is derived there). The write queue hands the writer a *group* of batches (several
callers' records) that becomes one embedding call and one commit.

Commits are conditional (see ``table``): a record whose row another process changed between our
read and our commit does not land; it is resolved again from a fresh read (a few times at most).
Chat turns extend the context of the turns before them in a second, update-only commit, so a
turn deleted meanwhile is never written back.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from memory_retrievers.config import StoreConfig
from memory_retrievers.errors import StorageError
from memory_retrievers.models import AddedMemory, DedupPolicy, WriteAction
from memory_retrievers.storage.context_fill import ContextFiller
from memory_retrievers.storage.duplicates import DuplicateFinder, Match
from memory_retrievers.storage.landing import landed_anyway, not_landed, not_landed_after_commit, unlanded
from memory_retrievers.storage.outcomes import Outcome, added, duplicate_kind, public, results
from memory_retrievers.storage.pending import batch_vectors
from memory_retrievers.storage.queue import Abandoned, AddBatch
from memory_retrievers.storage.schema import search_text, to_arrow
from memory_retrievers.storage.search import Searcher
from memory_retrievers.storage.table import CommitEvent, MemoryTable
from memory_retrievers.storage.vectors import VectorMaker
from memory_retrievers.storage.write_plan import (
    NEW_ID,
    Key,
    PendingRecord,
    PendingRow,
    Plan,
    Planning,
    Progress,
    absorbed,
    by_namespace,
    kept,
    record_vectors,
    refuse_superseded,
    stacked,
)

__all__ = ["PendingRecord", "PendingRow", "Writer", "added", "duplicate_kind", "public", "record_vectors"]

logger = logging.getLogger(__name__)

#: Attempts at landing a record whose row another process changed between our read and commit.
_ATTEMPTS = 5


class Writer:
    """The store's write path.

    Args:
        table: The table layer.
        config: Dedup policy and limits.
        vectors: Embeds records that come without a vector.
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

    async def write_group(
        self, batches: list[AddBatch], proceed: Callable[[], bool]
    ) -> list[list[AddedMemory] | StorageError]:
        """Write several callers' batches as one: one embedding pass, one commit; results per batch.

        A batch whose records all landed gets its results even when another batch's did not: that
        one gets the error instead (whatever committed is never reported as failed, or redone).
        """
        recs = [r for b in batches for r in b.records]
        offsets = [b.first_index + i for b in batches for i in range(len(b.records))]
        # Embedded once: a recall reading queued batches may have started it (see pending.py).
        vectors = np.concatenate(await batch_vectors(self._vectors, batches))
        done = await self._attempts(
            recs, dedup=batches[0].dedup, offsets=offsets, proceed=proceed, replacing=None, vectors=vectors
        )
        out: list[list[AddedMemory] | StorageError] = []
        start = 0
        for b in batches:
            mine = done.outcomes[start : start + len(b.records)]
            start += len(b.records)
            landed = [o for o in mine if o is not None]
            out.append(
                await results(landed, done.landed, done.seen, self._searcher)
                if len(landed) == len(mine)
                else unlanded(len(mine) - len(landed))
            )
        return out

    async def write(
        self,
        recs: list[dict[str, Any]],
        *,
        dedup: bool | None,
        offsets: Sequence[int] | None = None,
        proceed: Callable[[], bool] = lambda: True,
        replacing: tuple[str, Sequence[str]] | None = None,
    ) -> list[AddedMemory]:
        """Write validated records; one result per record, in order.

        ``replacing=(namespace, ids)`` deletes those memories in the same commit: the records take
        their place (a chat session replaced whole), their context made from the records alone.

        Raises:
            Abandoned: ``proceed`` said no before the commit (nothing was written).
            StorageError: A record could not land after several fresh reads, or the store failed
                before the commit (nothing was written), or a commit's outcome could not be read back.
        """
        if not recs:
            return []
        done = await self._attempts(recs, dedup=dedup, offsets=offsets, proceed=proceed, replacing=replacing)
        landed = [o for o in done.outcomes if o is not None]
        if len(landed) < len(done.outcomes):
            raise unlanded(len(done.outcomes) - len(landed))
        return await results(landed, done.landed, done.seen, self._searcher)

    async def _attempts(
        self,
        recs: list[dict[str, Any]],
        *,
        dedup: bool | None,
        offsets: Sequence[int] | None,
        proceed: Callable[[], bool],
        replacing: tuple[str, Sequence[str]] | None,
        vectors: np.ndarray | None = None,
    ) -> Progress:
        """Plan and commit until every record landed (or attempts run out)."""
        offsets = list(offsets) if offsets is not None else list(range(len(recs)))
        if vectors is None:
            vectors = await record_vectors(self._vectors, recs)  # once for every attempt
        pending = [PendingRecord.of(r, v, o) for r, v, o in zip(recs, vectors, offsets, strict=True)]
        progress = Progress([None] * len(recs))
        isolated = replacing is not None
        for attempt in range(_ATTEMPTS):
            todo = progress.todo()
            plan = await self._attempt_plan([pending[i] for i in todo], dedup, isolated, progress.committed)
            if not progress.committed and not proceed():  # once part landed, the rest follows whoever waits
                raise Abandoned
            failed: set[Key] = set()
            if plan.rows:
                failed, replacing = await self._commit_plan(plan, replacing)
                progress.committed = True
            new_turns = progress.note(todo, plan, failed)
            await self._after_commit(plan, new_turns)
            if not progress.todo():
                break
            logger.info(
                "memory-retrievers: %d record(s) met a concurrent write; reading again (%d)",
                len(progress.todo()),
                attempt + 1,
            )
        return progress

    async def _attempt_plan(
        self, recs: list[PendingRecord], dedup: bool | None, isolated: bool, committed: bool
    ) -> Plan:
        """:meth:`_plan`; an error after part of the write committed says so (the queue must not redo it)."""
        try:
            return await self._plan(recs, dedup, isolated=isolated)
        except Exception as exc:
            if committed:  # part of the write landed: the queue must not redo its batches alone
                with contextlib.suppress(AttributeError):
                    exc.after_commit = True  # type: ignore[attr-defined]
            raise

    async def _commit_plan(
        self, plan: Plan, replacing: tuple[str, Sequence[str]] | None
    ) -> tuple[set[Key], tuple[str, Sequence[str]] | None]:
        """Commit a plan's rows; the keys that did not land, and what a retry still replaces."""
        rows = [p.row for p in plan.rows.values()]
        vectors = np.stack([p.vector for p in plan.rows.values()])
        if replacing is not None:
            event = await self._table.replace_rows(replacing[0], replacing[1], self.arrow(rows, vectors))
            replacing = (replacing[0], [])  # a retry inserts what did not land: the deletes are done
        else:
            event = await self.commit(rows, vectors, upsert=plan.rewrites)
        if event.landed is not None and event.landed < len(rows):
            return await not_landed_after_commit(self._table, rows, event), replacing
        return set(), replacing

    async def _after_commit(self, plan: Plan, new_turns: list[dict[str, Any]]) -> None:
        """Context upkeep after a commit: best effort, never a failure of the write that landed.

        Raising here once made the queue redo every batch of a group alone, storing chat turns twice
        (issue 27 items 6 and 17); the turns are stored, and their neighbours' context is a search aid.
        """
        try:
            await self._context.refresh(plan.refresh)
            # The words of the turns used, and of the new turns put into earlier turns' context: any
            # of them deleted meanwhile by another process is taken back out.
            await self._context.scrub_vanished([*plan.used, *new_turns])
        except Exception:
            logger.warning(
                "memory-retrievers: the context of neighbouring chat turns could not be brought up to date after a "
                "write (it is stored); the next write or optimize() of the session does it",
                exc_info=True,
            )

    async def _plan(self, recs: list[PendingRecord], dedup: bool | None, *, isolated: bool = False) -> Plan:
        """Decide, from a fresh read, what each record becomes (``isolated``: context from the records alone)."""
        by_ns = by_namespace(recs)
        state = Planning(recs, await self._existing(recs, by_ns), self._clock())
        dup_of = (
            await self._duplicates.detect(
                [r.fields for r in recs], [r.content_hash for r in recs], stacked(recs), by_ns
            )
            if self._duplicates.enabled and dedup is not False
            else [None] * len(recs)
        )
        last_with_id = {(r.namespace, r.id): i for i, r in enumerate(recs) if r.id is not None}
        outcomes: list[Outcome] = []
        for i, rec in enumerate(recs):
            if rec.id is not None and last_with_id[(rec.namespace, rec.id)] != i:
                state.target[i] = rec.id
                why = "a later record of this batch writes this id"
                outcomes.append(Outcome((rec.namespace, rec.id), WriteAction.SKIPPED, None, None, why))
                continue
            if rec.id is not None:
                refuse_superseded(state.existing.get((rec.namespace, rec.id)), rec.id)
            hit = dup_of[i]
            if hit is None or self._config.dedup_policy is DedupPolicy.KEEP_BOTH:
                outcomes.append(kept(state, i, hit))
            else:
                outcomes.append(await self._onto_duplicate(state, i, hit))
        refresh, used = await self._filled(state.rows, isolated)
        # Caller ids may collide with rows another process is creating: those commits are merges.
        rewrites = bool(state.existing) or any(r.id is not None for r in recs)
        return Plan(state.rows, outcomes, refresh, used, rewrites, state.seen)

    async def _existing(self, recs: list[PendingRecord], by_ns: dict[str, list[int]]) -> dict[Key, dict[str, Any]]:
        """Rows that caller ids will replace (upsert), fetched whole so their history survives."""
        existing: dict[Key, dict[str, Any]] = {}
        for ns, idx in by_ns.items():
            ids = [i for i in (recs[j].id for j in idx) if i is not None]
            for id_, row in (await self._table.rows_by_id(ns, ids)).items():
                existing[(ns, id_)] = row
        return existing

    async def _onto_duplicate(self, state: Planning, i: int, hit: Match) -> Outcome:
        """A duplicate record: merged into the memory it duplicates, or rewriting it.

        ``dedup_policy=skip`` merges its annotations into that memory; ``update`` rewrites it,
        replacing only the fields the caller set.
        """
        rec = state.recs[i]
        dup_id = state.target[hit.of] if isinstance(hit.of, int) else hit.of
        state.target[i] = dup_id
        key = (rec.namespace, dup_id)
        if key not in state.rows and key not in state.existing:
            got = (await self._table.rows_by_id(rec.namespace, [dup_id])).get(dup_id)
            if got is not None:
                state.existing[key] = got
        base = state.base(key)
        if base is None:  # deleted since it was found: store the record after all
            state.target[i] = rec.id or rec.fields.get(NEW_ID) or uuid.uuid4().hex
            state.add(rec, rec.fields, state.target[i])
            return Outcome((rec.namespace, state.target[i]), WriteAction.ADDED, None, None, None)
        update = self._config.dedup_policy is DedupPolicy.UPDATE
        merged, changed = absorbed(base[0], rec, update=update)
        why = f"{duplicate_kind(hit)} {dup_id}"
        if not changed:
            if key in state.existing:  # reported as read: a delete after this write is not its failure
                state.seen[key] = state.existing[key]
            return Outcome(key, WriteAction.SKIPPED, dup_id, hit.similarity, why)
        # A new row of this batch stays a new row; a stored one is rewritten from its stored revision.
        prior = state.prior(key) if key in state.existing else None
        row_vector = rec.vector if update else base[1]  # the text stays: so does its vector
        chash = rec.content_hash if update else base[0]["content_hash"]
        row = state.add(rec, merged, dup_id, prior=prior, chash=chash, vector=row_vector).row
        if "context" not in rec.given or not update:
            row["context_auto"] = base[0].get("context_auto")  # the context stays whoever filled it
        row["created_at"] = base[0]["created_at"]
        what = "rewritten (dedup_policy=update)" if update else "merged into it: " + ", ".join(changed)
        action = WriteAction.UPDATED if key in state.existing or update else WriteAction.SKIPPED
        return Outcome(key, action, dup_id, hit.similarity, f"{why}; {what}")

    async def _filled(
        self, rows: dict[Key, PendingRow], isolated: bool
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Fill the planned chat turns' context (in place); the stored turns to refresh, and those used."""
        # The filler reads which rows it fills from their ``_auto_context`` mark: given on a copy.
        marked = [{**p.row, "_auto_context": p.auto_context} for p in rows.values()]
        filled = await self._context.fill(marked, isolated=isolated)
        for pending, row in zip(rows.values(), marked, strict=True):
            pending.row["context"] = row["context"]
        return filled.refresh, filled.used

    async def not_landed(self, rows: list[dict[str, Any]], event: CommitEvent | None = None) -> set[tuple[str, str]]:
        """The rows of a conditional commit that another writer's change kept out (see :mod:`.landing`)."""
        return await not_landed(self._table, rows, event)

    async def commit(
        self,
        rows: Sequence[dict[str, Any]],
        vectors: np.ndarray,
        *,
        extra: Sequence[dict[str, Any]] = (),
        upsert: bool,
    ) -> CommitEvent:
        """Write rows (and whole stored rows, with their vectors, in ``extra``) in exactly one commit.

        ``upsert`` makes it a conditional merge (see :meth:`MemoryTable.upsert`); otherwise a plain
        append of new rows.
        """
        rows = list(rows)
        if extra:
            extra_vectors = np.asarray([r["vector"] for r in extra], dtype=np.float32)
            rows += [{k: v for k, v in r.items() if k != "vector"} for r in extra]
            vectors = np.concatenate([vectors.reshape(-1, self._vectors.dimension), extra_vectors])
        data = self.arrow(rows, vectors)
        try:
            return await (self._table.upsert(data) if upsert else self._table.add(data))
        except StorageError as exc:
            return await landed_anyway(self._table, data, exc, upsert=upsert)

    def arrow(self, rows: Sequence[dict[str, Any]], vectors: np.ndarray) -> pa.Table:
        """Rows (and their vectors) as the data of a commit; ``search_text`` is derived here."""
        clean = [public(r) for r in rows]
        for row in clean:  # derived here, the one place every write passes through
            row["search_text"] = search_text(row["text"], row["context"])
        return to_arrow(clean, vectors, self._table.schema)

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
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ..config import StoreConfig
from ..errors import InvalidInputError, StorageError
from ..fields import build_row, merge_annotations, stored_record
from ..models import AddedMemory, DedupPolicy, WriteAction
from ..schema import search_text, to_arrow
from ..validation import content_hash
from .context_fill import ContextFiller
from .duplicates import DuplicateFinder
from .landing import landed_anyway, not_landed, not_landed_after_commit, unlanded
from .outcomes import Outcome, added, duplicate_kind, public, results
from .queue import Abandoned, AddBatch
from .search import Searcher
from .table import CommitEvent, MemoryTable
from .vectors import VectorMaker

__all__ = ["Writer", "added", "duplicate_kind", "public"]

logger = logging.getLogger(__name__)

#: Attempts at landing a record whose row another process changed between our read and commit.
_ATTEMPTS = 5


class _Plan(NamedTuple):
    """One attempt at a set of records: the rows to commit and each record's outcome."""

    rows: dict[tuple[str, str], dict[str, Any]]  # key -> row; the last record for a key wins
    outcomes: list[Outcome]
    refresh: list[dict[str, Any]]  # stored turns whose context the new turns extend
    used: list[dict[str, Any]]  # stored turns the new turns' contexts were made from
    rewrites: bool  # whether any row replaces a stored one (or may collide with one)
    seen: dict[tuple[str, str], dict[str, Any]]  # stored rows that skipped records point at, as read


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

    async def write_group(
        self, batches: list[AddBatch], proceed: Callable[[], bool]
    ) -> list[list[AddedMemory] | StorageError]:
        """Write several callers' batches as one: one embedding pass, one commit; results per batch.

        A batch whose records all landed gets its results even when another batch's did not: that
        one gets the error instead (whatever committed is never reported as failed, or redone).
        """
        recs = [r for b in batches for r in b.records]
        offsets = [b.first_index + i for b in batches for i in range(len(b.records))]
        outcomes, landed, seen = await self._attempts(
            recs, dedup=batches[0].dedup, offsets=offsets, proceed=proceed, replacing=None
        )
        out: list[list[AddedMemory] | StorageError] = []
        start = 0
        for b in batches:
            mine = outcomes[start : start + len(b.records)]
            start += len(b.records)
            done = [o for o in mine if o is not None]
            out.append(
                await results(done, landed, seen, self._searcher)
                if len(done) == len(mine)
                else unlanded(len(mine) - len(done))
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
        outcomes, landed, seen = await self._attempts(
            recs, dedup=dedup, offsets=offsets, proceed=proceed, replacing=replacing
        )
        done = [o for o in outcomes if o is not None]
        if len(done) < len(outcomes):
            raise unlanded(len(outcomes) - len(done))
        return await results(done, landed, seen, self._searcher)

    async def _attempts(
        self,
        recs: list[dict[str, Any]],
        *,
        dedup: bool | None,
        offsets: Sequence[int] | None,
        proceed: Callable[[], bool],
        replacing: tuple[str, Sequence[str]] | None,
    ) -> tuple[list[Outcome | None], dict[tuple[str, str], dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
        """Plan and commit until every record landed (or attempts run out): outcomes (``None``: not landed)."""
        offsets = list(offsets) if offsets is not None else list(range(len(recs)))
        vectors = await self._vectors.for_records(recs)
        hashes = [content_hash(r["text"]) for r in recs]
        outcomes: list[Outcome | None] = [None] * len(recs)
        landed: dict[tuple[str, str], dict[str, Any]] = {}
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        todo = list(range(len(recs)))
        committed = False
        for attempt in range(_ATTEMPTS):
            sub = [recs[i] for i in todo]
            isolated = replacing is not None
            try:
                plan = await self._plan(
                    sub, [hashes[i] for i in todo], vectors[todo], [offsets[i] for i in todo], dedup, isolated=isolated
                )
            except Exception as exc:
                if committed:  # part of the write landed: the queue must not redo its batches alone
                    with contextlib.suppress(AttributeError):
                        exc.after_commit = True  # type: ignore[attr-defined]
                raise
            if not committed and not proceed():  # once part landed, the rest follows whoever waits
                raise Abandoned
            failed_keys: set[tuple[str, str]] = set()
            if plan.rows:
                rows = list(plan.rows.values())
                picked = np.stack(
                    [
                        np.asarray(r["_stored_vector"], dtype=np.float32)
                        if r.get("_vector") is None
                        else vectors[todo[r["_vector"]]]
                        for r in rows
                    ]
                )
                if replacing is not None:
                    data = self.arrow(rows, picked)
                    event = await self._table.replace_rows(replacing[0], replacing[1], data)
                    replacing = (replacing[0], [])  # a retry inserts what did not land: the deletes are done
                else:
                    event = await self.commit(rows, picked, upsert=plan.rewrites)
                committed = True
                if event.landed is not None and event.landed < len(rows):
                    failed_keys = await not_landed_after_commit(self._table, rows, event)
            for j, i in enumerate(todo):
                if plan.outcomes[j].key not in failed_keys:
                    outcomes[i] = plan.outcomes[j]
            landed.update({k: r for k, r in plan.rows.items() if k not in failed_keys})
            seen.update(plan.seen)
            new_turns = [r for k, r in plan.rows.items() if k not in failed_keys]
            await self._after_commit(plan, new_turns)
            todo = [i for i, o in enumerate(outcomes) if o is None]
            if not todo:
                break
            logger.info(
                "memory-retrievers: %d record(s) met a concurrent write; reading again (%d)", len(todo), attempt + 1
            )
        return outcomes, landed, seen

    async def _after_commit(self, plan: _Plan, new_turns: list[dict[str, Any]]) -> None:
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

    async def _plan(
        self,
        recs: list[dict[str, Any]],
        hashes: list[str],
        vectors: np.ndarray,
        offsets: list[int],
        dedup: bool | None,
        *,
        isolated: bool = False,
    ) -> _Plan:
        """Decide, from a fresh read, what each record becomes (``isolated``: context from the records alone)."""
        now = self._clock()
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
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        target: list[str] = [""] * len(recs)
        outcomes: list[Outcome] = []
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for i, r in enumerate(recs):
            ns = r["namespace"]
            if r.get("id") is not None and last_with_id[(ns, r["id"])] != i:
                target[i] = r["id"]
                why = "a later record of this batch writes this id"
                outcomes.append(Outcome((ns, r["id"]), WriteAction.SKIPPED, None, None, why))
                continue
            stored = existing.get((ns, r["id"])) if r.get("id") is not None else None
            if stored is not None and stored["superseded_by"] is not None:
                raise InvalidInputError(
                    f"memory {r['id']!r} was superseded by {stored['superseded_by']!r}: writing it would change a "
                    "memory that recall no longer shows; write to the newer one, or use a new id"
                )
            hit = dup_of[i]
            if hit is None or policy is DedupPolicy.KEEP_BOTH:
                target[i] = r.get("id") or uuid.uuid4().hex
                key = (ns, target[i])
                prior = existing.get(key) or rows.get(key)
                if key in rows and key in existing:  # still one rewrite of the stored row
                    prior = {**rows[key], "revision": existing[key]["revision"]}
                rows[key] = self._row(r, hashes[i], prior, now, offsets[i], target[i], i)
                action = WriteAction.UPDATED if prior is not None else WriteAction.ADDED
                if hit is not None:
                    dup = target[hit.of] if isinstance(hit.of, int) else hit.of
                    outcomes.append(
                        Outcome(key, action, dup, hit.similarity, f"kept beside its {duplicate_kind(hit)} {dup}")
                    )
                else:
                    replaced = "an existing memory with this id was replaced" if prior is not None else None
                    outcomes.append(Outcome(key, action, None, None, replaced))
                continue
            # A duplicate: its annotations merged into the memory it duplicates (skip), or it
            # rewrites that memory (update), replacing only the fields the caller set.
            dup_id = target[hit.of] if isinstance(hit.of, int) else hit.of
            target[i] = dup_id
            key = (ns, dup_id)
            if key not in rows and key not in existing:
                got = (await self._table.rows_by_id(ns, [dup_id])).get(dup_id)
                if got is not None:
                    existing[key] = got
            base = rows.get(key) or existing.get(key)
            if base is None:  # deleted since it was found: store the record after all
                target[i] = r.get("id") or uuid.uuid4().hex
                key = (ns, target[i])
                rows[key] = self._row(r, hashes[i], None, now, offsets[i], target[i], i)
                outcomes.append(Outcome(key, WriteAction.ADDED, None, None, None))
                continue
            kept = stored_record(base)
            vector_of: int | None
            if policy is DedupPolicy.UPDATE:
                merged = {**kept, **{k: r[k] for k in r["_given"] if k in r and k != "namespace"}}
                changed, chash, vector_of = ["text"], hashes[i], i
            else:
                merged, changed = merge_annotations(kept, r)
                chash, vector_of = base["content_hash"], base.get("_vector")
            why = f"{duplicate_kind(hit)} {dup_id}"
            if not changed:
                if key in existing:  # reported as read: a delete after this write is not its failure
                    seen[key] = existing[key]
                outcomes.append(Outcome(key, WriteAction.SKIPPED, dup_id, hit.similarity, why))
                continue
            prior = base if key not in rows or key not in existing else {**base, "revision": existing[key]["revision"]}
            if key in rows and key not in existing:
                prior = None  # a new row of this batch: still a new row
            row = self._row(merged, chash, prior, now, offsets[i], dup_id, vector_of)
            if "context" not in r["_given"] or policy is not DedupPolicy.UPDATE:
                row["context_auto"] = base.get("context_auto")  # the context stays whoever filled it
            if row["_vector"] is None:  # the text stays: so does its vector
                row["_stored_vector"] = base.get("_stored_vector", base.get("vector"))
            row["created_at"] = base["created_at"]
            rows[key] = row
            what = (
                "rewritten (dedup_policy=update)"
                if policy is DedupPolicy.UPDATE
                else "merged into it: " + ", ".join(changed)
            )
            action = WriteAction.UPDATED if key in existing or policy is DedupPolicy.UPDATE else WriteAction.SKIPPED
            outcomes.append(Outcome(key, action, dup_id, hit.similarity, f"{why}; {what}"))
        filled = await self._context.fill(list(rows.values()), isolated=isolated)
        # Caller ids may collide with rows another process is creating: those commits are merges.
        rewrites = bool(existing) or any(r.get("id") is not None for r in recs)
        return _Plan(rows, outcomes, filled.refresh, filled.used, rewrites, seen)

    @staticmethod
    def _row(
        rec: dict[str, Any],
        chash: str,
        prior: dict[str, Any] | None,
        now: datetime,
        offset: int,
        row_id: str,
        vector_of: int | None,
    ) -> dict[str, Any]:
        """A row for ``rec``, remembering which record's vector it takes (``None``: the stored one)."""
        row = build_row(rec, chash, prior, now, offset_us=offset, row_id=row_id)
        row["_auto_context"] = rec.get("context") is None
        row["_vector"] = vector_of
        return row

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

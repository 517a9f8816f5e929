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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from .duplicates import DuplicateFinder, Match
from .landing import landed_anyway, not_landed, not_landed_after_commit, unlanded
from .outcomes import Outcome, added, duplicate_kind, public, results
from .queue import Abandoned, AddBatch
from .search import Searcher
from .table import CommitEvent, MemoryTable
from .vectors import VectorMaker

__all__ = ["PendingRecord", "PendingRow", "Writer", "added", "duplicate_kind", "public", "record_vectors"]

logger = logging.getLogger(__name__)

#: Attempts at landing a record whose row another process changed between our read and commit.
_ATTEMPTS = 5

Key = tuple[str, str]


async def record_vectors(maker: VectorMaker, recs: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """One unit vector per record: a caller's as it was checked where it entered, the others embedded now.

    A caller's vector is checked once, where it enters the store (``MemoryStore`` validates every
    record with :meth:`VectorMaker.given` before anything is queued); an embedding is checked once,
    as it leaves the embedder (:meth:`VectorMaker.embed`). Nothing downstream checks either again.

    Raises:
        EmbeddingError: The embedder failed.
    """
    out = np.empty((len(recs), maker.dimension), dtype=np.float32)
    need = [i for i, r in enumerate(recs) if r.get("vector") is None]
    for i, r in enumerate(recs):
        if r.get("vector") is not None:
            out[i] = r["vector"]
    if need:
        out[need] = await maker.embed([recs[i]["text"] for i in need])
    return out


@dataclass(frozen=True, slots=True)
class PendingRecord:
    """A validated record on its way into the table, with everything a write attempt reads of it.

    Attributes:
        fields: The record's fields (as ``validate_record`` gives them, without ``vector``).
        vector: Its unit vector: the caller's (checked where it entered) or its embedding.
        content_hash: Its text's duplicate key.
        offset: Its position in the caller's write (microseconds added to ``created_at``).
        given: The fields the caller set (a duplicate under ``dedup_policy=update`` replaces only those).
    """

    fields: dict[str, Any]
    vector: np.ndarray
    content_hash: str
    offset: int
    given: frozenset[str]

    @classmethod
    def of(cls, rec: Mapping[str, Any], vector: np.ndarray, offset: int) -> PendingRecord:
        """A validated record (``validate_record``'s dict) with its vector and position."""
        fields = {k: v for k, v in rec.items() if k not in ("vector", "_given")}
        given = frozenset(rec["_given"]) if "_given" in rec else frozenset(fields)
        return cls(fields, vector, content_hash(rec["text"]), offset, given)

    @property
    def namespace(self) -> str:
        """The namespace it is written to."""
        ns: str = self.fields["namespace"]
        return ns

    @property
    def id(self) -> str | None:
        """The caller's id (an upsert), or ``None``."""
        return self.fields.get("id")


@dataclass(frozen=True, slots=True)
class PendingRow:
    """A row a write will commit, with the vector it is committed with.

    Attributes:
        row: Every column but ``vector`` and ``search_text`` (derived at the commit).
        vector: The unit vector of its text: the record's, or the stored row's when the text stays.
        auto_context: Whether the store fills its ``context`` (its record gave none).
    """

    row: dict[str, Any]
    vector: np.ndarray
    auto_context: bool


class _Plan(NamedTuple):
    """One attempt at a set of records: the rows to commit and each record's outcome."""

    rows: dict[Key, PendingRow]  # key -> row; the last record for a key wins
    outcomes: list[Outcome]
    refresh: list[dict[str, Any]]  # stored turns whose context the new turns extend
    used: list[dict[str, Any]]  # stored turns the new turns' contexts were made from
    rewrites: bool  # whether any row replaces a stored one (or may collide with one)
    seen: dict[Key, dict[str, Any]]  # stored rows that skipped records point at, as read


@dataclass
class _Planning:
    """What one attempt's plan has decided so far (records are decided in order)."""

    recs: list[PendingRecord]
    existing: dict[Key, dict[str, Any]]  # stored rows read (whole, vector included)
    now: datetime
    rows: dict[Key, PendingRow] = field(default_factory=dict)
    seen: dict[Key, dict[str, Any]] = field(default_factory=dict)
    target: list[str] = field(default_factory=list)  # the id each record landed in (by index)

    def __post_init__(self) -> None:
        self.target = [""] * len(self.recs)

    def prior(self, key: Key) -> dict[str, Any] | None:
        """The row a write of ``key`` replaces: planned in this batch over the stored revision, or stored."""
        planned, stored = self.rows.get(key), self.existing.get(key)
        if planned is not None and stored is not None:  # still one rewrite of the stored row
            return {**planned.row, "revision": stored["revision"]}
        return stored if stored is not None else planned.row if planned is not None else None

    def base(self, key: Key) -> tuple[dict[str, Any], np.ndarray] | None:
        """The memory at ``key`` as a duplicate sees it (planned in this batch, else stored), with its vector."""
        planned = self.rows.get(key)
        if planned is not None:
            return planned.row, planned.vector
        stored = self.existing.get(key)
        return None if stored is None else (stored, np.asarray(stored["vector"], dtype=np.float32))

    def add(
        self,
        rec: PendingRecord,
        fields: Mapping[str, Any],
        row_id: str,
        *,
        prior: Mapping[str, Any] | None = None,
        chash: str | None = None,
        vector: np.ndarray | None = None,
    ) -> PendingRow:
        """Plan the row ``row_id`` of ``rec`` from ``fields``; text hash and vector default to the record's."""
        text_hash = rec.content_hash if chash is None else chash
        row = build_row(fields, text_hash, prior, self.now, offset_us=rec.offset, row_id=row_id)
        pending = PendingRow(row, rec.vector if vector is None else vector, fields.get("context") is None)
        self.rows[(rec.namespace, row_id)] = pending
        return pending


def _kept(state: _Planning, i: int, hit: Match | None) -> Outcome:
    """A record stored as itself (not a duplicate, or ``keep_both``): a new row, or its id's rewrite."""
    rec = state.recs[i]
    state.target[i] = rec.id or uuid.uuid4().hex
    key = (rec.namespace, state.target[i])
    prior = state.prior(key)
    state.add(rec, rec.fields, state.target[i], prior=prior)
    action = WriteAction.UPDATED if prior is not None else WriteAction.ADDED
    if hit is not None:
        dup = state.target[hit.of] if isinstance(hit.of, int) else hit.of
        return Outcome(key, action, dup, hit.similarity, f"kept beside its {duplicate_kind(hit)} {dup}")
    replaced = "an existing memory with this id was replaced" if prior is not None else None
    return Outcome(key, action, None, None, replaced)


def _merged(base: Mapping[str, Any], rec: PendingRecord, *, update: bool) -> tuple[dict[str, Any], list[str]]:
    """The memory ``base`` after taking its duplicate ``rec``, and what changed.

    ``update`` (``dedup_policy=update``): the fields the caller set replace the stored ones. Else
    the record's annotations are merged in (:func:`~memory_retrievers.fields.merge_annotations`).
    """
    kept = stored_record(base)
    if update:
        return {**kept, **{k: rec.fields[k] for k in rec.given if k in rec.fields and k != "namespace"}}, ["text"]
    return merge_annotations(kept, rec.fields)


def _stacked(recs: Sequence[PendingRecord]) -> np.ndarray:
    """The records' vectors, one row each."""
    return np.stack([r.vector for r in recs]) if recs else np.zeros((0, 0), dtype=np.float32)


def _refuse_superseded(stored: Mapping[str, Any] | None, id_: str) -> None:
    if stored is not None and stored["superseded_by"] is not None:
        raise InvalidInputError(
            f"memory {id_!r} was superseded by {stored['superseded_by']!r}: writing it would change a "
            "memory that recall no longer shows; write to the newer one, or use a new id"
        )


def _by_namespace(recs: Sequence[PendingRecord]) -> dict[str, list[int]]:
    by_ns: dict[str, list[int]] = {}
    for i, r in enumerate(recs):
        by_ns.setdefault(r.namespace, []).append(i)
    return by_ns


@dataclass
class _Progress:
    """Every attempt's results so far: outcomes by record (``None``: not landed), rows landed, rows read."""

    outcomes: list[Outcome | None]
    landed: dict[Key, dict[str, Any]] = field(default_factory=dict)
    seen: dict[Key, dict[str, Any]] = field(default_factory=dict)
    committed: bool = False  # some attempt committed: the rest follows whoever waits

    def todo(self) -> list[int]:
        return [i for i, o in enumerate(self.outcomes) if o is None]

    def note(self, todo: list[int], plan: _Plan, failed: set[Key]) -> list[dict[str, Any]]:
        """Record an attempt; returns the rows that landed."""
        for j, i in enumerate(todo):
            if plan.outcomes[j].key not in failed:
                self.outcomes[i] = plan.outcomes[j]
        new = {k: p.row for k, p in plan.rows.items() if k not in failed}
        self.landed.update(new)
        self.seen.update(plan.seen)
        return list(new.values())


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
        done = await self._attempts(recs, dedup=batches[0].dedup, offsets=offsets, proceed=proceed, replacing=None)
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
    ) -> _Progress:
        """Plan and commit until every record landed (or attempts run out)."""
        offsets = list(offsets) if offsets is not None else list(range(len(recs)))
        vectors = await record_vectors(self._vectors, recs)  # once for every attempt
        pending = [PendingRecord.of(r, v, o) for r, v, o in zip(recs, vectors, offsets, strict=True)]
        progress = _Progress([None] * len(recs))
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
    ) -> _Plan:
        """:meth:`_plan`; an error after part of the write committed says so (the queue must not redo it)."""
        try:
            return await self._plan(recs, dedup, isolated=isolated)
        except Exception as exc:
            if committed:  # part of the write landed: the queue must not redo its batches alone
                with contextlib.suppress(AttributeError):
                    exc.after_commit = True  # type: ignore[attr-defined]
            raise

    async def _commit_plan(
        self, plan: _Plan, replacing: tuple[str, Sequence[str]] | None
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

    async def _plan(self, recs: list[PendingRecord], dedup: bool | None, *, isolated: bool = False) -> _Plan:
        """Decide, from a fresh read, what each record becomes (``isolated``: context from the records alone)."""
        by_ns = _by_namespace(recs)
        state = _Planning(recs, await self._existing(recs, by_ns), self._clock())
        dup_of = (
            await self._duplicates.detect(
                [r.fields for r in recs], [r.content_hash for r in recs], _stacked(recs), by_ns
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
                _refuse_superseded(state.existing.get((rec.namespace, rec.id)), rec.id)
            hit = dup_of[i]
            if hit is None or self._config.dedup_policy is DedupPolicy.KEEP_BOTH:
                outcomes.append(_kept(state, i, hit))
            else:
                outcomes.append(await self._onto_duplicate(state, i, hit))
        refresh, used = await self._filled(state.rows, isolated)
        # Caller ids may collide with rows another process is creating: those commits are merges.
        rewrites = bool(state.existing) or any(r.id is not None for r in recs)
        return _Plan(state.rows, outcomes, refresh, used, rewrites, state.seen)

    async def _existing(self, recs: list[PendingRecord], by_ns: dict[str, list[int]]) -> dict[Key, dict[str, Any]]:
        """Rows that caller ids will replace (upsert), fetched whole so their history survives."""
        existing: dict[Key, dict[str, Any]] = {}
        for ns, idx in by_ns.items():
            ids = [i for i in (recs[j].id for j in idx) if i is not None]
            for id_, row in (await self._table.rows_by_id(ns, ids)).items():
                existing[(ns, id_)] = row
        return existing

    async def _onto_duplicate(self, state: _Planning, i: int, hit: Match) -> Outcome:
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
            state.target[i] = rec.id or uuid.uuid4().hex
            state.add(rec, rec.fields, state.target[i])
            return Outcome((rec.namespace, state.target[i]), WriteAction.ADDED, None, None, None)
        update = self._config.dedup_policy is DedupPolicy.UPDATE
        merged, changed = _merged(base[0], rec, update=update)
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

"""What a write plans before its commit: typed pending records and rows, and the planning steps.

A record enters the write path as a :class:`PendingRecord` (its vector checked once, where it
entered the store) and leaves the plan as a :class:`PendingRow`, the row to commit with its vector:
the record's own, or the stored row's when a duplicate keeps the stored text. The functions here
are the pure steps of the writer's plan (:mod:`memory_retrievers.storage.writes`); the reads (rows
by id, duplicates, chat context) stay with the writer.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.models import DedupPolicy, WriteAction
from memory_retrievers.storage.duplicates import Match
from memory_retrievers.storage.fields import build_row, merge_annotations, stored_record
from memory_retrievers.storage.outcomes import Outcome, duplicate_kind
from memory_retrievers.storage.vectors import VectorMaker
from memory_retrievers.validation import content_hash

__all__ = [
    "NEW_ID",
    "Key",
    "PendingRecord",
    "PendingRow",
    "Plan",
    "Planning",
    "Progress",
    "by_namespace",
    "absorbed",
    "kept",
    "record_vectors",
    "refuse_superseded",
    "rewritten_duplicate",
    "stacked",
]

Key = tuple[str, str]

#: The key of a queued record's planned id (records without a caller id, queued by ``add_later``):
#: the write stores the record under it, so the id recall showed before the commit is the one stored.
NEW_ID = "_new_id"


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


class Plan(NamedTuple):
    """One attempt at a set of records: the rows to commit and each record's outcome."""

    rows: dict[Key, PendingRow]  # key -> row; the last record for a key wins
    outcomes: list[Outcome]
    refresh: list[dict[str, Any]]  # stored turns whose context the new turns extend
    used: list[dict[str, Any]]  # stored turns the new turns' contexts were made from
    rewrites: bool  # whether any row replaces a stored one (or may collide with one)
    seen: dict[Key, dict[str, Any]]  # stored rows that skipped records point at, as read


@dataclass
class Planning:
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


def kept(state: Planning, i: int, hit: Match | None) -> Outcome:
    """A record stored as itself (not a duplicate, or ``keep_both``): a new row, or its id's rewrite."""
    rec = state.recs[i]
    # A record queued by add_later has its id planned when it was queued (recall showed it by that id).
    state.target[i] = rec.id or rec.fields.get(NEW_ID) or uuid.uuid4().hex
    key = (rec.namespace, state.target[i])
    prior = state.prior(key)
    state.add(rec, rec.fields, state.target[i], prior=prior)
    action = WriteAction.UPDATED if prior is not None else WriteAction.ADDED
    if hit is not None:
        dup = state.target[hit.of] if isinstance(hit.of, int) else hit.of
        return Outcome(key, action, dup, hit.similarity, f"kept beside its {duplicate_kind(hit)} {dup}")
    replaced = "an existing memory with this id was replaced" if prior is not None else None
    return Outcome(key, action, None, None, replaced)


def absorbed(base: Mapping[str, Any], rec: PendingRecord, *, update: bool) -> tuple[dict[str, Any], list[str]]:
    """The memory ``base`` after taking its duplicate ``rec``, and what changed.

    ``update`` (``dedup_policy=update``): the fields the caller set replace the stored ones. Else
    the record's annotations are merged in (:func:`~memory_retrievers.storage.fields.merge_annotations`).
    """
    kept = stored_record(base)
    if update:
        return {**kept, **{k: rec.fields[k] for k in rec.given if k in rec.fields and k != "namespace"}}, ["text"]
    return merge_annotations(kept, rec.fields)


def stacked(recs: Sequence[PendingRecord]) -> np.ndarray:
    """The records' vectors, one row each."""
    return np.stack([r.vector for r in recs]) if recs else np.zeros((0, 0), dtype=np.float32)


def refuse_superseded(stored: Mapping[str, Any] | None, id_: str) -> None:
    """Refuse a write to an id whose stored memory is superseded (recall no longer shows it).

    Raises:
        InvalidInputError: ``stored`` is superseded.
    """
    if stored is not None and stored["superseded_by"] is not None:
        raise InvalidInputError(
            f"memory {id_!r} was superseded by {stored['superseded_by']!r}: writing it would change a "
            "memory that recall no longer shows; write to the newer one, or use a new id"
        )


def by_namespace(recs: Sequence[PendingRecord]) -> dict[str, list[int]]:
    """The records' indices per namespace."""
    by_ns: dict[str, list[int]] = {}
    for i, r in enumerate(recs):
        by_ns.setdefault(r.namespace, []).append(i)
    return by_ns


@dataclass
class Progress:
    """Every attempt's results so far: outcomes by record (``None``: not landed), rows landed, rows read."""

    outcomes: list[Outcome | None]
    landed: dict[Key, dict[str, Any]] = field(default_factory=dict)
    seen: dict[Key, dict[str, Any]] = field(default_factory=dict)
    committed: bool = False  # some attempt committed: the rest follows whoever waits

    def todo(self) -> list[int]:
        """The records not landed yet (by index)."""
        return [i for i, o in enumerate(self.outcomes) if o is None]

    def note(self, todo: list[int], plan: Plan, failed: set[Key]) -> list[dict[str, Any]]:
        """Record an attempt; returns the rows that landed."""
        for j, i in enumerate(todo):
            if plan.outcomes[j].key not in failed:
                self.outcomes[i] = plan.outcomes[j]
        new = {k: p.row for k, p in plan.rows.items() if k not in failed}
        self.landed.update(new)
        self.seen.update(plan.seen)
        return list(new.values())


def rewritten_duplicate(
    target: Mapping[str, Any],
    rec: Mapping[str, Any],
    given: set[str],
    text: tuple[str, np.ndarray],
    now: datetime,
    policy: DedupPolicy,
) -> tuple[dict[str, Any], list[str]]:
    """The duplicate ``target`` (a whole stored row) after taking a superseding ``rec``, and what changed.

    As on ``add`` (:func:`absorbed`): ``update`` replaces the fields the caller set (``given``; not
    the inherited ones, nor the link to the old memory) and takes the record's text hash and vector
    (``text``); otherwise the record's annotations are merged in and the stored text stays.
    """
    kept_fields = stored_record(target)
    if policy is DedupPolicy.UPDATE:
        skip = ("id", "namespace", "supersedes")
        fields = {**kept_fields, **{k: rec[k] for k in given if k in rec and k not in skip}}
        changed, (text_hash, row_vector) = ["text"], text
    else:
        fields, changed = merge_annotations(kept_fields, rec)
        text_hash, row_vector = target["content_hash"], target["vector"]
    row = build_row(fields, text_hash, target, now, row_id=target["id"])
    row["created_at"] = target["created_at"]
    if "context" not in given or policy is not DedupPolicy.UPDATE:
        row["context_auto"] = target.get("context_auto")  # the context stays whoever filled it
    row["revision"] = target["revision"]  # whole_rows writes the stored revision + 1
    row["vector"] = row_vector
    return row, changed

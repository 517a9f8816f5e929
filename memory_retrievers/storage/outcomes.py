"""What a write reports for each record: its outcome, and the :class:`AddedMemory` built from it.

Results are built from the rows a write committed and the rows it read while planning, never from
a read after the commit: a memory a record was skipped against may be deleted by another writer
right after, and failing then (after the commit landed) made the write queue redo the group's
batches alone, storing their records twice (issue 27 item 6).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pyarrow as pa

from memory_retrievers.errors import StorageError
from memory_retrievers.models import AddedMemory, Memory, WriteAction
from memory_retrievers.storage.duplicates import Match
from memory_retrievers.storage.schema import rows_to_memories
from memory_retrievers.storage.search import Searcher

__all__ = ["Outcome", "added", "duplicate_kind", "public", "results"]


def public(row: dict[str, Any]) -> dict[str, Any]:
    """A row without the private ``_`` bookkeeping keys of the write path."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def added(
    mem: Memory, action: WriteAction, dup: str | None, sim: float | None, reason: str | None = None
) -> AddedMemory:
    """The result of a write for one record."""
    fields = {f: getattr(mem, f) for f in Memory.__dataclass_fields__}
    return AddedMemory(**fields, action=action, duplicate_of=dup, similarity=sim, reason=reason)


def duplicate_kind(hit: Match) -> str:
    """How a duplicate is described in a write's reason."""
    where = " (a record of this batch)" if isinstance(hit.of, int) else ""
    if hit.exact:
        return f"exact duplicate{where} of"
    return f"near duplicate{where} (cosine {hit.similarity:.3f}, same words) of"


class Outcome(NamedTuple):
    """What a write did with one record: the memory it landed in, how, and why."""

    key: tuple[str, str]
    action: WriteAction
    duplicate_of: str | None
    similarity: float | None
    reason: str | None


async def results(
    outcomes: list[Outcome],
    landed: dict[tuple[str, str], dict[str, Any]],
    seen: dict[tuple[str, str], dict[str, Any]],
    searcher: Searcher,
) -> list[AddedMemory]:
    """Each record's result, from the rows committed (``landed``) and the stored rows read (``seen``).

    A memory a record was skipped against is reported as it was read, even if another writer
    deleted it since: the write happened before that delete.
    """
    out: list[AddedMemory] = []
    for outcome in outcomes:
        row = landed.get(outcome.key) or seen.get(outcome.key)
        if row is not None:
            fields = {k: v for k, v in public(row).items() if k != "vector"}
            mem = rows_to_memories(pa.Table.from_pylist([fields]))[0]
        else:  # not expected: every outcome's row was planned or read; read it rather than fail
            found, _ = await searcher.memories(outcome.key[0], [outcome.key[1]])
            if not found:
                raise StorageError(f"memory {outcome.key[1]!r} that a record duplicates could not be read back")
            mem = found[0]
        out.append(added(mem, outcome.action, outcome.duplicate_of, outcome.similarity, outcome.reason))
    return out

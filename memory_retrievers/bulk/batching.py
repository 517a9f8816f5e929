"""The pure parts of the bulk jobs: batch boundaries, the rows Ray embeds, and records back from rows.

Nothing here imports Ray: these functions are what the jobs in :mod:`memory_retrievers.bulk` run on
the driver and in the workers, and they are tested on their own.

Only ``(position, text)`` pairs travel through Ray: the records themselves (metadata of any shape,
datetimes) stay on the driver, which writes them with the vectors that come back. Arrow would have
to infer one struct type for every ``metadata`` dict of a chat history otherwise, and an import
must not fail because two records' metadata have different keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_retrievers.errors import InvalidInputError
from memory_retrievers.storage.schema import row_to_memory

__all__ = [
    "ImportReport",
    "attach_vectors",
    "check_factory",
    "check_positive",
    "export_records",
    "sessions_in_order",
    "spans",
    "text_blocks",
]


def check_positive(value: Any, name: str) -> int:
    """``value`` if it is an int >= 1, else an :class:`InvalidInputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be an int >= 1, got {value!r}")
    return value


def check_factory(value: Any, name: str) -> Any:
    """``value`` if it is ``None`` or callable, else an :class:`InvalidInputError` naming ``name``.

    A factory runs in a Ray worker: a wrong one would otherwise fail there, after Ray started.
    """
    if value is not None and not callable(value):
        raise InvalidInputError(
            f"{name} must be a function with no arguments that builds the object in a worker, got {value!r}"
        )
    return value


def spans(total: int, size: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive batches of at most ``size`` over ``total`` items.

    Example:
        >>> list(spans(5, 2))
        [(0, 2), (2, 4), (4, 5)]
    """
    check_positive(size, "size")
    for start in range(0, total, size):
        yield start, min(start + size, total)


def text_blocks(records: Sequence[Mapping[str, Any]], block_size: int) -> list[dict[str, list[Any]]]:
    """The columns Ray embeds, one block per ``block_size`` records: ``{"i": positions, "text": texts}``.

    One block is the unit Ray hands to one worker, so several blocks let several workers embed at
    once (a single block would go to a single worker).

    Raises:
        InvalidInputError: A record is not a dict with a ``text`` string (named by its position).
    """
    texts: list[str] = []
    for i, record in enumerate(records):
        text = record.get("text") if isinstance(record, Mapping) else None
        if not isinstance(text, str):
            raise InvalidInputError(f"record {i}: a record must be a dict with a 'text' string")
        texts.append(text)
    return [{"i": list(range(a, b)), "text": texts[a:b]} for a, b in spans(len(texts), block_size)]


def attach_vectors(
    records: Sequence[Mapping[str, Any]], vectors: np.ndarray, *, start: int = 0
) -> list[dict[str, Any]]:
    """Copies of ``records`` each with its vector (``vectors[k]`` belongs to ``records[k]``).

    A record that already carries a ``vector`` keeps it: the caller's vector wins, as in ``add_many``.

    Raises:
        InvalidInputError: The counts differ (a worker returned a short batch).
    """
    if len(vectors) != len(records):
        raise InvalidInputError(
            f"records {start}-{start + len(records) - 1}: {len(vectors)} vectors for {len(records)} records"
        )
    return [
        {**r, "vector": r["vector"] if r.get("vector") is not None else v}
        for r, v in zip(records, vectors, strict=True)
    ]


def export_records(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Export records (what ``store.admin.restore`` writes back exactly) from raw table rows with a ``vector``.

    The same mapping as ``store.admin.export``: :meth:`Memory.to_dict` of the row, plus its vector.
    """
    return [row_to_memory(row, row["vector"]).to_dict() for row in rows]


def sessions_in_order(turns: Sequence[Any]) -> list[tuple[str | None, list[Any]]]:
    """Turns grouped by ``session_id``, sessions in the order of their first turn, turns kept in order.

    Formation of one namespace runs its sessions in this order, so the consolidation of a session
    sees the facts of the sessions before it (as when they were formed live).
    """
    groups: dict[str | None, list[Any]] = {}
    for turn in turns:
        groups.setdefault(turn.session_id, []).append(turn)
    return list(groups.items())


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What a bulk import or re-embedding wrote.

    Attributes:
        records: Records read.
        added: New memories.
        updated: Memories that replaced (or were merged into) a stored one.
        skipped: Records skipped as duplicates of a stored memory.
        batches: Commits made (one per batch).
        seconds: Wall time of the whole job, embedding and writing.
        startup_seconds: Wall time until the first vectors came back (Ray actors starting and
            loading the model, and the first batch): a cost paid once per job, not per record.
        caught_up: A re-embedding's memories added or changed in the source while it ran, copied
            after its snapshot (0 for an import).
    """

    records: int
    added: int
    updated: int
    skipped: int
    batches: int
    seconds: float
    startup_seconds: float = 0.0
    caught_up: int = 0

    @property
    def per_second(self) -> float:
        """Records per second over the whole job."""
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "records": self.records,
            "added": self.added,
            "updated": self.updated,
            "skipped": self.skipped,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "per_second": round(self.per_second, 1),
            "startup_seconds": round(self.startup_seconds, 3),
            "caught_up": self.caught_up,
        }

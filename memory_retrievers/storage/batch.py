"""One batch of validated records as the write queue holds it (see :mod:`.queue`)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AddBatch"]


@dataclass(eq=False)
class AddBatch:
    """Validated records of one ``add_many`` batch, as queued.

    Attributes:
        records: Validated records (see :func:`memory_retrievers.validation.validate_record`).
        dedup: The caller's duplicate-detection override.
        first_index: The batch's position in the caller's ``add_many`` (keeps write order visible).
        embedding: Its records' vectors, embedded once by whoever needs them first: the writer, or
            this process's recall reading a batch queued by ``add_later`` before its commit (``pending.py``).
    """

    records: list[dict[str, Any]]
    dedup: bool | None
    first_index: int = 0
    embedding: Future[Any] | None = field(default=None, repr=False)

"""What a commit tells the table layer's subscribers."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

__all__ = ["CommitAction", "CommitEvent", "CommitListener", "notify"]

logger = logging.getLogger("memory_retrievers.storage.table")

CommitAction = Literal["add", "upsert", "update", "delete"]


@dataclass(frozen=True, slots=True)
class CommitEvent:
    """What one commit changed, or may have changed when it failed.

    Attributes:
        action: ``add`` (new rows), ``upsert`` (rows inserted or replaced whole), ``update``
            (some columns of existing rows, e.g. access statistics) or ``delete``.
        namespaces: Every namespace the commit touched.
        version: The table version it produced; ``None`` when it failed (it may or may not have
            landed, so subscribers must assume the namespaces changed).
        rows: The rows written (every column given, vectors included) for add/upsert/update; for a
            delete, the rows it changed besides (predecessors made live again), if any.
        deleted: Ids deleted per namespace; a namespace listed in ``namespaces`` but absent here
            was deleted whole (``forget``).
        inserted: For merges: how many of ``rows`` were inserted as new rows.
        updated: For merges: how many of ``rows`` rewrote a stored row.
    """

    action: CommitAction
    namespaces: frozenset[str]
    version: int | None
    rows: pa.Table | None = None
    deleted: Mapping[str, tuple[str, ...]] | None = None
    inserted: int | None = None
    updated: int | None = None

    @property
    def failed(self) -> bool:
        """True when the commit raised."""
        return self.version is None

    @property
    def landed(self) -> int | None:
        """For merges, ``inserted + updated`` (``None`` for appends and plain deletes).

        Fewer than :attr:`row_count` means some conditional rewrites found their row changed or gone.
        """
        if self.inserted is None or self.updated is None:
            return None
        return self.inserted + self.updated

    @property
    def row_count(self) -> int:
        """Rows written (0 for a delete)."""
        return 0 if self.rows is None else self.rows.num_rows


#: A commit subscriber; it may return an awaitable, which the commit awaits.
CommitListener = Callable[[CommitEvent], Awaitable[None] | None]


async def notify(listeners: list[CommitListener], event: CommitEvent) -> None:
    """Tell every listener about a commit, in order.

    The commit has happened (or failed) whatever a subscriber does: a subscriber's error is logged,
    never raised, or a caller would retry a write that landed or report a loss.
    """
    for listener in listeners:
        try:
            outcome = listener(event)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.warning("memory-retrievers: a commit subscriber failed after a %s", event.action, exc_info=True)

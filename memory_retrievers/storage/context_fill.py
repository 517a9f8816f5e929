"""The ``context`` of chat turns, filled from their session neighbours on write.

A short turn ("yes, the blue one") is found by what surrounds it: for ``message`` memories with a
``session_id`` and no caller-given context, the write fills ``context`` with up to
``StoreConfig.context_window`` turns on each side, and extends the context of the session's
previous turns whose next turns just arrived (they are rewritten in the same commit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import StoreConfig
from ..context import window_contexts
from ..filters import MemoryFilter, build_where
from ..models import MemoryKind
from .table import MemoryTable

__all__ = ["ContextFiller"]


class ContextFiller:
    """Fills chat turns' context from the stored session.

    Args:
        table: The table layer.
        config: ``context_window``.
    """

    def __init__(self, table: MemoryTable, config: StoreConfig) -> None:
        self._table = table
        self._window = config.context_window

    async def fill(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Fill the ``context`` of message rows marked ``_auto_context`` (in place).

        Returns stored rows (with vectors) whose auto-filled context changed because their next
        turns just arrived. Turns are assumed to be written in conversation order.
        """
        window = self._window
        if window == 0:
            return []
        sessions: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in rows:
            if row["kind"] == MemoryKind.MESSAGE.value and row["session_id"] is not None:
                sessions.setdefault((row["namespace"], row["session_id"]), []).append(row)
        refreshed: list[dict[str, Any]] = []
        for (ns, session), new_rows in sessions.items():
            if not any(r.get("_auto_context") for r in new_rows):
                continue
            new_rows.sort(key=lambda r: r["created_at"])
            flt = MemoryFilter(session_ids=(session,), kinds=(MemoryKind.MESSAGE,), include_superseded=True)
            fetched = (
                await self._table.rows(
                    build_where(ns, flt),
                    [f.name for f in self._table.schema],
                    limit=2 * window + len(new_rows),
                    newest_first=True,
                    action="read session turns",
                )
            ).to_pylist()
            writing = {r["id"] for r in new_rows}
            stored = [r for r in reversed(fetched) if r["id"] not in writing][-2 * window :]
            before = [r["text"] for r in stored]
            turns = before + [r["text"] for r in new_rows]
            offset = len(stored)
            contexts = window_contexts(turns, window)
            for j, row in enumerate(new_rows):
                if row.get("_auto_context"):
                    row["context"] = contexts[offset + j] or None
            # A stored turn whose context is exactly what auto-fill gave it without the new turns
            # was auto-filled: extend it with its newly arrived next turns.
            old_contexts = window_contexts(before, window)
            for k in range(max(0, offset - window), offset):
                if (stored[k]["context"] or "") == old_contexts[k] and (contexts[k] or None) != stored[k]["context"]:
                    refreshed.append({**stored[k], "context": contexts[k] or None})
        return refreshed

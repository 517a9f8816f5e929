"""The ``context`` of chat turns, filled from their session neighbours on write.

A short turn ("yes, the blue one") is found by what surrounds it: for ``message`` memories with a
``session_id`` and no caller-given context, the write fills ``context`` with up to
``StoreConfig.context_window`` turns on each side, and extends the context of the session's
previous turns whose next turns just arrived.

The same turns are rewritten when a turn of their session is deleted or re-worded: a deleted turn's
words must not stay searchable (and readable) in its neighbours' context.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..config import StoreConfig
from ..context import window_contexts
from ..errors import StorageError
from ..filters import MemoryFilter, build_where
from ..models import MemoryKind
from .table import MemoryTable

__all__ = ["ContextFiller", "Filled"]

logger = logging.getLogger(__name__)


class Filled(NamedTuple):
    """What filling new turns' context found in the stored session."""

    refresh: list[dict[str, Any]]
    """Stored turns (whole rows) whose context the new turns extend."""
    used: list[dict[str, Any]]
    """Stored turns the new turns' contexts were made from."""


class ContextFiller:
    """Fills chat turns' context from the stored session.

    Args:
        table: The table layer.
        config: ``context_window``.
    """

    def __init__(self, table: MemoryTable, config: StoreConfig) -> None:
        self._table = table
        self._window = config.context_window

    async def fill(self, rows: Sequence[dict[str, Any]], *, isolated: bool = False) -> Filled:
        """Fill the ``context`` of message rows marked ``_auto_context`` (in place).

        Returns the stored rows (whole) whose auto-filled context changed because their next turns
        just arrived, and the stored turns the new contexts were made from. Turns are assumed to be
        written in conversation order. ``isolated``: the new rows' context comes from themselves only
        (they replace the stored session).
        """
        window = self._window
        used: list[dict[str, Any]] = []
        if window == 0:
            return Filled([], used)
        sessions: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in rows:
            if row["kind"] == MemoryKind.MESSAGE.value and row["session_id"] is not None:
                sessions.setdefault((row["namespace"], row["session_id"]), []).append(row)
        refreshed: list[dict[str, Any]] = []
        for (ns, session), new_rows in sessions.items():
            if not any(r.get("_auto_context") for r in new_rows):
                continue
            new_rows.sort(key=lambda r: r["created_at"])
            fetched = [] if isolated else await self._newest_turns(ns, session, 2 * window + len(new_rows))
            writing = {r["id"] for r in new_rows}
            stored = [r for r in reversed(fetched) if r["id"] not in writing][-2 * window :]
            used.extend(stored)
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
        return Filled(refreshed, used)

    async def _newest_turns(self, namespace: str, session: str, limit: int) -> list[dict[str, Any]]:
        """The session's newest stored turns, whole, newest first."""
        flt = MemoryFilter(session_ids=(session,), kinds=(MemoryKind.MESSAGE,), include_superseded=True)
        table = await self._table.rows(
            build_where(namespace, flt),
            [f.name for f in self._table.schema],
            limit=limit,
            newest_first=True,
            action="read session turns",
        )
        rows: list[dict[str, Any]] = table.to_pylist()
        return rows

    async def after_change(
        self, namespace: str, changed: Sequence[dict[str, Any]], new_texts: dict[str, str | None]
    ) -> list[dict[str, Any]]:
        """Stored turns whose auto-filled context changes when turns are deleted or re-worded.

        Args:
            namespace: The namespace of the changed turns.
            changed: Stored rows being deleted or re-worded, with ``id``, ``kind``, ``session_id``,
                ``text`` and ``created_at`` (only ``message`` rows with a session matter).
            new_texts: Their new text by id (``None``: deleted).

        Returns:
            Stored rows (``id``, ``text``, ``revision``...) with their new ``context``; a turn whose
            context was set by the caller (not auto-filled) is left alone.
        """
        window = self._window
        sessions = {
            r["session_id"] for r in changed if r["kind"] == MemoryKind.MESSAGE.value and r["session_id"] is not None
        }
        if window == 0 or not sessions:
            return []
        out: list[dict[str, Any]] = []
        for session in sorted(sessions):
            flt = MemoryFilter(session_ids=(session,), kinds=(MemoryKind.MESSAGE,), include_superseded=True)
            turns = (
                await self._table.rows(
                    build_where(namespace, flt),
                    self._table.schema.names,  # whole rows: a conditional rewrite sends every column
                    newest_first=False,
                    action="read session turns",
                )
            ).to_pylist()
            # The session as it was: changed turns already gone (a retry after a delete) go back in place.
            present = {t["id"] for t in turns}
            gone = [r for r in changed if r["id"] not in present and r.get("session_id") == session]
            if gone:
                turns = sorted([*turns, *gone], key=lambda t: (t["created_at"], t["id"]))
            old_contexts = window_contexts([t["text"] for t in turns], window)
            kept = [t for t in turns if new_texts.get(t["id"], t["text"]) is not None]
            new_texts_list = [new_texts.get(t["id"], t["text"]) or "" for t in kept]
            new_contexts = window_contexts(new_texts_list, window)
            position = {t["id"]: i for i, t in enumerate(turns)}
            for j, turn in enumerate(kept):
                was_auto = (turn["context"] or "") == old_contexts[position[turn["id"]]]
                if was_auto and (new_contexts[j] or None) != turn["context"]:
                    out.append({**turn, "text": new_texts_list[j], "context": new_contexts[j] or None})
        return out

    async def refresh(self, refresh: list[dict[str, Any]]) -> None:
        """Extend stored turns' context with their new next turns: update-only, best effort.

        A turn deleted or changed since it was read is left alone; its context is only a search aid.
        """
        if not refresh:
            return
        try:
            await self._table.rewrite(self._table.whole_rows(refresh))
        except StorageError:  # the turns themselves are stored; a stale context is only a weaker search aid
            logger.warning("memory-retrievers: extending earlier turns' context failed", exc_info=True)

    async def scrub_vanished(self, used: list[dict[str, Any]]) -> None:
        """Take turns deleted meanwhile (by another process) out of the new turns' context.

        The new contexts were made from turns read before the commit; a turn another process
        deleted since must not live on in them.
        """
        by_ns: dict[str, list[dict[str, Any]]] = {}
        for row in used:
            by_ns.setdefault(row["namespace"], []).append(row)
        for ns, rows in by_ns.items():
            present = await self._table.rows_by_id(ns, [r["id"] for r in rows], columns=["id"])
            vanished = [r for r in rows if r["id"] not in present]
            if vanished:
                rewrites = await self.after_change(ns, vanished, dict.fromkeys(r["id"] for r in vanished))
                if rewrites:
                    await self._table.rewrite(self._table.whole_rows(rewrites))

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

from memory_retrievers.config import StoreConfig
from memory_retrievers.errors import StorageError
from memory_retrievers.filters import MemoryFilter, build_where
from memory_retrievers.models import MemoryKind
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.text.context import window_contexts

__all__ = ["ContextFiller", "Filled"]

logger = logging.getLogger(__name__)

#: Rounds of :meth:`ContextFiller.settle` against neighbours that keep changing.
_SETTLE_ATTEMPTS = 5


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
        """Stored turns whose store-filled context changes when turns are deleted or re-worded.

        Every store-filled context of the changed turns' sessions is computed again from the
        session as it stands (in write order), so a context that missed an earlier change is
        corrected too.

        Args:
            namespace: The namespace of the changed turns.
            changed: Stored rows being deleted or re-worded, with ``id``, ``kind``, ``session_id``,
                ``text`` and ``created_at`` (only ``message`` rows with a session matter).
            new_texts: Their new text by id (``None``: deleted).

        Returns:
            Stored rows (whole, vector included) with their new ``context`` (and new ``text``, for a
            re-worded turn); a context the caller set is left alone.
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
            turns.sort(key=lambda t: (t["created_at"], t["id"]))
            kept = [t for t in turns if new_texts.get(t["id"], t["text"]) is not None]
            new_texts_list = [new_texts.get(t["id"], t["text"]) or "" for t in kept]
            new_contexts = window_contexts(new_texts_list, window)
            legacy = _legacy_auto(turns, [r for r in changed if r.get("session_id") == session])
            for j, turn in enumerate(kept):
                auto = turn.get("context_auto")
                if auto is None:
                    auto = turn["id"] in legacy
                if auto and (new_contexts[j] or None) != turn["context"]:
                    out.append({**turn, "text": new_texts_list[j], "context": new_contexts[j] or None})
        return out

    async def settle(self, namespace: str, written: Sequence[dict[str, Any]]) -> None:
        """Take the words of ``written`` turns deleted meanwhile back out of other turns' context.

        Runs after a commit that put those words there. A delete sweeps its session after its own
        commit (``Editor.delete``); this check runs after the writer's commit. Whichever of the two
        runs later sees the other's commit, so a deleted turn's words never stay in a neighbour's
        context.
        """
        turns = [r for r in written if r["kind"] == MemoryKind.MESSAGE.value and r.get("session_id") is not None]
        if not turns or self._window == 0:
            return
        for _ in range(_SETTLE_ATTEMPTS):
            await self._table.refresh()  # the latest version: another process's delete included
            present = await self._table.rows_by_id(namespace, [r["id"] for r in turns], columns=["id"])
            vanished = [r for r in turns if r["id"] not in present]
            if not vanished:
                return
            rewrites = await self.after_change(namespace, vanished, dict.fromkeys(r["id"] for r in vanished))
            if not rewrites:
                return
            event = await self._table.rewrite(self._table.whole_rows(rewrites))
            if event.updated is None or event.updated >= len(rewrites):
                return
            # A neighbour changed between our read and our rewrite: read the session again.
        logger.warning("memory-retrievers: a deleted turn's words may remain in a neighbour's context")

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

    async def scrub_vanished(self, rows: Sequence[dict[str, Any]]) -> None:
        """:meth:`settle` for rows of any namespace (the stored turns a write used, and its new turns)."""
        by_ns: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_ns.setdefault(row["namespace"], []).append(row)
        for ns, mine in by_ns.items():
            await self.settle(ns, mine)


def _legacy_auto(turns: list[dict[str, Any]], gone: list[dict[str, Any]]) -> set[str]:
    """Ids of turns written before ``context_auto`` existed whose context looks store-filled.

    Filling joins neighbouring turns' texts one per line, so such a context is made of the
    session's turn texts (turns already deleted included) and nothing else; a caller's own context
    almost never is. An empty context counts as store-filled (filling found no neighbours).
    """
    texts = {t["text"] for t in [*turns, *gone] if t.get("text")}
    return {
        t["id"]
        for t in turns
        if t.get("context_auto") is None and (not t.get("context") or _made_of(t["context"], texts))
    }


def _made_of(context: str, texts: set[str]) -> bool:
    """Whether ``context`` is some of ``texts`` joined by newlines (a text may itself hold newlines)."""
    reachable = {0}  # offsets in context where a next text may start
    for start in range(len(context)):
        if start not in reachable:
            continue
        for text in texts:
            end = start + len(text)
            if context.startswith(text, start):
                if end == len(context):
                    return True
                if context[end] == "\n":
                    reachable.add(end + 1)
    return False

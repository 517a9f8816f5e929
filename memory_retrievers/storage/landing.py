"""Which rows of a commit landed, read back by the stamps they carry, even when the commit raised.

Every row a commit writes carries a stamp drawn for that write (``schema.to_arrow``): a stored row
with our stamp is our write, whatever its revision and timestamps say (two writers under a frozen
clock can write equal ones). The write path asks here after a conditional merge that did not land
every row, and after a commit that raised: object stores can fail a request after the new version
was written (the manifest PUT landed, then a LIST or the answer was lost), and reporting that as a
failure made a caller's retry store the memory twice (issue 27 item 17). While the store does not
answer, it is asked again for a while (``_VERIFY_S``) before the caller is told the outcome is
unknown.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from memory_retrievers.errors import StorageError
from memory_retrievers.storage.events import CommitAction, CommitEvent
from memory_retrievers.storage.table import MemoryTable

__all__ = [
    "after_commit",
    "checked_delete",
    "checked_delete_and_rewrite",
    "checked_link",
    "checked_rewrite",
    "deleted_anyway",
    "ids_left",
    "landed_anyway",
    "not_landed",
    "not_landed_after_commit",
    "rewritten_anyway",
    "stamps",
    "unlanded",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a commit's outcome is read back while the store does not answer (it may be down for a
#: while right after the manifest was written): seconds in all, and the first pause.
_VERIFY_S = 30.0
_VERIFY_PAUSE_S = 0.25

Key = tuple[str, str]


def stamps(data: pa.Table) -> dict[Key, int]:
    """The stamp each row of a commit's data carries, by key (empty for data without stamps)."""
    if "stamp" not in data.column_names:
        return {}
    keys = zip(data.column("namespace").to_pylist(), data.column("id").to_pylist(), strict=True)
    return dict(zip(keys, data.column("stamp").to_pylist(), strict=True))


def unlanded(count: int) -> StorageError:
    """The error of records that never landed (their rows kept changing under other writers)."""
    return StorageError(
        f"{count} record(s) could not be written: their rows kept changing under concurrent writers; "
        "nothing else failed, retry these"
    )


async def not_landed(table: MemoryTable, rows: list[dict[str, Any]], event: CommitEvent | None = None) -> set[Key]:
    """The rows of a conditional commit that another writer's change kept out.

    With the commit's ``event``, a row landed when the stored row carries the stamp the commit drew
    for it; without, when its revision and ``updated_at`` are the ones written.
    """
    mine = stamps(event.rows) if event is not None and event.rows is not None else {}
    out: set[Key] = set()
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_ns.setdefault(row["namespace"], []).append(row)
    for ns, group in by_ns.items():
        columns = ["id", "revision", "updated_at", *(["stamp"] if mine else [])]
        stored = await table.rows_by_id(ns, [r["id"] for r in group], columns=columns)
        for row in group:
            got, key = stored.get(row["id"]), (ns, row["id"])
            if got is None:
                out.add(key)
            elif key in mine:
                if got["stamp"] != mine[key]:
                    out.add(key)
            elif got["revision"] != row["revision"] or got["updated_at"] != row["updated_at"]:
                out.add(key)
    return out


async def not_landed_after_commit(table: MemoryTable, rows: list[dict[str, Any]], event: CommitEvent) -> set[Key]:
    """:func:`not_landed`, asked again while the store does not answer (the commit has happened).

    Raises:
        StorageError: The store did not answer for ``_VERIFY_S``; the message says the write committed.
    """

    def unknown(exc: StorageError) -> StorageError:
        return StorageError(
            f"a write committed, but which of its {len(rows)} record(s) landed could not be read back ({exc}); "
            "check with get() before writing them again"
        )

    return await _asking(lambda: not_landed(table, rows, event), unknown)


async def landed_anyway(table: MemoryTable, data: pa.Table, error: StorageError, *, upsert: bool) -> CommitEvent:
    """A commit that raised: the event of what of it landed all the same (the stamps tell).

    Raises:
        StorageError: ``error`` when nothing landed; a new one, saying the write may have landed,
            when the store did not answer for ``_VERIFY_S``.
    """
    mine = stamps(data)
    landed = await _asking(lambda: _refreshed(table, lambda: _stamps_stored(table, mine)), _unknown(error, "write"))
    if not landed:
        raise error
    _warn(error, f"{len(landed)} of {len(mine)} rows found")
    action: CommitAction = "upsert" if upsert else "add"
    namespaces = frozenset(ns for ns, _ in mine)
    return CommitEvent(action, namespaces, await table.version(), data, None, len(landed), 0)


async def after_commit(call: Callable[[], Awaitable[T]], what: str) -> T:
    """The upkeep after a commit that landed, tried again while the store does not answer.

    For ``_VERIFY_S``: its failure must not report what landed as failed (issue 27 item 17).
    ``call`` must be safe to repeat (reads, conditional rewrites).

    Raises:
        StorageError: The store did not answer for ``_VERIFY_S``; the message says the ``what`` landed.
    """

    def unknown(exc: StorageError) -> StorageError:
        return StorageError(
            f"the {what} landed, but the upkeep after it failed ({exc}): other memories' context may still "
            "need it; check with get() and list() before doing it again"
        )

    return await _asking(call, unknown)


async def checked_rewrite(table: MemoryTable, data: pa.Table, *, after: str | None = None) -> CommitEvent:
    """:meth:`MemoryTable.rewrite`; one that raised after it landed is reported as landed (issue 27 item 17).

    ``after``: what landed before this rewrite (it is upkeep after that commit, see :func:`after_commit`).
    """
    if after is not None:
        return await after_commit(lambda: checked_rewrite(table, data), after)
    try:
        return await table.rewrite(data)
    except StorageError as exc:
        return await rewritten_anyway(table, data, exc)


async def ids_left(table: MemoryTable, namespace: str, ids: Sequence[str], only: str | None) -> set[str]:
    """Which of ``ids`` are still stored (satisfying ``only``), read after a delete that landed."""
    return set(await after_commit(lambda: table.rows_by_id(namespace, ids, columns=["id"], only=only), "delete"))


async def checked_link(table: MemoryTable, old_id: str, new_id: str, data: pa.Table) -> CommitEvent:
    """Supersede's second commit, marking ``old_id`` superseded by the memory its first one stored.

    The first commit has landed, so the link is tried again while the store does not answer (for
    ``_VERIFY_S``): on object storage the network dropped right after the first commit's manifest
    PUT, failed the link's commit and left both memories live. Trying again is safe: the rewrite is
    conditional, and one that raised is only tried again once the stamps say it did not land.

    Raises:
        StorageError: The link did not land: the message says the new memory is stored and how
            to complete the link.
    """

    def unlinked(exc: StorageError) -> StorageError:
        return StorageError(
            f"memory {new_id!r} was stored to supersede {old_id!r}, but marking {old_id!r} superseded by it "
            f"failed ({exc}); both are live. Supersede {old_id!r} again with the same text to link them (it "
            f"finds {new_id!r} and stores nothing new), or delete {new_id!r}"
        )

    return await _asking(lambda: checked_rewrite(table, data), unlinked)


async def checked_delete(
    table: MemoryTable, namespace: str, ids: Sequence[str] | None, *, only: str | None = None
) -> CommitEvent:
    """:meth:`MemoryTable.delete`; one that raised after it landed is reported as landed (a retry finds nothing)."""
    try:
        return await table.delete(namespace, ids, only=only)
    except StorageError as exc:
        return await deleted_anyway(table, namespace, ids, exc, only=only)


async def checked_delete_and_rewrite(
    table: MemoryTable, namespace: str, ids: Sequence[str], rewrites: pa.Table, *, only: str | None = None
) -> CommitEvent:
    """:meth:`MemoryTable.delete_and_rewrite`; one that raised after it landed is reported as landed."""
    try:
        return await table.delete_and_rewrite(namespace, ids, rewrites, only=only)
    except StorageError as exc:
        return await deleted_anyway(table, namespace, ids, exc, rewrites=rewrites, only=only)


async def rewritten_anyway(table: MemoryTable, data: pa.Table, error: StorageError) -> CommitEvent:
    """A conditional rewrite that raised: the event of what of it landed all the same (the stamps tell).

    ``update`` and ``supersede``'s link reported such a rewrite as failed although it was stored.

    Raises:
        StorageError: ``error`` when none of its rows landed; a new one, saying the change may have
            landed, when the store did not answer for ``_VERIFY_S``.
    """
    mine = stamps(data)
    landed = await _asking(lambda: _refreshed(table, lambda: _stamps_stored(table, mine)), _unknown(error, "change"))
    if not landed:
        raise error
    _warn(error, f"{len(landed)} of {len(mine)} rows found")
    namespaces = frozenset(ns for ns, _ in mine)
    return CommitEvent("update", namespaces, await table.version(), data, None, 0, len(landed))


async def deleted_anyway(
    table: MemoryTable,
    namespace: str,
    ids: Sequence[str] | None,
    error: StorageError,
    *,
    rewrites: pa.Table | None = None,
    only: str | None = None,
) -> CommitEvent:
    """A delete that raised: it landed when none of ``ids`` (``None``: of the namespace) is stored.

    Only rows still satisfying ``only`` count, as in the delete. A row another process deleted
    meanwhile is gone all the same: the caller asked for it to be gone. ``rewrites``: the rows the
    same commit rewrote (``MemoryTable.delete_and_rewrite``), counted by their stamps.

    Raises:
        StorageError: ``error`` when the rows are still stored; a new one, saying the delete may
            have landed, when the store did not answer for ``_VERIFY_S``.
    """

    async def gone() -> bool:
        if ids is None:
            return await table.count_namespace(namespace) == 0
        return not await table.rows_by_id(namespace, ids, columns=["id"], only=only)

    if not await _asking(lambda: _refreshed(table, gone), _unknown(error, "delete")):
        raise error
    _warn(error, f"{'the namespace' if ids is None else f'{len(ids)} id(s)'} gone")
    mine = stamps(rewrites) if rewrites is not None else {}
    updated = len(await _stamps_stored(table, mine)) if mine else 0
    deleted = {namespace: tuple(ids)} if ids is not None else {}
    return CommitEvent("delete", frozenset({namespace}), await table.version(), rewrites, deleted, 0, updated)


async def _refreshed(table: MemoryTable, read: Callable[[], Awaitable[T]]) -> T:
    """``read()`` of the latest version (a failed commit may have left this handle at an older one)."""
    await table.refresh()
    return await read()


def _unknown(error: StorageError, what: str) -> Callable[[StorageError], StorageError]:
    def unknown(exc: StorageError) -> StorageError:
        return StorageError(
            f"{error}; whether the {what} landed could not be read back either ({exc}): check with get() before "
            "doing it again"
        )

    return unknown


def _warn(error: StorageError, found: str) -> None:
    logger.warning("memory-retrievers: a commit reported a failure after it landed (%s): %s", found, error)


async def _asking(read: Callable[[], Awaitable[T]], unknown: Callable[[StorageError], StorageError]) -> T:
    """``read()``, retried with growing pauses while it raises StorageError, for ``_VERIFY_S`` at most."""
    deadline = time.monotonic() + _VERIFY_S
    pause = _VERIFY_PAUSE_S
    while True:
        try:
            return await read()
        except StorageError as exc:
            if time.monotonic() + pause > deadline:
                raise unknown(exc) from exc
        await asyncio.sleep(pause)
        pause = min(pause * 2, 4.0)


async def _stamps_stored(table: MemoryTable, mine: dict[Key, int]) -> set[Key]:
    """Keys whose stored row carries the stamp of ``mine``."""
    by_ns: dict[str, list[str]] = {}
    for ns, id_ in mine:
        by_ns.setdefault(ns, []).append(id_)
    found: set[Key] = set()
    for ns, ids in by_ns.items():
        stored = await table.rows_by_id(ns, ids, columns=["id", "stamp"])
        found |= {(ns, i) for i, row in stored.items() if row["stamp"] == mine[(ns, i)]}
    return found

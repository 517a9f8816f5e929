"""Access statistics: counted in memory, shown by reads at once, written in one commit."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_retrievers import Memory, StorageError
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.table import MemoryTable

from .conftest import T0, rows


async def test_accesses_are_counted_shown_and_flushed(table: MemoryTable) -> None:
    data = rows("u", ["alpha", "beta"])
    await table.add(data)
    a, b = data.column("id").to_pylist()
    log = AccessLog(table)
    assert log.record("u", [a, a, b], T0) == 2
    log.record("u", [a], T0 + timedelta(days=1))
    shown = log.overlay(Memory(id=a, namespace="u", text="alpha", access_count=5))
    assert shown.access_count == 8 and shown.last_accessed_at == T0 + timedelta(days=1)
    assert await log.flush() == 2
    stored = await table.rows_by_id("u", [a, b], columns=["id", "access_count", "last_accessed_at"])
    assert stored[a]["access_count"] == 3 and stored[b]["access_count"] == 1
    assert stored[a]["last_accessed_at"] == T0 + timedelta(days=1)
    assert await log.flush() == 0  # nothing pending any more


async def test_deleted_memories_accesses_are_dropped(table: MemoryTable) -> None:
    data = rows("u", ["alpha"])
    await table.add(data)
    (a,) = data.column("id").to_pylist()
    log = AccessLog(table)
    log.record("u", [a, "gone"], T0)
    assert await log.flush() == 1


async def test_a_failed_flush_keeps_the_accesses(table: MemoryTable, monkeypatch: pytest.MonkeyPatch) -> None:
    data = rows("u", ["alpha"])
    await table.add(data)
    (a,) = data.column("id").to_pylist()
    log = AccessLog(table)
    log.record("u", [a], T0)

    async def broken(_data: object) -> None:
        raise StorageError("disk full")

    monkeypatch.setattr(table, "update", broken)
    with pytest.raises(StorageError):
        await log.flush()
    assert log.overlay(Memory(id=a, namespace="u", text="alpha")).access_count == 1

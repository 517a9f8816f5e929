"""Access statistics: counted in memory, shown by reads at once, written in one commit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

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


def test_recalls_recording_accesses_leave_every_row_in_the_full_text_index(make_store: Any) -> None:
    # Issue 42: access statistics rewrite rows; a rewritten row left the full-text index until the
    # next optimize, and every later BM25 search scanned it (6.55x LanceDB's hybrid with long texts).
    import lancedb

    from memory_retrievers import MemoryRetriever

    store = make_store(config={"access_flush_size": 3})  # memories with pending accesses: a batch a recall
    store.add_many(
        [{"text": f"note {i}: the {w} in the shed"} for i, w in enumerate("rake hoe saw drill axe".split())],
        namespace="u",
    )
    store.admin.optimize()  # everything indexed to begin with
    retriever = MemoryRetriever(store)
    first = [m.id for m in retriever.recall("where is the rake?", namespace="u").memories]
    for _ in range(12):  # 12 recalls x up to 5 memories: the batch fills (and is written) more than once
        assert [m.id for m in retriever.recall("where is the rake?", namespace="u").memories] == first
    store.flush()  # background maintenance done
    table = lancedb.connect(store.uri).open_table(store.table_name)
    stored = {r["id"]: r["access_count"] for r in table.search().select(["id", "access_count"]).to_list()}
    assert sum(stored.values()) >= 3  # statistics were written, not only held in memory
    for index in ("text_idx", "search_text_idx"):
        assert table.index_stats(index).num_unindexed_rows == 0
    assert [m.id for m in retriever.recall("where is the rake?", namespace="u").memories] == first

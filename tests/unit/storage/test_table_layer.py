"""The table layer: opening, reads, and commits that tell their subscribers what changed."""

from __future__ import annotations

import logging
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest

from memory_retrievers import SchemaMismatchError, StorageError
from memory_retrievers.filters import build_where
from memory_retrievers.storage.table import CommitEvent, MemoryTable

from .conftest import new_table, rows


async def test_open_creates_the_folder_and_an_empty_table(tmp_path: Path) -> None:
    t = new_table(tmp_path / "a" / "b")
    assert not t.is_open
    await t.open()
    assert t.is_open and (tmp_path / "a" / "b" / "memories.lance").is_dir()
    assert await t.count() == 0 and t.indexed == set()


async def test_a_table_not_written_by_us_is_refused(tmp_path: Path) -> None:
    db = await lancedb.connect_async(str(tmp_path))
    await db.create_table("memories", data=pa.table({"id": ["x"]}))
    with pytest.raises(SchemaMismatchError, match="not created by memory-retrievers"):
        await new_table(tmp_path).open()


async def test_every_commit_tells_the_subscribers_what_changed(table: MemoryTable) -> None:
    events: list[CommitEvent] = []
    table.subscribe(events.append)
    added = await table.add(rows("u", ["one", "two"]))
    assert added.action == "add" and added.namespaces == {"u"} and added.row_count == 2
    assert added.rows is not None and "vector" in added.rows.column_names
    both = pa.concat_tables([rows("u", ["three"]), rows("w", ["four"])])
    upserted = await table.upsert(both)
    assert upserted.namespaces == {"u", "w"} and upserted.version == added.version + 1
    one = (await table.rows(build_where("u"), ["id"], limit=1)).column("id")[0].as_py()
    deleted = await table.delete("u", [one])
    assert deleted.deleted == {"u": (one,)} and deleted.row_count == 0
    forgot = await table.delete("w", None)
    assert forgot.namespaces == {"w"} and forgot.deleted == {}  # the whole namespace
    assert events == [added, upserted, deleted, forgot]
    assert [e.version for e in events] == sorted({e.version for e in events})  # one version each


async def test_a_failed_commit_tells_the_subscribers_and_raises(table: MemoryTable) -> None:
    events: list[CommitEvent] = []
    table.subscribe(events.append)
    bad = pa.table({"namespace": ["u"], "id": ["x"], "unknown_column": [1]})
    with pytest.raises(StorageError, match="could not write memories"):
        await table.add(bad)
    assert len(events) == 1 and events[0].failed and events[0].namespaces == {"u"}


async def test_a_failing_subscriber_never_fails_a_commit(table: MemoryTable, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def broken(event: CommitEvent) -> None:
        raise RuntimeError("subscriber bug")

    async def later(event: CommitEvent) -> None:
        seen.append(event.action)

    table.subscribe(broken)
    table.subscribe(later)
    with caplog.at_level(logging.WARNING):
        event = await table.add(rows("u", ["kept"]))
    assert not event.failed and await table.count() == 1
    assert seen == ["add"]  # the next subscriber still ran, and async ones are awaited
    assert "commit subscriber failed" in caplog.text


async def test_delete_and_restore_is_one_commit(table: MemoryTable) -> None:
    data = rows("u", ["old", "new"])
    await table.add(data)
    old_id, new_id = data.column("id").to_pylist()
    before = await table.version()
    restored = pa.table(
        {
            "namespace": ["u"],
            "id": [old_id],
            "superseded_by": pa.array([None], pa.string()),
        }
    )
    event = await table.delete_and_restore("u", [new_id], restored)
    assert event.version == before + 1
    left = (await table.rows(build_where("u"), ["id"])).column("id").to_pylist()
    assert left == [old_id]


async def test_another_handle_sees_commits_only_with_a_consistency_interval(tmp_path: Path) -> None:
    from datetime import timedelta

    writer, stale, fresh = (
        new_table(tmp_path),
        new_table(tmp_path),
        new_table(tmp_path, read_consistency_interval=timedelta(0)),
    )
    for t in (writer, stale, fresh):
        await t.open()
    await writer.add(rows("u", ["visible later"]))
    assert await fresh.count() == 1
    assert await stale.count() == 0

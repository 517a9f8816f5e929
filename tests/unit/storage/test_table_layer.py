"""The table layer: opening, reads, and commits that tell their subscribers what changed."""

from __future__ import annotations

import logging
from pathlib import Path

import lancedb
import pyarrow as pa
import pyarrow.compute
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


async def test_delete_and_rewrite_is_one_commit(table: MemoryTable) -> None:
    data = rows("u", ["old", "new"])
    await table.add(data)
    old_id, new_id = data.column("id").to_pylist()
    before = await table.version()
    restored = _at(data.filter(pa.compute.equal(data.column("id"), old_id)), 1, "old")
    event = await table.delete_and_rewrite("u", [new_id], restored)
    assert event.version == before + 1 and event.updated == 1
    left = (await table.rows(build_where("u"), ["id", "revision"])).to_pylist()
    assert left == [{"id": old_id, "revision": 1}]


def _at(data: pa.Table, revision: int, text: str) -> pa.Table:
    """The same rows, rewritten: another text, at ``revision``."""
    n = data.num_rows
    data = data.set_column(data.schema.get_field_index("text"), "text", pa.array([text] * n))
    return data.set_column(data.schema.get_field_index("revision"), "revision", pa.array([revision] * n, pa.int64()))


async def test_a_rewrite_from_a_stale_read_does_not_land(table: MemoryTable) -> None:
    data = rows("u", ["first"])
    await table.add(data)  # revision 0
    assert (await table.upsert(_at(data, 1, "second"))).updated == 1  # read at 0, writes 1
    stale = await table.upsert(_at(data, 1, "from a stale copy"))  # also read at 0: the row is at 1 now
    assert stale.landed == 0
    assert (await table.rows(build_where("u"), ["text"])).column("text").to_pylist() == ["second"]


async def test_a_new_row_does_not_overwrite_one_created_meanwhile(table: MemoryTable) -> None:
    data = rows("u", ["created by someone else"])
    await table.add(data)
    mine = _at(data, 0, "my new row with the same id")  # revision 0: meant as a new row
    assert (await table.upsert(mine)).landed == 0
    assert (await table.rows(build_where("u"), ["text"])).column("text").to_pylist() == ["created by someone else"]


async def test_a_rewrite_never_brings_back_a_deleted_row(table: MemoryTable) -> None:
    data = rows("u", ["to be forgotten"])
    await table.add(data)
    await table.delete("u", None)
    event = await table.rewrite(_at(data, 1, "to be forgotten, refreshed"))
    assert event.landed == 0 and await table.count() == 0


async def test_a_conditional_merge_of_some_columns_is_refused(table: MemoryTable) -> None:
    # LanceDB 0.40 panics on a conditional merge of a column subset once the id index exists.
    data = rows("u", ["x"])
    await table.add(data)
    with pytest.raises(ValueError, match="every column"):
        await table.rewrite(_at(data, 1, "y").select(["namespace", "id", "text", "revision"]))


async def test_an_upsert_of_a_deleted_row_inserts_it_as_new_content(table: MemoryTable) -> None:
    # An explicit-id write after a delete is a new write of that id (the caller's content), never
    # the old row: the stale copy is what the caller sends, so the caller's text is what lands.
    data = rows("u", ["old text"])
    await table.add(data)
    await table.delete("u", None)
    event = await table.upsert(_at(data, 1, "the caller's new text"))
    assert event.inserted == 1
    assert (await table.rows(build_where("u"), ["text"])).column("text").to_pylist() == ["the caller's new text"]


async def test_an_older_table_gets_the_new_columns_on_open(tmp_path: Path) -> None:
    from memory_retrievers.storage.schema import memory_schema

    from .conftest import EMBEDDER

    legacy = memory_schema(EMBEDDER.dimension, EMBEDDER.name)
    for added in ("revision", "stamp", "context_auto"):
        legacy = legacy.remove(legacy.get_field_index(added))
    data = rows("u", ["written by 0.1"]).drop_columns(["revision", "stamp", "context_auto"])
    db = await lancedb.connect_async(str(tmp_path))
    await db.create_table("memories", data=data, schema=legacy)
    t = new_table(tmp_path)
    await t.open()
    assert (await t.rows(build_where("u"), ["text", "revision", "stamp", "context_auto"])).to_pylist() == [
        {"text": "written by 0.1", "revision": 0, "stamp": 0, "context_auto": None}
    ]
    await t.add(rows("u", ["written now"]))
    assert await t.count() == 2
    stamps = (await t.rows(build_where("u"), ["stamp"])).column("stamp").to_pylist()
    assert stamps[0] == 0 and stamps[1] != 0  # every write draws a fresh one


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
